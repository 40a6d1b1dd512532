"""Cleaning of generated or scanned meshes before they become assets.

Meshes from a text-to-3D model (or from a user) arrive in their own frame and scale,
with floating specks, holes, flipped faces and far more triangles than a simulator
wants. :func:`clean_mesh` turns such a mesh into a closed volume within a triangle
budget, ``+z`` up and its long horizontal axis on ``+x``; :func:`fit_to_category`
scales it into the category's real-world size range and puts the origin at the
bottom centre of its bounding box (the asset frame of :mod:`scenegen.assets.base`).

Steps of :func:`clean_mesh`, in order, each recorded in the :class:`CleanupReport`:

1. rotate the given up axis to ``+z`` (:func:`orient_z_up`);
2. merge duplicate vertices, drop degenerate and duplicate faces;
3. drop connected components whose area is below a fraction of the total;
4. fix the winding and make the normals point outwards, fill the holes;
5. simplify to the triangle budget (quadric decimation via ``fast_simplification``,
   else vertex clustering) and repair again; where decimation pinched a thin part into
   non-manifold edges, cut the faces round them out and refill the holes
   (:mod:`scenegen.assets.mesh_repair`);
6. when the mesh still is not watertight, replace it by its convex hull;
7. turn it about ``z`` so its principal horizontal axis is ``+x``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

import numpy as np
import trimesh

from scenegen.assets.mesh_repair import (  # noqa: F401 - re-exported for callers of this module
    fix_winding,
    heal_nonmanifold,
    plain_geometry,
    remove_small_components,
    repair,
    simplify,
)
from scenegen.catalog import Category
from scenegen.errors import AssetError

log = logging.getLogger(__name__)

UP_AXES = ("x", "y", "z", "-x", "-y", "-z")
"""Names of the axes a source mesh may use as 'up'."""


@dataclass
class CleanupReport:
    """What :func:`clean_mesh` did to a mesh (stored in the asset's params)."""

    faces_in: int = 0
    """Triangles of the input mesh."""
    components_in: int = 0
    """Connected components of the input mesh (after merging vertices)."""
    components_removed: int = 0
    """Small components dropped."""
    holes_filled: bool = False
    """Boundary holes were found and closed."""
    simplifier: str = "none"
    """``quadric``, ``clustering`` or ``none`` (already within budget)."""
    healed: bool = False
    """Faces round non-manifold or open edges were cut out and the holes refilled."""
    hull_fallback: bool = False
    """The mesh could not be made watertight and its convex hull replaced it."""
    up: str = "z"
    """The input's up axis that was rotated to ``+z``."""
    yaw_deg: float = 0.0
    """Rotation about ``z`` (degrees) that put the long horizontal axis on ``+x``."""
    faces_out: int = 0
    """Triangles of the cleaned mesh."""
    watertight: bool = False
    """The cleaned mesh is watertight."""

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return asdict(self)


def up_rotation(up: str) -> np.ndarray:
    """Homogeneous rotation taking the ``up`` axis of a mesh to ``+z`` (right-handed, no mirror).

    ``"y"`` is the glTF / OBJ-viewer convention (y up, -z forward): it maps to a +90°
    turn about ``x`` (y -> z, z -> -y).

    Raises:
        AssetError: ``up`` is not one of :data:`UP_AXES`.

    """
    if up not in UP_AXES:
        raise AssetError(f"unknown up axis {up!r}; use one of {', '.join(UP_AXES)}")
    half = math.pi / 2
    table = {
        "z": (0.0, (1, 0, 0)), "-z": (math.pi, (1, 0, 0)),
        "y": (half, (1, 0, 0)), "-y": (-half, (1, 0, 0)),
        "x": (-half, (0, 1, 0)), "-x": (half, (0, 1, 0)),
    }
    angle, axis = table[up]
    rot = trimesh.transformations.rotation_matrix(angle, axis)
    return np.round(rot, 12)


def orient_z_up(mesh: trimesh.Trimesh, up: str = "z") -> trimesh.Trimesh:
    """Return a copy of ``mesh`` rotated so that its ``up`` axis becomes ``+z``."""
    out = mesh.copy()
    if up != "z":
        out.apply_transform(up_rotation(up))
    return out


def principal_yaw(mesh: trimesh.Trimesh) -> float:
    """Angle (radians) about ``z`` of the mesh's principal horizontal axis (area-weighted)."""
    centers = mesh.triangles_center[:, :2]
    w = mesh.area_faces
    if w.sum() <= 0:
        return 0.0
    mean = (centers * w[:, None]).sum(axis=0) / w.sum()
    d = centers - mean
    cov = (d * w[:, None]).T @ d / w.sum()
    vals, vecs = np.linalg.eigh(cov)
    if vals[1] - vals[0] <= 1e-9 * max(vals[1], 1e-30):
        return 0.0  # round in plan: no preferred direction
    ax = vecs[:, 1]
    return float(math.atan2(ax[1], ax[0]))


def align_long_axis(mesh: trimesh.Trimesh) -> tuple[trimesh.Trimesh, float]:
    """Turn ``mesh`` about ``z`` so its long horizontal axis is ``+x``.

    The principal axis of the horizontal surface distribution is turned onto ``x``; if the
    bounding box is then still longer in ``y`` a further quarter turn is made.

    Returns:
        ``(mesh, yaw_degrees)``; the mesh is a new object.

    """
    yaw = -principal_yaw(mesh)
    if abs(yaw) > math.pi / 2:  # the axis has no sign: take the smaller turn
        yaw -= math.copysign(math.pi, yaw)
    out = mesh.copy()
    out.apply_transform(trimesh.transformations.rotation_matrix(yaw, (0, 0, 1)))
    ext = out.extents
    if ext[1] > ext[0] * (1 + 1e-6):
        out.apply_transform(trimesh.transformations.rotation_matrix(math.pi / 2, (0, 0, 1)))
        yaw += math.pi / 2
    yaw_deg = (math.degrees(yaw) + 180.0) % 360.0 - 180.0
    return out, round(yaw_deg, 6)


def clean_mesh(mesh: trimesh.Trimesh, *, max_faces: int = 5000, up: str = "z",
               min_component_fraction: float = 0.05, align: bool = True,
               name: str = "mesh") -> tuple[trimesh.Trimesh, CleanupReport]:
    """Turn a raw mesh into a closed, outward-facing volume within a triangle budget.

    Args:
        mesh: the raw mesh (any frame and scale).
        max_faces: triangle budget of the result.
        up: the input's up axis (one of :data:`UP_AXES`), rotated to ``+z``.
        min_component_fraction: components with less than this fraction of the total
            surface area are dropped (the largest is always kept).
        align: turn the long horizontal axis onto ``+x``.
        name: name used in log messages.

    Returns:
        ``(mesh, report)``. The mesh is watertight (possibly the convex hull, see
        ``report.hull_fallback``), not yet scaled or placed.

    Raises:
        AssetError: the mesh is empty, not finite, or has no volume even as a hull.

    """
    if mesh is None or len(mesh.faces) == 0:
        raise AssetError(f"{name}: the generated mesh is empty; try another seed or prompt")
    if not np.all(np.isfinite(mesh.vertices)):
        raise AssetError(f"{name}: the generated mesh has NaN or infinite vertices; try another seed")
    if int(max_faces) < 4:
        raise AssetError(f"{name}: max_faces={max_faces} cannot hold a closed mesh; use at least 4")
    report = CleanupReport(faces_in=int(len(mesh.faces)), up=up)
    m = plain_geometry(orient_z_up(mesh, up))
    m, report.components_removed, report.components_in = remove_small_components(m, min_component_fraction)
    m, report.holes_filled = repair(m)
    for _ in range(3):  # simplify -> repair -> heal, until watertight within the budget
        m, method = simplify(m, int(max_faces))
        if method != "none":
            report.simplifier = method
            m, filled = repair(m)
            report.holes_filled = report.holes_filled or filled
        if not m.is_watertight:
            healed, ok = heal_nonmanifold(m)
            if ok:
                m, _ = repair(healed)
                report.healed = True
        if m.is_watertight and len(m.faces) <= max_faces:
            break
    if not m.is_watertight or m.volume <= 0 or len(m.faces) > max_faces:
        log.warning("%s: mesh is not watertight after repair; using its convex hull", name)
        try:
            m = plain_geometry(m.convex_hull)
        except Exception as exc:  # qhull raises its own error types on flat input
            raise AssetError(f"{name}: the generated mesh is flat and has no convex hull ({exc}); "
                             "try another seed or prompt") from None
        report.hull_fallback = True
        if len(m.faces) > max_faces:
            m, _ = simplify(m, int(max_faces))
            m = plain_geometry(m.convex_hull)
    if len(m.faces) == 0 or not m.is_watertight or m.volume <= 0:
        raise AssetError(f"{name}: the generated mesh encloses no volume; try another seed or prompt")
    if align:
        m, report.yaw_deg = align_long_axis(m)
    report.faces_out = int(len(m.faces))
    report.watertight = bool(m.is_watertight)
    return m, report


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
            from scenegen.catalog import load_catalog
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
