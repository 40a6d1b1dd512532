"""Convex-part geometry for collision proxies: merging, bbox fitting, cavity probes, coverage.

* :func:`merge_parts` reduces a decomposition to a hull budget, merging neighbours whose joint
  hull adds the least volume, and never (while another merge exists) one that would swallow
  an *air probe*: a point of a container's cavity that must stay open.
* :func:`air_probes` finds such points: it looks straight down on the mesh and keeps, above
  every recess deeper than a tenth of the height, points between the bottom and the top.
* :func:`fit_to_bbox` cuts parts at the visual bounding box and stretches a short proxy back.
* :func:`proxy_gap` says how far the visual mesh pokes out of the proxy.
"""

from __future__ import annotations

import numpy as np
import trimesh

EPS = 1e-9


def _hull(points: np.ndarray):
    from scipy.spatial import ConvexHull, QhullError

    try:
        return ConvexHull(points)
    except (QhullError, ValueError):
        return None


def _hull_volume(points: np.ndarray) -> float:
    h = _hull(points)
    return float(h.volume) if h is not None else 0.0


def _inside(equations: np.ndarray, points: np.ndarray, tol: float = 1e-7) -> np.ndarray:
    """Which points lie inside a hull given by its facet equations (``n . x + d <= 0``)."""
    if len(points) == 0:
        return np.zeros(0, dtype=bool)
    return np.all(points @ equations[:, :3].T + equations[:, 3] <= tol, axis=1)


def part_equations(parts: list[trimesh.Trimesh]) -> list[np.ndarray | None]:
    """Facet equations (``n . x + d <= 0`` inside) of each part's convex hull (None: a degenerate part)."""
    out = []
    for p in parts:
        h = _hull(np.asarray(p.vertices, dtype=float))
        out.append(None if h is None else h.equations)
    return out


def covered(parts: list[trimesh.Trimesh], points: np.ndarray,
            equations: list[np.ndarray | None] | None = None) -> np.ndarray:
    """Which points lie inside at least one convex part (``equations``: :func:`part_equations` of them)."""
    out = np.zeros(len(points), dtype=bool)
    for eq in part_equations(parts) if equations is None else equations:
        if eq is not None:
            out |= _inside(eq, points)
    return out


def proxy_gap(parts: list[trimesh.Trimesh], points: np.ndarray,
              equations: list[np.ndarray | None] | None = None) -> float:
    """How far (m) the farthest point lies outside every part (0 when all are covered).

    A point found inside a part (distance <= 0) can no longer raise the answer, so it leaves the
    points measured against the remaining parts: the same answer for much less arithmetic.
    """
    if not len(points):
        return 0.0
    best = np.full(len(points), np.inf)
    for eq in part_equations(parts) if equations is None else equations:
        if eq is None:
            continue
        dist = np.max(points @ eq[:, :3].T + eq[:, 3], axis=1)
        best = np.minimum(best, dist)
        outside = best > 0
        if not outside.all():
            points, best = points[outside], best[outside]
            if not len(points):
                return 0.0
    return float(max(0.0, best.max()))


def air_probes(mesh: trimesh.Trimesh, grid: int = 21, min_depth: float = 0.1) -> np.ndarray:
    """Points in the open cavity of a container, seen from above (``(n, 3)``, maybe empty).

    A vertical ray is cast down at each point of a ``grid`` x ``grid`` lattice over the bounding
    box; where its first hit lies more than ``min_depth`` of the height below the top, points at
    30 % and 70 % of the way from the hit up to the top are returned.
    """
    lo, hi = mesh.bounds
    height = hi[2] - lo[2]
    if height <= 0:
        return np.zeros((0, 3))
    xs = np.linspace(lo[0], hi[0], grid + 2)[1:-1]
    ys = np.linspace(lo[1], hi[1], grid + 2)[1:-1]
    origins = np.array([[x, y, hi[2] + 0.1 * height + 1e-3] for x in xs for y in ys])
    dirs = np.tile([0.0, 0.0, -1.0], (len(origins), 1))
    try:
        loc, ray_idx, _ = mesh.ray.intersects_location(origins, dirs, multiple_hits=False)
    except Exception:  # a ray engine failure only costs the probes
        return np.zeros((0, 3))
    if len(loc) == 0:
        return np.zeros((0, 3))
    z = loc[:, 2]
    deep = z < hi[2] - min_depth * height
    pts = []
    for frac in (0.3, 0.7):
        p = loc[deep].copy()
        p[:, 2] = z[deep] + frac * (hi[2] - z[deep])
        pts.append(p)
    return np.vstack(pts) if pts else np.zeros((0, 3))


