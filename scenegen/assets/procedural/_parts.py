"""Convex collision parts that a procedural builder emits for the shape it knows.

A builder knows its structure, so it can cut its solid into convex cells directly instead of
asking CoACD to find them: a revolved shell is a floor disc plus angular sectors of bands of
its wall, a walled box is its floor and wall segments, a swept handle is a chain of segments.
Every part is the convex hull of the cell's inner and outer points, sampled exactly where the
visual mesh has its vertices, so the parts follow the visual surface except where a convex
part must bridge a concave stretch (the chord across a band of a curved inner wall). Cells are
grown as long as that bridge stays within a tolerance ``tol`` (metres): the concavity of the
cell's 2-D cross-sections (:func:`concavity`) and the sagitta of its angular sector.

Holes cut with boxes (slots in a tote, a basket, a colander) are kept exactly:
:func:`subtract_box` splits a convex part into the convex pieces of the part minus the box.

Parts are plain ``(n, 3)`` point arrays until :func:`as_meshes` turns them into hulls, so the
placement into the asset frame (a per-axis scale and a shift) maps them like the visual mesh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import trimesh

Part = np.ndarray
"""An ``(n, 3)`` array of points whose convex hull is one collision part."""
MIN_VOLUME = 1e-10
"""Pieces smaller than this (m^3, a 0.5 mm cube) are dropped."""
FLAT = 1e-4
"""Concavity (m) a floor disc may bridge: a floor is never raised by more than this."""


# --------------------------------------------------------------------------- measuring cells

def concavity(poly: np.ndarray) -> float:
    """How far (m) the convex hull of a closed 2-D polygon reaches beyond the polygon.

    The largest distance of a hull-boundary point (sampled every 0.5 mm) from the polygon; 0 for
    a convex polygon.
    """
    import shapely
    from shapely.geometry import Polygon

    p = Polygon(np.asarray(poly, dtype=float))
    if not p.is_valid:
        p = p.buffer(0)
    if p.is_empty or p.area <= 0:
        return 0.0
    hull = p.convex_hull
    if hull.area - p.area <= 1e-12:
        return 0.0
    ring = hull.exterior
    n = int(np.clip(ring.length / 5e-4, 8, 400))
    pts = shapely.line_interpolate_point(ring, np.linspace(0.0, 1.0, n), normalized=True)
    return float(shapely.distance(p, pts).max())


def runs(n: int, ok: Callable[[int, int], bool], start: int = 0, closed: bool = False) -> list[tuple[int, int]]:
    """Split indices ``start..n-1`` (or a closed ring of ``n``) into greedy runs ``[a, b]``, ``b > a``.

    A run grows while ``ok(a, b)`` holds for it (``b`` may pass ``n`` on a closed ring: the
    index wraps). Consecutive runs share their end index, as neighbouring cells share a face.
    """
    end = start + n if closed else n - 1
    out: list[tuple[int, int]] = []
    a = start
    while a < end:
        b = a + 1
        while b < end and ok(a, b + 1):
            b += 1
        out.append((a, b))
        a = b
    return out


def sector_count(sections: int, radius: float, tol: float, least: int = 4) -> int:
    """Fewest equal sectors (a divisor of ``sections``, at least ``least``) keeping the chord within ``tol``.

    The chord of a sector at ``radius`` lies ``radius * (1 - cos(pi / k))`` inside the arc.
    """
    divisors = [k for k in range(least, sections + 1) if sections % k == 0] or [sections]
    for k in divisors:
        if radius * (1.0 - np.cos(np.pi / k)) <= tol:
            return k
    return divisors[-1]


# --------------------------------------------------------------------------- revolved shapes

def _revolve(rz: np.ndarray, angles: np.ndarray) -> Part:
    rz = np.asarray(rz, dtype=float)
    c, s = np.cos(angles), np.sin(angles)
    return np.column_stack([np.outer(rz[:, 0], c).ravel(), np.outer(rz[:, 0], s).ravel(),
                            np.repeat(rz[:, 1], len(angles))])


def _sector_angles(sections: int, k: int) -> list[np.ndarray]:
    """The visual's angles in each of ``k`` equal sectors, both boundaries included (unwrapped)."""
    step = sections // k
    th = np.linspace(0.0, 2 * np.pi, sections, endpoint=False)
    out = []
    for i in range(k):
        idx = np.arange(i * step, i * step + step + 1) % sections
        ang = th[idx]
        if idx[-1] == 0:
            ang[-1] += 2 * np.pi
        out.append(ang)
    return out


