"""Observations: camera images (rendered only when observed), proprioception, instruction, point cloud.

Images come from PyBullet's TinyRenderer without segmentation. A fixed camera's pose and
the light can be perturbed per episode (:class:`View`); the wrist camera rides on its link.
The point cloud un-projects the front camera's depth into the world, crops it to the
workspace, voxel-downsamples it (open3d when installed and chosen, else numpy) and draws
a fixed number of points.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from scenegen.errors import ConfigError
from scenegen.scene import Camera, Light
from scenegen.sim.camera import camera_world, get_camera, view_matrix
from scenegen.sim.world import World

CHARSET = string.ascii_letters + string.digits + string.punctuation + " "
"""Characters an instruction may hold (others become ``?``)."""
PROPRIO_DIM_EXTRA = 8
"""End-effector position (3), quaternion (4) and gripper width (1) after the joint positions."""


def instruction_text(text: str, max_length: int) -> str:
    """The instruction with characters outside :data:`CHARSET` replaced, cut to ``max_length``."""
    allowed = set(CHARSET)
    return "".join(ch if ch in allowed else "?" for ch in " ".join(text.split()))[:max_length]


@dataclass
class View:
    """Per-episode camera offsets and light used for rendering."""

    eye_offset: np.ndarray
    target_offset: np.ndarray
    light: Light


def nominal_view(world: World) -> View:
    """No camera offset, the scene's first light."""
    light = world.scene.lights[0] if world.scene.lights else Light()
    return View(np.zeros(3), np.zeros(3), light)


class Renderer:
    """Renders a world's cameras at one size, with a per-episode :class:`View`."""

    def __init__(self, world: World, size: int) -> None:
        import pybullet as p

        self._p = p
        self.world = world
        self.size = size
        self._proj: dict[str, list[float]] = {}
        self._fixed_views: dict[str, list[float]] = {}
        self._view = nominal_view(world)

    @property
    def view(self) -> View:
        """Camera offsets and light of the current episode."""
        return self._view

    @view.setter
    def view(self, value: View) -> None:
        self._view = value
        self._fixed_views.clear()

    def camera(self, name: str) -> Camera:
        """The scene camera called ``name``."""
        return get_camera(self.world.scene, name)

    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World eye, target and up of a camera, with this episode's offsets for fixed cameras."""
        cam = self.camera(name)
        eye, target, up = camera_world(self.world, cam)
        if cam.link is None:
            eye, target = eye + self.view.eye_offset, target + self.view.target_offset
        return eye, target, up

    def _projection(self, cam: Camera) -> list[float]:
        if cam.name not in self._proj:
            self._proj[cam.name] = list(self._p.computeProjectionMatrixFOV(cam.fov_deg, 1.0, cam.near, cam.far,
                                                                           physicsClientId=self.world.client))
        return self._proj[cam.name]

    def render(self, name: str, depth: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """RGB (uint8 HxWx3) and, when asked, linear depth (m, float32 HxW) of a camera."""
        p, s = self._p, self.size
        cam = self.camera(name)
        view = self._fixed_views.get(name)
        if view is None:
            eye, target, up = self.pose(name)
            view = list(p.computeViewMatrix(eye.tolist(), target.tolist(), up.tolist(),
                                            physicsClientId=self.world.client))
            if cam.link is None:
                self._fixed_views[name] = view
        li = self.view.light
        out = p.getCameraImage(s, s, view, self._projection(cam), renderer=p.ER_TINY_RENDERER, shadow=0,
                               lightDirection=list(li.direction), lightColor=list(li.color),
                               lightAmbientCoeff=li.ambient, lightDiffuseCoeff=li.diffuse,
                               lightSpecularCoeff=li.specular, flags=p.ER_NO_SEGMENTATION_MASK,
                               physicsClientId=self.world.client)
        rgb = np.asarray(out[2], dtype=np.uint8).reshape(s, s, 4)[:, :, :3]
        if not depth:
            return np.ascontiguousarray(rgb), None
        zbuf = np.asarray(out[3], dtype=np.float64).reshape(s, s)
        lin = cam.far * cam.near / (cam.far - (cam.far - cam.near) * zbuf)
        return np.ascontiguousarray(rgb), lin.astype(np.float32)


def unproject(depth: np.ndarray, eye: np.ndarray, target: np.ndarray, up: np.ndarray, fov_deg: float,
              far: float) -> np.ndarray:
    """World points (N x 3) of the depth pixels nearer than ``far`` (square image, vertical fov)."""
    h, w = depth.shape
    t = math.tan(math.radians(fov_deg) / 2)
    xs = ((np.arange(w) + 0.5) / w * 2 - 1) * t * (w / h)
    ys = (1 - (np.arange(h) + 0.5) / h * 2) * t
    d = depth.astype(np.float64)
    keep = d < far * 0.999
    cam = np.stack([xs[None, :] * d, ys[:, None] * d, -d], axis=-1)[keep]
    m = view_matrix(eye, target, up)
    rot, trans = m[:3, :3], m[:3, 3]
    return (cam - trans) @ rot


def voxel_downsample(points: np.ndarray, voxel: float, backend: str = "numpy") -> np.ndarray:
    """Mean point of each occupied voxel, in voxel order (deterministic)."""
    if len(points) == 0:
        return points.reshape(0, 3)
    if backend == "open3d":
        import open3d as o3d

        pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
        return np.asarray(pc.voxel_down_sample(voxel).points)
    keys = np.floor(points / voxel).astype(np.int64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    sums = np.zeros((len(counts), 3))
    np.add.at(sums, inverse, points)
    return sums / counts[:, None]


def pick_backend(name: str) -> str:
    """Resolve ``auto`` to ``open3d`` when it is installed, else ``numpy``.

    Raises:
        ConfigError: ``open3d`` was asked for but is not installed.

    """
    if name == "numpy":
        return name
    try:
        import open3d  # noqa: F401
    except ImportError:
        if name == "open3d":
            raise ConfigError("pointcloud_backend 'open3d' needs open3d: pip install 'scenegen[pointcloud]'") from None
        return "numpy"
    return "open3d"


class CloudSettings(Protocol):
    """What :func:`point_cloud` reads from its config (an :class:`~scenegen.tasks.config.EpisodeConfig`)."""

    workspace: tuple[float, float, float, float, float, float]
    pointcloud_voxel: float
    pointcloud_points: int


def point_cloud(renderer: Renderer, depth: np.ndarray, cfg: CloudSettings, backend: str,
                rng: np.random.Generator) -> np.ndarray:
    """The front camera's cloud: cropped to the workspace, downsampled, ``cfg.pointcloud_points`` points."""
    cam = renderer.camera("front")
    eye, target, up = renderer.pose("front")
    pts = unproject(depth, eye, target, up, cam.fov_deg, cam.far)
    ws, th = cfg.workspace, renderer.world.scene.table_height
    lo = np.array([ws[0], ws[1], th - 0.005])
    hi = np.array([ws[3], ws[4], th + ws[5]])
    pts = pts[np.all((pts >= lo) & (pts <= hi), axis=1)]
    pts = voxel_downsample(pts, cfg.pointcloud_voxel, backend)
    n = cfg.pointcloud_points
    if len(pts) == 0:
        return np.zeros((n, 3), np.float32)
    idx = rng.choice(len(pts), n, replace=len(pts) < n)
    return pts[np.sort(idx)].astype(np.float32)
