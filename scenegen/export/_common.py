"""Shared bits of the exporters: which objects, which poses, copying files, robot data.

Every exporter writes a self-contained folder::

    out_dir/<main file>            scene.json / scene.xml / scene.sdf / scene.usda / scene.glb
    out_dir/assets/<asset_id>/...  the asset folders it needs (meshes, textures, model.urdf)
    out_dir/robot/...              the robot's URDF and meshes (``with_robot=True``)

and every path written inside the main file is relative to the main file's folder.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.errors import ExportError, PackError
from scenegen.fileio import write_file
from scenegen.pack.format import folder_files, regular_file, safe_path, sha256_bytes
from scenegen.rotations import quat_matrix, rpy_to_matrix
from scenegen.scene import Pose, Scene

GROUND_BELOW_TABLE = 0.75
"""The ground plane lies this far below the table top (as in :class:`scenegen.sim.world.WorldConfig`)."""
ASSET_DIR = "assets"
"""Folder (inside the export folder) holding one sub-folder per asset id."""
ROBOT_DIR = "robot"
"""Folder (inside the export folder) holding the robot's URDF and meshes."""


@dataclass(frozen=True)
class ExportObject:
    """One scene object as the exporters see it."""

    node: str
    """Scene-graph node id (also the body / link / prim name in every format)."""
    asset: Asset
    """The asset instance of the node (its folder must exist on disk)."""
    pose: Pose
    """Settled pose when the scene is settled, else the initial layout pose."""
    static: bool
    """True for the support (table): fixed to the world in every format."""

    @property
    def asset_rel(self) -> str:
        """Folder of the copied asset, relative to the export folder (posix)."""
        return f"{ASSET_DIR}/{self.asset.id}"


def scene_poses(scene: Scene) -> dict[str, Pose]:
    """Settled poses when the scene has them (falling back per node), else the initial poses."""
    poses = dict(scene.poses)
    if scene.settled:
        poses.update(scene.settled)
    return poses


def scene_objects(scene: Scene, assets: Mapping[str, Asset]) -> list[ExportObject]:
    """The scene's objects sorted by node id, each with its asset and export pose.

    Raises:
        ExportError: a node's asset is missing from ``assets``, has no folder, or the node has no pose.

    """
    poses = scene_poses(scene)
    support = {o.id for o in scene.graph.objects("support")}
    out = []
    for node in sorted(scene.assets):
        aid = scene.assets[node]
        asset = assets.get(aid)
        if asset is None:
            raise ExportError(f"scene {scene.id[:12]}: asset {aid[:12]} of node {node!r} is not in the asset "
                              f"lookup; pass the pack's assets (pack.asset_lookup)")
        if asset.path is None or not Path(asset.path).is_dir():
            raise ExportError(f"asset {aid[:12]} of node {node!r} has no folder on disk ({asset.path}); "
                              f"load it from its pack or regenerate it")
        if node not in poses:
            raise ExportError(f"scene {scene.id[:12]}: node {node!r} has no pose; run the layout first")
        out.append(ExportObject(node, asset, poses[node], node in support))
    if not out:
        raise ExportError(f"scene {scene.id[:12]} has no objects with assets; nothing to export")
    return out