def _sectors(rz: np.ndarray, sections: int, tol: float, least: int = 4) -> list[Part]:
    """Angular sectors of the revolution of a 2-D cell (``(r, z)`` points), sampled at the visual's angles."""
    rz = np.asarray(rz, dtype=float)
    k = sector_count(sections, float(rz[:, 0].min()), tol, least)
    return [_revolve(rz, ang) for ang in _sector_angles(sections, k)]


def _wall_sectors(outer: np.ndarray, inner: np.ndarray, sections: int, tol: float) -> list[Part]:
    """Angular sectors of a band of a shell's wall whose inner face is tangent to the inner surface.

    A plain sector's inner face is the chord of the inner circle and stands proud of the surface
    in its middle, holding whatever leans on the wall too far in (a sphere wedged in a tapered
    cup rests one chord sagitta / the wall's slope too high). Here the inner points are pushed out
    onto the plane tangent to the inner surface in the middle of the sector: the part touches the
    surface there and lies in the wall elsewhere (never beyond three quarters of its thickness),
    leaving a groove no deeper than ``tol`` at the sector boundaries. ``outer`` (the outer curve,
    with the rim) and ``inner`` are ``(r, z)`` points; inner point ``j`` faces outer point ``j``.
    """
    o, i = np.asarray(outer, dtype=float), np.asarray(inner, dtype=float)
    k = sector_count(sections, float(i[:, 0].max()), tol)      # the groove r (1/cos - 1) is about the sagitta
    # how far an inner point may move out radially and stay inside three quarters of the wall's thickness
    thick = np.linalg.norm(o[:len(i)] - i, axis=1)
    radial = np.maximum(o[:len(i), 0] - i[:, 0], 0.05 * thick)
    room = i[:, 0] + 0.75 * thick * thick / np.maximum(radial, 1e-12)
    fits = [d for d in range(k, sections + 1) if sections % d == 0 and np.all(i[:, 0] <= room * np.cos(np.pi / d))]
    k = fits[0] if fits else sections                           # more sectors where the wall is too thin
    out = []
    for ang in _sector_angles(sections, k):
        mid = 0.5 * (ang[0] + ang[-1])
        r = np.minimum(np.outer(i[:, 0], 1.0 / np.cos(ang - mid)), room[:, None])
        pushed = np.column_stack([(r * np.cos(ang)).ravel(), (r * np.sin(ang)).ravel(),
                                  np.repeat(i[:, 1], len(ang))])
        out.append(np.vstack([_revolve(o, ang), pushed]))
    return out


def _mirrored(rz: np.ndarray) -> np.ndarray:
    """A cell touching the axis and its mirror image: the meridian section of its full revolution."""
    rz = np.asarray(rz, dtype=float)
    return np.vstack([rz, (rz * [-1.0, 1.0])[::-1]])


