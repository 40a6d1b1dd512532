"""SDFormat element builders shared by the scene and robot parts of the SDF exporter."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from scenegen.export._camera import ExportCamera, x_forward
from scenegen.export._common import fmt
from scenegen.rotations import matrix_to_rpy

SENSOR_RATE = 30.0
"""Update rate (Hz) of the exported camera sensors."""
CAMERA_MASS = 0.01
"""Mass (kg) of a static camera model's link (a camera body needs one in PyBullet and Gazebo)."""


def text(parent: ET.Element, tag: str, value: str) -> ET.Element:
    """Append ``<tag>value</tag>`` to ``parent``."""
    el = ET.SubElement(parent, tag)
    el.text = value
    return el


def pose(parent: ET.Element, xyz, rpy=(0.0, 0.0, 0.0)) -> None:
    """Append a ``<pose>x y z roll pitch yaw</pose>``."""
    text(parent, "pose", fmt(*xyz, *rpy))


def pose_of_matrix(parent: ET.Element, m: np.ndarray) -> None:
    """Append the ``<pose>`` of a 4x4 transform."""
    pose(parent, m[:3, 3], matrix_to_rpy(m))


def inertial(link: ET.Element, mass: float, com, tensor: np.ndarray, rpy=(0.0, 0.0, 0.0)) -> None:
    """Append an ``<inertial>`` with mass, frame and full inertia tensor."""
    el = ET.SubElement(link, "inertial")
    pose(el, com, rpy)
    text(el, "mass", fmt(mass))
    it = ET.SubElement(el, "inertia")
    for tag, (r, c) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                           ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)), strict=True):
        text(it, tag, fmt(tensor[r, c]))


def mesh_geometry(parent: ET.Element, uri: str, scale=None) -> None:
    """Append ``<geometry><mesh><uri>`` (and ``<scale>``)."""
    mesh = ET.SubElement(ET.SubElement(parent, "geometry"), "mesh")
    text(mesh, "uri", uri)
    if scale is not None:
        text(mesh, "scale", fmt(*scale))


def surface(col: ET.Element, mu: float, spinning: float, rolling: float, restitution: float | None) -> None:
    """Append a ``<surface>`` with friction in every form Gazebo reads.

    ``ode/mu``, ``mu2`` (ODE and DART), ``torsional/coefficient`` (spinning friction) and
    ``bullet/friction``, ``friction2``, ``rolling_friction`` (Gazebo's Bullet engines), plus the
    restitution coefficient.
    """
    el = ET.SubElement(col, "surface")
    friction = ET.SubElement(el, "friction")
    text(ET.SubElement(friction, "torsional"), "coefficient", fmt(spinning))
    ode = ET.SubElement(friction, "ode")
    text(ode, "mu", fmt(mu))
    text(ode, "mu2", fmt(mu))
    bullet = ET.SubElement(friction, "bullet")
    text(bullet, "friction", fmt(mu))
    text(bullet, "friction2", fmt(mu))
    text(bullet, "rolling_friction", fmt(rolling))
    if restitution is not None:
        text(ET.SubElement(el, "bounce"), "restitution_coefficient", fmt(restitution))


def camera_sensor(link: ET.Element, cam: ExportCamera) -> None:
    """Append a ``<sensor type="camera">`` at the camera's pose in ``link`` (SDF cameras look along +x)."""
    sensor = ET.SubElement(link, "sensor", name=cam.name, type="camera")
    pose_of_matrix(sensor, x_forward(cam.pose))
    text(sensor, "always_on", "1")
    text(sensor, "update_rate", fmt(SENSOR_RATE))
    camera = ET.SubElement(sensor, "camera", name=cam.name)
    text(camera, "horizontal_fov", fmt(cam.fovx_rad))
    image = ET.SubElement(camera, "image")
    text(image, "width", str(cam.width))
    text(image, "height", str(cam.height))
    text(image, "format", "R8G8B8")
    clip = ET.SubElement(camera, "clip")
    text(clip, "near", fmt(cam.near))
    text(clip, "far", fmt(cam.far))
