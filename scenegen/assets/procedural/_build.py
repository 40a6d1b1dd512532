"""Instance sizes and the final clean-up shared by every procedural builder.

Size draws (catalog range + ``size``/``scale`` attributes) and :func:`finalize`,
which cleans, scales and places a mesh in the asset frame, plus the validity check
and the face-budget loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import trimesh

from scenegen.assets.procedural._geom import signed_volume
from scenegen.assets.procedural.registry import ProceduralMesh
from scenegen.catalog import Category, load_catalog
from scenegen.errors import AssetError, CatalogError

_DEFAULT_SIZE_CLASSES = {"small": (0.0, 0.33), "medium": (0.33, 0.67), "large": (0.67, 1.0)}


# --------------------------------------------------------------------------- sizes

def size_band(attributes: dict) -> tuple[float, float]:
    """Fraction band of the size range selected by the ``size`` attribute (``(0, 1)`` if none)."""
    size = attributes.get("size")
    if size is None:
        return 0.0, 1.0
    try:
        classes = load_catalog().size_classes or _DEFAULT_SIZE_CLASSES
    except CatalogError:            # no readable catalog: fall back to the standard bands
        classes = _DEFAULT_SIZE_CLASSES
    if size not in classes:
        raise AssetError(f"unknown size {size!r}; use one of {', '.join(sorted(classes))}")
    lo, hi = classes[size]
    return float(lo), float(hi)


def draw_fractions(rng: np.random.Generator, attributes: dict, jitter: float = 0.12) -> np.ndarray:
    """Draw one fraction per axis (x, y, z) of the catalog size range.

    Without ``scale`` a base fraction is drawn inside the size band and each axis is
    jittered around it (so aspect ratios vary). With ``scale`` (0..1) every axis uses
    that exact fraction of the band. The rng is always advanced by the same amount.
    """
    lo, hi = size_band(attributes)
    base = rng.uniform(lo, hi)
    jit = rng.uniform(-jitter, jitter, size=3) * (hi - lo)
    scale = attributes.get("scale")
    if scale is not None:
        try:
            s = float(scale)
        except (TypeError, ValueError):
            raise AssetError(f"scale must be a number in [0, 1], got {scale!r}") from None
        if not 0.0 <= s <= 1.0:
            raise AssetError(f"scale must be in [0, 1], got {s}; pass a fraction of the size range")
        return np.full(3, lo + s * (hi - lo))
    return np.clip(base + jit, lo, hi)


def lerp_size(cat: Category, frac: np.ndarray) -> np.ndarray:
    """Extents (x, y, z) at the given per-axis fractions of the category's size range.

    x stays the long horizontal axis: when the draw makes y longer, the two are swapped
    (if both ranges allow it) or y is cut down to x.
    """
    lo = np.asarray(cat.size_min, dtype=float)
    hi = np.asarray(cat.size_max, dtype=float)
    ext = lo + np.asarray(frac, dtype=float) * (hi - lo)
    if ext[1] > ext[0]:
        if lo[0] <= ext[1] <= hi[0] and lo[1] <= ext[0] <= hi[1]:
            ext[0], ext[1] = ext[1], ext[0]
        else:
            ext[1] = max(lo[1], ext[0])
            ext[0] = max(ext[0], ext[1])
    return ext


def handle_split(cat: Category, f: float, k_pref: float, k_min: float) -> tuple[float, float]:
    """Split the x extent of a round body with a side handle into (body diameter, total x).

    The handle sticks out by ``k * diameter``; ``k`` is ``k_pref`` when the catalog's
    x and y ranges leave room for it, else as large as they allow (at least ``k_min``).
    """
    lo_x, hi_x = cat.size_min[0], cat.size_max[0]
    lo_y, hi_y = cat.size_min[1], cat.size_max[1]
    k = max(min(k_pref, hi_x / lo_y - 1.0), k_min)
    hi_d = max(min(hi_y, hi_x / (1.0 + k)), lo_y)
    d = lo_y + f * (hi_d - lo_y)
    lo_t = max(lo_x, d * (1.0 + k))
    total = lo_t + f * max(hi_x - lo_t, 0.0)
    return float(d), float(total)


def seed_from(rng: np.random.Generator) -> int:
    """Draw an integer seed for the shape details (recorded in params)."""
    return int(rng.integers(0, 2**31 - 1))


# --------------------------------------------------------------------------- finishing

@dataclass
class Placement:
    """The map from build coordinates to the asset frame applied by :func:`finalize`."""

    scale: np.ndarray
    """Per-axis scale."""
    offset: np.ndarray
    """Translation applied after scaling."""

    def __call__(self, p: Sequence[float]) -> list[float]:
        """Map a build-frame point to the asset frame (plain floats)."""
        return [float(x) for x in np.asarray(p, dtype=float) * self.scale + self.offset]

    def parts(self, parts: Sequence[np.ndarray]) -> list[trimesh.Trimesh]:
        """Map convex parts (point sets of the build frame) to hull meshes in the asset frame.

        The map is a per-axis scale and a shift, so a convex part stays convex and the parts
        follow the visual mesh exactly, however the asset was sized.
        """
        from scenegen.assets.procedural._parts import as_meshes

        return as_meshes([np.asarray(p, dtype=float) * self.scale + self.offset for p in parts])


def finalize(mesh: trimesh.Trimesh, target: Sequence[float] | None = None) -> tuple[trimesh.Trimesh, Placement]:
    """Clean a mesh, scale it to ``target`` extents and put it in the asset frame.

    Merges duplicate vertices, drops degenerate faces and unreferenced vertices, makes
    the volume positive, scales each axis to ``target`` (if given) and moves the
    bounding box so its bottom centre is the origin.
    """
    m = trimesh.Trimesh(np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces), process=True)
    m.update_faces(m.nondegenerate_faces())
    m.remove_unreferenced_vertices()
    scale = np.ones(3)
    if target is not None:
        scale = np.asarray(target, dtype=float) / m.extents
        m.vertices = m.vertices * scale
    m = _collapse_tiny(m)
    lo, hi = m.bounds
    offset = -np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2]])
    m.vertices = m.vertices + offset
    if signed_volume(m) < 0:
        m.invert()
    return m, Placement(scale, offset)


def _collapse_tiny(m: trimesh.Trimesh, min_area: float = 1e-12) -> trimesh.Trimesh:
    """Collapse micron-sized triangles (boolean leftovers) by merging nearby vertices.

    Tries merging at 0.1, 1 and then 10 micrometres; a result is kept only if it is still
    watertight with consistent winding whenever the input was.
    """
    if not (m.area_faces < min_area).any():
        return m
    was_closed = m.is_watertight and m.is_winding_consistent
    for digits in (7, 6, 5):
        c = m.copy()
        c.merge_vertices(digits_vertex=digits)
        c.update_faces(c.nondegenerate_faces())
        c.remove_unreferenced_vertices()
        if was_closed and not (c.is_watertight and c.is_winding_consistent):
            continue
        if not (c.area_faces < min_area).any():
            return c
    return m


def check_valid(mesh: trimesh.Trimesh, closed: bool, name: str) -> None:
    """Raise :class:`AssetError` if a built mesh is not a clean volume."""
    problems = []
    if len(mesh.faces) == 0:
        problems.append("no faces")
    elif closed and not mesh.is_watertight:
        problems.append("not watertight")
    if len(mesh.faces) and not mesh.is_winding_consistent:
        problems.append("inconsistent winding")
    if closed and len(mesh.faces) and signed_volume(mesh) <= 0:
        problems.append("non-positive volume")
    if problems:
        raise AssetError(f"procedural {name} mesh is invalid ({', '.join(problems)}); this is a "
                         "generator bug: report it with the category and seed")


def fit_budget(make: Callable[[float], ProceduralMesh], max_faces: int, name: str) -> ProceduralMesh:
    """Call ``make(detail)`` with decreasing detail until the mesh fits ``max_faces``.

    Raises:
        AssetError: even the coarsest detail is over the budget.

    """
    if max_faces < 1:
        raise AssetError(f"max_faces must be positive, got {max_faces}")
    n = 0
    for detail in (1.0, 0.75, 0.55, 0.4, 0.3, 0.22):
        pm = make(detail)
        n = len(pm.mesh.faces)
        if n <= max_faces:
            check_valid(pm.mesh, pm.closed, name)
            return pm
    raise AssetError(f"{name}: the coarsest mesh still has {n} triangles, over max_faces={max_faces}; "
                     "raise max_faces")


def res(base: int, detail: float, lo: int = 8, multiple: int = 4) -> int:
    """A resolution ``base * detail`` rounded to a multiple (at least ``lo``)."""
    return max(lo, int(round(base * detail / multiple)) * multiple)
