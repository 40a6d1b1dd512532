"""Collision proxies: the builder's own convex parts, convex parts from CoACD, primitives, or the convex hull.

``method="auto"`` picks, per mesh: the builder's primitive (box, cylinder, sphere)
when it gave one and it fits the bounding box; the builder's own convex decomposition when
it has one (a procedural builder knows its shape: a revolved shell's floor and wall
sectors, a box's floor and walls, a handle's segments); CoACD for other shapes with a cavity
or a noticeably concave outline; the convex hull for shapes that are already (nearly) convex;
and the convex hull, with a logged warning, when CoACD fails, crashes or runs out of time
(:mod:`scenegen.assets.collision.coacd` runs it in a helper process and caches the result).
CoACD decomposes one mesh per *shape*: given ``shape`` (the same instance drawn without a
size class or scale), it decomposes that mesh and scales its parts to the asset's box, so the
sizes and scales of one shape share one decomposition.
CoACD's parts are merged down to ``max_hulls`` without bridging a container's cavity
(:func:`~scenegen.assets.collision.hulls.merge_parts` with air probes), then fitted to the visual
mesh's bounding box within ``bbox_tolerance``: parts poking out are cut at the box, a proxy
that came out short is stretched back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import numpy as np
import trimesh

from scenegen.assets.collision.coacd import run_coacd
from scenegen.assets.collision.config import CollisionConfig, CollisionResult
from scenegen.assets.collision.hulls import (
    air_probes,
    as_convex,
    bbox_error,
    covered,
    fit_to_bbox,
    merge_parts,
    part_equations,
    proxy_gap,
)
from scenegen.assets.collision.primitives import primitive_mesh
from scenegen.errors import AssetError

log = logging.getLogger(__name__)


def convexity_ratio(mesh: trimesh.Trimesh) -> float | None:
    """Volume of a closed mesh over its convex hull's volume (None when not watertight)."""
    if not mesh.is_watertight:
        return None
    hull_vol = mesh.convex_hull.volume
    return float(abs(mesh.volume) / hull_vol) if hull_vol > 0 else None


def _scaled(parts: list[trimesh.Trimesh], src: trimesh.Trimesh, dst: trimesh.Trimesh) -> list[trimesh.Trimesh]:
    """Parts of ``src`` mapped onto ``dst``'s bounding box (a per-axis scale: convex parts stay convex)."""
    lo, ext = src.bounds[0], np.maximum(src.extents, 1e-12)
    out = []
    for p in parts:
        q = p.copy()
        q.vertices = dst.bounds[0] + (np.asarray(p.vertices, dtype=float) - lo) * (dst.extents / ext)
        out.append(q)
    return out


def _coacd(mesh: trimesh.Trimesh, config: CollisionConfig, cache_dir, shape) -> tuple[list, float, bool]:
    """CoACD parts of ``mesh``: of its shape's mesh scaled onto it when ``shape`` gives one."""
    ref = shape() if shape is not None else None
    if ref is None or len(ref.faces) == 0:
        return run_coacd(mesh, config, cache_dir)
    raw, seconds, cached = run_coacd(ref, config, cache_dir)
    return _scaled(raw, ref, mesh), seconds, cached


def _finish(method: str, parts: list[trimesh.Trimesh], mesh: trimesh.Trimesh, config: CollisionConfig,
            cavity: bool, stats: dict, note: str, seconds: float, cached: bool,
            prim: dict | None) -> CollisionResult | None:
    """The result for ready parts, with their bbox error, gap and open cavity (None: off the bbox)."""
    err = bbox_error(parts, mesh)
    if err > config.bbox_tolerance:
        return None
    eqs = part_equations(parts) if cavity or method != "primitive" else None  # each hull once: probes, gap
    if cavity:
        probes = air_probes(mesh)
        if len(probes):
            stats["probes_open"] = float(1.0 - covered(parts, probes, eqs).mean())
    stats[f"{method}_parts"] = len(parts)
    stats["gap"] = proxy_gap(parts, np.asarray(mesh.vertices, dtype=float), eqs) if method != "primitive" else None
    return CollisionResult(method=method, parts=parts, primitive=prim, note=note, bbox_error=err,
                           seconds=seconds, cached=cached, stats=stats)


