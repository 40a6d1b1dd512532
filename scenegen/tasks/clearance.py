"""Room for the open gripper around a grasp: what it would come down on, and a shift that clears it.

The Panda opens its fingers 8 cm apart whatever it grasps, so a thin object (a marker, a knife's
handle, a fork) lying a few centimetres from a taller one (a mug, a cutting board's edge) is
grasped with one open finger landing on the neighbour: the descent stalls, or the finger knocks
the neighbour over. :func:`blocker` names the object an open gripper at a grasp would come down
on (its fingers, or its hand when the grasp is low enough for the hand to reach a neighbour's
top); :func:`cleared` shifts the grasp along its closing axis, away from the neighbour, by as
much as the open fingers leave around the object (the near finger then pushes the object back
to the middle as they close). The expert's grasp planner (:func:`scenegen.tasks.plan.plan_grasp`)
takes the cleared grasp and QA's reachability check rejects a scene whose target's grasp stays
blocked, so the two share this one test.

Footprints are the convex hulls of the objects' meshes in the world (xy); the fingers and the hand
are boxes measured on the Panda's collision shapes at its full opening.
"""

from __future__ import annotations

import math

import numpy as np
import shapely
from shapely.geometry import Polygon

from scenegen.geometry import asset_geometry, transform_points
from scenegen.rotations import quat_matrix
from scenegen.sim.world import World
from scenegen.tasks.bins import HAND_ABOVE, HAND_HALF, Openings, holder, openings
from scenegen.tasks.grasps import FINGERTIP_BELOW
from scenegen.tasks.tracker import node_body

FINGER_DEPTH = 0.027
"""How far (m) each finger reaches outward along the closing axis beyond its inner face, at full opening."""
FINGER_HALF_WIDTH = 0.013
"""Half width (m) of a finger across the closing axis."""
MARGIN = 0.003
"""Clearance (m) kept between the gripper's boxes and a neighbour's footprint."""
TIP_MARGIN = 0.002
"""A neighbour whose top is this far (m) below the fingertips still counts (the arm dips a little)."""
SIDE_GAP = 0.006
"""Least gap (m) between the grasped object's edge and the near open finger after a shift."""
HAND_GRAZE = 0.015
"""How deep (m) the hand's box may overlap a tall neighbour's outline when grazing is allowed (see :func:`blocker`)."""
SHIFT_STEP = 0.004
"""Shifts tried, in steps of this (m)."""


def _axis(yaw: float) -> np.ndarray:
    """The closing axis (world xy) of gripper yaw ``yaw`` (see :func:`scenegen.rotations.down_quat`)."""
    return np.array([math.sin(yaw), -math.cos(yaw)])


def _box(centre: np.ndarray, u: np.ndarray, along: tuple[float, float], half_across: float) -> Polygon:
    """The rectangle from ``along[0]`` to ``along[1]`` along unit ``u`` from ``centre``, ``half_across`` wide."""
    v = np.array([-u[1], u[0]])
    a, b = along
    # the corners (a, -h), (b, -h), (b, h), (a, h) as one array: each is centre + u * s + v * t, as one by one
    pts = centre + u * np.array([[a], [b], [b], [a]]) + v * np.array([[-half_across], [-half_across],
                                                                      [half_across], [half_across]])
    return shapely.polygons(pts)


def gripper_boxes(point: np.ndarray, yaw: float, opening: float) -> tuple[list[Polygon], Polygon]:
    """Footprints (world xy) of the two open fingers and of the hand at a grasp ``point`` and ``yaw``."""
    c, u = np.asarray(point[:2], dtype=float), _axis(yaw)
    half = opening / 2
    fingers = [_box(c, s * u, (half, half + FINGER_DEPTH), FINGER_HALF_WIDTH) for s in (1.0, -1.0)]
    return fingers, _box(c, u, (-HAND_HALF[0], HAND_HALF[0]), HAND_HALF[1])


Neighbours = list[tuple[str, Polygon, float]]
"""``(id, footprint, top)`` of the objects around a grasped one (see :func:`neighbours`)."""


def neighbours(world: World, node: str) -> Neighbours:
    """``(id, footprint, top)`` of every object other than ``node``: its hull's xy outline and its top (z).

    An upright open container's outline is its walls alone: a finger may come down inside its cavity.
    """
    out = []
    for n in world.objects():
        if n != node:
            geom, pose = asset_geometry(world.assets[n]), world.pose(n)
            pts = transform_points(geom.hull, pose)
            fp = shapely.MultiPoint(pts[:, :2]).convex_hull
            if geom.has_cavity and quat_matrix(pose.orientation)[2, 2] > 0.9:
                inner = node_body(world.assets[n], pose).opening().buffer(-MARGIN)
                fp = fp.difference(inner) if not inner.is_empty else fp
            out.append((n, fp, float(pts[:, 2].max())))
    return out


