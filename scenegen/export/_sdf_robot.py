"""The robot as an SDF ``<model>``: articulated, fixed to the world, starting at its home pose.

Links are placed by forward kinematics at zero joint positions (SDF's reference configuration),
joint frames sit at the child links and axes are in the joint frame. The base link is fixed to
the world by a ``fixed`` joint whose parent is ``world``. The home pose is written in the two
forms Gazebo reads: ``<axis><initial_position>`` (SDFormat 1.7) and, for Gazebo Sim, one
``JointPositionController`` system per moving joint with ``<initial_position>``, PD gains from
:data:`scenegen.export._robot.DRIVE_STIFFNESS` and the URDF effort as command limit.
Cameras riding on a robot link become ``<sensor type="camera">`` in that link.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from scenegen.errors import ExportError
from scenegen.export._camera import ExportCamera
from scenegen.export._common import fmt, pose_matrix
from scenegen.export._robot import (
    DRIVE_STIFFNESS,
    RobotInfo,
    drive_damping,
    model_link_poses,
    parse_urdf,
)
from scenegen.export._sdf_xml import camera_sensor, inertial, mesh_geometry, pose, pose_of_matrix, text
from scenegen.rotations import matrix_to_rpy

WORLD_JOINT = "fixed_to_world"
"""Name of the joint fixing the robot base to the world."""
POSITION_CONTROLLER = ("gz-sim-joint-position-controller-system", "gz::sim::systems::JointPositionController")
"""Gazebo Sim's joint position controller system (file name, class name)."""


def _controller(model: ET.Element, joint: str, jtype: str, home: float, effort: float | None) -> None:
    plugin = ET.SubElement(model, "plugin", filename=POSITION_CONTROLLER[0], name=POSITION_CONTROLLER[1])
    text(plugin, "joint_name", joint)
    text(plugin, "p_gain", fmt(DRIVE_STIFFNESS[jtype]))
    text(plugin, "i_gain", "0")
    text(plugin, "d_gain", fmt(drive_damping(jtype)))
    if effort:
        text(plugin, "cmd_max", fmt(effort))
        text(plugin, "cmd_min", fmt(-effort))
    text(plugin, "initial_position", fmt(home))


def robot_model(world: ET.Element, robot: RobotInfo, urdf: Path, out: Path, name: str,
                cameras: list[ExportCamera]) -> ET.Element:
    """Append the robot (its copied URDF ``urdf`` under ``out``) as model ``name`` and return it.

    Raises:
        ExportError: a camera rides on a link the robot lacks.

    """
    model_data = parse_urdf(urdf)
    rel = urdf.parent.relative_to(out).as_posix()
    link_pose = model_link_poses(model_data, np.eye(4))  # in the model frame, joints at zero
    model = ET.SubElement(world, "model", name=name)
    text(model, "static", "0")
    pose(model, robot.base.position, matrix_to_rpy(pose_matrix(robot.base)))
    links: dict[str, ET.Element] = {}
    for lk in model_data.links.values():
        link = links[lk.name] = ET.SubElement(model, "link", name=lk.name)
        pose_of_matrix(link, link_pose[lk.name])
        # as the URDF has it (massless flange and grasp-point links included, as PyBullet loads them)
        inertial(link, lk.mass, lk.inertial[:3, 3], lk.inertia, matrix_to_rpy(lk.inertial))
        for tag, geoms in (("visual", lk.visuals), ("collision", lk.collisions)):
            for k, g in enumerate(geoms):
                el = ET.SubElement(link, tag, name=f"{tag}_{k}")
                pose_of_matrix(el, g.origin)
                mesh_geometry(el, f"{rel}/{g.filename}", None if g.scale == (1.0, 1.0, 1.0) else g.scale)
    fixed = ET.SubElement(model, "joint", name=WORLD_JOINT, type="fixed")
    text(fixed, "parent", "world")
    text(fixed, "child", model_data.root)
    for j in model_data.joints:
        jel = ET.SubElement(model, "joint", name=j.name, type=j.type)
        text(jel, "parent", j.parent)
        text(jel, "child", j.child)
        if not j.moving:
            continue
        axis = ET.SubElement(jel, "axis")
        text(axis, "initial_position", fmt(robot.home.get(j.name, 0.0)))
        text(axis, "xyz", fmt(*j.axis))
        limit = ET.SubElement(axis, "limit")
        if j.lower is not None and j.upper is not None:
            text(limit, "lower", fmt(j.lower))
            text(limit, "upper", fmt(j.upper))
        text(limit, "effort", fmt(j.effort if j.effort is not None else -1.0))
        text(limit, "velocity", fmt(j.velocity if j.velocity is not None else -1.0))
        dyn = ET.SubElement(axis, "dynamics")
        text(dyn, "damping", fmt(j.damping))
        text(dyn, "friction", fmt(j.friction))
    for j in model_data.joints:
        if j.moving:
            _controller(model, j.name, j.type, robot.home.get(j.name, 0.0), j.effort)
    for cam in cameras:
        if cam.link not in links:
            raise ExportError(f"camera {cam.name!r} rides on link {cam.link!r}, which robot {robot.name} lacks; "
                              f"fix the scene's cameras")
        camera_sensor(links[cam.link], cam)
    return model