def merge_parts(parts: list[trimesh.Trimesh], max_hulls: int, neighbours: int = 6,
                probes: np.ndarray | None = None) -> list[trimesh.Trimesh]:
    """Merge convex parts pairwise until at most ``max_hulls`` remain.

    Each step merges the pair of near parts (by bounding-box gap) that swallows the fewest
    new ``probes`` and, among those, adds the least volume beyond the two parts: walls merge
    along themselves and a cavity is not bridged while another merge exists.
    """
    pts = [np.asarray(p.vertices, dtype=float) for p in parts]
    vols = [_hull_volume(v) for v in pts]
    boxes = [(v.min(axis=0), v.max(axis=0)) for v in pts]
    probes = np.zeros((0, 3)) if probes is None else np.asarray(probes, dtype=float)
    if len(probes):
        probes = probes[~covered(parts, probes)]  # air the decomposition already fills is lost anyway
    alive = set(range(len(pts)))
    costs: dict[tuple[int, int], tuple[int, float]] = {}

    def gap(i: int, j: int) -> float:
        return float(np.linalg.norm(np.maximum(0.0, np.maximum(boxes[i][0] - boxes[j][1],
                                                               boxes[j][0] - boxes[i][1]))))

    def cost(i: int, j: int) -> tuple[int, float]:
        h = _hull(np.vstack([pts[i], pts[j]]))
        if h is None:
            return 0, 0.0
        swallowed = int(_inside(h.equations, probes).sum()) if len(probes) else 0
        return swallowed, float(h.volume) - vols[i] - vols[j]

    def add_pairs(i: int) -> None:
        for _, j in sorted((gap(i, j), j) for j in alive if j != i)[:neighbours]:
            key = (min(i, j), max(i, j))
            if key not in costs:
                costs[key] = cost(*key)

    if len(alive) > max_hulls:
        for i in sorted(alive):
            add_pairs(i)
    while len(alive) > max_hulls:
        (i, j), _ = min(costs.items(), key=lambda kv: (kv[1], kv[0]))
        joined = np.vstack([pts[i], pts[j]])
        h = _hull(joined)
        if h is not None:
            joined = joined[h.vertices]
        pts.append(joined)
        vols.append(_hull_volume(joined))
        boxes.append((joined.min(axis=0), joined.max(axis=0)))
        k = len(pts) - 1
        alive -= {i, j}
        alive.add(k)
        costs = {key: c for key, c in costs.items() if i not in key and j not in key}
        add_pairs(k)
        for other in list(alive):
            if other != k and not any(other in key for key in costs):
                add_pairs(other)
    return [trimesh.convex.convex_hull(pts[i]) for i in sorted(alive)]


def as_convex(parts: list[trimesh.Trimesh]) -> list[trimesh.Trimesh]:
    """Convex hull of each part, dropping flat slivers."""
    out = []
    for p in parts:
        try:
            h = trimesh.convex.convex_hull(p.vertices)
            with np.errstate(invalid="ignore", divide="ignore"):  # flat slivers have zero volume
                ok = h.volume > 1e-15
        except Exception:  # a flat sliver has no hull: drop it
            continue
        if ok:
            out.append(h)
    return out


def bbox_error(parts: list[trimesh.Trimesh], mesh: trimesh.Trimesh) -> float:
    """Largest relative difference between the parts' joint bbox and the mesh's.

    Both the extents and each face of the box are compared, relative to the extent along
    that axis.
    """
    lo = np.min([p.bounds[0] for p in parts], axis=0)
    hi = np.max([p.bounds[1] for p in parts], axis=0)
    ref = np.maximum(mesh.extents, EPS)
    ext = np.abs((hi - lo) - mesh.extents) / ref
    faces = np.maximum(np.abs(lo - mesh.bounds[0]), np.abs(hi - mesh.bounds[1])) / ref
    return float(max(ext.max(), faces.max()))


def _clip_to_box(part: trimesh.Trimesh, lo: np.ndarray, hi: np.ndarray) -> trimesh.Trimesh | None:
    """Intersect a convex part with an axis-aligned box (exactly, by plane cuts)."""
    if np.all(part.bounds[0] >= lo - EPS) and np.all(part.bounds[1] <= hi + EPS):
        return part
    out = part
    try:
        for axis in range(3):
            for sign, bound in ((1.0, lo[axis]), (-1.0, hi[axis])):
                inside = out.bounds[0][axis] >= bound - EPS if sign > 0 else out.bounds[1][axis] <= bound + EPS
                if inside:
                    continue
                normal = np.zeros(3)
                normal[axis] = sign
                origin = np.zeros(3)
                origin[axis] = bound
                out = out.slice_plane(origin, normal, cap=True)
                if out is None or len(out.faces) == 0:
                    return None
        return out.convex_hull
    except Exception:  # slicing degenerate slivers can fail: clamp the vertices instead
        try:
            return trimesh.convex.convex_hull(np.clip(part.vertices, lo, hi))
        except Exception:
            return None


def fit_to_bbox(parts: list[trimesh.Trimesh], mesh: trimesh.Trimesh, tolerance: float) -> list[trimesh.Trimesh]:
    """Cut parts at the visual bbox, then stretch the proxy back where it came out short."""
    lo, hi = mesh.bounds
    clipped = [c for c in (_clip_to_box(p, lo, hi) for p in parts) if c is not None and c.volume > 0]
    if not clipped:
        return [mesh.convex_hull]
    if bbox_error(clipped, mesh) <= 0.2 * tolerance:
        return clipped
    plo = np.min([p.bounds[0] for p in clipped], axis=0)
    phi = np.max([p.bounds[1] for p in clipped], axis=0)
    scale = (hi - lo) / np.maximum(phi - plo, 1e-12)
    out = []
    for p in clipped:
        q = p.copy()
        q.vertices = lo + (q.vertices - plo) * scale
        out.append(q)
    return out