def blocker(world: World, node: str, point: np.ndarray, yaw: float, opening: float,
            around: Neighbours | None = None, hand: bool = True, within: Openings | None = None) -> str | None:
    """The object the open gripper would come down on when grasping ``node`` at ``point`` and ``yaw``, or None.

    A neighbour blocks when its footprint comes within :data:`MARGIN` of a finger's box and its top
    is above the fingertips, or of the hand's box and its top is above the hand's bottom. Inside an
    open container (a tote) its walls are left to :mod:`scenegen.tasks.bins`, and an object whose
    outline holds the grasp point (a tray, a board the subject lies on) does not count.
    ``around``: :func:`neighbours` of ``node``, when already known; ``hand``: False lets the hand graze
    a tall neighbour, overlapping its outline by up to :data:`HAND_GRAZE` (the hand is pushed off and
    slides down its side; deeper, the hand comes down on its top). ``within``:
    :func:`~scenegen.tasks.bins.openings` of ``node``, when already known.
    """
    if holder(world, node, point, within) is not None:
        return None
    boxes = None  # the gripper's boxes, made when a neighbour is tall enough to need them
    tips = float(point[2]) - FINGERTIP_BELOW - TIP_MARGIN
    at = shapely.Point(float(point[0]), float(point[1]))
    for n, fp, top in neighbours(world, node) if around is None else around:
        if fp.contains(at):
            continue
        if not top > tips:  # nor above the hand's bottom, which is higher still
            continue
        fingers, palm = boxes = gripper_boxes(point, yaw, opening) if boxes is None else boxes
        if any(fp.distance(f) < MARGIN for f in fingers):
            return n
        if top > float(point[2]) + HAND_ABOVE and (fp.distance(palm) < MARGIN if hand else
                                                   fp.intersects(palm.buffer(-HAND_GRAZE))):
            return n
    return None


def cleared(world: World, node: str, point: np.ndarray, yaw: float, width: float, opening: float,
            around: Neighbours | None = None, hand: bool = True, within: Openings | None = None) -> np.ndarray:
    """``point`` shifted along the closing axis by the smallest amount that clears the open gripper.

    The shift stays within the slack the open fingers leave around an object ``width`` wide (the near
    finger keeps :data:`SIDE_GAP` from its edge); ``hand``: as in :func:`blocker`. Returns ``point``
    itself when nothing blocks it or no shift clears it (the caller decides; QA rejects such a scene,
    see :func:`blocker`).
    """
    point = np.asarray(point, dtype=float)
    around = neighbours(world, node) if around is None else around
    within = openings(world, node) if within is None else within
    if blocker(world, node, point, yaw, opening, around, hand, within) is None:
        return point
    moved = _shifted(world, node, point, yaw, width, opening, around, hand, within)
    return point if moved is None else moved


def _shifted(world: World, node: str, point: np.ndarray, yaw: float, width: float, opening: float,
             around: Neighbours, hand: bool, within: Openings) -> np.ndarray | None:
    """The first shift of a blocked ``point`` (see :func:`cleared`) that clears the open gripper, or None."""
    slack = opening / 2 - width / 2 - SIDE_GAP
    u = np.r_[_axis(yaw), 0.0]
    for d in np.arange(SHIFT_STEP, slack + 1e-9, SHIFT_STEP):
        for s in (1.0, -1.0):
            moved = point + s * d * u
            if blocker(world, node, moved, yaw, opening, around, hand, within) is None:
                return moved
    return None


def clearest(world: World, node: str, options: list[tuple[np.ndarray, float, float]],
             opening: float) -> tuple[np.ndarray, float, float] | None:
    """The first of ``options`` (``(point, yaw, width)``, best first) that the open gripper clears, or None.

    Tried in this order: the options as they are with the fingers and the hand clear, then shifted
    (:func:`cleared`), then the same with the hand allowed to graze a neighbour.
    """
    around, within = neighbours(world, node), openings(world, node)  # the state is the same for every test
    for hand in (True, False):
        for point, yaw, width in options:
            if blocker(world, node, point, yaw, opening, around, hand, within) is None:
                return np.asarray(point, dtype=float), yaw, width
        # every option is blocked as it is (tested just above): only their shifts are left, as cleared() tries them
        for point, yaw, width in options:
            moved = _shifted(world, node, np.asarray(point, dtype=float), yaw, width, opening, around, hand, within)
            if moved is not None:
                return np.asarray(moved, dtype=float), yaw, width
    return None
