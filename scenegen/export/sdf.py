"""SDF (SDFormat 1.7) export: a ``<world>`` with one ``<model>`` per object, the cameras and the robot.

Each object is a model at its pose holding one link: ``<inertial>`` (mass, centre of mass,
full tensor), a visual mesh with its material (colour, and the texture as a PBR albedo map),
one ``<collision>`` per collision element of the asset's URDF (a convex mesh part, or the
native box / cylinder / sphere) whose ``<surface>`` carries the friction in every form Gazebo
reads (ODE ``mu``/``mu2``, torsional, Bullet with rolling friction) and the restitution. The
table is a ``<static>`` model; a ground plane model lies 0.75 m below the table top. Each
fixed scene camera is a static model ``camera_<name>`` holding a ``<sensor type="camera">``.
Mesh URIs are relative to the SDF file.

With ``with_robot=True`` the robot is the model ``robot`` (see :mod:`scenegen.export._sdf_robot`):
articulated, fixed to the world, starting at its home pose, with the cameras riding on it.

PyBullet's ``loadSDF`` reads models, links, inertials, poses, meshes, joints and ``<static>``,
but neither ``<surface>`` friction, joints to ``world``, nor initial joint positions:
:func:`load_sdf` loads the file the way the export means it. :func:`check_sdf` runs
libsdformat's own checker (the function behind ``gz sdf -k``).
"""

from __future__ import annotations

import ctypes.util
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.errors import ExportError
from scenegen.export._camera import export_cameras
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
    visual_texture,
)
from scenegen.export._robot import copy_robot, robot_info
from scenegen.export._sdf_robot import WORLD_JOINT, robot_model
from scenegen.export._sdf_xml import (
    CAMERA_MASS,
    camera_sensor,
    inertial,
    mesh_geometry,
    pose,
    pose_of_matrix,
    surface,
    text,
)
from scenegen.rotations import matrix_to_rpy, quat_to_rpy
from scenegen.scene import Scene

SDF_VERSION = "1.7"
ROBOT_MODEL = "robot"
"""Name of the robot's model."""
SDFORMAT_LIBS = ("sdformat16", "sdformat15", "sdformat14", "sdformat13", "sdformat12", "sdformat11", "sdformat9")
"""libsdformat versions :func:`check_sdf` looks for (each exports the ``cmdCheck`` of ``gz sdf -k``)."""
CHECK_SECONDS = 120.0
"""Wall-clock limit of one :func:`check_sdf` run."""


def _object_model(world: ET.Element, obj: ExportObject) -> None:
    a = obj.asset
    model = ET.SubElement(world, "model", name=obj.node)
    text(model, "static", "1" if obj.static else "0")  # PyBullet parses <static> as a number
    pose(model, obj.pose.position, quat_to_rpy(obj.pose.orientation))
    link = ET.SubElement(model, "link", name="link")
    inertial(link, a.mass, a.com, inertia_matrix(a))
    vis = ET.SubElement(link, "visual", name="visual")
    mesh_geometry(vis, f"{obj.asset_rel}/{a.visual}")
    mat = ET.SubElement(vis, "material")
    tex = visual_texture(a)
    color = (1.0, 1.0, 1.0, 1.0) if tex else tuple(a.rgba)
    text(mat, "ambient", fmt(*color))
    text(mat, "diffuse", fmt(*color))
    if tex:
        metal = ET.SubElement(ET.SubElement(mat, "pbr"), "metal")
        text(metal, "albedo_map", f"{obj.asset_rel}/{tex}")
        text(metal, "roughness", "0.6")
        text(metal, "metalness", "0")
    for k, shape in enumerate(collision_shapes(a)):
        col = ET.SubElement(link, "collision", name=f"collision_{k:03d}")
        if not np.allclose(shape.origin, np.eye(4)):
            pose(col, shape.origin[:3, 3], matrix_to_rpy(shape.origin))
        _shape_geometry(col, obj, shape)
        surface(col, a.friction, SPINNING_FRICTION, ROLLING_FRICTION, a.restitution)


