"""Where and how two arms hand an inverted mug over (:mod:`scenegen.tasks.handover`): the plan, before a move.

The giver pinches the mug's handle top-down (the pinch the flip skill's turn uses), lifts it to the
handover point between the arms, turns it about the vertical so that its handle points at the taker
(:data:`OPENING_DIRS`), then tilts its hand 90 degrees about the closing axis: the mug hangs below
the hand on its side, its opening facing the taker. The taker pinches the rim's wall at the side
(one finger inside, one outside), its hand horizontal and pointing into the opening; after the
giver lets go, the taker tilts its hand back to pointing down (again 90 degrees about its closing
axis) and the mug stands upright in its fingers, pinched by the rim, as for any upright mug.

Each arm turns its wrist only 90 degrees where the one-arm flip turns one wrist 180 degrees: the
handover is for mugs whose one-arm flip is out of the wrist's range. :func:`plan_handover` picks
the first opening direction whose giver and taker poses the arms reach on the IK twin
(:func:`scenegen.tasks.swingcheck.reaches`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry
from scenegen.rotations import matrix_to_quat, quat_matrix
from scenegen.scene import Pose
from scenegen.sim.control import compose_orientation, wrap
from scenegen.tasks.flip import closing_yaw, handle_grasp, horizontal_swing
from scenegen.tasks.mugturn import HandleGrasp
from scenegen.tasks.swingcheck import reaches

_DOWN = np.array([0.0, 0.0, -1.0])
HANDOVER_HEIGHT = 0.22
"""Height (m) of the mug's centre above the table while it is handed over."""
HANDOVER_X = (0.42, 0.58)
"""The handover point's x (m from the robot base) is the mug's, clipped to this band; its y is between the arms."""
OPENING_DIRS = (0.0, 30.0, -30.0, 60.0, -60.0)
"""Turns (degrees) of the opening's direction from "straight at the taker's side" tried, in order."""
BACKOFF = 0.08
"""How far (m) the taker's open hand starts behind the rim, and the giver backs off after letting go."""
YAW_MARGIN = 0.1
"""The giver's yaws stay this far (rad) inside the controller's yaw band."""
TILT_STEPS = (0.25, 0.5, 0.75, 0.9, 1.0)
"""Fractions of the giver's 90 degree tilt checked on the IK twin (a wrist limit on the way shows)."""
MISSED = 10.0
"""What a missed pose takes off a path's margin (so that any reached path ranks above every missed one)."""
JOINT_MARGIN = 0.12
"""Least distance (rad) of the giver's joints to their limits along its planned path."""
TURN_STEPS = (0.25, 0.5, 0.75, 1.0)
"""Fractions of the giver's turn about the vertical checked on the IK twin (the wrist winds up as it turns)."""


@dataclass
class HandoverPlan:
    """One handover: who gives, who takes, the giver's pinch and yaws, and the opening's direction."""

    giver: int
    taker: int
    grasp: HandleGrasp
    """The giver's handle pinch (top-down: the fingertips 1 cm above ``grasp.point``)."""
    yaw0: float
    """The giver's gripper yaw at the pinch."""
    yaw1: float
    """The giver's yaw once the mug is turned so that its handle points along :attr:`opening`."""
    opening: np.ndarray
    """Unit horizontal direction the mug's opening faces once presented (toward the taker)."""
    centre: np.ndarray
    """Where the mug's centre hangs while it is handed over (world, m)."""
    spot: np.ndarray
    """Where the mug's axis goes down again (its spot on the table, xy)."""
    side: float
    """Which side of the rim the taker pinches: +1 along ``z x opening``, -1 against it."""
    margin: float = math.inf
    """The giver's :func:`path_margin` (rad)."""
    checked: bool = False
    """Both arms reach the plan's poses on the IK twin (False: none passed; the giver's best margin is tried)."""


