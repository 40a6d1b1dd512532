"""The robot for ``with_robot=True``: resolve it, copy its files, its URDF as data, forward kinematics.

Every exporter reads the robot through :func:`robot_info` (name, URDF, base pose, home
joint positions, end-effector link) and :func:`parse_urdf` (links with inertials, visuals and
collisions; joints with frames, axes, limits), so the formats agree on one description.
:data:`DRIVE_STIFFNESS` is the one table of joint drive gains that the MJCF actuators, the
USD drives and the SDF joint controllers share.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scenegen.errors import ExportError, ScenegenError
from scenegen.export._common import ROBOT_DIR, pose_matrix, urdf_origin
from scenegen.scene import Pose, Scene

DRIVE_STIFFNESS = {"revolute": 4000.0, "continuous": 4000.0, "prismatic": 800.0}
"""Position-drive stiffness per joint type (N m/rad, N/m); damping is :func:`drive_damping`."""
MIN_LINK_MASS = 1e-3
"""Mass (kg) given to a massless link that a moving joint drives (simulators reject mass 0 there)."""


def drive_damping(joint_type: str) -> float:
    """Damping of a joint's position drive: twice the square root of its stiffness (N m s/rad, N s/m)."""
    return 2.0 * DRIVE_STIFFNESS[joint_type] ** 0.5


@dataclass(frozen=True)
class RobotInfo:
    """The robot to carry along."""

    name: str
    """Robot name (``panda``)."""
    urdf: Path
    """Source URDF on disk."""
    home: dict[str, float]
    """Joint name -> home position (rad or m)."""
    base: Pose = field(default_factory=lambda: Pose((0.0, 0.0, 0.0)))
    """Pose of the robot base in the world."""
    ee_link: str = ""
    """End-effector link (the grasp point)."""


@dataclass(frozen=True)
class UrdfGeometry:
    """One mesh visual or collision element of a URDF link."""

    origin: np.ndarray
    """4x4 transform in the link frame (scale not included)."""
    mesh: Path
    """Mesh file on disk."""
    filename: str
    """The filename as the URDF writes it."""
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """Mesh scale."""