def shell_parts(outer: np.ndarray, inner: np.ndarray, rim: np.ndarray, sections: int, tol: float) -> list[Part]:
    """Parts of a revolved open shell: a floor disc, then sectors of bands of the wall.

    Args:
        outer: ``(n, 2)`` outer ``(r, z)`` curve from the bottom centre (``r == 0``) up to the rim.
        inner: ``(n, 2)`` inner curve, point ``i`` facing outer point ``i`` (``inner[0]`` on the axis).
        rim: ``(k, 2)`` points of the rim from the outer curve's top over to the inner one's.
        sections: points per revolution of the visual mesh.
        tol: largest bridge (m) over a concave stretch.

    """
    o, i = np.asarray(outer, dtype=float), np.asarray(inner, dtype=float)
    n = len(o)

    def cell(a: int, b: int) -> np.ndarray:
        top = [np.asarray(rim, dtype=float)] if b == n - 1 else []
        return np.vstack([o[a:b + 1], *top, i[a:b + 1][::-1]])

    # the floor: the longest run from the axis whose full revolution is convex (objects rest on it:
    # it is not allowed to bridge anything)
    f = 1
    while f + 1 < n and concavity(_mirrored(cell(0, f + 1))) <= FLAT:
        f += 1
    parts = [_revolve(cell(0, f), np.linspace(0.0, 2 * np.pi, sections, endpoint=False))]
    if f >= n - 1:
        return parts
    rim = np.asarray(rim, dtype=float)
    # bands grow down from the rim: a straight upper wall, where things lean and wedge, stays one
    # exact band, and the bridges go where the wall curves into the floor
    top = n - 1
    seg = np.diff(i, axis=0)
    # a bridge over a wall of slope a (from the vertical) lifts what wedges there by bridge / sin a: steep
    # bands may bridge less (down to half of tol)
    steep = np.clip(np.abs(seg[:, 0]) / np.maximum(np.linalg.norm(seg, axis=1), 1e-12), 0.5, 1.0)

    def ok(a: int, b: int) -> bool:
        lo, hi = top - b, top - a
        return concavity(cell(lo, hi)) <= tol * float(steep[lo:hi].min())

    bands = [(top - b, top - a) for a, b in runs(top - f + 1, ok)]
    for a, b in bands:
        outer_side = np.vstack([o[a:b + 1], rim]) if b == n - 1 else o[a:b + 1]
        parts += _wall_sectors(outer_side, i[a:b + 1], sections, tol)
    return parts


def ring_parts(pieces: Sequence[np.ndarray], sections: int, tol: float, least: int = 4) -> list[Part]:
    """Sectors of the revolutions of convex 2-D ``(r, z)`` pieces off the axis (a foot ring, a bearing's races)."""
    out: list[Part] = []
    for rz in pieces:
        out += _sectors(rz, sections, tol, least)
    return out


# --------------------------------------------------------------------------- walls of boxes and rings

def _ring_slice(ring: np.ndarray, a: int, b: int) -> np.ndarray:
    return ring[np.arange(a, b + 1) % len(ring)]


def wall_parts(outer: Sequence[np.ndarray], inner: Sequence[np.ndarray], tol: float) -> list[Part]:
    """Segments of a wall between an outer and an inner surface given as rings of 3-D points.

    Args:
        outer: rings ``(m, 3)`` of the outer surface (e.g. at the bottom and at the top).
        inner: rings ``(m, 3)`` of the inner surface, point ``j`` of every ring at the same place
            around (the same angle of a rounded rectangle, a circle or a hexagon).
        tol: largest bridge (m) across the inner surface of one segment.

    """
    outer = [np.asarray(r, dtype=float) for r in outer]
    inner = [np.asarray(r, dtype=float) for r in inner]
    m = len(outer[0])
    if any(len(r) != m for r in outer + inner):
        raise ValueError("wall rings must have the same number of points")

    def ok(a: int, b: int) -> bool:
        for ro, ri in zip(outer, inner, strict=False):
            sec = np.vstack([_ring_slice(ro, a, b)[:, :2], _ring_slice(ri, a, b)[::-1, :2]])
            if concavity(sec) > tol:
                return False
        return True

    return [np.vstack([_ring_slice(r, a, b) for r in outer + inner]) for a, b in runs(m, ok, closed=True)]


# --------------------------------------------------------------------------- swept tubes

def chain_parts(rings: Sequence[np.ndarray], path: np.ndarray, tol: float) -> list[Part]:
    """Chain of segments of a swept tube: hulls of consecutive cross-section rings.

    A segment spans rings ``a..b`` while the centre line stays within ``tol`` of its chord.
    """
    path = np.asarray(path, dtype=float)

    def ok(a: int, b: int) -> bool:
        d = path[b] - path[a]
        length = float(np.linalg.norm(d))
        if length < 1e-12:
            return True
        rel = path[a:b + 1] - path[a]
        off = rel - np.outer(rel @ d / length, d / length)
        return float(np.linalg.norm(off, axis=1).max()) <= tol

    return [np.vstack(rings[a:b + 1]) for a, b in runs(len(rings), ok)]


