"""The robot as a UsdPhysics articulation (``robot/robot.usdc``, referenced at ``/World/Robot``).

Layer layout (default prim ``/Robot``, placed at the robot base)::

    /Robot                              Xform; PhysicsArticulationRootAPI (fixed base: see root joint)
    /Robot/<link>                       Xform at the home pose; RigidBodyAPI + MassAPI (URDF mass,
                                        centre of mass, principal inertia and axes)
    /Robot/<link>/visuals/<part>        UsdGeom.Mesh per material part, bound to /Robot/Looks/<part>
    /Robot/<link>/collisions/c_NN       UsdGeom.Mesh, purpose guide, CollisionAPI + convexHull
    /Robot/<link>/<camera>              UsdGeom.Camera riding on the link (the wrist camera)
    /Robot/<link>/<frame>               Xform of a massless frame link (flange, grasp point)
    /Robot/joints/fixed_to_world        PhysicsFixedJoint: body0 = world, body1 = the base link
    /Robot/joints/<joint>               PhysicsRevoluteJoint / PrismaticJoint / FixedJoint with limits;
                                        DriveAPI (angular | linear): stiffness, damping, maxForce,
                                        targetPosition = home

Joint frames: ``localPos0/localRot0`` is the URDF joint origin in the parent body, turned so the
joint's X axis is the URDF axis; ``localPos1/localRot1`` is that same turn in the child body. The
two frames coincide at joint position 0, so with the links authored at the home pose a
simulator reads the home joint positions from the bodies, and the drives hold them. Angles are
in degrees, as UsdPhysics wants; drive gains are :data:`scenegen.export._robot.DRIVE_STIFFNESS`
per radian converted to per degree.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from scenegen.errors import ExportError
from scenegen.export._camera import ExportCamera
from scenegen.export._common import ROBOT_DIR, pose_matrix
from scenegen.export._robot import (
    DRIVE_STIFFNESS,
    MIN_LINK_MASS,
    RobotInfo,
    UrdfJoint,
    drive_damping,
    frame_links,
    model_link_poses,
    parse_urdf,
)
from scenegen.export._robot_mesh import visual_parts
from scenegen.export._usd_geom import color_material, define_camera, define_mesh, load_mesh, pxr, set_transform
from scenegen.rotations import matrix_to_quat

LAYER = f"{ROBOT_DIR}/robot.usdc"
"""The robot's layer, relative to the export folder."""
WORLD_JOINT = "fixed_to_world"
"""Name of the joint fixing the robot base to the world."""


def axis_frame(axis: np.ndarray) -> np.ndarray:
    """A 4x4 rotation taking +x to ``axis`` (UsdPhysics joints move along their X axis)."""
    x = np.array([1.0, 0.0, 0.0])
    a = axis / np.linalg.norm(axis)
    m = np.eye(4)
    c = float(np.dot(x, a))
    if c > 1 - 1e-12:
        return m
    if c < -1 + 1e-12:
        m[:3, :3] = np.diag([-1.0, -1.0, 1.0])  # half turn about z
        return m
    k = np.cross(x, a)
    s = np.linalg.norm(k)
    k = k / s
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    m[:3, :3] = np.eye(3) + s * kx + (1 - c) * kx @ kx
    return m


def _local_frame(joint_prim_api, m: np.ndarray, side: int) -> None:
    Gf = pxr()[0]
    qx, qy, qz, qw = matrix_to_quat(m[:3, :3])
    pos, rot = (joint_prim_api.CreateLocalPos0Attr, joint_prim_api.CreateLocalRot0Attr) if side == 0 else \
        (joint_prim_api.CreateLocalPos1Attr, joint_prim_api.CreateLocalRot1Attr)
    pos(Gf.Vec3f(*map(float, m[:3, 3])))
    rot(Gf.Quatf(float(qw), float(qx), float(qy), float(qz)))


def _mass(prim, link) -> None:
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    api = UsdPhysics.MassAPI.Apply(prim)
    mass = link.mass if link.mass > 0 else MIN_LINK_MASS
    tensor = link.inertial[:3, :3] @ link.inertia @ link.inertial[:3, :3].T
    if link.mass <= 0 or not np.any(tensor):
        tensor = np.eye(3) * MIN_LINK_MASS * 1e-3
    vals, vecs = np.linalg.eigh((tensor + tensor.T) / 2)
    if np.linalg.det(vecs) < 0:
        vecs[:, 2] *= -1
    api.CreateMassAttr(float(mass))
    api.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, link.inertial[:3, 3])))
    api.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, np.maximum(vals, 1e-12))))
    qx, qy, qz, qw = matrix_to_quat(vecs)
    api.CreatePrincipalAxesAttr(Gf.Quatf(float(qw), float(qx), float(qy), float(qz)))


