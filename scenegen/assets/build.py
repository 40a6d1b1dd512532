"""Asset building: any mesh becomes a finished asset folder; a procedural one through the cache.

:func:`finalize_asset` turns a :class:`ProceduralMesh` into an asset folder (physics,
collision parts, visual files, URDF, ``asset.json``); the procedural generator, the
user-mesh loader and the diffusion backends all call it. :func:`generate_asset` is the
procedural entry point, through the content-addressed cache.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import trimesh

from scenegen.assets.base import Asset
from scenegen.assets.cache import asset_key, fetch_or_build
from scenegen.assets.collision.build import build_collision
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.model_urdf import write_parts, write_urdf, write_visual
from scenegen.assets.physics import compute_physics
from scenegen.assets.procedural import GENERATOR_VERSION, ProceduralMesh, build_mesh
from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.errors import AssetError, ConfigError

log = logging.getLogger(__name__)

ATTRIBUTE_KEYS = ("color", "material", "size", "scale")
"""Attributes the generator understands."""


def validate_attributes(attributes: dict | None, catalog: Catalog) -> dict:
    """Check requested attributes against the catalog and return a plain copy.

    Raises:
        AssetError: an unknown colour, material or size class, a scale outside 0..1, or an
            unknown attribute name.

    """
    attrs = dict(attributes or {})
    unknown = sorted(set(attrs) - set(ATTRIBUTE_KEYS))
    if unknown:
        raise AssetError(f"unknown asset attribute(s) {', '.join(unknown)}; use {', '.join(ATTRIBUTE_KEYS)}")
    if "color" in attrs and attrs["color"] not in catalog.colors:
        raise AssetError(f"unknown colour {attrs['color']!r}; use one of {', '.join(sorted(catalog.colors))}")
    if "material" in attrs and attrs["material"] not in catalog.materials:
        raise AssetError(f"unknown material {attrs['material']!r}; use one of "
                         f"{', '.join(sorted(catalog.materials))}")
    if "size" in attrs and attrs["size"] not in catalog.size_classes:
        raise AssetError(f"unknown size {attrs['size']!r}; use one of {', '.join(catalog.size_classes)}")
    if "scale" in attrs:
        try:
            ok = 0.0 <= float(attrs["scale"]) <= 1.0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise AssetError(f"scale {attrs['scale']!r} is out of range; use a number in 0..1")
        attrs["scale"] = float(attrs["scale"])
    return attrs


def asset_rgba(category: Category, attributes: dict, catalog: Catalog) -> tuple[float, float, float, float]:
    """Colour of an asset: the ``color`` attribute, else the category's first colour."""
    name = attributes.get("color") or (category.colors[0] if category.colors else "gray")
    return tuple(float(x) for x in catalog.color_rgba(name))


def _to_frame(mesh: trimesh.Trimesh, name: str) -> tuple[trimesh.Trimesh, np.ndarray]:
    """Check a mesh is usable and move it to the asset frame (bbox bottom centre at the origin)."""
    if mesh is None or len(mesh.faces) == 0 or len(mesh.vertices) == 0:
        raise AssetError(f"{name}: mesh is empty; the generator produced no triangles")
    if not np.all(np.isfinite(mesh.vertices)):
        raise AssetError(f"{name}: mesh has NaN or infinite vertices; the generator is broken")
    lo, hi = mesh.bounds
    shift = -np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
    if np.abs(shift).max() > 1e-7:
        log.debug("%s: moved the mesh by %s into the asset frame", name, shift)
        mesh = mesh.copy()
        mesh.apply_translation(shift)
    else:
        shift = np.zeros(3)
    return mesh, shift


