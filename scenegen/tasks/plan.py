"""Geometry for the scripted expert: grasps from asset hints and extents, placement targets per relation.

Every function reads the world's current state (poses, extents, grasp hints), so the
expert can re-plan at every step. Positions are world-frame; ``yaw`` is the gripper yaw
of :func:`scenegen.rotations.down_quat` (fingers close along ``(sin yaw, -cos yaw)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely.affinity
from shapely.geometry import Point, Polygon

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry, ray_hits
from scenegen.graph import Goal
from scenegen.relations import RelationConfig, box_center, check_relation, footprint, z_range
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.control import wrap
from scenegen.sim.world import World
from scenegen.tasks.bins import flat_axes, holder, raised, slot_drop, surface_under, wall_gap
from scenegen.tasks.clearance import clearest
from scenegen.tasks.grasps import grasp_mesh, is_long, lowest_target, lying_axis, rim_grasp, section_grasps
from scenegen.tasks.spots import across_rim, free_spot, holds
from scenegen.tasks.tracker import node_body

GENTLE_MASS = 0.03
"""Objects lighter than this (kg) are closed on gently: free fingers slam into them and squeeze them out."""
GENTLE_SPEED = 0.05
"""Finger speed (m/s) of a gentle close (about 5 mm of width per 20 Hz step)."""
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
    finger_speed: float | None = None
    """Largest finger speed (m/s) of the close, None: free (see :func:`close_speed`)."""


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


def plan_grasp(world: World, node: str, max_opening: float, home_yaw: float, reserve: float = 0.0) -> Grasp:
    """Grasp of ``node`` in its current pose.

    A long object lying down is pinched across a cross-section of its mesh, and an upright open
    container wider than the gripper on its wall (see :mod:`scenegen.tasks.grasps`); otherwise
    the asset's hint (mode, width, height, x) is used, closing across the narrower side.
    ``reserve``: a long object's grasp keeps this far from its heavy end (see
    :func:`~scenegen.tasks.grasps.section_grasp`). A grasp whose open fingers would come down on a
    neighbour is moved clear of it when it can be (:mod:`scenegen.tasks.clearance`): a long object
    is pinched at the nearest section to its centre of mass that is clear, shifted along the
    closing axis if need be.
    """
    asset = world.assets[node]
    pose = world.pose(node)
    rot = quat_matrix(pose.orientation)
    ext = np.asarray(asset.extents, dtype=float)
    table = surface_under(world, pose, ext, node)
    axis = lying_axis(asset, pose)
    if axis is not None and (sections := section_grasps(asset, pose, table, max_opening, reserve, axis)):
        return _clear_section(world, node, sections, max_opening, home_yaw)
    rim = None
    if not is_long(asset, pose) and min(ext[0], ext[1]) > max_opening - 0.008:
        rim = rim_grasp(asset, pose, np.asarray(world.scene.robot_base.position[:2], dtype=float))
    if rim is not None:
        point, axis, width = rim
        natural = wrap(home_yaw + math.atan2(point[1], point[0]))
        return Grasp(np.asarray(point, dtype=float), _yaw_for_axis(axis, natural, home_yaw), float(width), "rim",
                     close_speed(asset))
    hint = dict(asset.grasp or {})
    mode = str(hint.get("mode", "top"))
    height = float(hint.get("height", ext[2] / 2))
    local = np.array([float(hint.get("x", 0.0)), 0.0, height])
    point = np.asarray(pose.position) + rot @ local
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
                yaw = _yaw_for_axis(axis, natural, home_yaw)
                point = (clearest(world, node, [(point, yaw, width)], max_opening) or (point,))[0]
                return Grasp(point, yaw, width, "top", close_speed(asset))
    if mode == "top":
        z = min(point[2], top - 0.008)
    else:
        z = max(point[2], top - FINGER_DEPTH)
    point[2] = max(z, lowest_target(table, top))
    if mode == "top":  # in a tote: as high on the subject as the pads still pinch, the hand above the rim
        point[2] = raised(world, node, point, top - 0.002)
    natural = wrap(home_yaw + math.atan2(point[1], point[0]))  # the yaw the base joint alone would give
    yaw = _yaw_for_axis(axis, natural, home_yaw)
    if mode != "rim" and abs(ext[0] - ext[1]) < 0.15 * max(ext[0], ext[1]):  # round: any yaw grips it
        yaw = _clearest_yaw(world, node, point, max_opening, natural, yaw, home_yaw)
    if mode != "rim":  # the open fingers must not come down on a neighbour
        point = (clearest(world, node, [(point, yaw, width)], max_opening) or (point,))[0]
    return Grasp(point, yaw, width, mode, close_speed(asset))


def _clear_section(world: World, node: str, sections: tuple, opening: float, home_yaw: float) -> Grasp:
    """The first of a long object's sections (nearest its centre of mass first) that the open gripper clears.

    See :func:`~scenegen.tasks.clearance.clearest` (a shifted section's near finger pushes the object as it
    closes); when none clears, the nearest section as it is (QA rejects such a scene).
    """
    options = []
    for point, axis, width in sections:
        point = np.asarray(point, dtype=float)
        options.append((point, _yaw_for_axis(axis, wrap(home_yaw + math.atan2(point[1], point[0])), home_yaw),
                        float(width)))
    point, yaw, width = clearest(world, node, options, opening) or options[0]
    return Grasp(point, yaw, width, "top", close_speed(world.assets[node]))


def close_speed(asset: Asset) -> float | None:
    """Finger speed limit (m/s) for closing on ``asset``: :data:`GENTLE_SPEED` below :data:`GENTLE_MASS`, else None."""
    return GENTLE_SPEED if asset.mass < GENTLE_MASS else None


def _clearest_yaw(world: World, node: str, point: np.ndarray, opening: float, natural: float,
                  default: float, home: float) -> float:
    """Yaw (within +-60 degrees of ``natural``) whose open fingertips keep farthest from the other objects.

    Inside an open container (a tote) its walls count too: the fingertips, and the hand when it dips below
    the rim, must keep inside the cavity's opening, so any yaw is tried.
    """
    held_in = holder(world, node, point)
    walls = None if held_in is None else held_in[0]
    others = [footprint(world.pose(n), tuple(world.assets[n].extents)) for n in world.objects() if n != node
              and (walls is None or not footprint(world.pose(n), tuple(world.assets[n].extents)).contains(walls))]
    span = math.pi / 2 if walls is not None else math.pi / 3
    flats = flat_axes(world.assets[node], world.pose(node))
    if flats:  # a flat-sided part (a hex nut) is pinched across two flats, never on its corners
        options = [wrap(a + math.pi / 2 + k * math.pi) for a in flats for k in (0, 1)]
        options = [y for y in options if abs(wrap(y - home)) <= YAW_RANGE] or options
        default = min(options, key=lambda y: abs(wrap(y - default)))
        yaws = sorted(options, key=lambda y: abs(wrap(y - default)))
    else:
        yaws = sorted([default, *np.linspace(natural - span, natural + span, 13 if walls is not None else 9)],
                      key=lambda y: abs(wrap(y - default)))
    if not others and walls is None:
        return default
    best, best_gap = default, -math.inf
    for yaw in yaws:
        if abs(wrap(yaw - home)) > YAW_RANGE:
            continue
        axis = np.array([math.sin(yaw), -math.cos(yaw)])
        tips = [Point(*(point[:2] + s * (opening / 2 + 0.01) * axis)) for s in (-1.0, 1.0)]
        gap = min((o.distance(t) for o in others for t in tips), default=math.inf)
        if held_in is not None:
            gap = min(gap, wall_gap(held_in, point, axis, opening))
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
        self.base = world.scene.robot_base.position  # the reach band's centre: the (arm's) base
        self.others = [footprint(world.pose(n), tuple(world.assets[n].extents)) for n in world.objects() if n != node]
        sup = world.scene.graph.support_id
        self.table = None if sup is None else \
            footprint(world.pose(sup), tuple(world.assets[sup].extents)).buffer(-0.02)

    def fits(self, pose: Pose) -> bool:
        """True when the object at ``pose`` lies on the table, in reach, and clear of every other object."""
        fp = footprint(pose, self.ext)
        c = fp.centroid
        if not self.reach[0] <= math.hypot(c.x - self.base[0], c.y - self.base[1]) <= self.reach[1]:
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


@dataclass
class Placement:
    """Where and how to put a goal's subject down."""

    xy: np.ndarray
    """Target xy of the subject's origin (of its lowest point when ``upright``)."""
    release_z: float
    """The subject is released once its bottom is this low."""
    tip_z: float
    """Lowest height of the grasp target (the fingers stay above a receptacle's rim)."""
    turn: float = 0.0
    """Turn (rad, about z) to give the subject before lowering it, so that its footprint fits."""
    upright: bool = False
    """Stand the long subject up, heavy end first, and lower it into the receptacle's cavity."""


