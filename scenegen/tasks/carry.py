"""How the expert moves the hand around a subject: its descent onto it, and carrying it to its placement.

Pure functions of the world and the end-effector controller, used by
:class:`scenegen.tasks.expert.ScriptedExpert` on its way down to a grasp and between lifting a
subject and lowering it: the point it steers, its turn, standing it up.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from scenegen.geometry import asset_geometry, transform_points
from scenegen.rotations import quat_matrix
from scenegen.sim.control import ArmController, rotvec_matrix, wrap
from scenegen.sim.world import World
from scenegen.tasks.grasps import heavy_end
from scenegen.tasks.plan import YAW_RANGE, Grasp
from scenegen.tasks.spots import holds

_DOWN = np.array([0.0, 0.0, -1.0])
DESCENT_OFF = 0.04
"""A hand pushed this far (m, xy) off its grasp point stops coming down until it is back above it."""


def descent_target(pos: np.ndarray, point: np.ndarray, stop: bool = False) -> np.ndarray:
    """The descent's waypoint: the grasp ``point``, or above it at the hand's height ``pos`` while the hand is off.

    ``stop``: the hand backs up 5 mm from ``pos`` instead (it presses a tote's wall,
    :func:`scenegen.tasks.wallclear.wall_stop`), and the stall test ends the descent.

    A contact on the way down (a neighbour's rim, a standing object) can push the hand sideways; coming
    down diagonally from there sweeps the table and flings what lies on it. Holding the height instead
    lets the stall test end the descent (the expert then tries again from above). A hand pushed less
    far (grazing a tall neighbour's side) goes on down: it slides along the side.
    """
    point = np.asarray(point, dtype=float)
    if stop:
        return np.array([float(pos[0]), float(pos[1]), float(pos[2]) + 0.005])
    if float(np.linalg.norm(np.asarray(pos[:2], dtype=float) - point[:2])) <= DESCENT_OFF:
        return point
    return np.array([point[0], point[1], max(float(pos[2]), float(point[2]))])


HOLD_YAW = 0.2
"""A grasp re-planned on the way down whose yaw differs by more than this (rad) keeps the hand's yaw."""


def steady(expert: Any, grasp: Grasp) -> Grasp:
    """``grasp`` (just re-planned) with the yaw of the expert's current grasp while the hand comes down.

    The grasp is planned again at every step of the approach and the descent; a round part's clearest yaw
    can jump as its neighbours shift (or to the same closing axis half a turn round), and a hand turning
    near the floor of a tote sweeps the parts in it (sort benchmark traces: a bolt flung up 13 cm).
    """
    old = getattr(expert, "grasp", None)
    if expert.phase != "descend" or old is None or abs(wrap(grasp.yaw - old.yaw)) <= HOLD_YAW:
        return grasp
    return replace(grasp, yaw=old.yaw)


def anchor_xy(world: World, node: str, upright: bool) -> np.ndarray:
    """The subject's point steered over the placement: its origin, or its lowest point when stood up."""
    if upright:
        pts = transform_points(asset_geometry(world.assets[node]).hull, world.pose(node))
        return np.asarray(pts[int(np.argmin(pts[:, 2])), :2], dtype=float)
    return np.asarray(world.pose(node).position[:2], dtype=float)


def tilted(ctrl: ArmController, swing: np.ndarray | None, tol: float = 0.1) -> bool:
    """The hand's approach axis is within ``tol`` rad of the one the swing (None: none) gives."""
    want = np.zeros(3) if swing is None else np.asarray(swing, dtype=float)
    axis = quat_matrix(ctrl.ee_pose()[1])[:, 2]
    goal = rotvec_matrix(want) @ _DOWN
    return float(np.arccos(np.clip(axis @ goal, -1.0, 1.0))) < tol


def in_band(ctrl: ArmController, yaw: float, yaw_limit: float) -> bool:
    """True when a gripper yaw lies inside the controller's yaw band (and the grasp planner's)."""
    return abs(wrap(yaw - ctrl.home_yaw)) <= min(yaw_limit, YAW_RANGE)


def turned_yaw(ctrl: ArmController, turn: float, yaw_limit: float) -> float:
    """The gripper yaw that turns the held subject by ``turn`` (or ``turn`` +- pi: its box is symmetric)."""
    y0 = ctrl.target_yaw
    ok = [y for y in (y0 + turn + k * math.pi for k in (0, -1, 1)) if in_band(ctrl, y, yaw_limit)]
    return min(ok, key=lambda y: abs(y - y0)) if ok else y0


def stand_up(world: World, ctrl: ArmController, node: str, yaw_limit: float,
             end: np.ndarray | None = None) -> tuple[float, np.ndarray, float]:
    """How to stand a held long subject up, heavy end down: ``(gripper yaw, swing, reach below the hand)``.

    ``end``: the world point that goes down (None: the heavy end of the subject's long x axis).

    The swing turns the hand by 90 degrees about its closing axis, so that the subject's heavy end
    points down. The subject's heading does not matter once it stands, so the gripper yaw (in 30
    degree steps, inside the yaw band) is the one whose tilted hand points most sideways, across
    the line from the robot's base: the Panda reaches such poses over the whole task zone, where a
    hand pointing away from the base, or back at it from far out, is out of reach.
    """
    pos, _ = ctrl.ee_pose()
    end = heavy_end(world.assets[node], world.pose(node)) if end is None else np.asarray(end, dtype=float)
    e = np.array([end[0] - pos[0], end[1] - pos[1], 0.0])
    if np.linalg.norm(e) < 1e-6:
        e = np.array([math.cos(ctrl.target_yaw), math.sin(ctrl.target_yaw), 0.0])
    e /= np.linalg.norm(e)
    base = np.asarray(world.scene.robot_base.position[:2], dtype=float)
    outward = np.r_[pos[:2] - base, 0.0]
    outward /= np.linalg.norm(outward) + 1e-9
    y0 = ctrl.target_yaw
    turns = [k * math.pi / 6 for k in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6)]
    options = [d for d in turns if in_band(ctrl, y0 + d, yaw_limit)] or [0.0]
    best = None
    for d in options:
        ek = np.array([math.cos(d) * e[0] - math.sin(d) * e[1], math.sin(d) * e[0] + math.cos(d) * e[1], 0.0])
        score = -abs(float(ek @ outward)) - 0.05 * abs(d)  # the hand ends up pointing along -ek: sideways
        if best is None or score > best[0] + 1e-6:
            best = (score, y0 + d, ek)
    _, yaw, ek = best
    axis = np.cross(ek, _DOWN)
    swing = axis / np.linalg.norm(axis) * (math.pi / 2)
    return float(yaw), swing, float(np.linalg.norm(end - pos))


def stand_swing(ctrl: ArmController, swing: np.ndarray, yaw: float, yaw_tol: float, step: float) -> np.ndarray | None:
    """The swing to command while standing a held subject up in place (see :func:`stand_up`).

    None (no tilt) until the hand has turned to ``yaw``: a tilt while it still turns rolls the subject
    about its long axis, and a thin pinched handle (a spoon's, a fork's) rolls out of the fingertips.
    Then ``swing`` itself, approached about its own axis by at most ``step`` rad a step: the env clips
    each tilt component alone, so a larger error would tilt the hand about a skewed axis (a roll again).
    Once the tilt has begun the commanded one is kept while the yaw settles.
    """
    now = np.asarray(ctrl.target_swing, dtype=float)
    if abs(wrap(ctrl.target_yaw - yaw)) >= yaw_tol:
        return now if np.any(now) else None
    swing = np.asarray(swing, dtype=float)
    size = float(np.linalg.norm(swing))
    return swing * min(1.0, (float(np.linalg.norm(now)) + step) / size) if size > 0 else None


LEVEL_MIN = 0.5
"""Least tilt (rad) of a stand-up swing rescaled by :func:`level_swing`."""


def level_swing(world: World, ctrl: ArmController, node: str, swing: np.ndarray, yaw: float,
                yaw_tol: float) -> np.ndarray:
    """The stand-up swing (:func:`stand_up`) rescaled so that the held subject's heavy end ends straight below.

    :func:`stand_up` tilts the hand by a right angle, as if the subject lay square across the fingers; a thin
    piece pinched by its handle pivots in the pads while the hand turns, its heavy end sagging (a spoon's
    bowl by 30 degrees in benchmark traces), and a right angle then stands it 30 degrees past upright: it
    leans across a mug's cavity, and hangs too high to reach the floor before the hand stops above the rim.
    Once the hand has turned to ``yaw`` (within ``yaw_tol``), the tilt is the hand's present tilt about the
    swing's axis plus the angle, about the same axis, from the grasp-to-heavy-end direction to straight
    down (the pinch turns with the hand), kept within [:data:`LEVEL_MIN`, pi / 2]; before that ``swing``
    itself.
    """
    swing = np.asarray(swing, dtype=float)
    size = float(np.linalg.norm(swing))
    if size < 1e-9 or abs(wrap(ctrl.target_yaw - yaw)) >= yaw_tol:
        return swing
    a = swing / size
    pos, quat = ctrl.ee_pose()
    hand = quat_matrix(quat)[:, 2]
    d = heavy_end(world.assets[node], world.pose(node)) - np.asarray(pos, dtype=float)
    d = d - a * float(d @ a)
    if float(np.linalg.norm(d)) < 0.02:  # the heavy end too near the pinch to measure a direction
        return swing
    now = math.atan2(float(np.cross(_DOWN, hand) @ a), float(_DOWN @ hand))
    rest = math.atan2(float(np.cross(d, _DOWN) @ a), float(d @ _DOWN))
    return a * float(np.clip(now + rest, LEVEL_MIN, math.pi / 2))


STAND_RATE = 0.3
"""A stand-up tilt turns the hand by at most this fraction of the env's ``max_tilt_delta`` a step."""


def stand_step(expert: Any, node: str) -> np.ndarray | None:
    """The swing to command this step while the expert stands held ``node`` up in place (:func:`stand_swing`).

    A subject going ``in`` a receptacle that already holds something has the expert's swing first rescaled to
    its pinch (:func:`level_swing`), so the tilt ends with its heavy end straight down: it comes down beside
    the other on the cavity's floor. The first piece is left to lean as the right angle leaves it, its
    handle against the far rim: stood straight in the middle, its handle stood in the way of the next hand
    (benchmark traces: the hand lowering the fork came down on the spoon's handle and tipped the mug).
    """
    ctrl, w = expert.env.controller, expert.env.world
    goal = expert.goals[expert.goal_index]
    if goal.predicate == "in" and holds(w, node, goal.object):
        expert.swing = level_swing(w, ctrl, node, expert.swing, expert.carry_yaw, expert.cfg.yaw_tol)
    return stand_swing(ctrl, expert.swing, expert.carry_yaw, expert.cfg.yaw_tol,
                       STAND_RATE * expert.env.cfg.max_tilt_delta)
