"""Shared geometry of the procedural builders.

2-D outlines, stitched rows and a lathe, a swept tube, a loft, extrusion, boolean
union/difference (manifold3d) and the inward offset that turns an outer profile into
a shell. Sizes and the final clean-up live in :mod:`._build`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import trimesh

from scenegen.errors import AssetError

# --------------------------------------------------------------------------- primitives

def circle2d(n: int, r: float = 1.0, phase: float = 0.0) -> np.ndarray:
    """``n`` points of a circle, counter-clockwise."""
    t = phase + np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    return np.column_stack([r * np.cos(t), r * np.sin(t)])


def rounded_rect2d(w: float, h: float, r: float, n_corner: int = 4) -> np.ndarray:
    """Counter-clockwise outline of a ``w`` x ``h`` rectangle with corner radius ``r``."""
    r = min(r, 0.499 * w, 0.499 * h)
    pts = []
    for cx, cy, a0 in ((w / 2 - r, h / 2 - r, 0.0), (-w / 2 + r, h / 2 - r, np.pi / 2),
                       (-w / 2 + r, -h / 2 + r, np.pi), (w / 2 - r, -h / 2 + r, 1.5 * np.pi)):
        for a in np.linspace(a0, a0 + np.pi / 2, n_corner):
            pts.append((cx + r * np.cos(a), cy + r * np.sin(a)))
    return _dedupe(np.array(pts), closed=True)


def box(extents: Sequence[float], center: Sequence[float] = (0.0, 0.0, 0.0)) -> trimesh.Trimesh:
    """An axis-aligned box."""
    m = trimesh.creation.box(extents=np.asarray(extents, dtype=float))
    m.apply_translation(center)
    return m


def _dedupe(pts: np.ndarray, closed: bool = False, tol: float = 1e-9) -> np.ndarray:
    keep = [0]
    for i in range(1, len(pts)):
        if np.linalg.norm(pts[i] - pts[keep[-1]]) > tol:
            keep.append(i)
    out = pts[keep]
    if closed and len(out) > 2 and np.linalg.norm(out[0] - out[-1]) <= tol:
        out = out[:-1]
    return out


def signed_volume(mesh: trimesh.Trimesh) -> float:
    """Signed volume of a closed mesh (cheap: no mass properties)."""
    t = mesh.vertices[mesh.faces]
    return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


def _oriented(v: np.ndarray, f: np.ndarray) -> trimesh.Trimesh:
    m = trimesh.Trimesh(v, f, process=True)
    if signed_volume(m) < 0:
        m.invert()
    return m


def stitch_rows(rows: Sequence[np.ndarray], loop: bool = False,
                poles: tuple[Sequence[float], Sequence[float]] | None = None) -> trimesh.Trimesh:
    """Join rows of ``m`` 3-D points (same angular order) into a closed solid.

    Consecutive rows are joined by quad strips. With ``loop`` the last row joins the
    first (a torus-like ring, e.g. a nut); otherwise ``poles`` gives the two points
    the first and the last rows are fanned to.
    """
    rws = [np.asarray(r, dtype=float) for r in rows]
    m, nb = len(rws[0]), len(rws)
    verts = np.vstack(rws)
    j = np.arange(m)
    j1 = (j + 1) % m
    faces = []
    for i in range(nb if loop else nb - 1):
        a, b = i * m, ((i + 1) % nb) * m
        faces.append(np.column_stack([a + j, b + j, b + j1]))
        faces.append(np.column_stack([a + j, b + j1, a + j1]))
    if not loop:
        if poles is None:
            raise ValueError("stitch_rows needs poles when loop is False")
        bot, top = len(verts), len(verts) + 1
        verts = np.vstack([verts, poles[0], poles[1]])
        last = (nb - 1) * m
        faces.append(np.column_stack([np.full(m, bot), j, j1]))
        faces.append(np.column_stack([np.full(m, top), last + j1, last + j]))
    return _oriented(verts, np.vstack(faces))


def lathe(profile: np.ndarray, sections: int, ring: bool = False) -> trimesh.Trimesh:
    """Revolve a 2-D profile of ``(r, z)`` points about the z axis.

    Args:
        profile: ``(n, 2)`` points. Unless ``ring``, the first and last have ``r == 0``
            (they become the two poles) and the rest ``r > 0``: a closed solid.
        sections: points per revolution (a multiple of 4 keeps x and y extents equal).
        ring: the profile is a closed loop away from the axis (a torus-like ring).

    """
    p = _dedupe(np.asarray(profile, dtype=float), closed=ring)
    th = np.linspace(0.0, 2 * np.pi, sections, endpoint=False)
    c, s = np.cos(th), np.sin(th)
    body = p if ring else p[1:-1]
    rows = [np.column_stack([r * c, r * s, np.full(sections, z)]) for r, z in body]
    if ring:
        return stitch_rows(rows, loop=True)
    return stitch_rows(rows, poles=([0.0, 0.0, p[0, 1]], [0.0, 0.0, p[-1, 1]]))


def _frames(path: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tan = np.gradient(path, axis=0)
    tan /= np.linalg.norm(tan, axis=1, keepdims=True)
    n0 = up - tan[0] * np.dot(up, tan[0])
    if np.linalg.norm(n0) < 1e-9:
        n0 = np.cross(tan[0], [1.0, 0.0, 0.0])
    normals = [n0 / np.linalg.norm(n0)]
    for i in range(1, len(path)):  # parallel transport: no twist along the path
        n = normals[-1] - tan[i] * np.dot(normals[-1], tan[i])
        normals.append(n / np.linalg.norm(n))
    nrm = np.array(normals)
    return tan, nrm, np.cross(tan, nrm)


def sweep_rings(path: np.ndarray, section: np.ndarray, scales: np.ndarray | None = None,
                up: Sequence[float] = (0.0, 0.0, 1.0)) -> np.ndarray:
    """The ``(n, m, 3)`` cross-section rings of :func:`sweep` (same arguments), one per path point."""
    path = np.asarray(path, dtype=float)
    sec = np.asarray(section, dtype=float)
    n = len(path)
    sc = np.ones((n, 2)) if scales is None else np.asarray(scales, dtype=float).reshape(n, -1)
    sc = np.broadcast_to(sc, (n, 2))
    _, nrm, bin_ = _frames(path, np.asarray(up, dtype=float))
    return (path[:, None, :] + (sec[None, :, 0:1] * sc[:, None, 0:1]) * nrm[:, None, :]
            + (sec[None, :, 1:2] * sc[:, None, 1:2]) * bin_[:, None, :])


def sweep(path: np.ndarray, section: np.ndarray, scales: np.ndarray | None = None,
          up: Sequence[float] = (0.0, 0.0, 1.0)) -> trimesh.Trimesh:
    """Sweep a closed 2-D cross-section along a 3-D path into a capped tube.

    Args:
        path: ``(n, 3)`` centre-line points.
        section: ``(m, 2)`` closed outline (in the frame: first coordinate along the
            normal, which starts as ``up``, second along the binormal).
        scales: ``(n,)`` or ``(n, 2)`` per-point scale of the section (> 0).
        up: direction the section's first axis starts along.

    """
    path = np.asarray(path, dtype=float)
    n, m = len(path), len(section)
    verts = sweep_rings(path, section, scales, up).reshape(-1, 3)
    j = np.arange(m)
    j1 = (j + 1) % m
    faces = []
    for i in range(n - 1):
        a, b = i * m, (i + 1) * m
        faces.append(np.column_stack([a + j, b + j, b + j1]))
        faces.append(np.column_stack([a + j, b + j1, a + j1]))
    c0, c1 = len(verts), len(verts) + 1
    verts = np.vstack([verts, path[0], path[-1]])
    faces.append(np.column_stack([np.full(m, c0), j, j1]))
    faces.append(np.column_stack([np.full(m, c1), (n - 1) * m + j1, (n - 1) * m + j]))
    return _oriented(verts, np.vstack(faces))


def loft(ring0: np.ndarray, z0: float, ring1: np.ndarray, z1: float) -> trimesh.Trimesh:
    """Ruled solid between two convex 2-D rings of equal point count (bottom at z0, top at z1)."""
    r0, r1 = np.asarray(ring0, dtype=float), np.asarray(ring1, dtype=float)
    m = len(r0)
    verts = np.vstack([np.column_stack([r0, np.full(m, z0)]), np.column_stack([r1, np.full(m, z1)]),
                       [[*r0.mean(axis=0), z0], [*r1.mean(axis=0), z1]]])
    j = np.arange(m)
    j1 = (j + 1) % m
    faces = np.vstack([np.column_stack([j, j1, m + j1]), np.column_stack([j, m + j1, m + j]),
                       np.column_stack([np.full(m, 2 * m), j1, j]),
                       np.column_stack([np.full(m, 2 * m + 1), m + j, m + j1])])
    return _oriented(verts, faces)


def extrude(outline: np.ndarray, height: float, holes: Sequence[np.ndarray] = ()) -> trimesh.Trimesh:
    """Extrude a 2-D outline (x, y), optionally with holes, from z = 0 to ``height``."""
    from shapely.geometry import Polygon
    poly = Polygon(outline, [h for h in holes])
    if not poly.is_valid:
        poly = poly.buffer(0)
    return trimesh.creation.extrude_polygon(poly, height)


# --------------------------------------------------------------------------- booleans

def _to_manifold(m: trimesh.Trimesh):
    import manifold3d
    mesh = manifold3d.Mesh(vert_properties=np.asarray(m.vertices, dtype=np.float32),
                           tri_verts=np.asarray(m.faces, dtype=np.uint32))
    return manifold3d.Manifold(mesh)


def _from_manifold(man) -> trimesh.Trimesh:
    out = man.to_mesh()
    return trimesh.Trimesh(np.asarray(out.vert_properties)[:, :3].astype(float),
                           np.asarray(out.tri_verts), process=True)


def _manifold_module():
    try:
        import manifold3d
    except ImportError:
        raise AssetError("boolean mesh operations need manifold3d; install it with "
                         "`pip install manifold3d`") from None
    return manifold3d


def union(*meshes: trimesh.Trimesh) -> trimesh.Trimesh:
    """Boolean union of closed meshes (manifold3d)."""
    mf = _manifold_module()
    return _from_manifold(mf.Manifold.batch_boolean([_to_manifold(m) for m in meshes], mf.OpType.Add))


def difference(a: trimesh.Trimesh, *cutters: trimesh.Trimesh) -> trimesh.Trimesh:
    """Boolean difference ``a - cutters`` of closed meshes (manifold3d)."""
    mf = _manifold_module()
    return _from_manifold(mf.Manifold.batch_boolean([_to_manifold(a)] + [_to_manifold(c) for c in cutters],
                                                    mf.OpType.Subtract))


# --------------------------------------------------------------------------- shells

def shell_curves(outer: np.ndarray, wall: float, floor: float,
                 rim_points: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outer curve, the inner curve and the rim of an open-top shell (see :func:`shell_profile`).

    Returns ``(outer, inner, rim)``: ``inner[i]`` is ``outer[i]`` offset into the material (both
    start on the axis, ``inner[0]`` at the inner floor), ``rim`` the half-round points from the
    outer curve's top over to the inner one's (both ends excluded).
    """
    o = _dedupe(np.asarray(outer, dtype=float))
    seg = np.diff(o, axis=0)
    seg /= np.linalg.norm(seg, axis=1, keepdims=True)
    sn = np.column_stack([-seg[:, 1], seg[:, 0]])          # left normal: into the material
    vn = np.vstack([sn[:1], sn[:-1] + sn[1:], sn[-1:]])
    vn /= np.linalg.norm(vn, axis=1, keepdims=True)
    dots = np.concatenate([[1.0], np.einsum("ij,ij->i", vn[1:-1], sn[1:]), [1.0]])
    dist = wall + (floor - wall) * np.clip(vn[:, 1], 0.0, 1.0) ** 2
    inner = o + vn * (dist / np.maximum(dots, 0.5))[:, None]
    inner[0, 0] = 0.0
    # rim: half circle from the outer rim point to the inner one, bulging along the tangent
    p_out, p_in = o[-1], inner[-1]
    c = (p_out + p_in) / 2
    rad = np.linalg.norm(p_out - p_in) / 2
    e1 = (p_out - c) / rad
    t = seg[-1]
    phis = np.linspace(0, np.pi, rim_points + 2)[1:-1]
    rim = c + rad * (np.cos(phis)[:, None] * e1 + np.sin(phis)[:, None] * t)
    return o, inner, rim


def shell_profile(outer: np.ndarray, wall: float, floor: float, rim_points: int = 5) -> tuple[np.ndarray, float]:
    """Turn an outer ``(r, z)`` curve into the closed profile of an open-top shell.

    ``outer`` runs from the bottom centre ``(0, 0)`` (its first segment horizontal) up
    to the rim. The inner surface is the outer one offset into the material by
    ``floor`` where it faces down and ``wall`` where it faces sideways; a half-round
    rim joins them. Returns ``(profile, inner floor z)``; the profile starts at
    ``(0, 0)`` and ends on the axis at the inner floor, ready for :func:`lathe`.
    """
    o, inner, rim = shell_curves(outer, wall, floor, rim_points)
    prof = np.vstack([o, rim, inner[::-1]])
    return prof, float(inner[0, 1])
