"""Scene cameras and rendering with PyBullet's TinyRenderer (CPU, no GL needed).

A fixed ``front`` camera stands across the bench from the robot, looking back at it and down,
framing the *task zone* (where the layout puts targets and receptacles, inside the robot's
comfortable reach) as a third-person camera over a real ~1 m bench does: the zone, widened by
a margin for the objects' own size, fills the image, so a 12 cm marker at the zone's far edge
(next to the robot) still covers about a hundred pixels of a 128 x 128 frame. A steep view
(80 degrees) through a narrow lens (20 degrees, from about 1.4 m) keeps the far edge nearly as
large as the near one; the zone's y extent sets the distance, and the bench beyond the zone
(where distractors may stand) is partly out of the frame. A ``wrist`` camera rides on the
robot's hand link (its ``eye``, ``target`` and ``up`` are then expressed in that link's frame).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scenegen.errors import ConfigError
from scenegen.rotations import quat_matrix
from scenegen.scene import Camera, Scene
from scenegen.sim.robots import RobotSpec

if TYPE_CHECKING:
    from PIL import Image

    from scenegen.sim.world import World

DEFAULT_TASK_ZONE = (0.40, -0.17, 0.66, 0.17)
"""``(xmin, ymin, xmax, ymax)`` (m, robot base frame) of the centres of targets and receptacles."""
FRONT_FOV_DEG = 20.0
"""Vertical field of view of the front camera."""
FRONT_ELEVATION_DEG = 80.0
"""Angle of the front camera's line of sight below the horizontal."""
FRAME_MARGIN = 0.05
"""The front camera frames the task zone widened by this much (m) on every side."""


def frame_zone(zone: tuple[float, float, float, float], table_height: float = 0.0, fov_deg: float = FRONT_FOV_DEG,
               elevation_deg: float = FRONT_ELEVATION_DEG, margin: float = FRAME_MARGIN,
               height: float = 0.08) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Eye and target of a camera on the +x side of ``zone`` that frames it.

    The camera looks at the zone's centre from ``elevation_deg`` above the table, along -x; its
    distance is the least at which every corner of the zone, widened by ``margin`` and raised by
    ``height`` (the objects), projects inside 95% of the (square) image.

    Raises:
        ConfigError: the zone is empty, or the angles are out of range.

    """
    x0, y0, x1, y1 = (float(v) for v in zone)
    if not (x0 < x1 and y0 < y1):
        raise ConfigError(f"camera zone {zone!r} must be (xmin, ymin, xmax, ymax) with min < max")
    if not (5.0 <= elevation_deg <= 89.0 and 10.0 <= fov_deg <= 120.0):
        raise ConfigError(f"camera elevation {elevation_deg} must be in 5..89 and fov {fov_deg} in 10..120 degrees")
    target = np.array([(x0 + x1) / 2, (y0 + y1) / 2, table_height + 0.02])
    el = math.radians(elevation_deg)
    view_dir = np.array([-math.cos(el), 0.0, -math.sin(el)])
    corners = np.array([[x, y, table_height + z] for x in (x0 - margin, x1 + margin)
                        for y in (y0 - margin, y1 + margin) for z in (0.0, height)])
    t = 0.95 * math.tan(math.radians(fov_deg) / 2)
    right = np.cross(view_dir, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, view_dir)
    dist = 0.2
    while dist < 5.0:
        eye = target - view_dir * dist
        rel = corners - eye
        depth = rel @ view_dir
        if np.all(depth > 0.05) and np.all(np.abs(rel @ right) <= t * depth) and np.all(np.abs(rel @ up) <= t * depth):
            break
        dist += 0.005
    eye = target - view_dir * dist
    return tuple(round(float(v), 4) for v in eye), tuple(round(float(v), 4) for v in target)


def default_cameras(robot: RobotSpec, zone: tuple[float, float, float, float] = DEFAULT_TASK_ZONE,
                    table_height: float = 0.0, width: int = 128, height: int = 128, fov_deg: float = FRONT_FOV_DEG,
                    wrist_fov_deg: float = 70.0, elevation_deg: float = FRONT_ELEVATION_DEG,
                    margin: float = FRAME_MARGIN) -> list[Camera]:
    """The ``front`` camera framing the task zone (see :func:`frame_zone`) and the ``wrist`` camera.

    A multi-arm robot gets one wrist camera per arm instead, ``wrist_<arm>`` (``wrist_left``, ``wrist_right``).
    """
    eye, target = frame_zone(zone, table_height, fov_deg, elevation_deg, margin)
    front = Camera("front", eye=eye, target=target, up=(0.0, 0.0, 1.0), fov_deg=fov_deg,
                   width=width, height=height, near=0.05, far=4.0)
    wrists = [Camera("wrist" if not robot.arms else f"wrist_{arm.name}", eye=arm.wrist_eye, target=arm.wrist_target,
                     up=arm.wrist_up, fov_deg=wrist_fov_deg, width=width, height=height, near=0.02, far=2.0,
                     link=arm.wrist_link) for arm in robot.arm_specs]
    return [front, *wrists]


def get_camera(scene: Scene, name: str) -> Camera:
    """The scene's camera called ``name``.

    Raises:
        ConfigError: no such camera (the message lists the scene's cameras).

    """
    for cam in scene.cameras:
        if cam.name == name:
            return cam
    raise ConfigError(f"scene has no camera {name!r}; it has {[c.name for c in scene.cameras]}")


def camera_world(world: World, cam: Camera) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World-frame ``(eye, target, up)`` of a camera (follows its link for a wrist camera)."""
    eye, target, up = (np.asarray(v, dtype=float) for v in (cam.eye, cam.target, cam.up))
    if cam.link is None:
        return eye, target, up
    if cam.link not in world.link_index:
        raise ConfigError(f"camera {cam.name}: robot has no link {cam.link!r}")
    pose = world.link_pose(cam.link)
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position)
    return rot @ eye + pos, rot @ target + pos, rot @ up


