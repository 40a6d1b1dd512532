"""The user's own meshes: an OBJ, GLB, STL or PLY file (or a folder of them) becomes an Asset.

The mesh is read with trimesh (a multi-part scene is concatenated), checked, lightly
repaired (merged vertices, consistent outward normals, filled holes), turned +z up and
long axis on +x, scaled uniformly so its extents fit the category's size range, and
then finished like any procedural mesh (:func:`~scenegen.assets.generate.finalize_asset`).
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
from scenegen.assets.cache import asset_key, lookup, store
from scenegen.assets.collision import CollisionConfig
from scenegen.assets.generate import finalize_asset, validate_attributes
from scenegen.assets.procedural import ProceduralMesh
from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.errors import AssetError, ConfigError

log = logging.getLogger(__name__)

SUPPORTED = (".obj", ".glb", ".stl", ".ply")
"""File extensions read as meshes."""
LOADER_VERSION = "1"
"""Bump when loading or fitting changes its output: part of the cache key."""
UP_AXES = ("auto", "z", "y")
"""``auto``: y-up for GLB (glTF's convention), z-up for the rest."""


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


def _edge_counts(mesh: trimesh.Trimesh) -> tuple[int, int]:
    """Numbers of boundary edges (one face) and non-manifold edges (more than two faces)."""
    groups = trimesh.grouping.group_rows(mesh.edges_sorted)
    counts = np.array([len(g) for g in groups]) if len(groups) else np.zeros(0, int)
    return int((counts == 1).sum()), int((counts > 2).sum())


def repair_mesh(mesh: trimesh.Trimesh, path: Path, *, allow_open: bool = False) -> trimesh.Trimesh:
    """Merge vertices, drop degenerate faces, fix normals and fill holes; then check the volume.

    Raises:
        AssetError: the mesh is flat, open or non-manifold after repair (unless ``allow_open``),
            or encloses no volume.

    """
    ext = mesh.extents
    if ext.max() <= 0 or ext.min() <= 1e-6 * ext.max():
        axis = "xyz"[int(np.argmin(ext))]
        raise _fail(path, f"zero volume (the mesh is flat along {axis})", "give the object thickness")
    m = mesh.copy()
    m.merge_vertices()
    m.update_faces(m.nondegenerate_faces())
    m.update_faces(m.unique_faces())
    m.remove_unreferenced_vertices()
    if len(m.faces) == 0:
        raise _fail(path, "empty mesh (only degenerate triangles)", "export the mesh with its faces")
    trimesh.repair.fix_normals(m)
    if not m.is_watertight:
        trimesh.repair.fill_holes(m)
        trimesh.repair.fix_normals(m)
    if not m.is_watertight:
        boundary, nonmanifold = _edge_counts(m)
        if not allow_open:
            if nonmanifold:
                raise _fail(path, f"non-manifold ({nonmanifold} edges shared by more than two faces)",
                            "make it a single closed surface")
            raise _fail(path, f"not watertight (an open surface with {boundary} boundary edges that "
                        "could not be closed)", "close the holes, or pass allow_open=True")
        log.warning("%s: mesh is open; its convex hull stands in for the mass properties", path.name)
        return m
    if m.volume < 0:
        m.invert()
    if abs(m.volume) <= 1e-12 * max(ext.max() ** 3, 1e-30) or abs(m.volume) < 1e-15:
        raise _fail(path, "zero volume (the surface encloses nothing)", "give the object thickness")
    return m


def _orient(mesh: trimesh.Trimesh, up: str, suffix: str) -> tuple[trimesh.Trimesh, str, int]:
    """Turn the mesh +z up and its longer horizontal side onto +x."""
    if up not in UP_AXES:
        raise ConfigError(f"up={up!r} is unknown; use one of {', '.join(UP_AXES)}")
    used = ("y" if suffix == ".glb" else "z") if up == "auto" else up
    m = mesh.copy()
    if used == "y":
        m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
    yaw = 0
    if m.extents[1] > m.extents[0] * 1.0001:
        m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 0, 1]))
        yaw = 90
    return m, used, yaw


def fit_scale(extents: np.ndarray, category: Category, size: str | None = None,
              catalog: Catalog | None = None) -> float:
    """Uniform scale that brings ``extents`` into the category's size range.

    When no single scale fits every axis, the one with the smallest worst relative
    violation is used. A ``size`` class (small/medium/large) picks the matching part of
    the feasible range; without it the geometric middle is used.
    """
    e = np.maximum(np.asarray(extents, dtype=float), 1e-12)
    lo = np.asarray(category.size_min) / e
    hi = np.asarray(category.size_max) / e
    s_lo, s_hi = float(lo.max()), float(hi.min())
    if s_lo >= s_hi or not size:
        return float(np.sqrt(s_lo * s_hi))
    catalog = catalog or load_catalog()
    a, b = catalog.size_classes[size]
    t = (a + b) / 2
    return float(np.exp(np.log(s_lo) + t * (np.log(s_hi) - np.log(s_lo))))


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _simplified(mesh: trimesh.Trimesh, max_faces: int, path: Path) -> trimesh.Trimesh:
    if len(mesh.faces) <= max_faces:
        return mesh
    from scenegen.assets.mesh_cleanup import simplify

    try:
        out, _ = simplify(mesh, max_faces)
    except AssetError as exc:
        log.warning("%s: kept all %d triangles (%s)", path.name, len(mesh.faces), exc)
        return mesh
    trimesh.repair.fix_normals(out)
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
