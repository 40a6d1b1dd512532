"""A part by a tote's wall: its pinch turned or shifted clear of the wall, and a descent that presses the wall stopped.

A part whose planned pinch would bring an open fingertip down on its tote's wall
(:func:`scenegen.tasks.bins.wall_gap` under :data:`~scenegen.tasks.drag.CLEAR`) was dragged toward the tote's
middle (:mod:`scenegen.tasks.drag`), twice at most; in the sort benchmark's traces the drags moved hex nuts less
than a centimetre (some were tipped on edge), and the expert then went down on the same pinch: a finger landed on
the rim, pressed it with up to 200 N and lifted the 0.4 kg tote 1-4 cm, the parts still in it dropped under its
floor, and every later pinch of them closed on nothing (all three missed-grasp episodes of tier 2, most of tier 3).

:func:`wall_clear` first looks for a pinch that keeps the fingertips inside: the planned one turned (a hex nut
across another pair of flats, then, when no such pair clears, at the yaw nearest to across flats that does; a
washer or ring at any yaw; a bolt or a long part keeps its pinch's axis) or moved along its closing axis, by at
most the slack the open fingers leave around the part (as :func:`~scenegen.tasks.clearance.cleared` does beside a
neighbour: the near finger then pushes the part back to the middle as they close), the least move first. When none
clears, the pinch is left as it was (and dragged as before). The slack is measured on the part's hull: a washer's
pinch hint is its 1 cm ring, but the fingers close across its whole 4.4 cm footprint. :func:`wall_stop` ends a
descent once the hand presses the tote's wall or rim (:data:`WALL_FORCE`): the hand backs up and the stall test ends
the descent; the first time per goal, the goal is put off until the others are done, so that its later tries cannot
spoil theirs, and the hand opens and rises before the next one (a drag planned from down there swept through the
tote at 6.5 cm, knocking the parts and the tote about). Used by the expert only: QA's checks plan with
:func:`~scenegen.tasks.plan.plan_grasp`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from shapely.geometry import Point, Polygon

from scenegen.geometry import asset_geometry, transform_points
from scenegen.rotations import quat_matrix
from scenegen.sim.control import wrap
from scenegen.sim.world import World
from scenegen.tasks.bins import container_floor, flat_axes, holder, wall_gap
from scenegen.tasks.clearance import SIDE_GAP
from scenegen.tasks.drag import CLEAR
from scenegen.tasks.grasps import lying_axis
from scenegen.tasks.plan import YAW_RANGE, Grasp, plan_grasp
from scenegen.tasks.tracker import node_body

SHIFT_STEP = 0.002
"""Shifts along the closing axis tried, in steps of this (m)."""
ROUND_YAWS = 12
"""Yaws tried for a round part (a washer, a ring), spread over half a turn."""


def _clear(held_in: tuple[Polygon, float], point: np.ndarray, yaw: float, opening: float) -> bool:
    """True when the open fingertips (and the hand below the rim) at ``point``/``yaw`` keep inside the opening."""
    axis = np.array([math.sin(yaw), -math.cos(yaw)])
    return wall_gap(held_in, point, axis, opening) >= CLEAR


def _yaws(world: World, node: str, grasp: Grasp, home: float) -> tuple[list[float], list[float]]:
    """The gripper yaws to try for ``node``, inside the yaw band: ``(those that grip it as grasp does, fallbacks)``.

    A hex nut is gripped across two flats (:func:`~scenegen.tasks.bins.flat_axes`); when none of those clears the
    walls, any yaw, the nearest to across flats first (a pinch near its corners may slip; one on the wall tips the
    tote). A round flat part (washer, ring) takes any yaw; a bolt or long part keeps its pinch's axis.
    """
    asset, pose = world.assets[node], world.pose(node)
    ext = asset.extents
    round_ = abs(ext[0] - ext[1]) < 0.15 * max(ext[0], ext[1]) and lying_axis(asset, pose) is None
    flats = flat_axes(asset, pose) if round_ else []
    every = [wrap(grasp.yaw + k * math.pi / ROUND_YAWS) for k in range(-ROUND_YAWS, ROUND_YAWS)]
    if flats:
        good = [wrap(a + math.pi / 2 + k * math.pi) for a in flats for k in (0, 1)]
        rest = sorted(every, key=lambda y: min(abs(wrap(y - g)) for g in good))
    elif round_:
        good, rest = every, []
    else:
        good, rest = [grasp.yaw], []

    def band(yaws: list[float]) -> list[float]:
        return [y for y in yaws if abs(wrap(y - home)) <= YAW_RANGE]

    first = sorted({round(y, 6) for y in band([grasp.yaw, *good])}, key=lambda y: abs(wrap(y - grasp.yaw)))
    return first, [y for y in band(rest) if all(abs(wrap(y - f)) > 1e-3 for f in first)]


def wall_clear(world: World, node: str, grasp: Grasp, opening: float, home: float) -> Grasp:
    """``grasp`` turned or shifted so that its open fingers keep clear of the tote's walls, or as it is (see module).

    Only a ``top`` pinch of a part inside an open container is changed; a pinch already clear is kept.
    """
    if grasp.mode != "top":
        return grasp
    point = np.asarray(grasp.point, dtype=float)
    held_in = holder(world, node, point)
    if held_in is None or _clear(held_in, point, grasp.yaw, opening):
        return grasp
    outline = transform_points(asset_geometry(world.assets[node]).hull, world.pose(node))[:, :2]
    most = opening / 2 - SIDE_GAP
    shifts = [0.0] + [s * d for d in np.arange(SHIFT_STEP, most + 1e-9, SHIFT_STEP) for s in (1.0, -1.0)]
    for yaws in _yaws(world, node, grasp, home):
        room = {yaw: _slack(outline, point, yaw, opening) for yaw in yaws}
        for d in shifts:
            for yaw in yaws:
                if d > room[yaw][0] + 1e-9 or -d > room[yaw][1] + 1e-9:
                    continue
                moved = point + d * np.array([math.sin(yaw), -math.cos(yaw), 0.0])
                if holder(world, node, moved) is not None and _clear(held_in, moved, yaw, opening):
                    return Grasp(moved, float(yaw), grasp.width, grasp.mode, grasp.finger_speed)
    return grasp


def _slack(outline: np.ndarray, point: np.ndarray, yaw: float, opening: float) -> tuple[float, float]:
    """How far (m) a pinch at ``point``/``yaw`` may move along its closing axis, ``(forward, back)``.

    The open finger left behind keeps :data:`~scenegen.tasks.clearance.SIDE_GAP` from the part's
    ``outline`` (its hull, world xy): a washer's pinch is bounded by its 4.4 cm footprint, not by its
    hint's width (its 1 cm ring), which let the finger land on the washer.
    """
    along = (outline - np.asarray(point[:2], dtype=float)) @ np.array([math.sin(yaw), -math.cos(yaw)])
    return opening / 2 - SIDE_GAP + float(along.min()), opening / 2 - SIDE_GAP - float(along.max())


def plan_clear(world: World, node: str, max_opening: float, home_yaw: float, reserve: float = 0.0) -> Grasp:
    """The expert's grasp of ``node``: :func:`~scenegen.tasks.plan.plan_grasp`, then :func:`wall_clear`."""
    grasp = plan_grasp(world, node, max_opening, home_yaw, reserve)
    return wall_clear(world, node, grasp, max_opening, home_yaw)