@dataclass(frozen=True)
class UrdfLink:
    """One URDF link: inertial and mesh geometry."""

    name: str
    """Link name."""
    mass: float
    """Mass (kg); 0 when the URDF gives none."""
    inertial: np.ndarray
    """4x4 inertial frame (centre of mass, inertia axes) in the link frame."""
    inertia: np.ndarray
    """3x3 inertia tensor in the inertial frame."""
    visuals: tuple[UrdfGeometry, ...] = ()
    """Visual meshes."""
    collisions: tuple[UrdfGeometry, ...] = ()
    """Collision meshes."""


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint."""

    name: str
    """Joint name."""
    type: str
    """``revolute``, ``continuous``, ``prismatic`` or ``fixed``."""
    parent: str
    """Parent link."""
    child: str
    """Child link."""
    origin: np.ndarray
    """4x4 joint frame in the parent link frame."""
    axis: np.ndarray
    """Unit axis in the joint frame."""
    lower: float | None = None
    """Lower limit (rad or m); None when unlimited."""
    upper: float | None = None
    """Upper limit (rad or m); None when unlimited."""
    effort: float | None = None
    """Force / torque limit (N, N m); None when the URDF gives none."""
    velocity: float | None = None
    """Velocity limit (rad/s, m/s); None when the URDF gives none."""
    damping: float = 0.0
    """Viscous damping."""
    friction: float = 0.0
    """Coulomb friction."""

    @property
    def moving(self) -> bool:
        """True for joints with a degree of freedom."""
        return self.type != "fixed"


@dataclass(frozen=True)
class UrdfModel:
    """A URDF robot as data."""

    links: dict[str, UrdfLink]
    """Link name -> link, in file order."""
    joints: tuple[UrdfJoint, ...]
    """Joints in file order."""
    root: str
    """The root (base) link."""

    def parent_joint(self, link: str) -> UrdfJoint | None:
        """The joint whose child is ``link`` (None for the root)."""
        return next((j for j in self.joints if j.child == link), None)


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
    return RobotInfo(name, Path(urdf), dict(zip(names, (float(v) for v in spec.home), strict=False)),
                     scene.robot_base, spec.ee_link)


def _resolve_mesh(filename: str, urdf_dir: Path) -> Path:
    for prefix in ("package://", "file://"):
        filename = filename.removeprefix(prefix)
    p = Path(filename)
    return p if p.is_absolute() else urdf_dir / p


def _geometries(link: ET.Element, tag: str, urdf_dir: Path) -> tuple[UrdfGeometry, ...]:
    out = []
    for el in link.findall(tag):
        mesh = el.find("geometry/mesh")
        if mesh is None:
            continue  # the exported robots use meshes only
        scale = tuple(float(v) for v in mesh.get("scale", "1 1 1").split())
        out.append(UrdfGeometry(urdf_origin(el.find("origin")), _resolve_mesh(mesh.get("filename", ""), urdf_dir),
                                mesh.get("filename", ""), scale if len(scale) == 3 else scale * 3))
    return tuple(out)


def _float(el: ET.Element | None, key: str) -> float | None:
    return None if el is None or el.get(key) is None else float(el.get(key))


def parse_urdf(urdf: Path) -> UrdfModel:
    """The robot URDF as data (mesh paths resolved against its folder).

    Raises:
        ExportError: the file is unreadable or not a single tree of links.

    """
    try:
        root = ET.parse(urdf).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ExportError(f"cannot read robot URDF {urdf} ({exc}); reinstall the robot's files") from None
    links = {}
    for lk in root.findall("link"):
        inert = lk.find("inertial")
        mass, frame, tensor = 0.0, np.eye(4), np.zeros((3, 3))
        if inert is not None:
            mass = _float(inert.find("mass"), "value") or 0.0
            frame = urdf_origin(inert.find("origin"))
            i = inert.find("inertia")
            v = {k: (_float(i, k) or 0.0) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
            tensor = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                               [v["ixz"], v["iyz"], v["izz"]]])
        links[lk.get("name")] = UrdfLink(lk.get("name"), mass, frame, tensor, _geometries(lk, "visual", urdf.parent),
                                         _geometries(lk, "collision", urdf.parent))
    joints = []
    for j in root.findall("joint"):
        jtype = j.get("type")
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise ExportError(f"robot joint {j.get('name')} has type {jtype!r} that the exporters do not "
                              f"convert; export without --with-robot")
        ax_el = j.find("axis")
        axis = np.array([float(v) for v in (ax_el.get("xyz", "1 0 0") if ax_el is not None else "1 0 0").split()])
        lim, dyn = j.find("limit"), j.find("dynamics")
        limited = jtype in ("revolute", "prismatic") and lim is not None
        joints.append(UrdfJoint(
            j.get("name"), jtype, j.find("parent").get("link"), j.find("child").get("link"),
            urdf_origin(j.find("origin")), axis / (np.linalg.norm(axis) or 1.0),
            _float(lim, "lower") if limited else None, _float(lim, "upper") if limited else None,
            _float(lim, "effort"), _float(lim, "velocity"), _float(dyn, "damping") or 0.0,
            _float(dyn, "friction") or 0.0))
    children = {j.child for j in joints}
    roots = [n for n in links if n not in children]
    if len(roots) != 1 or any(j.parent not in links or j.child not in links for j in joints):
        raise ExportError(f"robot URDF {urdf} is not one tree of links (roots {roots}); fix the URDF")
    return UrdfModel(links, tuple(joints), roots[0])


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


def joint_motion(joint: UrdfJoint, q: float) -> np.ndarray:
    """4x4 motion of a joint at position ``q`` in its joint frame (rotation or translation along the axis)."""
    m = np.eye(4)
    if joint.type in ("revolute", "continuous"):
        a = joint.axis
        k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        m[:3, :3] = np.eye(3) + np.sin(q) * k + (1 - np.cos(q)) * k @ k
    elif joint.type == "prismatic":
        m[:3, 3] = joint.axis * q
    return m


def model_link_poses(model: UrdfModel, base: np.ndarray, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """World transform of every link for joint positions ``q`` (missing joints at 0), base at ``base`` (4x4)."""
    q = q or {}
    parent = {j.child: j for j in model.joints}
    poses: dict[str, np.ndarray] = {}

    def pose_of(link: str) -> np.ndarray:
        if link not in poses:
            j = parent.get(link)
            poses[link] = base if j is None else pose_of(j.parent) @ j.origin @ joint_motion(j, q.get(j.name, 0.0))
        return poses[link]

    for name in model.links:
        pose_of(name)
    return poses


def link_poses(urdf: Path, base: Pose, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """World transform of every URDF link for joint positions ``q`` (missing joints at 0)."""
    return model_link_poses(parse_urdf(urdf), pose_matrix(base), q)


def frame_links(model: UrdfModel) -> dict[str, tuple[str, np.ndarray]]:
    """Massless links fixed to a parent with no geometry of their own: link -> (body link, offset 4x4).

    Such links (a flange, a grasp point) are frames, not bodies: formats that need a mass on every
    body (USD) merge them into the nearest ancestor body at the returned offset. Every other link
    maps to itself at the identity.
    """
    parent = {j.child: j for j in model.joints}
    out: dict[str, tuple[str, np.ndarray]] = {}

    def body_of(link: str) -> tuple[str, np.ndarray]:
        if link not in out:
            j, lk = parent.get(link), model.links[link]
            if j is not None and j.type == "fixed" and lk.mass <= 0 and not lk.visuals and not lk.collisions:
                body, off = body_of(j.parent)
                out[link] = (body, off @ j.origin)
            else:
                out[link] = (link, np.eye(4))
        return out[link]

    for name in model.links:
        body_of(name)
    return out