def _geometry(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Geometry only, vertices at the same place merged (texture seams split them in the visual)."""
    return trimesh.Trimesh(np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces), process=True)


def _shifted(parts: Callable[[float], list[trimesh.Trimesh]] | None,
             shift: np.ndarray) -> Callable[[float], list[trimesh.Trimesh]] | None:
    """A builder's parts moved like its mesh into the asset frame."""
    if parts is None or not np.any(shift):
        return parts

    def moved(tol: float) -> list[trimesh.Trimesh]:
        out = parts(tol)
        for p in out:
            p.apply_translation(shift)
        return out

    return moved


def finalize_asset(pm: ProceduralMesh, category: Category | str, source: str, seed: int,
                   attributes: dict | None, *, asset_id: str, out_dir: str | os.PathLike,
                   collision: CollisionConfig | None = None, cache_dir: str | os.PathLike | None = None,
                   catalog: Catalog | None = None, max_faces: int | None = None,
                   timings: dict | None = None,
                   shape: Callable[[], trimesh.Trimesh | None] | None = None) -> Asset:
    """Compute physics and collision for a mesh and write its asset folder.

    Args:
        pm: the mesh and its hints (cavity, primitive, grasp, params).
        category: catalog category (or its name).
        source: ``procedural``, ``library:<file>``, ``shap-e``...
        seed: seed recorded in the asset.
        attributes: requested attributes (color, material...).
        asset_id: the content hash naming the asset.
        out_dir: folder to write (created if needed).
        collision: collision settings.
        cache_dir: cache root (for the CoACD decomposition cache).
        catalog: catalog (default: :func:`load_catalog`).
        max_faces: triangle budget; a larger visual mesh logs a warning.
        timings: when given, filled with seconds per stage (``mesh`` is not included).
        shape: the same shape drawn without a size class or scale (its geometry, asset frame), which
            a CoACD decomposition is made from once for every size (None: this mesh).

    Returns:
        The :class:`Asset`, with ``path`` set to ``out_dir``.

    """
    catalog = catalog or load_catalog()
    cat = catalog.get(category) if isinstance(category, str) else category
    attrs = dict(attributes or {})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t = {"physics": 0.0, "collision": 0.0, "coacd": 0.0, "direct": 0.0, "files": 0.0}
    t0 = time.perf_counter()
    mesh, shift = _to_frame(pm.mesh, cat.name)
    geom = _geometry(mesh)
    if pm.closed and not geom.is_watertight:
        log.warning("%s: the object is closed but its mesh is not watertight", cat.name)
    if max_faces is not None and len(mesh.faces) > max_faces:
        log.warning("%s: %d visual triangles exceed the budget of %d", cat.name, len(mesh.faces), max_faces)
    physics = compute_physics(geom, cat, attrs, catalog)
    t1 = time.perf_counter()
    t["physics"] = t1 - t0
    col = build_collision(geom, collision, primitive=pm.primitive, cavity=pm.cavity,
                          cache_dir=cache_dir, name=cat.name, parts=_shifted(pm.parts, shift), shape=shape)
    t2 = time.perf_counter()
    t["collision"] = t2 - t1
    if col.method in ("coacd", "direct"):
        t[col.method] = col.seconds

    rgba = asset_rgba(cat, attrs, catalog)
    files = write_visual(mesh, out, rgba)
    parts = write_parts(col.parts, out)
    center = tuple(float(x) for x in mesh.bounds.mean(axis=0))
    write_urdf(out / "model.urdf", f"{cat.name}_{asset_id[:12]}", physics, rgba, parts,
               textured="texture.png" in files, primitive=col.primitive, primitive_center=center)
    extents = tuple(float(x) for x in mesh.extents)
    grasp = {"mode": "top", "width": float(min(extents[0], extents[1])), "height": extents[2] / 2}
    grasp.update({k: v for k, v in (pm.grasp or {}).items() if v is not None})
    for key, axis in (("x", 0), ("y", 1), ("height", 2)):  # positions follow the move into the frame
        if isinstance((pm.grasp or {}).get(key), (int, float)):
            grasp[key] = float(pm.grasp[key]) + float(shift[axis])
    params = dict(pm.params)
    params["physics"] = physics.to_dict()
    gap = col.stats.get("gap")
    params["collision"] = {"hulls": len(parts), "bbox_error": round(col.bbox_error, 6),
                           "gap": None if gap is None else round(gap, 6), "note": col.note,
                           "convexity_ratio": col.stats.get("convexity_ratio")}
    if "probes_open" in col.stats:
        params["collision"]["cavity_open"] = round(col.stats["probes_open"], 4)
    if col.primitive:
        params["collision"]["primitive"] = col.primitive
    asset = Asset(
        id=asset_id, category=cat.name, source=source, seed=int(seed), attributes=attrs,
        params=params, extents=extents, mass=physics.mass, com=physics.com, inertia=physics.inertia,
        friction=physics.friction, restitution=physics.restitution, rgba=rgba,
        collision_method=col.method, visual="visual.obj", collision=parts, urdf="model.urdf",
        volume=physics.volume, visual_faces=int(len(mesh.faces)), grasp=grasp, path=out,
    )
    (out / "asset.json").write_text(json.dumps(asset.to_dict(), indent=1, sort_keys=True))
    t["files"] = time.perf_counter() - t2
    if timings is not None:
        timings.update(t)
    return asset


def generate_asset(category: str, seed: int = 0, attributes: dict | None = None, *,
                   cache_dir: str | os.PathLike | None = None, collision: CollisionConfig | None = None,
                   max_faces: int = 5000, catalog: Catalog | None = None,
                   timings: dict | None = None) -> Asset:
    """Generate (or fetch from the cache) one procedural instance of a catalog category.

    Args:
        category: catalog category name.
        seed: seed of the instance parameters (``np.random.default_rng(seed)``).
        attributes: ``color``, ``material``, ``size`` (small/medium/large), ``scale`` (0..1).
        cache_dir: cache root (default ``$SCENEGEN_CACHE`` or ``~/.cache/scenegen/assets``).
        collision: collision settings (default :class:`CollisionConfig`).
        max_faces: visual triangle budget.
        catalog: catalog (default: :func:`load_catalog`).
        timings: when given, filled with seconds per stage and ``cached``.

    Returns:
        The :class:`Asset`; its id is the cache key.

    Raises:
        CatalogError: the category is unknown.
        AssetError: bad attributes, or the mesh could not be built.
        ConfigError: ``max_faces`` is too small.

    """
    catalog = catalog or load_catalog()
    cat = catalog.get(category)
    if int(max_faces) < 64:
        raise ConfigError(f"max_faces={max_faces} is too small; use at least 64")
    attrs = validate_attributes(attributes, catalog)
    config = collision or CollisionConfig()
    material = catalog.materials[attrs.get("material", cat.material)]
    key = asset_key(cat, "procedural", seed, attrs, collision=config, max_faces=max_faces,
                    generator_version=GENERATOR_VERSION, material=material)
    def shape() -> trimesh.Trimesh | None:
        # the same instance without a size class or scale: one CoACD decomposition for all its sizes
        unsized = {k: v for k, v in attrs.items() if k not in ("size", "scale")}
        if unsized == attrs:
            return None
        pm0 = build_mesh(cat, np.random.default_rng(seed), unsized, max_faces)
        return _geometry(_to_frame(pm0.mesh, cat.name)[0])

    def build(folder: Path) -> Asset:
        tm = time.perf_counter()
        pm = build_mesh(cat, np.random.default_rng(seed), attrs, max_faces)
        if timings is not None:
            timings["mesh"] = time.perf_counter() - tm
        return finalize_asset(pm, cat, "procedural", seed, attrs, asset_id=key, out_dir=folder,
                              collision=config, cache_dir=cache_dir, catalog=catalog,
                              max_faces=max_faces, timings=timings, shape=shape)

    return fetch_or_build(key, build, cache_dir, timings)