def prepare_out_dir(out_dir: str | Path) -> Path:
    """Create ``out_dir`` (and parents); raise ExportError when that is impossible."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"output path {out} exists and is not a folder; pick another -o DIR")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot create output folder {out} ({exc.strerror}); pick another -o DIR") from None
    return out


def copy_assets(objects: list[ExportObject], out_dir: Path) -> None:
    """Copy each distinct asset's files to ``out_dir/assets/<asset_id>/``, as regular files.

    Only the files the asset's pack manifest lists are copied (``Asset.files``; for an asset not
    read from a pack, the regular files of its folder), each read as a regular file inside the
    asset folder (no symbolic link anywhere on its path) and, for a pack asset, only after its
    sha256 matches the manifest. Nothing is written through a link in the output folder either.

    Raises:
        ExportError: a listed file is missing, is a link or not a regular file, or differs from the manifest.

    """
    done: set[str] = set()
    for o in objects:
        if o.asset.id in done:
            continue
        done.add(o.asset.id)
        src = Path(o.asset.path).resolve()  # type: ignore[arg-type]
        if (out_dir / o.asset_rel).resolve() == src:
            continue
        for rel, expected in sorted(_asset_files(o.asset, src).items()):
            copy_file(src, rel, expected, out_dir.resolve(), f"{o.asset_rel}/{rel}", what=f"asset {o.asset.id[:12]}")


def _asset_files(asset: Asset, src: Path) -> dict[str, str | None]:
    if asset.files is not None:
        return dict(asset.files)
    try:
        return {rel: None for rel, _ in folder_files(src)}
    except PackError as exc:
        raise ExportError(f"asset {asset.id[:12]} cannot be exported: {exc.one_line()}") from None


def copy_file(src_root: Path, rel: str, expected: str | None, dst_root: Path, dst_rel: str, *, what: str) -> Path:
    """Copy the regular file ``src_root/rel`` to ``dst_root/dst_rel`` as a new regular file, checking its sha256.

    Args:
        src_root: Resolved folder the file must lie in (no link on the way is followed).
        rel: Its POSIX path relative to ``src_root``.
        expected: The sha256 it must have (None: not checked).
        dst_root: Resolved output folder; ``dst_rel`` must stay inside it without links.
        dst_rel: POSIX path of the copy relative to ``dst_root``.
        what: Names the owner of the file in errors.

    Raises:
        ExportError: the source is missing, a link, not a regular file or of another hash; the target is unsafe.

    """
    try:
        data = regular_file(safe_path(src_root, rel, f"{what} file"), f"{what} file {rel}").read_bytes()
        target = safe_path(dst_root, dst_rel, "export file")
    except FileNotFoundError:
        raise ExportError(f"{what} file {rel} is missing; run `scenegen info PACK --verify` and regenerate "
                          "the pack") from None
    except PackError as exc:
        raise ExportError(f"{what} cannot be exported: {exc.one_line()}") from None
    if expected is not None and sha256_bytes(data) != expected:
        raise ExportError(f"{what} file {rel} differs from the pack's manifest (sha256 {sha256_bytes(data)[:12]}, "
                          f"manifest says {expected[:12]}); the pack was changed after it was written: run "
                          "`scenegen info PACK --verify` and regenerate it")
    if target.exists() and not target.is_file():
        raise ExportError(f"cannot write {target}: something other than a file is there; pick another -o DIR")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file(target, data)
    except OSError as exc:
        raise ExportError(f"cannot write {target} ({exc.strerror}); pick another -o DIR") from None
    return target


def pose_matrix(pose: Pose) -> np.ndarray:
    """4x4 homogeneous transform of a pose."""
    m = np.eye(4)
    m[:3, :3] = quat_matrix(pose.orientation)
    m[:3, 3] = pose.position
    return m


def fmt(*values: float) -> str:
    """Format numbers for XML attributes: compact, deterministic, ``-0`` folded to ``0``."""
    return " ".join(f"{(0.0 if abs(v) < 1e-15 else float(v)):.9g}" for v in values)


def _fix_moments(vals: np.ndarray) -> np.ndarray:
    """Principal moments made strictly positive and obeying the triangle inequality."""
    vals = np.maximum(vals, max(float(vals.max()) * 1e-6, 1e-12))
    order = np.argsort(vals)
    a, b, c = vals[order]
    if c > a + b:
        vals[order[2]] = a + b
    return vals


def inertia_matrix(asset: Asset) -> np.ndarray:
    """The asset's 3x3 inertia tensor, symmetrised; repaired only if it is not physically valid.

    Every simulator rejects non-positive moments or moments that violate the triangle
    inequality; rounding in a mesh computation can produce either for thin objects.
    """
    i = np.asarray(asset.inertia, dtype=float).reshape(3, 3)
    i = (i + i.T) / 2
    vals, vecs = np.linalg.eigh(i)
    fixed = _fix_moments(vals.copy())
    if np.allclose(fixed, vals, rtol=0, atol=0):
        return i
    return vecs @ np.diag(fixed) @ vecs.T


def principal_inertia(asset: Asset) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments and the proper rotation (det +1) whose columns are the principal axes."""
    vals, vecs = np.linalg.eigh(inertia_matrix(asset))
    if np.linalg.det(vecs) < 0:
        vecs[:, 2] *= -1
    return _fix_moments(vals), vecs