INSERT_RESERVE = 0.07
"""A long object stood up in a receptacle is held at least this far (m) from its heavy end."""


def _region(world: World, obj: str, kind: str) -> Polygon:
    """Where a subject's footprint must fit: the cavity's opening (``in``) or the object's footprint (``on``)."""
    return node_body(world.assets[obj], world.pose(obj)).opening() if kind == "in" else \
        footprint(world.pose(obj), tuple(world.assets[obj].extents))


def _fit_turn(world: World, s: str, region: Polygon, centre: np.ndarray) -> float | None:
    """Smallest turn (rad) of the subject after which its footprint, centred at ``centre``, fits ``region``."""
    sp, ext = world.pose(s), tuple(world.assets[s].extents)
    inner = region.buffer(-0.004)
    if inner.is_empty:
        return None
    origin = np.asarray(sp.position[:2])
    for turn in sorted(np.radians(np.arange(-90, 91, 10)), key=abs):
        fp = shapely.affinity.rotate(footprint(sp, ext), float(turn), origin=tuple(origin), use_radians=True)
        fp = shapely.affinity.translate(fp, *(centre - origin))
        if inner.contains(fp):
            return float(turn)
    return None


def inner_radii(asset: Asset, z: float, angles: np.ndarray) -> np.ndarray:
    """Distance (m) from a container's cavity axis to its inner wall at asset-frame height ``z``, per angle.

    Rays are cast on the visual mesh from the centre of the cavity's footprint; inf where a ray
    escapes (an open side).
    """
    key = (asset.id, str(asset.path), round(float(z), 4), len(angles))
    if key in _RADII:
        return _RADII[key]
    mesh = grasp_mesh(asset)
    geom = asset_geometry(asset)
    if mesh is None or not geom.has_cavity:
        return np.zeros(len(angles))
    cx, cy = geom.inner.mean(axis=0)
    dirs = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    out = ray_hits(mesh[0][mesh[1]], np.tile([cx, cy, z], (len(angles), 1)), dirs)
    if len(_RADII) > 256:
        _RADII.clear()
    _RADII[key] = out
    return out


