"""URDF export: one URDF per object plus a scene file of poses, and a single whole-scene URDF.

Files written::

    scene.json       objects (urdf path, pose, fixed flag), robot, pointers; read by :func:`load_scene`
    scene.urdf       the whole scene as one URDF: a root ``world`` link and every object
                     attached by a *fixed* joint at its pose (a static snapshot; see below)
    assets/<id>/model.urdf (+ meshes)   one URDF per asset, meshes relative to it
    robot/<name>.urdf (+ meshes)        with ``with_robot=True``

URDF has no free-floating joint that PyBullet (or most URDF consumers) will load, so the
single-file ``scene.urdf`` is a static snapshot: good for viewing, collision checking and
rendering. For simulation use ``scene.json`` (one free body per object) via :func:`load_scene`.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from scenegen.assets.base import Asset
from scenegen.errors import ExportError
from scenegen.export._common import (
    GROUND_BELOW_TABLE,
    ExportObject,
    copy_assets,
    fmt,
    prepare_out_dir,
    scene_objects,
)
from scenegen.export._robot import RobotInfo, copy_robot, robot_info
from scenegen.rotations import quat_to_rpy
from scenegen.scene import Scene

SCENE_FILE_FORMAT = "scenegen-urdf-scene"
SCENE_FILE_VERSION = 1


def _parse(path: Path) -> ET.ElementTree:
    try:
        return ET.parse(path)
    except (ET.ParseError, OSError) as exc:
        raise ExportError(f"cannot read URDF {path} ({exc}); regenerate the asset") from None


def _relativise_meshes(root: ET.Element, asset_dir: Path, prefix: str) -> None:
    """Make every mesh filename ``prefix + path relative to the asset folder``."""
    for mesh in root.iter("mesh"):
        fn = mesh.get("filename", "")
        p = Path(fn.removeprefix("package://").removeprefix("file://"))
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(asset_dir.resolve())
            except ValueError:
                raise ExportError(f"mesh {fn} of {asset_dir / 'model.urdf'} lies outside the asset folder; "
                                  f"regenerate the asset") from None
        mesh.set("filename", prefix + p.as_posix())


def _object_links(obj: ExportObject, out_dir: Path) -> tuple[list[ET.Element], str]:
    """Links, joints and materials of the object's copied model.urdf, renamed ``<node>__<name>``.

    Returns:
        The elements and the name of the object's root link.

    """
    adir = out_dir / obj.asset_rel
    root = copy.deepcopy(_parse(adir / obj.asset.urdf).getroot())
    _relativise_meshes(root, adir, obj.asset_rel + "/")
    links = [e.get("name") for e in root.findall("link")]
    if not links:
        raise ExportError(f"{adir / obj.asset.urdf} has no <link>; regenerate the asset")
    children = {j.find("child").get("link") for j in root.findall("joint") if j.find("child") is not None}
    root_link = next(n for n in links if n not in children)
    ren = {n: f"{obj.node}__{n}" for n in links}
    mats = {m.get("name"): f"{obj.node}__{m.get('name')}" for m in root.findall("material")}
    out = []
    for el in root:
        if el.tag == "link":
            el.set("name", ren[el.get("name")])
        elif el.tag == "joint":
            el.set("name", f"{obj.node}__{el.get('name')}")
            for tag in ("parent", "child"):
                sub = el.find(tag)
                if sub is not None:
                    sub.set("link", ren.get(sub.get("link"), sub.get("link")))
        elif el.tag == "material":
            el.set("name", mats[el.get("name")])
        else:
            continue
        for m in el.iter("material"):
            if m is not el and m.get("name") in mats:
                m.set("name", mats[m.get("name")])
        out.append(el)
    return out, ren[root_link]


def _fixed_joint(name: str, parent: str, child: str, position, orientation) -> ET.Element:
    j = ET.Element("joint", name=name, type="fixed")
    ET.SubElement(j, "parent", link=parent)
    ET.SubElement(j, "child", link=child)
    ET.SubElement(j, "origin", xyz=fmt(*position), rpy=fmt(*quat_to_rpy(orientation)))
    return j


def _robot_elements(robot_urdf: Path, out_dir: Path, taken: set[str]) -> tuple[list[ET.Element], str]:
    root = _parse(robot_urdf).getroot()
    rel = robot_urdf.parent.relative_to(out_dir).as_posix() + "/"
    for mesh in root.iter("mesh"):
        mesh.set("filename", rel + mesh.get("filename", ""))
    names = [e.get("name") for e in root if e.tag in ("link", "joint")]
    clash = sorted(set(names) & taken)
    if clash:
        raise ExportError(f"robot link/joint names {clash} clash with scene node names; rename the nodes")
    children = {j.find("child").get("link") for j in root.findall("joint")}
    base = next(e.get("name") for e in root.findall("link") if e.get("name") not in children)
    return [e for e in root if e.tag in ("link", "joint", "material")], base


def _write_single_urdf(scene: Scene, objects: list[ExportObject], out_dir: Path,
                       robot_urdf: Path | None) -> Path:
    robot = ET.Element("robot", name=f"scene_{scene.id[:12]}")
    robot.append(ET.Comment(" static snapshot: every object is fixed to 'world' at its pose; "
                            "simulate with scene.json instead "))
    ET.SubElement(robot, "link", name="world")
    taken = {"world"}
    for obj in objects:
        elements, root_link = _object_links(obj, out_dir)
        robot.extend(elements)
        robot.append(_fixed_joint(f"world_to_{obj.node}", "world", root_link, obj.pose.position,
                                  obj.pose.orientation))
        taken |= {e.get("name") for e in elements}
    if robot_urdf is not None:
        elements, base = _robot_elements(robot_urdf, out_dir, taken)
        robot.extend(elements)
        robot.append(_fixed_joint("world_to_robot", "world", base, scene.robot_base.position,
                                  scene.robot_base.orientation))
    ET.indent(robot)
    path = out_dir / "scene.urdf"
    ET.ElementTree(robot).write(path, encoding="unicode", xml_declaration=True)
    return path


def export_urdf(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as per-object URDFs + ``scene.json`` (+ the static ``scene.urdf``).

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: copy the robot URDF and meshes and list the robot in the scene file.

    Returns:
        Path of ``scene.json``.

    """
    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    copy_assets(objects, out)
    robot: RobotInfo | None = robot_info(scene) if with_robot else None
    robot_urdf = copy_robot(robot, out) if robot else None
    single = _write_single_urdf(scene, objects, out, robot_urdf)
    data = {
        "format": SCENE_FILE_FORMAT,
        "version": SCENE_FILE_VERSION,
        "scene_id": scene.id,
        "instruction": scene.graph.instruction,
        "poses": "settled" if scene.settled else "initial",
        "ground_z": scene.table_height - GROUND_BELOW_TABLE,
        "objects": [{
            "name": o.node,
            "category": o.asset.category,
            "asset": o.asset.id,
            "urdf": f"{o.asset_rel}/{o.asset.urdf}",
            "position": list(o.pose.position),
            "orientation": list(o.pose.orientation),
            "fixed": o.static,
        } for o in objects],
        "robot": None if robot is None else {
            "name": robot.name,
            "urdf": robot_urdf.relative_to(out).as_posix(),  # type: ignore[union-attr]
            "position": list(scene.robot_base.position),
            "orientation": list(scene.robot_base.orientation),
            "fixed": True,
            "joint_positions": dict(robot.home),
        },
        "single_urdf": single.name,
    }
    path = out / "scene.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def load_scene(path: str | Path, client: int = 0, ground: bool = False) -> dict[str, int]:
    """Load an exported ``scene.json`` into a connected PyBullet client.

    Args:
        path: the ``scene.json`` written by :func:`export_urdf`.
        client: PyBullet physics client id.
        ground: also load ``pybullet_data``'s plane at the scene's ``ground_z``.

    Returns:
        Object name (node id, ``"robot"`` and ``"ground"`` when loaded) -> PyBullet body id.

    Raises:
        ExportError: the file is not a scenegen URDF scene file or a URDF fails to load.

    """
    import pybullet as p

    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"cannot read {path} ({exc}); export the scene again") from None
    if data.get("format") != SCENE_FILE_FORMAT:
        raise ExportError(f"{path} is not a scenegen URDF scene file; export with --format urdf")
    entries = [dict(o) for o in data["objects"]]
    if data.get("robot"):
        entries.append({**data["robot"], "name": "robot"})
    bodies = {}
    for e in entries:
        urdf = path.parent / e["urdf"]
        try:
            uid = p.loadURDF(str(urdf), e["position"], e["orientation"], useFixedBase=bool(e["fixed"]),
                             flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        except p.error as exc:
            raise ExportError(f"PyBullet could not load {urdf} ({exc}); export the scene again") from None
        bodies[e["name"]] = uid
        home = e.get("joint_positions") or {}
        for j in range(p.getNumJoints(uid, physicsClientId=client)):
            jname = p.getJointInfo(uid, j, physicsClientId=client)[1].decode()
            if jname in home:
                p.resetJointState(uid, j, home[jname], physicsClientId=client)
    if ground:
        import pybullet_data

        bodies["ground"] = p.loadURDF(str(Path(pybullet_data.getDataPath()) / "plane.urdf"),
                                      [0.0, 0.0, float(data.get("ground_z", 0.0))], useFixedBase=True,
                                      physicsClientId=client)
    return bodies