WALL_FORCE = 5.0
"""A descent stops when the robot presses the tote's wall or rim harder than this (N, summed over the contacts)."""
WALL_ABOVE_FLOOR = 0.008
"""Contacts this far (m) above the tote's floor count as the wall's (lower ones are the floor's)."""


def container_of(world: World, node: str) -> str | None:
    """The upright open container whose opening holds ``node``'s centre (below its rim), or None."""
    pose = world.pose(node)
    at = Point(float(pose.position[0]), float(pose.position[1]))
    for n in world.objects():
        if n == node or not asset_geometry(world.assets[n]).has_cavity:
            continue
        op = world.pose(n)
        if quat_matrix(op.orientation)[2, 2] < 0.9:
            continue
        body = node_body(world.assets[n], op)
        if body.opening().contains(at) and float(pose.position[2]) < body.z_range()[1]:
            return n
    return None


def wall_force(world: World, node: str) -> float:
    """Normal force (N) of the robot on the wall or rim of the open container ``node`` lies in (0: none)."""
    import pybullet as p

    box = container_of(world, node)
    if box is None:
        return 0.0
    floor = container_floor(world, node, world.pose(node))
    low = (world.scene.table_height if floor is None else floor) + WALL_ABOVE_FLOOR
    pts = p.getContactPoints(bodyA=world.robot_id, bodyB=world.body_of[box], physicsClientId=world.client)
    return float(sum(c[9] for c in pts if c[6][2] > low))


def wall_stop(expert: Any, node: str) -> bool:
    """True when the descent onto ``node`` must stop: the hand presses its tote's wall (:data:`WALL_FORCE`).

    Pressing on, the finger lifted the light tote by its rim (1-4 cm) and the parts still in it fell under its
    floor (sort benchmark traces, tiers 2-3). The first time per goal the goal is also put off until the others are
    done (:class:`~scenegen.tasks.drag.GoalQueue`), so that a later try at it cannot spoil theirs, and the hand
    opens and rises first (the expert's ``reopen`` phase): the next goal's drag went straight from the rim's height
    to its part, sweeping the tote (sort benchmark, tier 1, scene dfeb26fd69ad).
    """
    if wall_force(expert.env.world, node) <= WALL_FORCE:
        return False
    if expert.goal_index not in expert.queue.deferred:
        expert.queue.defer(expert)
        expert.queue.revisit(expert, len(expert.goals))  # the last goal put off: the first one put off is next
        expert._set("reopen")
    return True
