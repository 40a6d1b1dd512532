"""SDF (SDFormat 1.7) export: a ``<world>`` with one ``<model>`` per object.

Each object is a model at its pose holding one link: ``<inertial>`` (mass, centre of mass,
full tensor), a visual mesh, one ``<collision>`` per collision element of the asset's URDF (a
convex mesh part, or the native box / cylinder / sphere) with ``<surface>`` friction
(``ode/mu``, ``mu2``) and restitution. The table is a ``<static>`` model; a ground plane model
lies 0.75 m below the table top. Mesh URIs are relative to the SDF file.

PyBullet's ``loadSDF`` reads models, links, inertials, poses, meshes, joints and ``<static>``,
but not ``<surface>`` friction: :func:`load_sdf` loads the file and applies each model's
friction and restitution with ``changeDynamics``.

With ``with_robot=True`` the robot URDF is converted to an SDF ``<model>`` (links placed by
forward kinematics at zero joint positions, joint frames at the child links, axes in the joint
frame) and its meshes are copied. SDF has no initial joint positions that PyBullet reads: the
robot comes in at zero joint positions; :func:`load_sdf` moves it to the home pose written
beside it (``robot/home.json``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.errors import ExportError
from scenegen.export._common import (
    GROUND_BELOW_TABLE,
    CollisionShape,
    ExportObject,
    collision_shapes,
    copy_assets,
    fmt,
    inertia_matrix,
    prepare_out_dir,
    scene_objects,
    urdf_origin,
    visual_texture,
)
from scenegen.export._robot import copy_robot, link_poses, robot_info
from scenegen.rotations import matrix_to_rpy, quat_to_rpy
from scenegen.scene import Pose, Scene

SDF_VERSION = "1.7"


def _text(parent: ET.Element, tag: str, value: str) -> ET.Element:
    el = ET.SubElement(parent, tag)
    el.text = value
    return el


def _pose(parent: ET.Element, xyz, rpy=(0.0, 0.0, 0.0)) -> None:
    _text(parent, "pose", fmt(*xyz, *rpy))


def _inertial(link: ET.Element, mass: float, com, tensor: np.ndarray, rpy=(0.0, 0.0, 0.0)) -> None:
    inertial = ET.SubElement(link, "inertial")
    _pose(inertial, com, rpy)
    _text(inertial, "mass", fmt(mass))
    it = ET.SubElement(inertial, "inertia")
    for tag, (r, c) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                           ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)), strict=False):
        _text(it, tag, fmt(tensor[r, c]))


def _mesh_geometry(parent: ET.Element, uri: str, scale=None) -> None:
    mesh = ET.SubElement(ET.SubElement(parent, "geometry"), "mesh")
    _text(mesh, "uri", uri)
    if scale is not None:
        _text(mesh, "scale", fmt(*scale))


def _object_model(world: ET.Element, obj: ExportObject) -> None:
    a = obj.asset
    model = ET.SubElement(world, "model", name=obj.node)
    _text(model, "static", "1" if obj.static else "0")  # PyBullet parses <static> as a number
    _pose(model, obj.pose.position, quat_to_rpy(obj.pose.orientation))
    link = ET.SubElement(model, "link", name="link")
    _inertial(link, a.mass, a.com, inertia_matrix(a))
    vis = ET.SubElement(link, "visual", name="visual")
    _mesh_geometry(vis, f"{obj.asset_rel}/{a.visual}")
    mat = ET.SubElement(vis, "material")
    color = (1.0, 1.0, 1.0, 1.0) if visual_texture(a) else tuple(a.rgba)
    _text(mat, "ambient", fmt(*color))
    _text(mat, "diffuse", fmt(*color))
    for k, shape in enumerate(collision_shapes(a)):
        col = ET.SubElement(link, "collision", name=f"collision_{k:03d}")
        if not np.allclose(shape.origin, np.eye(4)):
            _pose(col, shape.origin[:3, 3], matrix_to_rpy(shape.origin))
        _shape_geometry(col, obj, shape)
        surface = ET.SubElement(col, "surface")
        ode = ET.SubElement(ET.SubElement(surface, "friction"), "ode")
        _text(ode, "mu", fmt(a.friction))
        _text(ode, "mu2", fmt(a.friction))
        _text(ET.SubElement(surface, "bounce"), "restitution_coefficient", fmt(a.restitution))


def _shape_geometry(col: ET.Element, obj: ExportObject, shape: CollisionShape) -> None:
    if shape.kind == "mesh":
        _mesh_geometry(col, f"{obj.asset_rel}/{shape.mesh}", shape.size)
        return
    geom = ET.SubElement(ET.SubElement(col, "geometry"), shape.kind)
    if shape.kind == "box":
        _text(geom, "size", fmt(*shape.size))
    elif shape.kind == "cylinder":
        _text(geom, "radius", fmt(shape.size[0]))
        _text(geom, "length", fmt(shape.size[1]))
    else:
        _text(geom, "radius", fmt(shape.size[0]))


def _ground(world: ET.Element, z: float) -> None:
    model = ET.SubElement(world, "model", name="ground_plane")
    _text(model, "static", "1")
    _pose(model, (0.0, 0.0, z))
    link = ET.SubElement(model, "link", name="link")
    for tag in ("collision", "visual"):
        el = ET.SubElement(link, tag, name=tag)
        plane = ET.SubElement(ET.SubElement(el, "geometry"), "plane")
        _text(plane, "normal", "0 0 1")
        _text(plane, "size", "20 20")


# ----------------------------------------------------------------------------- URDF -> SDF
def _robot_model(world: ET.Element, urdf: Path, out: Path, name: str, base_xyz, base_rpy) -> None:
    root = ET.parse(urdf).getroot()
    rel = urdf.parent.relative_to(out).as_posix()
    joints = root.findall("joint")
    link_pose = link_poses(urdf, Pose((0.0, 0.0, 0.0)))  # in the model frame, joints at zero
    model = ET.SubElement(world, "model", name=name)
    _text(model, "static", "0")
    _pose(model, base_xyz, base_rpy)
    for lk in root.findall("link"):
        lname = lk.get("name")
        link = ET.SubElement(model, "link", name=lname)
        m = link_pose[lname]
        _pose(link, m[:3, 3], matrix_to_rpy(m))
        inert = lk.find("inertial")
        if inert is not None:
            o = urdf_origin(inert.find("origin"))
            i = inert.find("inertia")
            vals = {k: float(i.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")} if i is not None \
                else dict.fromkeys(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), 0.0)
            tensor = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]], [vals["ixy"], vals["iyy"], vals["iyz"]],
                               [vals["ixz"], vals["iyz"], vals["izz"]]])
            _inertial(link, float(inert.find("mass").get("value", 0.0)), o[:3, 3], tensor, matrix_to_rpy(o))
        for tag in ("visual", "collision"):
            for k, el in enumerate(lk.findall(tag)):
                mesh = el.find("geometry/mesh")
                if mesh is None:
                    continue  # the exported robots use meshes only
                g = ET.SubElement(link, tag, name=f"{tag}_{k}")
                o = urdf_origin(el.find("origin"))
                _pose(g, o[:3, 3], matrix_to_rpy(o))
                scale = [float(v) for v in mesh.get("scale").split()] if mesh.get("scale") else None
                _mesh_geometry(g, f"{rel}/{mesh.get('filename')}", scale)
    for j in joints:
        jtype = j.get("type")
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise ExportError(f"robot joint {j.get('name')} has type {jtype!r} that the SDF exporter does not "
                              f"convert; export without --with-robot")
        jel = ET.SubElement(model, "joint", name=j.get("name"), type=jtype)
        _text(jel, "parent", j.find("parent").get("link"))
        _text(jel, "child", j.find("child").get("link"))
        if jtype == "fixed":
            continue
        axis = ET.SubElement(jel, "axis")
        ax = j.find("axis")
        _text(axis, "xyz", ax.get("xyz", "1 0 0") if ax is not None else "1 0 0")
        lim = j.find("limit")
        if lim is not None:
            limit = ET.SubElement(axis, "limit")
            if jtype != "continuous":
                _text(limit, "lower", lim.get("lower", "0"))
                _text(limit, "upper", lim.get("upper", "0"))
            _text(limit, "effort", lim.get("effort", "-1"))
            _text(limit, "velocity", lim.get("velocity", "-1"))
        dyn = j.find("dynamics")
        if dyn is not None:
            d = ET.SubElement(axis, "dynamics")
            _text(d, "damping", dyn.get("damping", "0"))
            _text(d, "friction", dyn.get("friction", "0"))


def export_sdf(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as an SDFormat 1.7 world ``scene.sdf`` (PyBullet ``loadSDF`` loads it).

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: convert the robot URDF to an SDF model and add it at the robot base.

    Returns:
        Path of ``scene.sdf``.

    """
    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    copy_assets(objects, out)
    sdf = ET.Element("sdf", version=SDF_VERSION)
    world = ET.SubElement(sdf, "world", name=f"scene_{scene.id[:12]}")
    _text(world, "gravity", "0 0 -9.81")
    _ground(world, scene.table_height - GROUND_BELOW_TABLE)
    for obj in objects:
        _object_model(world, obj)
    home: dict[str, float] = {}
    if with_robot:
        robot = robot_info(scene)
        urdf = copy_robot(robot, out)
        if any(o.node == "robot" for o in objects):
            raise ExportError("a scene node is named 'robot', which the robot model needs; rename the node")
        _robot_model(world, urdf, out, "robot", scene.robot_base.position,
                     quat_to_rpy(scene.robot_base.orientation))
        home = robot.home
    ET.indent(sdf)
    path = out / "scene.sdf"
    ET.ElementTree(sdf).write(path, encoding="unicode", xml_declaration=True)
    if home:
        (out / "robot" / "home.json").write_text(json.dumps(home, indent=2) + "\n")
    return path