def view_matrix(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    """4x4 world-to-camera matrix (OpenGL convention: the camera looks along its -z)."""
    f = target - eye
    f = f / np.linalg.norm(f)
    s = np.cross(f, up)
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def render_camera(world: World, name: str, width: int | None = None, height: int | None = None):
    """Render camera ``name`` of ``world.scene``: ``(rgb uint8 HxWx3, depth m HxW float32, seg int32 HxW)``.

    Segmentation values are body ids; background (sky and the ground plane) is -1.
    """
    import pybullet as p

    cam = get_camera(world.scene, name)
    w, h = int(width or cam.width), int(height or cam.height)
    if not (0 < w <= 4096 and 0 < h <= 4096):
        raise ConfigError(f"render size {w}x{h} must be within 1..4096 pixels")
    eye, target, up = camera_world(world, cam)
    view = view_matrix(eye, target, up).T.reshape(-1).tolist()
    proj = p.computeProjectionMatrixFOV(cam.fov_deg, w / h, cam.near, cam.far, physicsClientId=world.client)
    kw = {}
    if world.scene.lights:
        light = world.scene.lights[0]
        kw = {"lightDirection": list(light.direction), "lightColor": list(light.color),
              "lightAmbientCoeff": light.ambient, "lightDiffuseCoeff": light.diffuse,
              "lightSpecularCoeff": light.specular}
    out = p.getCameraImage(w, h, view, proj, renderer=p.ER_TINY_RENDERER, shadow=0,
                           physicsClientId=world.client, **kw)
    rgb = np.asarray(out[2], dtype=np.uint8).reshape(h, w, 4)[:, :, :3].copy()
    zbuf = np.asarray(out[3], dtype=np.float64).reshape(h, w)
    depth = (cam.far * cam.near / (cam.far - (cam.far - cam.near) * zbuf)).astype(np.float32)
    seg = np.asarray(out[4], dtype=np.int64).reshape(h, w)
    seg = np.where(seg >= 0, seg & ((1 << 24) - 1), -1)
    seg[seg == world.ground_id] = -1
    return rgb, depth, seg.astype(np.int32)


def make_preview(scene: Scene, world: World, size: int = 256, camera: str = "front") -> Image.Image:
    """A PIL image of the scene seen from ``camera`` (``world`` must be built from ``scene``)."""
    from PIL import Image

    if world.scene is not scene and world.scene.id != scene.id:
        raise ConfigError(f"make_preview: the world holds scene {world.scene.id[:12]}, not {scene.id[:12]}")
    rgb, _, _ = render_camera(world, camera, size, size)
    return Image.fromarray(rgb, "RGB")