_RADII: dict[tuple, np.ndarray] = {}


def lying_turn(world: World, s: str, o: str) -> float | None:
    """Smallest turn (rad, about z) after which subject ``s`` lies inside ``o``'s cavity, centre of mass below the rim.

    The subject's box (length and width) must fit across the cavity at the height where its centre
    of mass would be just below the rim (a long object lies on a bowl's sloping wall, not on its
    floor).
    None: no turn fits (or ``o`` has no upright cavity).
    """
    sa, oa = world.assets[s], world.assets[o]
    sp, op = world.pose(s), world.pose(o)
    rot = quat_matrix(op.orientation)
    geom = asset_geometry(oa)
    if rot[2, 2] < 0.9 or not geom.has_cavity:
        return None
    ext = sorted(sa.extents[:2], reverse=True)
    height = float(sa.extents[2])
    com_z = min(float(sa.com[2]), 0.5 * height)  # a lying subject's centre of mass above its lowest point
    z = max(geom.floor_z + 0.003, geom.zlim[1] - com_z - 0.003)
    angles = np.linspace(0, 2 * math.pi, 24, endpoint=False)
    r = inner_radii(oa, z, angles)
    k = len(angles)
    across = r + np.roll(r, -k // 2)  # the cavity's width along each angle (both sides of the axis)
    fits = (across >= ext[0] + 0.003) & (np.roll(across, -k // 4) >= ext[1] + 0.003)
    if not fits.any():
        return None
    o_yaw = math.atan2(rot[1, 0], rot[0, 0])
    srot = quat_matrix(sp.orientation)
    s_yaw = math.atan2(srot[1, 0], srot[0, 0]) if sa.extents[0] >= sa.extents[1] else \
        math.atan2(srot[1, 1], srot[0, 1])
    turns = [(wrap(o_yaw + a - s_yaw) + math.pi / 2) % math.pi - math.pi / 2 for a in angles[fits]]
    return float(min(turns, key=abs))


def upright_modes(world: World, goal: Goal) -> list[bool]:
    """How the expert may put ``goal.subject`` ``in`` its receptacle, best first: lying (False), stood up (True).

    A long subject that cannot lie with its centre of mass below the rim (:func:`lying_turn`) is
    stood up first; the other mode is kept as a second choice when the subject is long, the cavity
    deep (4 cm) and, to lie, not much longer than the cavity's rim is wide, since the lying test
    reads the subject's box, not its shape (a curved banana lies lower than its box).
    """
    if goal.predicate != "in":
        return [False]
    sa, oa = world.assets[goal.subject], world.assets[goal.object]
    geom = asset_geometry(oa)
    can_stand = is_long(sa, world.pose(goal.subject)) and sa.extents[0] >= INSERT_RESERVE + 0.02 \
        and geom.has_cavity and geom.zlim[1] - geom.floor_z > 0.04
    if not can_stand:
        return [False]
    if lying_turn(world, goal.subject, goal.object) is not None:
        return [False, True]
    r = inner_radii(oa, geom.zlim[1] - 0.005, np.linspace(0, 2 * math.pi, 24, endpoint=False))
    widest = float(np.max(r + np.roll(r, -12)))
    # lying is a second choice only when the subject is not much longer than the cavity is wide at its rim
    return [True, False] if sa.extents[0] <= 1.3 * widest else [True]


def needs_upright(world: World, goal: Goal) -> bool:
    """True when the expert's first choice for ``goal`` is to stand its subject up (see :func:`upright_modes`)."""
    return upright_modes(world, goal)[0]


def place_target(world: World, goal: Goal, reach: tuple[float, float],
                 rel: RelationConfig | None = None, upright: bool | None = None) -> Placement | None:
    """Where (and how) to put ``goal.subject`` so that the goal's relation holds; None when nowhere was found.

    ``in``: at the cavity's centre (beside what already lies in it, :func:`~scenegen.tasks.spots.free_spot`),
    turned so that the subject's footprint fits the opening, or stood up when it cannot lie inside
    (:func:`needs_upright`; ``upright`` forces either);
    ``on``: at the object's centre, turned to fit its top, or across the rim of an open container too deep to
    lie in (:func:`~scenegen.tasks.spots.across_rim`); other relations: the nearest free spot on the table
    where the tightened relation holds.
    """
    s, o = goal.subject, goal.object
    sa, oa = world.assets[s], world.assets[o]
    sp, op = world.pose(s), world.pose(o)
    s_ext, o_ext = tuple(sa.extents), tuple(oa.extents)
    table = world.scene.table_height
    if goal.predicate == "in" and (goal.slot is not None or node_body(oa, op).slots):
        xy, release_z, tip_z, region = slot_drop(world, goal)
        centre = np.asarray(region.centroid.coords[0], dtype=float)
        return Placement(xy, release_z, tip_z, _fit_turn(world, s, region, centre) or 0.0)
    if goal.predicate == "in":
        geom = asset_geometry(oa)
        rot = quat_matrix(op.orientation)
        receptacle = node_body(oa, op)
        region = receptacle.opening()
        centre = np.asarray(region.centroid.coords[0], dtype=float)
        others = holds(world, s, o)
        xy = centre
        if others and len(geom.inner) >= 3:
            inner_r = float(np.min(np.linalg.norm(geom.inner - geom.inner.mean(axis=0), axis=1)))
            cands = [centre + 0.45 * inner_r * np.array([math.cos(a), math.sin(a)])
                     for a in np.linspace(0, 2 * math.pi, 8, endpoint=False)]
            xy = free_spot(world, s, o, others, cands)
        floor = float((np.asarray(op.position) + rot @ np.array([0.0, 0.0, geom.floor_z]))[2])
        rim = z_range(op, o_ext)[1]
        if needs_upright(world, goal) if upright is None else upright:
            return Placement(np.asarray(xy, dtype=float), floor + 0.015, rim + 0.035, 0.0, True)
        turn = lying_turn(world, s, o)
        return Placement(np.asarray(xy, dtype=float), floor + 0.012, rim + 0.01, turn or 0.0)
    if goal.predicate == "on":
        c = np.asarray(box_center(op, o_ext)[:2], dtype=float)
        top = z_range(op, o_ext)[1]
        if (across := across_rim(world, s, o, reach, rel)) is not None:  # too deep to lie in: across its rim
            return Placement(across[0], top + 0.012, top + 0.003, across[1])
        turn = _fit_turn(world, s, _region(world, o, "on"), c)
        return Placement(c, top + 0.012, top + 0.003, turn or 0.0)
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
            return Placement(np.asarray(c + to_origin, dtype=float), table + 0.01, table + 0.003)
    return None
