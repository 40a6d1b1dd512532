"""Picking from and dropping into bins: a tote's floor and walls, a sorter's compartments.

A part lying in a tote rests on its floor, not on the table: the fingertips keep
:data:`FLOOR_CLEARANCE` above that floor (pads pressing the floor of a light tote drag it along), and
the gripper's yaw keeps the open fingers, and the hand when it dips below the rim, inside the
tote's opening (:func:`wall_gap`). A part sorted into a receptacle with compartments
(``params["slots"]``, see :func:`scenegen.tasks.tracker.node_body`) is dropped into its goal's
compartment, beside what already lies there (:func:`slot_drop`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from shapely.geometry import Point, Polygon

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry
from scenegen.graph import Goal
from scenegen.relations import judge_relation, z_range
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks.tracker import asset_slots, node_body

FLOOR_CLEARANCE = 0.0077
"""Fingertip target height (m) above the floor of a container the subject lies in: the pads reach
:data:`~scenegen.tasks.grasps.FINGERTIP_BELOW` below the target, so they skim the floor (0.5 mm above it),
not press it. At 8.5 mm (1.3 mm above the floor) the pads overlapped a 4 mm washer by under 3 mm and rode up
over its top edge in 12 of 23 pinches (sort benchmark, 3 parts); at 7.7 mm in 6 of 19; at 7.0 mm the pads
drag on the tote's floor and fewer parts are sorted."""
HAND_HALF = (0.11, 0.04)
"""Half length (along the closing axis) and half width of the hand's footprint (m, the Panda's, with a margin)."""
HAND_ABOVE = 0.035
"""Height (m) of the hand's bottom above the fingertip target."""


FLOOR_SKIN = 0.002
"""How far (m) above an open container's floor (its visual mesh's) the parts in it rest: the convex collision
parts of the floor are that much thicker (parts in a tote rest 7 mm above its origin, its floor at 5 mm)."""


def container_floor(world: World, node: str, pose: Pose) -> float | None:
    """Top (z) of the floor of the upright open container whose opening holds ``node``'s centre, or None."""
    at = Point(float(pose.position[0]), float(pose.position[1]))
    for n in world.objects():
        if n == node or not asset_geometry(world.assets[n]).has_cavity:
            continue
        op = world.pose(n)
        rot = quat_matrix(op.orientation)
        if rot[2, 2] < 0.9:
            continue
        body = node_body(world.assets[n], op)
        if body.opening().contains(at) and float(pose.position[2]) < body.z_range()[1]:
            floor = np.asarray(op.position) + rot @ np.array([0.0, 0.0, asset_geometry(world.assets[n]).floor_z])
            return float(floor[2]) + FLOOR_SKIN
    return None


def surface_under(world: World, pose: Pose, ext: np.ndarray, node: str | None = None) -> float:
    """The height a subject's fingertip target keeps 8 mm above: the table top, or a higher floor (a tote's).

    For a subject lying higher than the table, its lowest point, raised so that the fingertips keep
    :data:`FLOOR_CLEARANCE` above it. A subject (``node``) inside an open container counts from that
    container's floor at least (:func:`container_floor`): a part pressed into a thin tote floor by a missed
    pinch lies lower than the floor's top, and fingers following it down pushed it through the floor and the
    table (the sort benchmark's tier-4 and tier-5 scenes lost a part below the table so, ending the episode).
    """
    table = world.scene.table_height
    bottom = z_range(pose, tuple(ext))[0]
    floor = None if node is None else container_floor(world, node, pose)
    if floor is not None and floor > table + 0.003:
        return max(bottom, floor) + FLOOR_CLEARANCE - 0.008
    return bottom + FLOOR_CLEARANCE - 0.008 if bottom > table + 0.003 else table


Openings = list[tuple[list[Polygon], float]]
"""Per open container other than a node, in :meth:`World.objects` order: its cavity openings (world xy) and rim."""


def openings(world: World, node: str) -> Openings:
    """Cavity openings and rims of the open containers other than ``node`` (what :func:`holder` tests points against).

    Per container, in :meth:`World.objects` order: its openings (world xy, one per compartment) and its rim height,
    in the world's current state.
    """
    return list(_openings(world, node))


def _openings(world: World, node: str) -> Iterator[tuple[list[Polygon], float]]:
    for n in world.objects():
        if n == node or not (asset_geometry(world.assets[n]).has_cavity or asset_slots(world.assets[n])):
            continue
        body = node_body(world.assets[n], world.pose(n))
        cavity = body.opening()
        yield list(getattr(cavity, "geoms", [cavity])), body.z_range()[1]


def holder(world: World, node: str, point: np.ndarray,
           within: Openings | None = None) -> tuple[Polygon, float] | None:
    """The cavity opening (world xy) and rim height of the open container the grasp ``point`` lies in, or None.

    ``within``: :func:`openings` of ``node`` in the current state, when already known (a planner testing many
    points against one state builds them once).
    """
    at = Point(float(point[0]), float(point[1]))
    for shapes, rim in _openings(world, node) if within is None else within:
        # a receptacle with compartments: the walls that matter are those of the compartment the point is in
        for opening in shapes:
            if rim > point[2] and opening.contains(at):
                return opening, rim
    return None


