"""Scene cameras and rendering with PyBullet's TinyRenderer (CPU, no GL needed).

A fixed ``front`` camera looks at the table from across it and above, so the whole table
top is in view; a ``wrist`` camera rides on the robot's hand link (its ``eye``, ``target``
and ``up`` are then expressed in that link's frame).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scenegen.errors import ConfigError
from scenegen.rotations import quat_matrix
from scenegen.scene import Camera, Scene
from scenegen.sim.robots import RobotSpec

if TYPE_CHECKING:
    from PIL import Image

    from scenegen.sim.world import World


def default_cameras(robot: RobotSpec, table_center_x: float, table_height: float = 0.0,
                    width: int = 128, height: int = 128, fov_deg: float = 60.0,
                    wrist_fov_deg: float = 70.0) -> list[Camera]:
    """The ``front`` camera (across the table, looking back at the robot) and the ``wrist`` camera."""
    front = Camera("front", eye=(table_center_x + 1.15, 0.0, table_height + 0.85),
                   target=(table_center_x - 0.1, 0.0, table_height), up=(0.0, 0.0, 1.0), fov_deg=fov_deg,
                   width=width, height=height, near=0.05, far=4.0)
    wrist = Camera("wrist", eye=robot.wrist_eye, target=robot.wrist_target, up=robot.wrist_up,
                   fov_deg=wrist_fov_deg, width=width, height=height, near=0.02, far=2.0, link=robot.wrist_link)
    return [front, wrist]


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
