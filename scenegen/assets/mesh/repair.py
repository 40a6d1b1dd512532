"""Low-level mesh repair: merging, small components, winding, holes, non-manifold edges.

The steps :func:`scenegen.assets.mesh.cleanup.clean_mesh` chains together and the user-mesh
loader (:mod:`scenegen.assets.library`) uses. Most take a ``trimesh.Trimesh`` and return a
new one (plus what it did), geometry only (colours and UVs are dropped);
:func:`drop_degenerate`, :func:`fix_winding` and :func:`orient_outward` work in place and
keep them. Simplification is in :mod:`scenegen.assets.mesh.simplify`.
"""

from __future__ import annotations

import numpy as np
import trimesh

HEAL_ROUNDS = 4
"""Bound on the rounds of :func:`heal_nonmanifold`."""


def drop_degenerate(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Merge duplicate vertices, drop degenerate and duplicate faces and unused vertices (in place); return it.

    Colours and UVs are kept (vertices split by a texture seam stay split).
    """
    mesh.merge_vertices()
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.update_faces(mesh.unique_faces())
    mesh.remove_unreferenced_vertices()
    return mesh


def plain_geometry(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Geometry only (no colours or UVs), vertices merged, degenerate/duplicate faces dropped."""
    return drop_degenerate(trimesh.Trimesh(np.asarray(mesh.vertices, dtype=np.float64),
                                           np.asarray(mesh.faces, dtype=np.int64), process=False))


def remove_small_components(mesh: trimesh.Trimesh, min_fraction: float = 0.05) -> tuple[trimesh.Trimesh, int, int]:
    """Drop connected components whose surface area is below ``min_fraction`` of the total.

    Components are sets of faces joined through shared edges; the largest is always kept.

    Returns:
        ``(mesh, removed, total)``: the kept mesh, how many components were dropped, how
        many there were.

    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(mesh.faces)
    adj = np.asarray(mesh.face_adjacency)
    graph = coo_matrix((np.ones(len(adj)), (adj[:, 0], adj[:, 1])), shape=(n, n)) if len(adj) else \
        coo_matrix((n, n))
    total, labels = connected_components(graph, directed=False)
    if total <= 1:
        return mesh, 0, int(total)
    areas = np.bincount(labels, weights=mesh.area_faces, minlength=total)
    keep = areas >= min_fraction * areas.sum()
    keep[int(np.argmax(areas))] = True
    out = trimesh.Trimesh(mesh.vertices, np.asarray(mesh.faces)[keep[labels]], process=False)
    out.remove_unreferenced_vertices()
    return out, int((~keep).sum()), int(total)


def repair(mesh: trimesh.Trimesh, *, max_hole_edges: int | None = None,
           keep_visual: bool = False) -> tuple[trimesh.Trimesh, bool]:
    """Merge vertices, fix the winding, fill boundary holes and make the normals point outwards.

    Args:
        mesh: the mesh to repair (not changed).
        max_hole_edges: fill only holes with at most this many edges (None: every hole).
        keep_visual: keep colours and UVs (:func:`drop_degenerate` instead of
            :func:`plain_geometry`); they are still dropped when a hole is filled.

    Returns:
        ``(mesh, filled)``: the repaired mesh (a new object) and whether holes were filled.

    """
    m = drop_degenerate(mesh.copy()) if keep_visual else plain_geometry(mesh)
    if not m.is_winding_consistent:
        fix_winding(m)
    filled = False
    if not m.is_watertight:
        m, n = fill_holes(m, max_hole_edges)
        filled = n > 0
        if filled and not m.is_winding_consistent:
            fix_winding(m)
    if m.is_watertight and m.volume < 0:
        m.invert()
    return m, filled


def boundary_loops(mesh: trimesh.Trimesh) -> list[list[int]]:
    """Simple loops of boundary edges, each in the direction the neighbouring faces use them.

    A hole that touches itself at a vertex is split there into simple loops; the walk
    consumes one boundary edge per step, so it always ends.
    """
    groups = trimesh.grouping.group_rows(np.asarray(mesh.edges_sorted), require_count=1)
    if len(groups) == 0:
        return []
    boundary = np.asarray(mesh.edges)[np.asarray(groups).reshape(-1)]
    out: dict[int, list[int]] = {}
    for a, b in sorted(map(tuple, boundary.tolist())):
        out.setdefault(a, []).append(b)
    loops = []
    for s0 in sorted(out):
        while out[s0]:
            path, pos, v = [s0], {s0: 0}, s0
            while out.get(v):
                w = out[v].pop(0)
                if w not in pos:
                    pos[w] = len(path)
                    path.append(w)
                    v = w
                    continue
                i = pos[w]  # closed a loop: cut it off and go on from w
                loops.append(path[i:])
                for x in path[i + 1:]:
                    del pos[x]
                path, v = path[: i + 1], w
                if len(path) == 1:
                    break
    return [lp for lp in loops if len(lp) >= 3]


def fill_holes(mesh: trimesh.Trimesh, max_edges: int | None = None) -> tuple[trimesh.Trimesh, int]:
    """Close every boundary loop (of at most ``max_edges`` edges) with a fan round a new vertex at its centroid.

    The fan's triangles run against the loop's edges as the neighbouring faces use them,
    so a consistently wound mesh stays consistently wound.

    Returns:
        ``(mesh, loops_filled)``: a new mesh (the input when there was nothing to fill) and
        how many holes were closed.

    """
    loops = boundary_loops(mesh)
    if max_edges is not None:
        loops = [lp for lp in loops if len(lp) <= max_edges]
    if not loops:
        return mesh, 0
    verts = np.asarray(mesh.vertices)
    n = len(verts)
    centers = np.array([verts[lp].mean(axis=0) for lp in loops])
    fans = [np.column_stack([np.roll(lp, -1), lp, np.full(len(lp), n + k)]) for k, lp in enumerate(loops)]
    out = trimesh.Trimesh(np.vstack([verts, centers]), np.vstack([np.asarray(mesh.faces), *fans]), process=False)
    return plain_geometry(out), len(loops)


def fix_winding(mesh: trimesh.Trimesh) -> int:
    """Make neighbouring faces wind consistently (in place); return how many faces were flipped.

    A breadth-first walk over the face adjacency of each connected piece flips a face
    when it traverses a shared edge in the same direction as its already-visited
    neighbour. Vectorised except for one pass over the visiting order, so it stays fast
    on meshes of hundreds of thousands of faces (trimesh's own walk is per-face Python).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = len(mesh.faces)
    adj = np.asarray(mesh.face_adjacency)
    if n == 0 or len(adj) == 0:
        return 0
    edges = np.asarray(mesh.face_adjacency_edges)
    faces = np.asarray(mesh.faces)

    def forward(idx: np.ndarray) -> np.ndarray:
        f = faces[idx]
        pos = np.argmax(f == edges[:, :1], axis=1)
        return f[np.arange(len(f)), (pos + 1) % 3] == edges[:, 1]

    flip = (forward(adj[:, 0]) == forward(adj[:, 1])).astype(np.int8)  # 1: the pair disagrees
    pair_key = np.minimum(adj[:, 0], adj[:, 1]) * n + np.maximum(adj[:, 0], adj[:, 1])
    order_k = np.argsort(pair_key)
    sorted_keys, sorted_flip = pair_key[order_k], flip[order_k]
    graph = coo_matrix((np.ones(2 * len(adj)), (np.r_[adj[:, 0], adj[:, 1]], np.r_[adj[:, 1], adj[:, 0]])),
                       shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    _, roots = np.unique(labels, return_index=True)
    parity = np.zeros(n, dtype=np.int8)
    for root in roots:
        order, pred = breadth_first_order(graph, int(root), directed=False, return_predecessors=True)
        child = order[1:]
        if len(child) == 0:
            continue
        par = pred[child]
        keys = np.minimum(par, child) * n + np.maximum(par, child)
        rel = sorted_flip[np.searchsorted(sorted_keys, keys)]
        for node, r, p in zip(child.tolist(), rel.tolist(), par.tolist(), strict=True):
            parity[node] = parity[p] ^ r
    flipped = np.flatnonzero(parity)
    if len(flipped):
        new = faces.copy()
        new[flipped] = new[flipped][:, ::-1]
        mesh.faces = new
    return int(len(flipped))


def orient_outward(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """Make the winding consistent and, when the mesh is closed, the normals point outwards (in place); return it."""
    if not mesh.is_winding_consistent:
        fix_winding(mesh)
    if mesh.is_watertight and mesh.volume < 0:
        mesh.invert()
    return mesh


def edge_use(mesh: trimesh.Trimesh) -> tuple[np.ndarray, np.ndarray]:
    """Unique undirected edges and how many faces use each (2 everywhere on a closed manifold)."""
    uniq, counts = np.unique(mesh.edges_sorted, axis=0, return_counts=True)
    return uniq, counts


def heal_nonmanifold(mesh: trimesh.Trimesh, rounds: int = HEAL_ROUNDS) -> tuple[trimesh.Trimesh, bool]:
    """Cut out the faces round bad edges (used by one face, or by more than two) and refill the holes.

    Decimation sometimes pinches a thin handle into a few non-manifold edges; removing
    every face that touches a vertex of such an edge leaves small simple holes, which are
    fan-filled. Repeats up to ``rounds`` times.

    Returns:
        ``(mesh, healed)``: ``healed`` is True when the result is watertight and its
        bounding box is within 10 % of the input's on every axis (else the input is returned).

    """
    m = mesh
    for _ in range(rounds):
        uniq, counts = edge_use(m)
        bad = uniq[counts != 2]
        if len(bad) == 0:
            break
        bad_vertex = np.zeros(len(m.vertices), dtype=bool)
        bad_vertex[bad.ravel()] = True
        keep = ~bad_vertex[m.faces].any(axis=1)
        if keep.all() or not keep.any():
            break
        m = plain_geometry(trimesh.Trimesh(m.vertices, m.faces[keep], process=False))
        m, _, _ = remove_small_components(m, 0.01)
        m, _ = fill_holes(m)
    ok = len(m.faces) > 0 and m.is_watertight
    if ok:
        ok = bool(np.all(np.abs(m.extents - mesh.extents) <= 0.1 * np.maximum(mesh.extents, 1e-12)))
    return (m, True) if ok else (mesh, False)