def _joint(stage, root: str, j: UrdfJoint, bodies: dict[str, tuple[str, np.ndarray]], home: float) -> None:
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    path = f"{root}/joints/{j.name}"
    parent, offset = bodies[j.parent]
    child, child_offset = bodies[j.child]
    turn = axis_frame(j.axis) if j.moving else np.eye(4)
    if j.type in ("revolute", "continuous"):
        joint = UsdPhysics.RevoluteJoint.Define(stage, path)
    elif j.type == "prismatic":
        joint = UsdPhysics.PrismaticJoint.Define(stage, path)
    else:
        joint = UsdPhysics.FixedJoint.Define(stage, path)
    joint.CreateBody0Rel().SetTargets([f"{root}/{parent}"])
    joint.CreateBody1Rel().SetTargets([f"{root}/{child}"])
    _local_frame(joint, offset @ j.origin @ turn, 0)
    _local_frame(joint, child_offset @ turn, 1)
    if not j.moving:
        return
    joint.CreateAxisAttr(UsdPhysics.Tokens.x)
    angular = j.type != "prismatic"
    unit = 180.0 / math.pi if angular else 1.0
    if j.lower is not None and j.upper is not None:
        joint.CreateLowerLimitAttr(float(j.lower * unit))
        joint.CreateUpperLimitAttr(float(j.upper * unit))
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular" if angular else "linear")
    drive.CreateTypeAttr("force")
    drive.CreateStiffnessAttr(float(DRIVE_STIFFNESS[j.type] / unit))
    drive.CreateDampingAttr(float(drive_damping(j.type) / unit))
    if j.effort:
        drive.CreateMaxForceAttr(float(j.effort))
    drive.CreateTargetPositionAttr(float(home * unit))
    joint.GetPrim().SetCustomDataByKey("scenegen:home", float(home * unit))


def _geometry(stage, link_path: str, link, offset: np.ndarray, parts, looks: str, physics_material) -> None:
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    for scope, items in (("visuals", parts), ("collisions", link.collisions)):
        if items and not stage.GetPrimAtPath(f"{link_path}/{scope}"):
            UsdGeom.Scope.Define(stage, f"{link_path}/{scope}")
    for part in parts:
        v = part.vertices @ offset[:3, :3].T + offset[:3, 3]
        geom = define_mesh(stage, f"{link_path}/visuals/{part.name}", SimpleNamespace(vertices=v, faces=part.faces),
                           with_uv=False)
        UsdShade.MaterialBindingAPI.Apply(geom.GetPrim()).Bind(color_material(stage, f"{looks}/{part.name}",
                                                                              part.rgba))
    for k, g in enumerate(link.collisions):
        geom = define_mesh(stage, f"{link_path}/collisions/{link.name}_c{k:02d}", load_mesh(g.mesh), with_uv=False,
                           transform=offset @ g.origin @ np.diag([*g.scale, 1.0]))
        geom.CreatePurposeAttr(UsdGeom.Tokens.guide)
        UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(geom.GetPrim()).CreateApproximationAttr(UsdPhysics.Tokens.convexHull)
        UsdShade.MaterialBindingAPI.Apply(geom.GetPrim()).Bind(
            physics_material, UsdShade.Tokens.weakerThanDescendants, "physics")


def write_robot_layer(out: Path, robot: RobotInfo, cameras: list[ExportCamera]) -> str:
    """Write ``robot/robot.usdc`` (the articulation at the robot base, home pose) and return its relative path.

    Raises:
        ExportError: a camera rides on a link the robot lacks.

    """
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    model = parse_urdf(robot.urdf)
    layer_path = out / LAYER
    layer_path.parent.mkdir(parents=True, exist_ok=True)
    if layer_path.exists():
        layer_path.unlink()
    stage = Usd.Stage.CreateNew(str(layer_path))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    root = "/Robot"
    top = UsdGeom.Xform.Define(stage, root)
    stage.SetDefaultPrim(top.GetPrim())
    base = pose_matrix(robot.base)
    set_transform(top, base)
    UsdPhysics.ArticulationRootAPI.Apply(top.GetPrim())
    top.GetPrim().SetCustomDataByKey("scenegen:robot", robot.name)
    looks = f"{root}/Looks"
    for scope in (looks, f"{root}/joints"):
        UsdGeom.Scope.Define(stage, scope)
    physics_material = UsdShade.Material.Define(stage, f"{looks}/physics")
    UsdPhysics.MaterialAPI.Apply(physics_material.GetPrim()).CreateStaticFrictionAttr(1.0)
    bodies = frame_links(model)
    home = model_link_poses(model, np.eye(4), robot.home)
    parts: dict[str, list] = {}
    for part in visual_parts(model):
        parts.setdefault(part.link, []).append(part)
    for link in model.links.values():
        body, offset = bodies[link.name]
        if body != link.name:
            set_transform(UsdGeom.Xform.Define(stage, f"{root}/{body}/{link.name}"), offset)
            continue
        xf = UsdGeom.Xform.Define(stage, f"{root}/{link.name}")
        set_transform(xf, home[link.name])
        UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
        _mass(xf.GetPrim(), link)
    for link in model.links.values():
        body, offset = bodies[link.name]
        _geometry(stage, f"{root}/{body}", link, offset, parts.get(link.name, []), looks, physics_material)
    fixed = UsdPhysics.FixedJoint.Define(stage, f"{root}/joints/{WORLD_JOINT}")
    fixed.CreateBody1Rel().SetTargets([f"{root}/{model.root}"])
    _local_frame(fixed, base, 0)
    _local_frame(fixed, np.eye(4), 1)
    for j in model.joints:
        if bodies[j.child][0] != j.child:
            continue  # a frame link, merged into its parent body
        _joint(stage, root, j, bodies, robot.home.get(j.name, 0.0))
    for cam in cameras:
        if cam.link not in bodies:
            raise ExportError(f"camera {cam.name!r} rides on link {cam.link!r}, which robot {robot.name} lacks; "
                              f"fix the scene's cameras")
        body, offset = bodies[cam.link]
        define_camera(stage, f"{root}/{body}/{cam.name}", cam, offset @ cam.pose)
    stage.GetRootLayer().Save()
    return LAYER