# --------------------------------------------------------------------------- exact cuts

def _hull(points: np.ndarray):
    from scipy.spatial import ConvexHull, QhullError

    try:
        return ConvexHull(points)
    except (QhullError, ValueError):
        return None


def clip(points: np.ndarray, normal: Sequence[float], offset: float) -> np.ndarray:
    """The convex hull of ``points`` cut to the half-space ``normal . x <= offset`` (its points)."""
    pts = np.asarray(points, dtype=float)
    s = pts @ np.asarray(normal, dtype=float) - offset
    if np.all(s <= 1e-12):
        return pts
    if np.all(s >= -1e-12):
        return np.zeros((0, 3))
    h = _hull(pts)
    if h is None:
        return np.zeros((0, 3))
    v = pts[h.vertices]
    sv = s[h.vertices]
    edges = np.vstack([h.simplices[:, [0, 1]], h.simplices[:, [1, 2]], h.simplices[:, [2, 0]]])
    a, b = pts[edges[:, 0]], pts[edges[:, 1]]
    sa, sb = s[edges[:, 0]], s[edges[:, 1]]
    cross = (sa < 0) != (sb < 0)
    t = sa[cross] / (sa[cross] - sb[cross])
    cut = a[cross] + t[:, None] * (b[cross] - a[cross])
    return np.vstack([v[sv <= 0], cut])


def volume(points: np.ndarray) -> float:
    """Volume of the convex hull of ``points`` (0 when flat or empty)."""
    if len(points) < 4:
        return 0.0
    h = _hull(np.asarray(points, dtype=float))
    return float(h.volume) if h is not None else 0.0


def subtract_box(parts: Sequence[Part], center: Sequence[float], extents: Sequence[float],
                 rotation: np.ndarray | None = None) -> list[Part]:
    """The parts minus a box, each part split into the convex pieces of what remains.

    A part the box misses stays whole; one it cuts becomes up to six exact pieces (the part
    beyond each face of the box, cut along the box's thinnest side first).

    Args:
        parts: convex parts.
        center: the box centre.
        extents: its side lengths (in its own axes).
        rotation: ``3 x 3`` matrix whose columns are the box's axes (default: world axes).

    """
    rot = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    c, half = np.asarray(center, dtype=float), np.asarray(extents, dtype=float) / 2
    out: list[Part] = []
    for part in parts:
        inside = np.asarray(part, dtype=float)
        for ax in range(3):
            for sign in (1.0, -1.0):
                inside = clip(inside, sign * rot[:, ax], sign * (rot[:, ax] @ c) + half[ax])
        if volume(inside) < MIN_VOLUME:
            out.append(part)
            continue
        rest = np.asarray(part, dtype=float)
        for ax in np.argsort(half, kind="stable"):     # thinnest side first: long pieces, fewer of them
            u = rot[:, ax]
            lo, hi = u @ c - half[ax], u @ c + half[ax]
            below, above = clip(rest, u, lo), clip(rest, -u, -hi)
            out += [p for p in (below, above) if volume(p) >= MIN_VOLUME]
            rest = clip(clip(rest, -u, -lo), u, hi)
    return out


def hull_mesh(points: np.ndarray) -> trimesh.Trimesh | None:
    """The convex hull of ``points`` as a closed, outward-wound mesh (None when flat or empty)."""
    pts = np.asarray(points, dtype=float)
    h = _hull(pts) if len(pts) >= 4 else None
    if h is None or h.volume < MIN_VOLUME:
        return None
    faces = h.simplices.copy()
    a, b, c = (pts[faces[:, k]] for k in range(3))
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), h.equations[:, :3]) < 0
    faces[flip] = faces[flip][:, ::-1]
    used, inv = np.unique(faces, return_inverse=True)
    return trimesh.Trimesh(pts[used], inv.reshape(-1, 3), process=False)


def as_meshes(parts: Sequence[Part]) -> list[trimesh.Trimesh]:
    """Convex hull meshes of the parts, dropping slivers."""
    return [m for m in (hull_mesh(p) for p in parts) if m is not None]