def rim_side(asset: Asset, pose: Pose, direction: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The middle of a mug's wall, 12 mm below its rim, on the side facing ``direction``: ``(point, wall)``.

    ``direction`` is a world direction perpendicular to the mug's axis; the point is in the world.
    None when the asset has no cavity.
    """
    geom = asset_geometry(asset)
    if not geom.has_cavity:
        return None
    rot = quat_matrix(pose.orientation)
    d = rot.T @ np.asarray(direction, dtype=float)
    d = d[:2] / (np.linalg.norm(d[:2]) + 1e-12)
    cx, cy = geom.inner.mean(axis=0)
    top = float(geom.zlim[1])
    r_in = float(np.max((geom.inner - (cx, cy)) @ d)) + 0.002  # the cavity polygon is kept 2 mm inside the wall
    high = geom.hull[geom.hull[:, 2] > top - 0.02]
    rel = high[:, :2] - (cx, cy)
    near = rel[np.abs(rel @ np.array([-d[1], d[0]])) < 0.01]
    r_out = float(np.max(near @ d)) if len(near) else r_in + 0.006
    mid = 0.5 * (r_in + r_out)
    local = np.array([cx + d[0] * mid, cy + d[1] * mid, top - 0.012])
    return rot @ local + np.asarray(pose.position, dtype=float), max(0.001, r_out - r_in)


def taker_pose(opening: np.ndarray, side: float, near: float, home: float) -> tuple[np.ndarray, float, np.ndarray]:
    """The taker's approach, gripper yaw and swing for a mug whose opening faces ``opening`` (not vertical).

    The hand points into the opening along the mug's axis (``-opening``, horizontal for a mug on its side)
    and closes along the horizontal ``side * (z x opening)``, across the wall at the rim's side; the swing
    turns the hand about that axis, so tilting back to pointing down stands the mug up.
    """
    approach = -np.asarray(opening, dtype=float) / np.linalg.norm(opening)
    axis = np.cross(_DOWN, approach)
    axis /= np.linalg.norm(axis)
    swing = axis * math.acos(float(np.clip(_DOWN @ approach, -1.0, 1.0)))
    return approach, closing_yaw(axis * side, near, home), swing


def giver_yaws(ctrl: Any, hg: HandleGrasp, opening: np.ndarray, yaw_limit: float) -> list[tuple[float, float]]:
    """The giver's ``(yaw at the pinch, yaw once the handle points along opening)`` pairs inside the band.

    Both pinches of the handle (the fingers swapped) and both ways round, the smaller turn first.
    """
    y = math.atan2(hg.axis[0], -hg.axis[1])
    out = -np.asarray(hg.approach, dtype=float)
    turn = wrap(math.atan2(opening[1], opening[0]) - math.atan2(out[1], out[0]))
    band = yaw_limit - YAW_MARGIN
    found = []
    for y0 in (ctrl.home_yaw + wrap(y - ctrl.home_yaw), ctrl.home_yaw + wrap(y + math.pi - ctrl.home_yaw)):
        for t in (turn, turn - 2 * math.pi, turn + 2 * math.pi):
            if abs(y0 - ctrl.home_yaw) <= band and abs(y0 + t - ctrl.home_yaw) <= band:
                found.append((float(y0), float(y0 + t)))
    return sorted(found, key=lambda yy: abs(yy[1] - yy[0]))


def giver_path(hg: HandleGrasp, yaws: tuple[float, float], hand: np.ndarray,
               opening: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The giver's hand poses in order: over the handle, at the pinch, turning at the handover point, tilting."""
    grip_top = hg.point + np.array([0.0, 0.0, 0.01])
    down = [(grip_top + np.array([0.0, 0.0, 0.08]), yaws[0]), (grip_top, yaws[0]), (hand, yaws[0])]
    path = [(pos, compose_orientation(np.zeros(3), yaw)) for pos, yaw in down]
    path += [(hand, compose_orientation(np.zeros(3), yaws[0] + f * (yaws[1] - yaws[0]))) for f in TURN_STEPS]
    path += [(hand, compose_orientation(horizontal_swing(opening) * f, yaws[1])) for f in TILT_STEPS]
    return path


def path_margin(ctrl: Any, path: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Least distance (rad) of the arm's joints to their limits along ``path`` on the IK twin (less :data:`MISSED`).

    :data:`MISSED` is taken off when a pose is not reached (:func:`scenegen.tasks.swingcheck.reaches`).

    Each pose is solved from the last solution (as :func:`scenegen.tasks.swingcheck.reaches` does, led in
    from the hand's current pose), so a wrist that winds into its limit on the way shows here; inf without a twin.
    """
    import pybullet as p

    twin = getattr(ctrl, "twin", None)
    if twin is None or not path:
        return math.inf
    missed = not reaches(ctrl, path)
    w = ctrl.world
    lower, upper = np.asarray(ctrl.lower), np.asarray(ctrl.upper)
    kw = ctrl.ik_kwargs()
    q = [s[0] for s in p.getJointStates(w.robot_id, ctrl.dofs, physicsClientId=w.client)]
    offset, least = np.zeros(3), math.inf
    for pos, rot in path:
        sol, offset = twin.solve(ctrl.dofs, q, ctrl.ee_link, pos, matrix_to_quat(rot), kw, offset)
        q = np.clip(np.asarray(sol, dtype=float), lower, upper).tolist()
        arm = np.asarray(q)[ctrl.arm_idx]
        least = min(least, float(np.min(np.minimum(arm - lower[ctrl.arm_idx], upper[ctrl.arm_idx] - arm))))
    return least - MISSED if missed else least


def plan_handover(world: Any, ctrls: list[Any], node: str, giver: int, yaw_limit: float) -> HandoverPlan | None:
    """The handover of the inverted mug ``node`` from arm ``giver`` to the other arm, or None when none fits.

    The opening directions of :data:`OPENING_DIRS` are tried in order; the first whose giver yaws fit the
    yaw band and whose giver pinch, giver tilt and taker grasp poses the arms reach (on the IK twin) wins.
    When none passes, the plan whose giver path keeps the most margin (:func:`path_margin`) is taken.
    """
    asset, pose = world.assets[node], world.pose(node)
    hg = handle_grasp(asset, pose)
    if hg is None or len(world.arms) < 2:
        return None
    taker = 1 - giver if len(world.arms) == 2 else min((i for i in range(len(world.arms)) if i != giver),
                                                       key=lambda i: abs(world.arms[i].base.position[1]))
    table = world.scene.table_height
    gb = np.asarray(world.arms[giver].base.position, dtype=float)
    tb = np.asarray(world.arms[taker].base.position, dtype=float)
    centre = np.array([float(np.clip(pose.position[0], *HANDOVER_X)), 0.5 * (gb[1] + tb[1]), table + HANDOVER_HEIGHT])
    toward = np.array([0.0, tb[1] - gb[1], 0.0])
    toward /= np.linalg.norm(toward)
    base = math.atan2(toward[1], toward[0])
    x_axis = float((asset.grasp or {}).get("x", 0.0))
    spot = (quat_matrix(pose.orientation) @ np.array([x_axis, 0.0, 0.0]) + np.asarray(pose.position))[:2]
    cg, ct = ctrls[giver], ctrls[taker]
    fallback = None
    for deg in OPENING_DIRS:
        a = base + math.radians(deg) * (1.0 if toward[1] > 0 else -1.0)
        opening = np.array([math.cos(a), math.sin(a), 0.0])
        hand = centre + np.array([0.0, 0.0, hg.lever])
        for yaws in giver_yaws(cg, hg, opening, yaw_limit):
            margin = path_margin(cg, giver_path(hg, yaws, hand, opening))
            for side in (1.0, -1.0):
                plan = HandoverPlan(giver, taker, hg, yaws[0], yaws[1], opening, centre, spot, side, margin=margin)
                if fallback is None or margin > fallback.margin:
                    fallback = plan
                if margin <= JOINT_MARGIN:
                    continue
                approach, yaw_t, swing_t = taker_pose(opening, side, ct.home_yaw, ct.home_yaw)
                perp = np.cross([0.0, 0.0, 1.0], opening) * side
                grip = centre + opening * (float(asset.extents[2]) / 2 - 0.012) + perp * float(asset.extents[1]) / 2.2
                rot_t = compose_orientation(swing_t, yaw_t)
                if reaches(ct, [(grip - approach * BACKOFF, rot_t), (grip, rot_t)]):
                    plan.checked = True
                    return plan
    return fallback