def _shape_geometry(col: ET.Element, obj: ExportObject, shape: CollisionShape) -> None:
    if shape.kind == "mesh":
        mesh_geometry(col, f"{obj.asset_rel}/{shape.mesh}", shape.size)
        return
    geom = ET.SubElement(ET.SubElement(col, "geometry"), shape.kind)
    if shape.kind == "box":
        text(geom, "size", fmt(*shape.size))
    elif shape.kind == "cylinder":
        text(geom, "radius", fmt(shape.size[0]))
        text(geom, "length", fmt(shape.size[1]))
    else:
        text(geom, "radius", fmt(shape.size[0]))


def _ground(world: ET.Element, z: float) -> None:
    model = ET.SubElement(world, "model", name="ground_plane")
    text(model, "static", "1")
    pose(model, (0.0, 0.0, z))
    link = ET.SubElement(model, "link", name="link")
    for tag in ("collision", "visual"):
        el = ET.SubElement(link, tag, name=tag)
        plane = ET.SubElement(ET.SubElement(el, "geometry"), "plane")
        text(plane, "normal", "0 0 1")
        text(plane, "size", "20 20")
        if tag == "collision":
            surface(el, 1.0, SPINNING_FRICTION, ROLLING_FRICTION, None)


def export_sdf(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as an SDFormat 1.7 world ``scene.sdf`` (Gazebo; PyBullet through :func:`load_sdf`).

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: convert the robot URDF to an SDF model fixed to the world at the robot base.

    Returns:
        Path of ``scene.sdf``.

    Raises:
        ExportError: a model name is taken twice, or the robot or an asset cannot be exported.

    """
    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    copy_assets(objects, out)
    sdf = ET.Element("sdf", version=SDF_VERSION)
    world = ET.SubElement(sdf, "world", name=f"scene_{scene.id[:12]}")
    text(world, "gravity", "0 0 -9.81")
    _ground(world, scene.table_height - GROUND_BELOW_TABLE)
    for obj in objects:
        _object_model(world, obj)
    cameras = export_cameras(scene, with_robot)
    for cam in (c for c in cameras if c.link is None):
        model = ET.SubElement(world, "model", name=f"camera_{cam.name}")
        text(model, "static", "1")
        pose_of_matrix(model, np.eye(4))
        link = ET.SubElement(model, "link", name="link")
        inertial(link, CAMERA_MASS, (0.0, 0.0, 0.0), np.eye(3) * 1e-6)
        camera_sensor(link, cam)
    if with_robot:
        robot = robot_info(scene)
        urdf = copy_robot(robot, out)
        robot_model(world, robot, urdf, out, ROBOT_MODEL, [c for c in cameras if c.link])
    names = [m.get("name") for m in world.findall("model")]
    if len(set(names)) != len(names):
        raise ExportError(f"SDF model names {sorted({n for n in names if names.count(n) > 1})} are taken twice "
                          f"(scene nodes, cameras, robot); rename the scene nodes")
    ET.indent(sdf)
    path = out / "scene.sdf"
    ET.ElementTree(sdf).write(path, encoding="unicode", xml_declaration=True)
    return path


def _pybullet_copy(root: ET.Element, folder: Path) -> ET.Element:
    """The SDF as PyBullet loads it: absolute URIs; world joints dropped, their child link massless (fixed)."""
    root = ET.fromstring(ET.tostring(root))
    for uri in root.iter("uri"):
        uri.text = str((folder / uri.text.strip()).resolve())
    for model in root.iter("model"):
        for j in [j for j in model.findall("joint") if j.findtext("parent") == "world"]:
            model.remove(j)
            link = next(lk for lk in model.findall("link") if lk.get("name") == j.findtext("child"))
            mass = link.find("inertial/mass")
            if mass is None:
                text(ET.SubElement(link, "inertial"), "mass", "0")
            else:
                mass.text = "0"  # PyBullet fixes a base of mass 0
    return root


def load_sdf(path: str | Path, client: int = 0) -> dict[str, int]:
    """Load an exported ``scene.sdf`` into PyBullet as the export means it.

    PyBullet's ``loadSDF`` is used on a copy in which each joint to ``world`` becomes a fixed
    base; after loading, each model's friction (``ode/mu``, torsional, Bullet rolling) and
    restitution are applied and every joint is moved to its ``initial_position``.

    Args:
        path: the ``scene.sdf`` written by :func:`export_sdf`.
        client: PyBullet physics client id.

    Returns:
        Model name (node id, ``ground_plane``, ``camera_<name>``, ``robot``) -> PyBullet body id.

    Raises:
        ExportError: the file is unreadable or PyBullet cannot load it.

    """
    import pybullet as p

    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ExportError(f"cannot read {path} ({exc}); export the scene again") from None
    copy = _pybullet_copy(root, path.parent)
    with tempfile.TemporaryDirectory(prefix="scenegen_sdf_") as tmp:
        tmp_file = Path(tmp) / path.name
        ET.ElementTree(copy).write(tmp_file, encoding="unicode", xml_declaration=True)
        try:
            bodies = p.loadSDF(str(tmp_file), physicsClientId=client)
        except p.error as exc:
            raise ExportError(f"PyBullet could not load {path} ({exc}); export the scene again") from None
    models = list(root.iter("model"))
    out = {m.get("name"): uid for m, uid in zip(models, bodies, strict=False)}
    for model in models:
        uid = out[model.get("name")]
        fr = model.find("link/collision/surface/friction")
        rest = model.find("link/collision/surface/bounce/restitution_coefficient")
        if fr is not None and fr.find("ode/mu") is not None:
            p.changeDynamics(uid, -1, lateralFriction=float(fr.findtext("ode/mu")),
                             rollingFriction=float(fr.findtext("bullet/rolling_friction", str(ROLLING_FRICTION))),
                             spinningFriction=float(fr.findtext("torsional/coefficient", str(SPINNING_FRICTION))),
                             physicsClientId=client)
        if rest is not None:
            p.changeDynamics(uid, -1, restitution=float(rest.text), physicsClientId=client)
        initial = {j.get("name"): float(j.findtext("axis/initial_position"))
                   for j in model.findall("joint") if j.find("axis/initial_position") is not None}
        for j in range(p.getNumJoints(uid, physicsClientId=client)):
            jname = p.getJointInfo(uid, j, physicsClientId=client)[1].decode()
            if jname in initial:
                p.resetJointState(uid, j, initial[jname], physicsClientId=client)
    return out


def sdformat_library() -> str | None:
    """Path or name of an installed libsdformat (Debian: ``apt-get install libsdformat12-12``), or None."""
    for name in SDFORMAT_LIBS:
        found = ctypes.util.find_library(name)
        if found:
            return found
    return None


_CHECK = "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); sys.exit(lib.cmdCheck(sys.argv[2].encode()) & 0xFF)"


def check_sdf(path: str | Path) -> list[str]:
    """Check an SDF file with libsdformat, as ``gz sdf -k`` does (its ``cmdCheck``), in a child process.

    Returns:
        libsdformat's error lines; an empty list means the file is valid.

    Raises:
        ExportError: no libsdformat is installed, or the check ran past :data:`CHECK_SECONDS`.

    """
    lib = sdformat_library()
    if lib is None:
        raise ExportError("no libsdformat found to check SDF files; install it (Debian: apt-get install "
                          "libsdformat12-12) or use Gazebo's gz sdf -k")
    try:
        res = subprocess.run([sys.executable, "-c", _CHECK, lib, str(Path(path).resolve())], capture_output=True,
                             text=True, timeout=CHECK_SECONDS)
    except subprocess.TimeoutExpired:
        raise ExportError(f"libsdformat's check of {path} ran past {CHECK_SECONDS:.0f} s") from None
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip() and ln.strip() != "Valid."]
    if res.returncode == 0:
        return []
    return lines or [f"libsdformat rejected {path} (exit {res.returncode})"]


__all__ = ["WORLD_JOINT", "check_sdf", "export_sdf", "load_sdf", "sdformat_library"]