def build_collision(mesh: trimesh.Trimesh, config: CollisionConfig | None = None, *,
                    primitive: dict | None = None, cavity: bool = False,
                    cache_dir: str | os.PathLike | None = None, name: str = "mesh",
                    parts: Callable[[float], list[trimesh.Trimesh]] | None = None,
                    shape: Callable[[], trimesh.Trimesh | None] | None = None) -> CollisionResult:
    """Build the collision proxy of a visual mesh.

    Args:
        mesh: visual mesh in the asset frame.
        config: collision settings (default :class:`CollisionConfig`).
        primitive: the builder's primitive hint (see ``ProceduralMesh.primitive``).
        cavity: the object has a cavity that the proxy must keep (forces a decomposition in ``auto``).
        cache_dir: cache root holding the decomposition cache.
        name: name used in warnings.
        parts: the builder's own convex decomposition (``tolerance -> parts`` in the asset frame).
        shape: the mesh of the same shape drawn without a size class or scale, in its asset frame
            (None: this mesh is it); CoACD decomposes that one, once for all sizes.

    Returns:
        The :class:`CollisionResult`; its parts fit the visual bbox within ``bbox_tolerance``.

    """
    config = config or CollisionConfig()
    own = parts
    center = mesh.bounds.mean(axis=0)
    ratio = convexity_ratio(mesh)
    method = config.method
    if method == "direct" and own is None:
        method = "auto"                 # no structure known: decide as auto does
    if method == "auto":
        if primitive:
            method = "primitive"
        elif own is not None:
            method = "direct"
        elif cavity or ratio is None or ratio < config.convex_ratio:
            method = "coacd"
        else:
            method = "hull"
    stats: dict = {"convexity_ratio": ratio}
    note, seconds, cached = "", 0.0, False
    prim = None
    if method == "direct":
        t0 = time.perf_counter()
        got = own(config.direct_tolerance) if own is not None else []
        seconds = time.perf_counter() - t0
        if got:
            out = _finish("direct", got, mesh, config, cavity, stats, "", seconds, False, None)
            if out is not None:
                return out
            note = "the builder's parts miss the visual bbox; decomposed with CoACD instead"
        else:
            note = "the builder gave no parts; decomposed with CoACD instead"
        log.warning("%s: %s", name, note)
        method = "coacd"
    if method == "primitive":
        prim = dict(primitive) if primitive else {"type": "box", "extents": [float(x) for x in mesh.extents]}
        parts = [primitive_mesh(prim, center)]
        err = bbox_error(parts, mesh)
        if err > config.bbox_tolerance and config.method == "auto":
            log.info("%s: the %s primitive misses the bbox by %.1f%%; decomposing instead", name,
                     prim["type"], 100 * err)
            return build_collision(mesh, config, cavity=cavity, cache_dir=cache_dir, name=name, parts=own,
                                   shape=shape)
    elif method == "coacd":
        try:
            raw, seconds, cached = _coacd(mesh, config, cache_dir, shape)
            parts = as_convex(raw)
            stats["coacd_parts"] = len(raw)
            if not parts:
                raise AssetError("CoACD parts are all degenerate")
        except AssetError as exc:
            note = (note + "; " if note else "") + f"{exc}; used the convex hull instead"
            log.warning("%s: %s", name, note)
            method, parts = "hull", [mesh.convex_hull]
    else:
        parts = [mesh.convex_hull]
    if method == "coacd":
        probes = air_probes(mesh) if cavity else None
        parts = merge_parts(parts, config.max_hulls, probes=probes)
        parts = fit_to_bbox(parts, mesh, config.bbox_tolerance)
        if probes is not None and len(probes):
            stats["probes_open"] = float(1.0 - covered(parts, probes).mean())
    err = bbox_error(parts, mesh)
    if err > config.bbox_tolerance:
        note = (note + "; " if note else "") + f"proxy bbox off by {err:.1%}; used the convex hull"
        log.warning("%s: %s", name, note)
        method, parts, prim = "hull", [mesh.convex_hull], None
        err = bbox_error(parts, mesh)
    stats["gap"] = proxy_gap(parts, np.asarray(mesh.vertices, dtype=float)) if method != "primitive" else None
    return CollisionResult(method=method, parts=parts, primitive=prim, note=note, bbox_error=err,
                           seconds=seconds, cached=cached, stats=stats)
