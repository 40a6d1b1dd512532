"""The user's own meshes: an OBJ, GLB, STL or PLY file (or a folder of them) becomes an Asset.

The mesh is read with trimesh (a multi-part scene is concatenated), checked, lightly
repaired (merged vertices, consistent outward normals, small holes filled:
:func:`~scenegen.assets.mesh.repair.repair`), simplified to the triangle budget
(:func:`~scenegen.assets.mesh.simplify.simplify`), turned +z up and long side on +x
(:mod:`scenegen.assets.mesh.orient`), scaled uniformly so its extents fit the category's size
range (:func:`~scenegen.assets.mesh.fit.fit_scale`), and then finished like any procedural mesh
(:func:`~scenegen.assets.build.finalize_asset`). Colours and UVs are kept unless a hole is
filled or the mesh is simplified.
A broken mesh raises :class:`AssetError` naming the file and the problem: unreadable,
unsupported format, empty, NaN/inf vertices, flat (zero volume), open or non-manifold.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path

import numpy as np
import trimesh

from scenegen.assets.base import Asset
from scenegen.assets.build import finalize_asset, validate_attributes
from scenegen.assets.cache import asset_key, lookup, store
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.mesh.fit import fit_scale
from scenegen.assets.mesh.orient import orient_z_up, turn_long_side_to_x
from scenegen.assets.mesh.repair import edge_use, orient_outward, repair
from scenegen.assets.mesh.simplify import simplify
from scenegen.assets.procedural.registry import ProceduralMesh
from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import AssetError, ConfigError

log = logging.getLogger(__name__)

SUPPORTED = (".obj", ".glb", ".stl", ".ply")
"""File extensions read as meshes."""
LOADER_VERSION = "2"
"""Bump when loading or fitting changes its output: part of the cache key. 2: repair, orientation and
scaling through :mod:`scenegen.assets.mesh` (holes closed by a fan round their centroid; y-up turned
by the exact rotation of :func:`~scenegen.assets.mesh.orient.up_rotation`)."""
UP_AXES = ("auto", "z", "y")
"""``auto``: y-up for GLB (glTF's convention), z-up for the rest."""
HOLE_EDGES = 4
"""Largest hole (in boundary edges) closed in a user mesh: a missing triangle or quad; a larger
opening is the modeller's (an open surface), reported unless ``allow_open``."""
LONG_SIDE_TOL = 1e-4
"""The y side must be this fraction longer than x before the mesh is turned (a square stays put)."""


def _fail(path: Path, problem: str, todo: str) -> AssetError:
    return AssetError(f"{path.name}: {problem}; {todo}")


def read_mesh(path: str | os.PathLike) -> trimesh.Trimesh:
    """Read one mesh file (a scene's parts are concatenated) without changing it.

    Raises:
        AssetError: missing or unreadable file, unsupported extension, no triangles,
            non-finite vertices.

    """
    path = Path(path)
    if path.suffix.lower() not in SUPPORTED:
        raise _fail(path, f"unsupported mesh format {path.suffix or '(none)'!r}",
                    "use OBJ, GLB, STL or PLY")
    if not path.is_file():
        raise _fail(path, "file not found", "check the path")
    if path.stat().st_size == 0:
        raise _fail(path, "empty file (0 bytes)", "export the mesh again")
    try:
        mesh = trimesh.load(str(path), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types on malformed files
        raise _fail(path, f"unreadable mesh file ({type(exc).__name__}: {exc})",
                    "check it opens in a mesh viewer") from None
    if isinstance(mesh, trimesh.Scene):  # force="mesh" on an empty scene
        mesh = mesh.to_mesh() if len(mesh.geometry) else trimesh.Trimesh()
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0 or len(mesh.vertices) == 0:
        raise _fail(path, "empty mesh (no triangles)", "export the mesh with its faces")
    if not np.all(np.isfinite(np.asarray(mesh.vertices, dtype=float))):
        raise _fail(path, "NaN or infinite vertex coordinates", "fix or re-export the mesh")
    return mesh


def repair_mesh(mesh: trimesh.Trimesh, path: Path, *, allow_open: bool = False) -> trimesh.Trimesh:
    """Repair a user mesh (merge, wind, close holes of up to :data:`HOLE_EDGES` edges), then check it.

    Raises:
        AssetError: the mesh is flat, open or non-manifold after repair (unless ``allow_open``),
            or encloses no volume.

    """
    ext = mesh.extents
    if ext.max() <= 0 or ext.min() <= 1e-6 * ext.max():
        axis = "xyz"[int(np.argmin(ext))]
        raise _fail(path, f"zero volume (the mesh is flat along {axis})", "give the object thickness")
    m, _ = repair(mesh, max_hole_edges=HOLE_EDGES, keep_visual=True)
    if len(m.faces) == 0:
        raise _fail(path, "empty mesh (only degenerate triangles)", "export the mesh with its faces")
    if not m.is_watertight:
        _, uses = edge_use(m)
        boundary, nonmanifold = int((uses == 1).sum()), int((uses > 2).sum())
        if not allow_open:
            if nonmanifold:
                raise _fail(path, f"non-manifold ({nonmanifold} edges shared by more than two faces)",
                            "make it a single closed surface")
            raise _fail(path, f"not watertight (an open surface with {boundary} boundary edges that "
                        "could not be closed)", "close the holes, or pass allow_open=True")
        log.warning("%s: mesh is open; its convex hull stands in for the mass properties", path.name)
        return m
    if abs(m.volume) <= 1e-12 * max(ext.max() ** 3, 1e-30) or abs(m.volume) < 1e-15:
        raise _fail(path, "zero volume (the surface encloses nothing)", "give the object thickness")
    return m


def _orient(mesh: trimesh.Trimesh, up: str, suffix: str) -> tuple[trimesh.Trimesh, str, int]:
    """Turn the mesh +z up and its longer horizontal side onto +x; return it, the up axis used and the yaw."""
    if up not in UP_AXES:
        raise ConfigError(f"up={up!r} is unknown; use one of {', '.join(UP_AXES)}")
    used = ("y" if suffix == ".glb" else "z") if up == "auto" else up
    m = orient_z_up(mesh, used)
    yaw = 90 if turn_long_side_to_x(m, LONG_SIDE_TOL) else 0
    return m, used, yaw


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _simplified(mesh: trimesh.Trimesh, max_faces: int, path: Path) -> trimesh.Trimesh:
    if len(mesh.faces) <= max_faces:
        return mesh
    try:
        out, _ = simplify(mesh, max_faces)
    except AssetError as exc:
        log.warning("%s: kept all %d triangles (%s)", path.name, len(mesh.faces), exc)
        return mesh
    orient_outward(out)
    if mesh.is_watertight and not out.is_watertight:
        log.warning("%s: simplifying to %d triangles opened the mesh; kept all %d", path.name,
                    max_faces, len(mesh.faces))
        return mesh
    return out


def load_library_asset(path: str | os.PathLike, category: str, *, seed: int = 0,
                       attributes: dict | None = None, up: str = "auto", allow_open: bool = False,
                       max_faces: int | None = 5000, cache_dir: str | os.PathLike | None = None,
                       collision: CollisionConfig | None = None, catalog: Catalog | None = None) -> Asset:
    """Turn one mesh file into an Asset of ``category`` (cached by the file's content).

    Args:
        path: an OBJ, GLB, STL or PLY file.
        category: catalog category the object belongs to (sets its size range and physics).
        seed: recorded in the asset (CoACD uses the collision config's seed).
        attributes: ``color``, ``material``, ``size`` (picks within the size range).
        up: the file's up axis: ``auto`` (y for GLB, z otherwise), ``z`` or ``y``.
        allow_open: accept an open surface (mass properties then come from its convex hull).
        max_faces: simplify larger meshes to this many triangles (None: keep them all).
        cache_dir: cache root.
        collision: collision settings.
        catalog: catalog (default: :func:`load_catalog`).

    Returns:
        The :class:`Asset` (source ``library:<file name>``).

    Raises:
        AssetError: the file is missing, unreadable, of an unsupported format, or the mesh is
            empty, not finite, flat, open or non-manifold.
        CatalogError: the category is unknown.

    """
    path = Path(path)
    catalog = catalog or load_catalog()
    cat = catalog.get(category)
    attrs = validate_attributes(attributes, catalog)
    config = collision or CollisionConfig()
    raw = read_mesh(path)
    digest = _file_digest(path)
    material = catalog.materials[attrs.get("material", cat.material)]
    key = asset_key(cat, f"library:{digest}", seed, attrs, collision=config, max_faces=max_faces or 0,
                    generator_version=LOADER_VERSION, material=material,
                    extra={"up": up, "allow_open": allow_open})
    hit = lookup(key, cache_dir)
    if hit is not None:
        return hit
    mesh = repair_mesh(raw, path, allow_open=allow_open)
    if max_faces:
        mesh = _simplified(mesh, int(max_faces), path)
    mesh, used_up, yaw = _orient(mesh, up, path.suffix.lower())
    scale = fit_scale(mesh.extents, cat, attrs.get("size"), catalog)
    mesh.apply_scale(scale)
    params = {"file": path.name, "sha256": digest, "scale": scale, "up": used_up, "yaw_deg": yaw,
              "faces_in": int(len(raw.faces))}
    pm = ProceduralMesh(mesh, params, closed=mesh.is_watertight, cavity=cat.container)

    def build(folder: Path) -> Asset:
        return finalize_asset(pm, cat, f"library:{path.name}", seed, attrs, asset_id=key, out_dir=folder,
                              collision=config, cache_dir=cache_dir, catalog=catalog)

    return store(key, build, cache_dir)


def category_from_name(name: str, catalog: Catalog | None = None) -> str | None:
    """Guess a category from a file name: ``red_mug_02.obj`` -> ``mug`` (None when nothing matches)."""
    catalog = catalog or load_catalog()
    stem = Path(name).stem.lower()
    words = [w for w in re.split(r"[^a-z]+", stem) if w]
    # Longest phrases first, so "cutting board" wins over "board".
    for n in range(len(words), 0, -1):
        for i in range(len(words) - n + 1):
            phrase = " ".join(words[i:i + n])
            if phrase.replace(" ", "_") in catalog:
                return phrase.replace(" ", "_")
            hit = catalog.lookup(phrase)
            if hit is not None:
                return hit[0]
    return None


def load_library(folder: str | os.PathLike, category: str | None = None, *,
                 category_map: dict[str, str] | None = None, **kwargs) -> list[Asset]:
    """Turn every supported mesh file of a folder into an Asset (sorted by file name).

    The category of each file is ``category_map[file name]`` (or its stem), else ``category``,
    else guessed from the file name (:func:`category_from_name`). Files of other types are
    skipped.

    Args:
        folder: the folder to read (not recursive).
        category: category for every file not in ``category_map``.
        category_map: file name or stem -> category.
        **kwargs: passed to :func:`load_library_asset`.

    Raises:
        AssetError: the folder is missing or holds no mesh file, a file's category cannot be
            told, or a mesh is broken (the message names the file).

    """
    folder = Path(folder)
    if not folder.is_dir():
        raise AssetError(f"library folder {folder} not found; check the path")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED)
    if not files:
        raise AssetError(f"no OBJ, GLB, STL or PLY file in {folder}; add meshes or check the path")
    catalog = kwargs.get("catalog") or load_catalog()
    mapping = dict(category_map or {})
    assets = []
    for f in files:
        cat = mapping.get(f.name) or mapping.get(f.stem) or category or category_from_name(f.name, catalog)
        if cat is None:
            raise AssetError(f"{f.name}: cannot tell its category from the name; pass category= or "
                             "category_map={file: category}")
        assets.append(load_library_asset(f, cat, **kwargs))
    return assets
