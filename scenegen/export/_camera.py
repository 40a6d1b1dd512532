"""The scene's cameras as the exporters write them: one pose and one set of intrinsics per camera.

Cameras come from the scene (``scene.cameras``, see :mod:`scenegen.sim.camera`), never from
constants here. A fixed camera's pose is in the world; a camera riding on a robot link (the
wrist camera) has its pose in that link's frame and is exported only with the robot.

:attr:`ExportCamera.pose` uses the OpenGL / USD / glTF / MuJoCo camera convention (the camera
looks along its -z, +y is up, +x is right). SDF cameras look along +x with +z up:
:func:`x_forward` converts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenegen.errors import ExportError
from scenegen.scene import Camera, Scene

GL_TO_X_FORWARD = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])
"""Rotation from an OpenGL camera frame to an x-forward, z-up camera frame (SDF, ROS)."""


@dataclass(frozen=True)
class ExportCamera:
    """One camera: name, the link it rides on, pose and pinhole intrinsics."""

    name: str
    """Camera name (``front``, ``wrist``)."""
    link: str | None
    """Robot link it rides on, or None for a fixed camera."""
    pose: np.ndarray
    """4x4 camera frame (looks along -z, +y up) in the world, or in ``link``'s frame."""
    fovy_deg: float
    """Vertical field of view (degrees)."""
    width: int
    """Image width (pixels)."""
    height: int
    """Image height (pixels)."""
    near: float
    """Near clipping distance (m)."""
    far: float
    """Far clipping distance (m)."""

    @property
    def aspect(self) -> float:
        """Width over height."""
        return self.width / self.height

    @property
    def fovx_rad(self) -> float:
        """Horizontal field of view (radians) for this aspect ratio."""
        return 2.0 * math.atan(math.tan(math.radians(self.fovy_deg) / 2.0) * self.aspect)


def camera_pose(cam: Camera) -> np.ndarray:
    """4x4 camera frame of ``cam`` (looking along -z) from its eye, target and up vectors.

    Raises:
        ExportError: eye and target coincide, or up is parallel to the viewing direction.

    """
    eye, target, up = (np.asarray(v, dtype=float) for v in (cam.eye, cam.target, cam.up))
    f = target - eye
    s = np.cross(f, up)
    if np.linalg.norm(f) < 1e-9 or np.linalg.norm(s) < 1e-9 * max(np.linalg.norm(f), 1.0):
        raise ExportError(f"camera {cam.name!r}: eye {cam.eye}, target {cam.target} and up {cam.up} do not "
                          f"define a view; fix the scene's camera")
    f, s = f / np.linalg.norm(f), s / np.linalg.norm(s)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = s, np.cross(s, f), -f, eye
    return m


def export_cameras(scene: Scene, with_robot: bool) -> list[ExportCamera]:
    """The scene's cameras; those riding on a robot link only when the robot is exported."""
    return [ExportCamera(c.name, c.link, camera_pose(c), float(c.fov_deg), int(c.width), int(c.height),
                         float(c.near), float(c.far))
            for c in scene.cameras if c.link is None or with_robot]


def x_forward(pose: np.ndarray) -> np.ndarray:
    """The same camera frame turned to look along +x with +z up (SDF sensors)."""
    out = pose.copy()
    out[:3, :3] = pose[:3, :3] @ GL_TO_X_FORWARD
    return out
