"""Geometry for the scripted expert: grasps from asset hints and extents, placement targets per relation.

Every function reads the world's current state (poses, extents, grasp hints), so the
expert can re-plan at every step. Positions are world-frame; ``yaw`` is the gripper yaw
of :func:`scenegen.rotations.down_quat` (fingers close along ``(sin yaw, -cos yaw)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shapely.geometry import Point

from scenegen.geometry import asset_geometry
from scenegen.graph import Goal
from scenegen.relations import RelationConfig, box_center, check_relation, footprint, z_range
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.control import wrap
from scenegen.sim.world import World

FINGER_DEPTH = 0.03
"""How far (m) below an object's top the fingertips may go before the hand touches it."""
_DIRS = {"left_of": (0.0, 1.0), "right_of": (0.0, -1.0), "in_front_of": (-1.0, 0.0), "behind": (1.0, 0.0)}


@dataclass
class Grasp:
    """Where and how to close the gripper on an object."""

    point: np.ndarray
    """Grasp target (fingertip centre) in the world."""
    yaw: float
    """Gripper yaw."""
    width: float
    """Object width between the fingers (m)."""
    mode: str
    """``top``, ``side`` or ``rim``."""


YAW_RANGE = 1.9
"""Grasp yaws stay within home yaw +- this (rad), inside the env's default ``yaw_limit`` of 2."""


def _yaw_for_axis(axis: np.ndarray, near: float, home: float = 0.0) -> float:
    """Gripper yaw that closes the fingers along ``axis``.

    Of the two such yaws, the one nearest ``near`` among those within ``YAW_RANGE`` of home.
    """
    yaw = math.atan2(axis[0], -axis[1])
    options = (wrap(yaw), wrap(yaw + math.pi))
    ok = [y for y in options if abs(wrap(y - home)) <= YAW_RANGE] or list(options)
    return min(ok, key=lambda y: abs(wrap(y - near)))


def plan_grasp(world: World, node: str, max_opening: float, home_yaw: float) -> Grasp:
    """Grasp of ``node`` from its asset's hint (mode, width, height, x) and its current pose."""
    asset = world.assets[node]
    pose = world.pose(node)
    rot = quat_matrix(pose.orientation)
    ext = np.asarray(asset.extents, dtype=float)
    hint = dict(asset.grasp or {})
    mode = str(hint.get("mode", "top"))
    height = float(hint.get("height", ext[2] / 2))
    local = np.array([float(hint.get("x", 0.0)), 0.0, height])
    point = np.asarray(pose.position) + rot @ local
    table = world.scene.table_height
    _, top = z_range(pose, tuple(ext))
    if mode == "rim":
        axis, width = rot[:, 0], float(hint.get("width", 0.01))
    else:
        axis, width = rot[:, 1], float(hint.get("width", min(ext[0], ext[1])))
        if width > max_opening - 0.006 and ext[0] < width:
            axis, width = rot[:, 0], float(ext[0])
        if width > max_opening - 0.006:  # too wide at the hint: try higher up, where the object narrows
            narrow = _narrow_grasp(asset, max_opening - 0.008)
            if narrow is not None:
                ax, h, width = narrow
                axis = rot[:, ax]
                point = np.asarray(pose.position) + rot @ np.array([0.0, 0.0, h])
                natural = wrap(home_yaw + math.atan2(point[1], point[0]))
                return Grasp(point, _yaw_for_axis(axis, natural, home_yaw), width, "top")
    if mode == "top":
        z = min(point[2], top - 0.008)
    else:
        z = max(point[2], top - FINGER_DEPTH)
    point[2] = max(z, table + 0.008)
    natural = wrap(home_yaw + math.atan2(point[1], point[0]))  # the yaw the base joint alone would give
    yaw = _yaw_for_axis(axis, natural, home_yaw)
    if mode != "rim" and abs(ext[0] - ext[1]) < 0.15 * max(ext[0], ext[1]):  # round: any yaw grips it
        yaw = _clearest_yaw(world, node, point, max_opening, natural, yaw, home_yaw)
    return Grasp(point, yaw, width, mode)


def _clearest_yaw(world: World, node: str, point: np.ndarray, opening: float, natural: float,
                  default: float, home: float) -> float:
    """Yaw (within +-60 degrees of ``natural``) whose open fingertips keep farthest from the other objects."""
    others = [footprint(world.pose(n), tuple(world.assets[n].extents)) for n in world.objects() if n != node]
    if not others:
        return default
    best, best_gap = default, -math.inf
    for yaw in sorted([default, *np.linspace(natural - math.pi / 3, natural + math.pi / 3, 9)],
                      key=lambda y: abs(wrap(y - default))):
        if abs(wrap(yaw - home)) > YAW_RANGE:
            continue
        axis = np.array([math.sin(yaw), -math.cos(yaw)])
        tips = [Point(*(point[:2] + s * (opening / 2 + 0.01) * axis)) for s in (-1.0, 1.0)]
        gap = min(o.distance(t) for o in others for t in tips)
        if gap > best_gap + 0.005:
            best, best_gap = float(wrap(yaw)), gap
    return best


def _narrow_grasp(asset, opening: float) -> tuple[int, float, float] | None:  # noqa: ANN001
    """Grasp high on an object wider than ``opening``.

    Returns (axis 0/1, asset-frame height, width) for the lowest height above which the whole
    object fits between the open fingers (leaving at least 1.5 cm to hold), or None.
    """
    hull = asset_geometry(asset).hull
    top = float(hull[:, 2].max())
    best = None
    for ax in (1, 0):
        for h in np.linspace(0.5 * top, top - 0.015, 12):
            above = hull[hull[:, 2] >= h]
            if len(above) == 0:
                break
            width = 2.0 * float(np.abs(above[:, ax]).max())
            if width <= opening:
                if best is None or h < best[1]:
                    best = (ax, float(h), width)
                break
    return best


