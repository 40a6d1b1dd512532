"""Sizing a mesh for its category: scale into the catalog's size range, origin at the bottom centre.

Two policies: :func:`fit_to_category` draws target extents in the range (generated meshes,
:mod:`scenegen.assets.diffusion.assets`); :func:`fit_scale` is one deterministic uniform scale
(user meshes, :mod:`scenegen.assets.library`). :func:`to_asset_frame` puts a mesh's bounding-box
bottom centre at the origin (the asset frame of :mod:`scenegen.assets.base`).
"""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.errors import AssetError


def to_asset_frame(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Translate ``mesh`` (in place) so its bounding box's bottom centre is the origin; return it."""
    lo, hi = mesh.bounds
    mesh.apply_translation([-(lo[0] + hi[0]) / 2, -(lo[1] + hi[1]) / 2, -lo[2]])
    return mesh


def target_extents(category: Category, rng: np.random.Generator, attributes: dict | None = None,
                   size_classes: dict | None = None) -> np.ndarray:
    """Draw bounding-box extents (x, y, z) inside the category's size range.

    ``size`` (a size class: its band of the range) narrows the draw; ``scale`` (0..1)
    fixes the fraction of the band on every axis. Without ``scale`` one fraction is drawn
    in the band and each axis jitters around it by up to 12 % of the band.

    Raises:
        AssetError: unknown size class or a scale outside 0..1.

    """
    attributes = dict(attributes or {})
    lo_f, hi_f = 0.0, 1.0
    if attributes.get("size") is not None:
        if size_classes is None:
            size_classes = load_catalog().size_classes
        if attributes["size"] not in size_classes:
            raise AssetError(f"unknown size {attributes['size']!r}; use one of {', '.join(size_classes)}")
        lo_f, hi_f = size_classes[attributes["size"]]
    base = rng.uniform(lo_f, hi_f)
    jitter = rng.uniform(-0.12, 0.12, size=3) * (hi_f - lo_f)
    if attributes.get("scale") is not None:
        s = float(attributes["scale"])
        if not 0.0 <= s <= 1.0:
            raise AssetError(f"scale {s} is out of range; use a number in 0..1")
        frac = np.full(3, lo_f + s * (hi_f - lo_f))
    else:
        frac = np.clip(base + jitter, lo_f, hi_f)
    lo = np.asarray(category.size_min, dtype=float)
    hi = np.asarray(category.size_max, dtype=float)
    return lo + frac * (hi - lo)


def fit_to_category(mesh: trimesh.Trimesh, category: Category, rng: np.random.Generator,
                    attributes: dict | None = None, *, keep_proportions: bool = True,
                    size_classes: dict | None = None) -> tuple[trimesh.Trimesh, dict]:
    """Scale a cleaned mesh into the category's size range and put it in the asset frame.

    Target extents come from :func:`target_extents`. With ``keep_proportions`` one
    uniform factor (the geometric mean of the per-axis ratios) is applied, then any axis
    that falls outside ``[size_min, size_max]`` is clamped into it; otherwise each axis
    is scaled to its target.

    Returns:
        ``(mesh, params)`` where params records the target extents and scale factors.

    Raises:
        AssetError: the mesh is flat along some axis.

    """
    ext = np.asarray(mesh.extents, dtype=float)
    if ext.min() <= 1e-9 * max(ext.max(), 1e-30):
        raise AssetError(f"{category.name}: the mesh is flat (extents {ext.round(6).tolist()}); "
                         "try another seed or prompt")
    target = target_extents(category, rng, attributes, size_classes)
    ratio = target / ext
    if keep_proportions:
        scale = np.full(3, float(np.exp(np.log(ratio).mean())))
        lo, hi = np.asarray(category.size_min, float), np.asarray(category.size_max, float)
        scale = np.clip(ext * scale, lo, hi) / ext
    else:
        scale = ratio
    out = mesh.copy()
    out.apply_transform(np.diag([*scale, 1.0]))
    to_asset_frame(out)
    params = {"target_extents": [round(float(x), 6) for x in target],
              "scale": [round(float(x), 6) for x in scale], "keep_proportions": bool(keep_proportions)}
    return out, params


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