def raised(world: World, node: str, point: np.ndarray, highest: float) -> float:
    """The fingertip target's height, raised (up to ``highest``) to keep the hand's bottom above a tote's rim.

    The pads reach :data:`~scenegen.tasks.grasps.FINGERTIP_BELOW` below the target, so a part a
    centimetre tall is still pinched with the target near its top; a deeper hand would hit the walls.
    """
    held_in = holder(world, node, point)
    if held_in is None or held_in[1] <= point[2] + HAND_ABOVE:
        return float(point[2])
    return float(max(point[2], min(highest, held_in[1] - HAND_ABOVE)))


def wall_gap(held_in: tuple[Polygon, float], point: np.ndarray, axis: np.ndarray, opening: float) -> float:
    """Least distance (m, negative outside) from the container's walls to the open fingertips at ``point``.

    The fingers close along ``axis`` (unit, xy); the hand's corners count too when it dips below the rim.
    """
    poly, rim = held_in
    across = np.array([-axis[1], axis[0]])
    pts = [point[:2] + s * (opening / 2 + 0.01) * axis for s in (-1.0, 1.0)]
    if rim > point[2] + HAND_ABOVE:
        pts += [point[:2] + a * HAND_HALF[0] * axis + b * HAND_HALF[1] * across for a in (-1, 1) for b in (-1, 1)]
    gap = np.inf
    for q in pts:
        p = Point(float(q[0]), float(q[1]))
        d = poly.exterior.distance(p)
        gap = min(gap, d if poly.contains(p) else -d)
    return float(gap)


def flat_axes(asset: Asset, pose: Pose) -> list[float]:
    """World angles (rad, mod pi) of the closing axes that meet two parallel flats of a flat-sided footprint.

    A hex nut pinched on two corners squeezes out of the fingers; pinched across flats it holds. Empty for
    a round footprint (a washer, a ring: every axis is as good) or one tilted out of its upright footprint.
    """
    rot = quat_matrix(pose.orientation)
    if rot[2, 2] < 0.95:
        return []
    poly = np.asarray(asset_geometry(asset).hull2d, dtype=float)
    edges = np.roll(poly, -1, axis=0) - poly
    length = np.linalg.norm(edges, axis=1)
    if len(poly) < 3 or length.max() < 0.3 * float(max(asset.extents[:2])):
        return []
    yaw = float(np.arctan2(rot[1, 0], rot[0, 0]))
    out: list[float] = []
    for e, n in zip(edges, length, strict=True):
        if n >= 0.8 * length.max():
            a = float((np.arctan2(e[1], e[0]) + np.pi / 2 + yaw) % np.pi)  # the edge's normal
            if all(abs((a - b + np.pi / 2) % np.pi - np.pi / 2) > 0.05 for b in out):
                out.append(a)
    return out


def slot_drop(world: World, goal: Goal) -> tuple[np.ndarray, float, float, Polygon]:
    """Where to drop ``goal.subject`` into a receptacle with compartments: ``(xy, release z, tip z, compartment)``.

    In the goal's compartment (or the emptiest one), at the spot of a 3 x 3 grid farthest from what already
    lies there; released once its bottom is 12 mm above the compartment's floor, the fingertips 1 cm above
    the rim.
    """
    s, o = goal.subject, goal.object
    oa, op = world.assets[o], world.pose(o)
    receptacle = node_body(oa, op)
    lying = [node_body(world.assets[n], world.pose(n)) for n in world.objects() if n not in (s, o)]

    def inside(name: str) -> list[np.ndarray]:
        slot = receptacle.slot(name)
        return [b.mass_centre()[:2] for b in lying if judge_relation("in", b, slot)[0]]

    names = [goal.slot] if goal.slot is not None else sorted(receptacle.slots or ())
    name = min(names, key=lambda k: (len(inside(k)), k))
    region = receptacle.slot(name).opening()
    centre = np.asarray(region.centroid.coords[0], dtype=float)
    xy, pts = centre, inside(name)
    if pts:
        lo, hi = np.asarray(region.bounds[:2]), np.asarray(region.bounds[2:])
        room = region.buffer(-(0.5 * min(world.assets[s].extents[:2]) + 0.004))
        grid = [lo + (hi - lo) * np.array([fx, fy]) for fx in (0.25, 0.5, 0.75) for fy in (0.25, 0.5, 0.75)]
        cands = [c for c in grid if room.contains(Point(float(c[0]), float(c[1])))] or [centre]
        xy = max(cands, key=lambda c: (min(float(np.linalg.norm(c - q)) for q in pts),
                                       -float(np.linalg.norm(c - centre))))
    rot = quat_matrix(op.orientation)
    floor = float((np.asarray(op.position) + rot @ np.array([0.0, 0.0, float(oa.params.get("floor", 0.0))]))[2])
    rim = z_range(op, tuple(oa.extents))[1]
    return np.asarray(xy, dtype=float), floor + 0.012, rim + 0.01, region