def load_sdf(path: str | Path, client: int = 0) -> dict[str, int]:
    """Load an exported ``scene.sdf`` into PyBullet and apply its friction and restitution.

    Args:
        path: the ``scene.sdf`` written by :func:`export_sdf`.
        client: PyBullet physics client id.

    Returns:
        Model name (node id, ``ground_plane``, ``robot``) -> PyBullet body id.

    Raises:
        ExportError: PyBullet cannot load the file.

    """
    import pybullet as p

    path = Path(path)
    try:
        bodies = p.loadSDF(str(path), physicsClientId=client)
    except p.error as exc:
        raise ExportError(f"PyBullet could not load {path} ({exc}); export the scene again") from None
    names = [m.get("name") for m in ET.parse(path).getroot().iter("model")]
    models = {m.get("name"): m for m in ET.parse(path).getroot().iter("model")}
    out = dict(zip(names, bodies, strict=False))
    for name, uid in out.items():
        mu = models[name].find("link/collision/surface/friction/ode/mu")
        rest = models[name].find("link/collision/surface/bounce/restitution_coefficient")
        if mu is not None:
            p.changeDynamics(uid, -1, lateralFriction=float(mu.text), rollingFriction=ROLLING_FRICTION,
                             spinningFriction=SPINNING_FRICTION, physicsClientId=client)
        if rest is not None:
            p.changeDynamics(uid, -1, restitution=float(rest.text), physicsClientId=client)
    home_file = path.parent / "robot" / "home.json"
    if "robot" in out and home_file.is_file():
        home = json.loads(home_file.read_text())
        uid = out["robot"]
        for j in range(p.getNumJoints(uid, physicsClientId=client)):
            jname = p.getJointInfo(uid, j, physicsClientId=client)[1].decode()
            if jname in home:
                p.resetJointState(uid, j, home[jname], physicsClientId=client)
    return out
