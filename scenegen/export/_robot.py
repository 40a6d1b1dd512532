"""The robot for ``with_robot=True``: resolve it, copy its files, and URDF forward kinematics."""

from __future__ import annotations

import functools
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenegen.errors import ExportError, ScenegenError
from scenegen.export._common import ROBOT_DIR, pose_matrix, urdf_origin
from scenegen.scene import Pose, Scene


@dataclass(frozen=True)
class RobotInfo:
    """The robot to carry along."""

    name: str
    """Robot name (``panda``)."""
    urdf: Path
    """Source URDF on disk."""
    home: dict[str, float]
    """Joint name -> home position (rad or m)."""


@dataclass(frozen=True)
class RobotVisual:
    """One visual mesh of the robot placed in the world."""

    link: str
    """URDF link the mesh belongs to."""
    mesh: Path
    """Mesh file on disk."""
    transform: np.ndarray
    """4x4 world transform of the mesh (scale included)."""


def robot_info(scene: Scene) -> RobotInfo:
    """Resolve the scene's robot (via :func:`scenegen.sim.robots.get_robot`) to its URDF and home pose.

    Raises:
        ExportError: the robot is unknown or its URDF is missing.

    """
    from scenegen.sim.robots import get_robot

    name = scene.robot or "panda"
    try:
        spec = get_robot(name)
        urdf = spec.urdf_path()
    except ScenegenError as exc:
        raise ExportError(f"robot {name!r} of scene {scene.id[:12]} cannot be exported ({exc.one_line()}); "
                          f"export without --with-robot") from None
    names = tuple(spec.arm_joints) + tuple(spec.finger_joints)
    return RobotInfo(name, Path(urdf), dict(zip(names, (float(v) for v in spec.home), strict=False)))


def _resolve_mesh(filename: str, urdf_dir: Path) -> Path:
    for prefix in ("package://", "file://"):
        filename = filename.removeprefix(prefix)
    p = Path(filename)
    return p if p.is_absolute() else urdf_dir / p


def _copy_mesh(src: Path, dst: Path) -> None:
    """Copy a mesh file and, for OBJ, its material libraries and their texture maps."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    if src.suffix.lower() != ".obj":
        return
    for line in src.read_text(errors="ignore").splitlines():
        if not line.startswith("mtllib "):
            continue
        mtl = line.split(None, 1)[1].strip()
        if not (src.parent / mtl).is_file() or (dst.parent / mtl).exists():
            continue
        shutil.copy2(src.parent / mtl, dst.parent / mtl)
        for ml in (src.parent / mtl).read_text(errors="ignore").splitlines():
            parts = ml.split()
            if parts and parts[0].startswith("map_") and (src.parent / parts[-1]).is_file():
                (dst.parent / parts[-1]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src.parent / parts[-1], dst.parent / parts[-1])


def copy_robot(robot: RobotInfo, out_dir: Path) -> Path:
    """Copy the robot URDF and every mesh it names to ``out_dir/robot/``, mesh paths made relative.

    Returns:
        Path of the copied URDF (``out_dir/robot/<name>.urdf``).

    """
    rdir = out_dir / ROBOT_DIR
    rdir.mkdir(parents=True, exist_ok=True)
    tree = ET.parse(robot.urdf)
    src_dir = robot.urdf.parent
    for mesh in tree.getroot().iter("mesh"):
        fn = mesh.get("filename", "")
        src = _resolve_mesh(fn, src_dir)
        if not src.is_file():
            raise ExportError(f"robot mesh {fn} named in {robot.urdf} is missing; reinstall the robot's files")
        try:
            rel = src.resolve().relative_to(src_dir.resolve()).as_posix()
        except ValueError:
            rel = f"meshes/{src.name}"
        if not (rdir / rel).exists():
            _copy_mesh(src, rdir / rel)
        mesh.set("filename", rel)
    dst = rdir / f"{robot.name}.urdf"
    tree.write(dst, encoding="unicode")
    return dst


def _joint_motion(joint: ET.Element, q: float) -> np.ndarray:
    m = np.eye(4)
    axis_el = joint.find("axis")
    axis = np.array([float(v) for v in (axis_el.get("xyz", "1 0 0") if axis_el is not None else "1 0 0").split()])
    axis = axis / (np.linalg.norm(axis) or 1.0)
    if joint.get("type") in ("revolute", "continuous"):
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        m[:3, :3] = np.eye(3) + np.sin(q) * k + (1 - np.cos(q)) * k @ k
    elif joint.get("type") == "prismatic":
        m[:3, 3] = axis * q
    return m


def link_poses(urdf: Path, base: Pose, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """World transform of every URDF link for joint positions ``q`` (missing joints at 0)."""
    root = ET.parse(urdf).getroot()
    q = q or {}
    parent_joint = {j.find("child").get("link"): j for j in root.findall("joint")}
    poses: dict[str, np.ndarray] = {}
    base_m = pose_matrix(base)

    def pose_of(link: str) -> np.ndarray:
        if link not in poses:
            j = parent_joint.get(link)
            if j is None:
                poses[link] = base_m
            else:
                parent = pose_of(j.find("parent").get("link"))
                poses[link] = parent @ urdf_origin(j.find("origin")) @ _joint_motion(j, q.get(j.get("name"), 0.0))
        return poses[link]

    for lk in root.findall("link"):
        pose_of(lk.get("name"))
    return poses


def robot_visuals(urdf: Path, base: Pose, q: dict[str, float]) -> list[RobotVisual]:
    """The robot's visual meshes placed at joint positions ``q`` (forward kinematics of the URDF)."""
    poses = link_poses(urdf, base, q)
    out = []
    for lk in ET.parse(urdf).getroot().findall("link"):
        for vis in lk.findall("visual"):
            mesh = vis.find("geometry/mesh")
            if mesh is None:
                continue
            scale = np.eye(4)
            if mesh.get("scale"):
                scale[:3, :3] = np.diag([float(v) for v in mesh.get("scale").split()])
            t = poses[lk.get("name")] @ urdf_origin(vis.find("origin")) @ scale
            out.append(RobotVisual(lk.get("name"), _resolve_mesh(mesh.get("filename", ""), urdf.parent), t))
    return out


@functools.lru_cache(maxsize=64)
def _robot_mesh_cached(path: str, mtime: float):
    import trimesh

    mesh = trimesh.load(path, force="mesh")
    try:
        mesh.visual = mesh.visual.to_color()  # palette textures -> vertex colours (small, fast to write)
    except Exception:  # noqa: BLE001 - a mesh without usable texture keeps its visual
        pass
    return mesh


def robot_mesh(path: Path):
    """Load a robot visual mesh with vertex colours (cached per process; a copy is returned).

    Raises:
        ExportError: the mesh cannot be read.

    """
    try:
        mesh = _robot_mesh_cached(str(path), path.stat().st_mtime)
    except Exception as exc:  # trimesh raises many types for broken files
        raise ExportError(f"cannot read robot mesh {path} ({exc}); reinstall the robot's files") from None
    return mesh.copy()
