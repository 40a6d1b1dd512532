"""Cleaning of generated meshes before they become assets.

Meshes from a text-to-3D model arrive in their own frame and scale, with floating
specks, holes, flipped faces and far more triangles than a simulator wants.
:func:`clean_mesh` turns such a mesh into a closed volume within a triangle budget,
``+z`` up and its long horizontal axis on ``+x``;
:func:`~scenegen.assets.mesh.fit.fit_to_category` then scales it into the category's
size range and puts it in the asset frame.

Steps of :func:`clean_mesh`, in order, each recorded in the :class:`CleanupReport`:

1. rotate the given up axis to ``+z`` (:func:`~scenegen.assets.mesh.orient.orient_z_up`);
2. merge duplicate vertices, drop degenerate and duplicate faces;
3. drop connected components whose area is below a fraction of the total;
4. fix the winding and make the normals point outwards, fill the holes;
5. simplify to the triangle budget (quadric decimation via ``fast_simplification``,
   else vertex clustering) and repair again; where decimation pinched a thin part into
   non-manifold edges, cut the faces round them out and refill the holes
   (:mod:`scenegen.assets.mesh.simplify`, :mod:`scenegen.assets.mesh.repair`);
6. when the mesh still is not watertight, replace it by its convex hull;
7. turn it about ``z`` so its principal horizontal axis is ``+x``
   (:func:`~scenegen.assets.mesh.orient.align_long_axis`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np
import trimesh

from scenegen.assets.mesh.orient import align_long_axis, orient_z_up
from scenegen.assets.mesh.repair import heal_nonmanifold, plain_geometry, remove_small_components, repair
from scenegen.assets.mesh.simplify import simplify
from scenegen.errors import AssetError

log = logging.getLogger(__name__)


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


def clean_mesh(mesh: trimesh.Trimesh, *, max_faces: int = 5000, up: str = "z",
               min_component_fraction: float = 0.05, align: bool = True,
               name: str = "mesh") -> tuple[trimesh.Trimesh, CleanupReport]:
    """Turn a raw mesh into a closed, outward-facing volume within a triangle budget.

    Args:
        mesh: the raw mesh (any frame and scale).
        max_faces: triangle budget of the result.
        up: the input's up axis (one of :data:`~scenegen.assets.mesh.orient.UP_AXES`), rotated to ``+z``.
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
