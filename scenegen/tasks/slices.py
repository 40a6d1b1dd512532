"""A long object lying across the table's axes as a row of small boxes, for the flip's dry run (issue 19).

The flip's dry run (:mod:`scenegen.tasks.flipplan`) keeps the swinging mug and the arm's links clear of the other
objects' world-aligned boxes (:func:`scenegen.tasks.flipplan.object_box`). For a long thin object lying diagonally
that box is mostly empty: on tier-3 ``flip_mugs`` scene 917b867ca422 (seed 0) a hammer lying at 45 degrees, 3.6 cm
tall, got a 25 x 27 cm box whose corner came within 2 cm of a mug's handle, so that no flip of the mug counted as
reached, the expert fell back on a flip unchecked against any neighbour, and its retries knocked a mug flipped
upright before over.

:func:`slice_boxes` cuts the object along its longest horizontal axis into slabs about :data:`SLICE` long and
boxes each slab's share of its surface (points sampled :data:`SAMPLE` apart on the mesh's triangles, so that a
slab between two far vertices is not left empty); the boxes are kept only when they cover much less of the table
than the one box (:data:`KEEP_AREA`).
"""

from __future__ import annotations

import math

import numpy as np

SLICE = 0.03
"""Length (m) of a slab along the object's longest horizontal axis."""
MAX_SLICES = 10
"""Most slabs one object is cut into."""
SAMPLE = 0.01
"""Spacing (m) of the points sampled on the mesh's triangles."""
KEEP_AREA = 0.8
"""The slabs' boxes replace the one box when their footprints add up to less than this share of its footprint."""


def surface_points(verts: np.ndarray, faces: np.ndarray, spacing: float = SAMPLE) -> np.ndarray:
    """The vertices and points on every triangle of the mesh ``(verts, faces)``, at most ``spacing`` apart along it."""
    verts = np.asarray(verts, dtype=float)
    faces = np.asarray(faces, dtype=int).reshape(-1, 3)
    if not len(faces):
        return verts
    tri = verts[faces]
    edge = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
    steps = np.clip(np.ceil(edge / spacing), 1, 40).astype(int)
    out = [verts]
    for n in np.unique(steps[steps > 1]):
        i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        keep = i + j <= n
        w = np.stack([i[keep], j[keep], n - i[keep] - j[keep]], axis=1) / n  # barycentric weights
        out.append((w @ tri[steps == n]).reshape(-1, 3))
    return np.concatenate(out)


def slice_boxes(points: np.ndarray, grow: float, within: tuple[np.ndarray, np.ndarray] | None = None,
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """World boxes ``(lo, hi)`` of an object's surface ``points`` (world): one, or a row of slabs along its length.

    Args:
        points: points on the object's surface in the world (:func:`surface_points`, posed).
        grow: how far (m) every box reaches past its points.
        within: a box ``(lo, hi)`` every box is kept inside (the physics engine's), or None.

    Returns:
        The one box of all ``points``, or (a long object lying across the table's axes) one box per slab of
        :data:`SLICE` along the points' longest horizontal axis, when their footprints add up to less than
        :data:`KEEP_AREA` of the one box's.
    """
    pts = np.asarray(points, dtype=float)

    def box(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = p.min(axis=0) - grow, p.max(axis=0) + grow
        return (lo, hi) if within is None else (np.maximum(lo, within[0]), np.minimum(hi, within[1]))

    whole = box(pts)
    xy = pts[:, :2] - pts[:, :2].mean(axis=0)
    u = np.linalg.eigh(xy.T @ xy)[1][:, -1]  # the longest horizontal axis
    t = xy @ u
    n = min(MAX_SLICES, math.ceil(float(np.ptp(t)) / SLICE))
    if n < 2:
        return [whole]
    cuts = np.linspace(float(t.min()), float(t.max()), n + 1)
    slabs = [pts[(t >= a - SAMPLE / 2) & (t <= b + SAMPLE / 2)] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    parts = [box(p) for p in slabs if len(p)]  # (a slab no triangle crosses holds no surface)
    area = sum(float(np.prod(np.maximum(hi - lo, 0.0)[:2])) for lo, hi in parts)
    return parts if area < KEEP_AREA * float(np.prod(np.maximum(whole[1] - whole[0], 0.0)[:2])) else [whole]
