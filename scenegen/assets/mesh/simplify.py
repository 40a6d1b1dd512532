"""Mesh simplification, in one place: quadric decimation, vertex clustering, a distance tolerance.

Entries, one per job:

* :func:`simplify`: at most ``max_faces`` triangles, for the visual meshes of generated and
  user assets (:func:`~scenegen.assets.mesh.cleanup.clean_mesh`, :mod:`scenegen.assets.library`):
  :func:`quadric_decimate` when ``fast_simplification`` is installed, else :func:`cluster_to_budget`.
* :func:`simplify_to_tolerance`: a closed mesh whose surface moves at most a given distance
  (``manifold3d``), for the meshes given to CoACD (:mod:`scenegen.assets.collision.coacd`).
* :func:`cluster_decimate`: coarse render meshes from plain arrays (a fixed ladder of grids, no
  re-merging), for the render-light assets of :mod:`scenegen.sim.light_assets`.

Both clustering entries run :func:`cluster_vertices`. Every entry feeds content (asset files,
CoACD inputs, cached render meshes): a change to what one returns changes generated content.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import trimesh

from scenegen.assets.mesh.repair import plain_geometry
from scenegen.errors import AssetError

log = logging.getLogger(__name__)

QUADRIC_ROUNDS = 6
"""Quadric decimation attempts of :func:`quadric_decimate`, each aiming 15 % lower than the last."""
MAX_CLUSTER_ROUNDS = 40
"""Bound on the growing-cell loop of :func:`cluster_to_budget`."""
DECIMATE_CELLS = (48, 40, 32, 26, 20, 16, 12, 10, 8, 6, 4)
"""Grid cells along the longest side tried in turn by :func:`cluster_decimate` (finest first)."""


def cluster_vertices(vertices: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """One pass of vertex clustering: snap vertices to a grid of ``cell`` metres and merge each occupied cell.

    The grid starts at the vertices' lower corner and a cell's vertex is the mean of the
    vertices in it. Triangles that lose a corner to a merge are dropped; duplicates are kept.

    Returns:
        ``(vertices, faces)``: one vertex per occupied cell (float64) and the surviving triangles.

    """
    v = np.asarray(vertices, dtype=np.float64)
    keys = np.floor((v - v.min(axis=0)) / cell).astype(np.int64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    centers = np.zeros((len(counts), 3))
    np.add.at(centers, inverse, v)
    centers /= counts[:, None]
    f = inverse[np.asarray(faces, dtype=np.int64)]
    ok = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    return centers, f[ok]


def quadric_decimate(mesh: trimesh.Trimesh, max_faces: int) -> trimesh.Trimesh | None:
    """Quadric decimation (``trimesh`` + ``fast_simplification``) to at most ``max_faces`` triangles.

    Aims lower after each result over the budget, up to :data:`QUADRIC_ROUNDS` times.

    Returns:
        The decimated mesh (geometry only), or None when ``fast_simplification`` is missing
        or no round met the budget.

    """
    try:
        import fast_simplification  # noqa: F401
    except ImportError:
        log.info("fast_simplification is not installed; simplifying by vertex clustering")
        return None
    target = int(max_faces)
    for _ in range(QUADRIC_ROUNDS):
        out = plain_geometry(mesh.simplify_quadric_decimation(face_count=target))
        if 0 < len(out.faces) <= max_faces:
            return out
        target = int(target * 0.85)
    return None


def cluster_to_budget(mesh: trimesh.Trimesh, max_faces: int) -> trimesh.Trimesh | None:
    """Vertex clustering to at most ``max_faces`` triangles, the cell growing by 25 % a round.

    The first cell is the edge of a square of the mean area a budget triangle may cover; at
    most :data:`MAX_CLUSTER_ROUNDS` rounds. Each result is merged and cleaned
    (:func:`~scenegen.assets.mesh.repair.plain_geometry`).

    Returns:
        The clustered mesh, or None when no round met the budget.

    """
    cell = math.sqrt(max(mesh.area, 1e-12) / max_faces)
    for _ in range(MAX_CLUSTER_ROUNDS):
        out = plain_geometry(trimesh.Trimesh(*cluster_vertices(mesh.vertices, mesh.faces, cell), process=False))
        if 0 < len(out.faces) <= max_faces:
            return out
        cell *= 1.25
    return None


def simplify(mesh: trimesh.Trimesh, max_faces: int) -> tuple[trimesh.Trimesh, str]:
    """Reduce ``mesh`` to at most ``max_faces`` triangles.

    :func:`quadric_decimate` when ``fast_simplification`` is installed, else (or when it
    misses the budget) :func:`cluster_to_budget`.

    Returns:
        ``(mesh, method)`` with method ``none``, ``quadric`` or ``clustering``.

    Raises:
        AssetError: the budget could not be met.

    """
    if len(mesh.faces) <= max_faces:
        return mesh, "none"
    out = quadric_decimate(mesh, max_faces)
    if out is not None:
        return out, "quadric"
    out = cluster_to_budget(mesh, max_faces)
    if out is not None:
        return out, "clustering"
    raise AssetError(f"could not simplify a mesh of {len(mesh.faces)} triangles to {max_faces}; "
                     "raise max_faces")


def simplify_to_tolerance(mesh: trimesh.Trimesh, tolerance: float) -> trimesh.Trimesh:
    """Simplify a watertight mesh so its surface moves at most ``tolerance`` metres (``manifold3d``).

    Returns:
        The simplified mesh, or the input itself when the tolerance is 0, the mesh is not
        watertight, ``manifold3d`` is missing or rejects it, or the result is not a smaller
        closed mesh.

    """
    if tolerance <= 0 or not mesh.is_watertight:
        return mesh
    try:
        import manifold3d as m3
    except ImportError:
        return mesh
    try:
        man = m3.Manifold(m3.Mesh(vert_properties=np.asarray(mesh.vertices, dtype=np.float32),
                                  tri_verts=np.asarray(mesh.faces, dtype=np.uint32)))
        out = man.simplify(float(tolerance)).to_mesh()
        simple = trimesh.Trimesh(np.asarray(out.vert_properties[:, :3], dtype=np.float64),
                                 np.asarray(out.tri_verts, dtype=np.int64))
    except Exception as exc:  # manifold3d rejects non-manifold input with assorted errors
        log.debug("simplification skipped (%s)", exc)
        return mesh
    if len(simple.faces) < 4 or not simple.is_watertight or len(simple.faces) >= len(mesh.faces):
        return mesh
    return simple


def cluster_decimate(vertices: np.ndarray, faces: np.ndarray, max_faces: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertex-clustering decimation of plain arrays, as coarse as needed to reach ``max_faces``.

    :func:`cluster_vertices` with :data:`DECIMATE_CELLS` cells along the longest side, finest
    first, dropping duplicate triangles (the first kept, order kept); stops at the first grid
    within the budget, else keeps the coarsest grid that still has triangles.

    Returns:
        ``(vertices, faces)``: float64 / int64; the input itself when no grid leaves a triangle.
        Vertices that no triangle uses are kept.

    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    size = float(np.max(v.max(axis=0) - v.min(axis=0))) or 1.0
    out_v, out_f = v, f
    for cells in DECIMATE_CELLS:
        new_v, nf = cluster_vertices(v, f, size / cells)
        if len(nf):
            _, first = np.unique(np.sort(nf, axis=1), axis=0, return_index=True)
            nf = nf[np.sort(first)]
        if len(nf) == 0:
            break
        out_v, out_f = new_v, nf
        if len(nf) <= max_faces:
            break
    return out_v, out_f
