"""Collision proxies: convex parts from CoACD, primitives, or the convex hull.

``method="auto"`` picks, per mesh: the builder's primitive (box, cylinder, sphere)
when it gave one and it fits the bounding box; CoACD for shapes with a cavity or a
noticeably concave outline; the convex hull for shapes that are already (nearly) convex;
and the convex hull, with a logged warning, when CoACD fails, crashes or runs out of time
(:mod:`scenegen.assets.collision.coacd` runs it in a helper process and caches the result).
CoACD's parts are merged down to ``max_hulls`` without bridging a container's cavity
(:func:`~scenegen.assets.collision.hulls.merge_parts` with air probes), then fitted to the visual
mesh's bounding box within ``bbox_tolerance``: parts poking out are cut at the box, a proxy
that came out short is stretched back.
"""

from __future__ import annotations

import logging
import os

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


def build_collision(mesh: trimesh.Trimesh, config: CollisionConfig | None = None, *,
                    primitive: dict | None = None, cavity: bool = False,
                    cache_dir: str | os.PathLike | None = None, name: str = "mesh") -> CollisionResult:
    """Build the collision proxy of a visual mesh.

    Args:
        mesh: visual mesh in the asset frame.
        config: collision settings (default :class:`CollisionConfig`).
        primitive: the builder's primitive hint (see ``ProceduralMesh.primitive``).
        cavity: the object has a cavity that the proxy must keep (forces CoACD in ``auto``).
        cache_dir: cache root holding the decomposition cache.
        name: name used in warnings.

    Returns:
        The :class:`CollisionResult`; its parts fit the visual bbox within ``bbox_tolerance``.

    """
    config = config or CollisionConfig()
    center = mesh.bounds.mean(axis=0)
    ratio = convexity_ratio(mesh)
    method = config.method
    if method == "auto":
        if primitive:
            method = "primitive"
        elif cavity or ratio is None or ratio < config.convex_ratio:
            method = "coacd"
        else:
            method = "hull"
    stats: dict = {"convexity_ratio": ratio}
    note, seconds, cached = "", 0.0, False
    prim = None
    if method == "primitive":
        prim = dict(primitive) if primitive else {"type": "box", "extents": [float(x) for x in mesh.extents]}
        parts = [primitive_mesh(prim, center)]
        err = bbox_error(parts, mesh)
        if err > config.bbox_tolerance and config.method == "auto":
            log.info("%s: the %s primitive misses the bbox by %.1f%%; decomposing instead", name,
                     prim["type"], 100 * err)
            return build_collision(mesh, config, cavity=cavity, cache_dir=cache_dir, name=name)
    elif method == "coacd":
        try:
            raw, seconds, cached = run_coacd(mesh, config, cache_dir)
            parts = as_convex(raw)
            stats["coacd_parts"] = len(raw)
            if not parts:
                raise AssetError("CoACD parts are all degenerate")
        except AssetError as exc:
            note = f"{exc}; used the convex hull instead"
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