_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def safe_name(name: str) -> str:
    """A name usable as an XML name and a USD prim name (node ids already are)."""
    if _NAME_OK.match(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if _NAME_OK.match(cleaned) else f"n_{cleaned}"


def visual_texture(asset: Asset) -> str | None:
    """Texture image of the visual mesh (``map_Kd`` of its material library), relative to the asset folder."""
    obj = asset.file(asset.visual)
    if obj.suffix.lower() != ".obj" or not obj.is_file():
        return None
    for line in obj.read_text(errors="ignore").splitlines():
        if line.startswith("mtllib "):
            mtl = obj.parent / line.split(None, 1)[1].strip()
            if not mtl.is_file():
                return None
            for ml in mtl.read_text(errors="ignore").splitlines():
                parts = ml.split()
                if parts and parts[0] == "map_Kd" and (mtl.parent / parts[-1]).is_file():
                    return (mtl.parent / parts[-1]).relative_to(Path(asset.path)).as_posix()  # type: ignore[arg-type]
    return None


@dataclass(frozen=True)
class CollisionShape:
    """One collision element of an asset, as its ``model.urdf`` (what PyBullet simulates) has it."""

    kind: str
    """``box``, ``cylinder``, ``sphere`` or ``mesh``."""
    size: tuple[float, ...]
    """box: full extents (x, y, z); cylinder: (radius, length) along z; sphere: (radius,); mesh: scale."""
    origin: np.ndarray
    """4x4 transform of the shape in the asset frame."""
    mesh: str | None = None
    """Mesh path relative to the asset folder (``mesh`` only)."""


def urdf_origin(el: ET.Element | None) -> np.ndarray:
    """4x4 transform of a URDF ``<origin xyz rpy>`` element (identity when absent)."""
    m = np.eye(4)
    if el is not None:
        m[:3, 3] = [float(v) for v in el.get("xyz", "0 0 0").split()]
        m[:3, :3] = rpy_to_matrix(tuple(float(v) for v in el.get("rpy", "0 0 0").split()))
    return m


def collision_shapes(asset: Asset) -> list[CollisionShape]:
    """The asset's collision shapes: native primitives or convex mesh parts, from its ``model.urdf``.

    Falls back to the ``collision`` part list (meshes at the origin) when the URDF names none.

    Raises:
        ExportError: the asset has no collision geometry or its URDF is unreadable.

    """
    folder = Path(asset.path)  # type: ignore[arg-type]
    urdf = asset.file(asset.urdf)
    shapes: list[CollisionShape] = []
    if urdf.is_file():
        try:
            root = ET.parse(urdf).getroot()
        except ET.ParseError as exc:
            raise ExportError(f"{urdf} is not valid XML ({exc}); regenerate the asset") from None
        for col in root.iter("collision"):
            geom = col.find("geometry")
            shape = geom[0] if geom is not None and len(geom) else None
            if shape is None:
                continue
            origin = urdf_origin(col.find("origin"))
            if shape.tag == "box":
                shapes.append(CollisionShape("box", tuple(float(v) for v in shape.get("size").split()), origin))
            elif shape.tag == "cylinder":
                shapes.append(CollisionShape("cylinder", (float(shape.get("radius")), float(shape.get("length"))),
                                             origin))
            elif shape.tag == "sphere":
                shapes.append(CollisionShape("sphere", (float(shape.get("radius")),), origin))
            elif shape.tag == "mesh":
                fn = shape.get("filename", "").removeprefix("package://").removeprefix("file://")
                path = (urdf.parent / fn).resolve()
                try:
                    rel = path.relative_to(folder.resolve()).as_posix()
                except ValueError:
                    raise ExportError(f"collision mesh {fn} of {urdf} lies outside the asset folder; "
                                      f"regenerate the asset") from None
                scale = tuple(float(v) for v in shape.get("scale", "1 1 1").split())
                shapes.append(CollisionShape("mesh", scale if len(scale) == 3 else scale * 3, origin, rel))
    if not shapes:
        shapes = [CollisionShape("mesh", (1.0, 1.0, 1.0), np.eye(4), rel) for rel in asset.collision]
    if not shapes:
        raise ExportError(f"asset {asset.id[:12]} ({asset.category}) has no collision geometry; regenerate it")
    return shapes