def top_of_others(world: World, skip: tuple[str, ...] = ()) -> float:
    """Highest top (z) of the objects other than ``skip`` (the table top when none)."""
    tops = [world.scene.table_height]
    for n in world.objects():
        if n not in skip:
            tops.append(float(world.aabb(n)[1][2]))
    return max(tops)


class _Free:
    """Footprints of a world's objects, to test candidate placements of one of them."""

    def __init__(self, world: World, node: str, reach: tuple[float, float], margin: float = 0.015) -> None:
        self.ext = tuple(world.assets[node].extents)
        self.reach, self.margin = reach, margin
        self.others = [footprint(world.pose(n), tuple(world.assets[n].extents)) for n in world.objects() if n != node]
        sup = world.scene.graph.support_id
        self.table = None if sup is None else \
            footprint(world.pose(sup), tuple(world.assets[sup].extents)).buffer(-0.02)

    def fits(self, pose: Pose) -> bool:
        """True when the object at ``pose`` lies on the table, in reach, and clear of every other object."""
        fp = footprint(pose, self.ext)
        c = fp.centroid
        if not self.reach[0] <= math.hypot(c.x, c.y) <= self.reach[1]:
            return False
        if self.table is not None and (self.table.is_empty or not self.table.contains(fp)):
            return False
        return all(o.distance(fp) >= self.margin for o in self.others)


def _half_along(poly, centre: np.ndarray, d: np.ndarray) -> float:  # noqa: ANN001
    """Largest extent of a polygon from ``centre`` along the unit direction ``d``."""
    pts = np.asarray(poly.exterior.coords)
    return float(np.max((pts - centre) @ d))


def _moved(pose: Pose, xy: np.ndarray, z: float) -> Pose:
    return Pose((float(xy[0]), float(xy[1]), z), pose.orientation)


def place_target(world: World, goal: Goal, reach: tuple[float, float],
                 rel: RelationConfig | None = None) -> tuple[np.ndarray, float, float] | None:
    """Where to put ``goal.subject``.

    Returns its origin's target xy, the height its bottom is released at, and the lowest height for
    the fingertips (they stay above a receptacle's rim, so opening them cannot catch its walls).

    Returns None when no placement satisfying the relation was found.
    """
    s, o = goal.subject, goal.object
    sa, oa = world.assets[s], world.assets[o]
    sp, op = world.pose(s), world.pose(o)
    s_ext, o_ext = tuple(sa.extents), tuple(oa.extents)
    table = world.scene.table_height
    if goal.predicate == "in":
        geom = asset_geometry(oa)
        rot = quat_matrix(op.orientation)
        centre = np.asarray(op.position, dtype=float)
        others = [n for n in world.objects() if n not in (s, o) and check_relation("in", world.pose(n),
                  tuple(world.assets[n].extents), op, o_ext)[0]]
        xy = centre[:2]
        if others and len(geom.inner) >= 3:
            inner_r = float(np.min(np.linalg.norm(geom.inner, axis=1)))
            cands = [centre[:2] + 0.45 * inner_r * np.array([math.cos(a), math.sin(a)])
                     for a in np.linspace(0, 2 * math.pi, 8, endpoint=False)]
            pts = [np.asarray(world.pose(n).position[:2]) for n in others]
            xy = max(cands, key=lambda c: min(float(np.linalg.norm(c - q)) for q in pts))
        floor = float((np.asarray(op.position) + rot @ np.array([0.0, 0.0, geom.floor_z]))[2])
        return np.asarray(xy, dtype=float), floor + 0.012, z_range(op, o_ext)[1] + 0.01
    if goal.predicate == "on":
        c = box_center(op, o_ext)
        top = z_range(op, o_ext)[1]
        return np.asarray(c[:2], dtype=float), top + 0.012, top + 0.003
    tight = (rel or RelationConfig()).tightened()
    ofp = footprint(op, o_ext)
    oc = np.asarray(box_center(op, o_ext)[:2])
    sc = np.asarray(box_center(sp, s_ext)[:2])
    sfp = footprint(sp, s_ext)
    to_origin = np.asarray(sp.position[:2]) - sc
    cands: list[np.ndarray] = []
    if goal.predicate in _DIRS:
        d = np.asarray(_DIRS[goal.predicate])
        perp = np.array([-d[1], d[0]])
        grid = [(a, c) for a in np.arange(0.04, 0.36, 0.02) for c in np.arange(-0.24, 0.25, 0.03)
                if abs(c) <= tight.dir_cone * a * 0.9]
        grid.sort(key=lambda ac: ac[0] + abs(ac[1]))
        cands = [oc + d * a + perp * c for a, c in grid]
    elif goal.predicate == "near":
        for gap in (0.02, 0.04):
            for a in np.linspace(0, 2 * math.pi, 16, endpoint=False):
                d = np.array([math.cos(a), math.sin(a)])
                cands.append(oc + d * (_half_along(ofp, oc, d) + _half_along(sfp, sc, -d) + gap))
        cands.sort(key=lambda c: float(np.linalg.norm(c - sc)))
    elif goal.predicate == "far_from":
        cands = [np.array([x, y]) for x in np.linspace(0.3, 0.8, 11) for y in np.linspace(-0.4, 0.4, 17)]
        cands.sort(key=lambda c: float(np.linalg.norm(c - sc)))
    free = _Free(world, s, reach)
    for c in cands:
        moved = _moved(sp, c + to_origin, table)
        if check_relation(goal.predicate, moved, s_ext, op, o_ext, tight)[0] and free.fits(moved):
            return np.asarray(c + to_origin, dtype=float), table + 0.01, table + 0.003
    return None
