"""Other objects as upright oriented boxes or cylinders, for the flip's dry run (issue 19).

The flip's dry run (:mod:`scenegen.tasks.flipplan`) kept the swinging mug and the arm's links
(:mod:`scenegen.tasks.armclear`) clear of the other objects' world-aligned boxes. For an object turned on
the table that box is much larger than the object: on tier-3 ``flip_mugs`` scene 2134293e5764 (seed 0) a
31 x 24 cm box turned by 73 degrees got a 33 x 38 cm world box, which the hand met at the pre-grasp point of
every turn of the mug beside it, so that no flip counted as reached ("could not reach above the handle").

:func:`footprint` gives an object's points (world) the tighter of two upright prisms: the least-area
rectangle (over :data:`ANGLES`) around their xy, turned about the vertical, or a circle around them (a
mug, a bottle, a can), each grown by ``grow``. A :class:`Shape` is still the tuple ``(lo, hi)`` of the
world box, so that code that wants boxes (:mod:`scenegen.tasks.mugshift`) keeps using them;
:func:`inside` and :func:`shape_body` use the prism.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ANGLES = tuple(math.radians(a) for a in range(0, 90, 3))
"""Turns (rad) of the rectangle tried around an object's footprint (a rectangle repeats every quarter turn)."""
ROUND = 1.15
"""A circle is used when its area is at most this many times the least rectangle's (a mug, a bottle)."""


class Shape(tuple):
    """An upright prism around an object: the tuple ``(lo, hi)`` of its world box, with the prism's shape.

    Attributes:
        centre: the prism's axis (world xy, m).
        half: the rectangle's half sides (m) along its turned x and y (the circle's: its radius twice).
        yaw: the rectangle's turn (rad) about the vertical.
        radius: the circle's radius (m), or None: a rectangle.
    """

    centre: np.ndarray
    half: np.ndarray
    yaw: float
    radius: float | None

    def __new__(cls, lo: np.ndarray, hi: np.ndarray, centre: np.ndarray, half: np.ndarray, yaw: float = 0.0,
                radius: float | None = None) -> Shape:
        """A prism from ``lo[2]`` to ``hi[2]``, inside the box ``(lo, hi)``; see the attributes."""
        obj = super().__new__(cls, (np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)))
        obj.centre, obj.half = np.asarray(centre, dtype=float)[:2], np.asarray(half, dtype=float)[:2]
        obj.yaw, obj.radius = float(yaw), None if radius is None else float(radius)
        return obj

    def __reduce__(self) -> tuple:
        return Shape, (self[0], self[1], self.centre, self.half, self.yaw, self.radius)

    def area(self) -> float:
        """The prism's footprint (m^2)."""
        return math.pi * self.radius ** 2 if self.radius is not None else float(4.0 * self.half[0] * self.half[1])


def box_shape(lo: np.ndarray, hi: np.ndarray) -> Shape:
    """The world box ``(lo, hi)`` as a :class:`Shape` (a rectangle not turned)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return Shape(lo, hi, 0.5 * (lo + hi), 0.5 * (hi - lo))


def _rot(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


def footprint(points: np.ndarray, grow: float, within: tuple[np.ndarray, np.ndarray] | None = None) -> Shape:
    """The tighter upright prism (turned rectangle or circle) around ``points`` (world), grown by ``grow`` (m).

    Args:
        points: points on the object's surface in the world.
        grow: how far (m) the prism reaches past the points, sideways, above and below.
        within: a box ``(lo, hi)`` the shape's box is kept inside (the physics engine's), or None.
    """
    pts = np.asarray(points, dtype=float)
    lo, hi = pts.min(axis=0) - grow, pts.max(axis=0) + grow
    if within is not None:
        lo, hi = np.maximum(lo, within[0]), np.minimum(hi, within[1])
    xy = pts[:, :2]
    best = None
    for yaw in ANGLES:
        uv = xy @ _rot(yaw)  # the points in the rectangle's frame
        a, b = uv.min(axis=0), uv.max(axis=0)
        area = float(np.prod(b - a))
        if best is None or area < best[0] - 1e-9:
            best = (area, yaw, a, b)
    _, yaw, a, b = best
    centre, half = _rot(yaw) @ (0.5 * (a + b)), 0.5 * (b - a) + grow
    rect = Shape(lo, hi, centre, half, yaw)
    r = float(np.linalg.norm(xy - centre, axis=1).max()) + grow
    circle = Shape(lo, hi, centre, np.array([r, r]), 0.0, r)
    return circle if circle.area() <= ROUND * rect.area() else rect


def inside(shape: tuple[np.ndarray, np.ndarray], pts: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Which of the world points ``pts`` (n x 3) lie within ``margin`` (m) of ``shape`` (a Shape, or a box).

    A plain ``(lo, hi)`` counts as its box; a :class:`Shape` as its prism (the rectangle's corners grown
    square, the margin added to each side).
    """
    pts = np.asarray(pts, dtype=float)
    lo, hi = np.asarray(shape[0], dtype=float), np.asarray(shape[1], dtype=float)
    if not isinstance(shape, Shape):
        return np.all((pts > lo - margin) & (pts < hi + margin), axis=1)
    z = (pts[:, 2] > lo[2] - margin) & (pts[:, 2] < hi[2] + margin)
    rel = pts[:, :2] - shape.centre
    if shape.radius is not None:
        return z & (np.linalg.norm(rel, axis=1) < shape.radius + margin)
    uv = rel @ _rot(shape.yaw)
    return z & np.all(np.abs(uv) < shape.half + margin, axis=1)


def shape_body(p: Any, client: int, shape: tuple[np.ndarray, np.ndarray]) -> int:
    """A fixed body of ``shape`` (a Shape's prism, or a plain box) in the pybullet ``client``; returns its id."""
    if not isinstance(shape, Shape):
        shape = box_shape(*shape)  # a plain box: the rectangle not turned
    lo, hi = shape
    hz = max(0.5 * float(hi[2] - lo[2]), 1e-3)
    zc = 0.5 * float(hi[2] + lo[2])
    pos = [float(shape.centre[0]), float(shape.centre[1]), zc]
    if shape.radius is not None:
        col = p.createCollisionShape(p.GEOM_CYLINDER, radius=max(shape.radius, 1e-3), height=2.0 * hz,
                                     physicsClientId=client)
        return p.createMultiBody(0.0, col, -1, pos, physicsClientId=client)
    half = [max(float(shape.half[0]), 1e-3), max(float(shape.half[1]), 1e-3), hz]
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=client)
    orn = [0.0, 0.0, math.sin(shape.yaw / 2), math.cos(shape.yaw / 2)]
    return p.createMultiBody(0.0, col, -1, pos, orn, physicsClientId=client)
