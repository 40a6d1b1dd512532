"""Which gripper yaw the mug flip's swing is made with (:mod:`scenegen.tasks.flip`).

A handle pinch closes along a horizontal axis, and two gripper yaws close along it (the fingers
swapped). They reach the same hand poses, not with the same joints. Measured on 34 raw mug
scenes (the 24 of ``flip the mug upright`` at seed 11 and the 10 of the flip test at seed 5):
every one of the 11 swings made from the yaw clockwise of home ran the Panda's last wrist joint
into its limit halfway through the half turn; the arm then jumped to another inverse-kinematics
branch (the hand turning at up to 12 rad/s) and in 3 of them flung the mug out of the fingers
("no flip of it reaches"). None of the 15 swings made from the counter-clockwise yaw came within
0.75 rad of that limit. So :func:`pick_swing_yaw` takes the counter-clockwise yaw, unless the
arm cannot reach its pre-grasp and grasp poses (:func:`reaches`, a dry run of the approach on the
controller's :class:`~scenegen.sim.control.IKTwin`, each pose warm-started from the last as the
controller does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scenegen.rotations import down_quat, matrix_to_quat, quat_matrix
from scenegen.sim.control import compose_orientation, matrix_rotvec, rotvec_matrix, wrap
from scenegen.tasks.armclear import Obstacles
from scenegen.tasks.mugturn import HandleGrasp

LEAD = 9
"""Poses interpolated from the hand's current pose to the approach's first one (the arm gets there gradually)."""
REACH_TOL = 0.015
"""Largest position error (m) of a pose that still counts as reached."""
TURN_TOL = 0.15
"""Largest orientation error (rad) of a pose that still counts as reached."""
LOOSE_TOL = 0.035
"""Largest position error (m) of a loosely checked pose (a mug lowered onto the table is let go wherever it stops)."""


def approach_path(hg: HandleGrasp, yaw: float, swing0: np.ndarray, backoff: float,
                  hover: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand poses ``(position, 3x3 orientation)`` of a handle pinch with gripper ``yaw``, in order.

    Above the pre-grasp point (``backoff`` behind the grasp along the approach, at ``hover`` or 5 cm over
    the grasp), at it, and at the grasp point, the hand tilted by ``swing0``.
    """
    point = np.asarray(hg.point, dtype=float)
    pre = point - np.asarray(hg.approach, dtype=float) * backoff
    rot = compose_orientation(swing0, yaw)
    return [(np.array([pre[0], pre[1], max(hover, point[2] + 0.05)]), rot), (pre, rot), (point, rot)]


def reaches(ctrl: Any, path: list[tuple[np.ndarray, np.ndarray]], jump: float | None = None,
            home: bool = False, loose: int = 0, obstacles: list | None = None) -> bool:
    """True when the arm reaches every pose of ``path`` in turn from where it is (True without an IK twin).

    Each pose is solved on the controller's twin (the world is untouched), warm-started from the last
    solution and led in by :data:`LEAD` poses from the hand's current pose (with ``home``: from the arm's home
    pose and joints instead); a pose counts as reached within :data:`REACH_TOL` and :data:`TURN_TOL` with the
    joints held inside their limits, the last ``loose`` poses within :data:`LOOSE_TOL`. With ``jump`` (rad), a
    joint moving further than that between two poses of ``path`` (the arm leaping to another inverse-kinematics
    branch) fails too. With ``obstacles`` (other objects' world boxes ``(lo, hi)``), a pose (of the lead-in too)
    that brings a link of the arm within :data:`~scenegen.tasks.armclear.ARM_MARGIN` of one fails too.
    """
    twin = getattr(ctrl, "twin", None)
    if twin is None or not path:
        return True
    if not obstacles:
        return _reaches(ctrl, twin, path, jump, home, loose, None)
    with Obstacles(twin, ctrl, obstacles) as obs:
        return _reaches(ctrl, twin, path, jump, home, loose, obs)


def _reaches(ctrl: Any, twin: Any, path: list[tuple[np.ndarray, np.ndarray]], jump: float | None, home: bool,
             loose: int, obs: Obstacles | None) -> bool:
    import pybullet as p

    c, w = twin.client, ctrl.world
    lower, upper = np.asarray(ctrl.lower), np.asarray(ctrl.upper)
    kw = ctrl.ik_kwargs()
    if home:
        q, pos0, rot0 = list(ctrl.rest), np.asarray(ctrl.home_pos, dtype=float), quat_matrix(down_quat(ctrl.home_yaw))
    else:
        q = [s[0] for s in p.getJointStates(w.robot_id, ctrl.dofs, physicsClientId=w.client)]
        pos0, orn0 = ctrl.ee_pose()
        rot0 = quat_matrix(orn0)
    turn0 = matrix_rotvec(path[0][1] @ rot0.T)
    lead = [(pos0 + f * (path[0][0] - pos0), rotvec_matrix(f * turn0) @ rot0) for f in np.linspace(0.1, 0.9, LEAD)]
    offset = np.zeros(3)
    for k, (pos, rot) in enumerate([*lead, *path]):
        sol, offset = twin.solve(ctrl.dofs, q, ctrl.ee_link, pos, matrix_to_quat(rot), kw, offset)
        last, q = q, np.clip(np.asarray(sol, dtype=float), lower, upper).tolist()
        for j, v in zip(ctrl.dofs, q, strict=True):
            p.resetJointState(twin.robot, j, v, physicsClientId=c)
        if obs is not None and obs.near():  # the lead-in too: the arm swings in from where it is
            return False
        if k < LEAD:
            continue
        if jump is not None and k > LEAD and float(np.abs(np.subtract(q, last))[ctrl.arm_idx].max()) > jump:
            return False
        st = p.getLinkState(twin.robot, ctrl.ee_link, computeForwardKinematics=True, physicsClientId=c)
        tol = LOOSE_TOL if k >= LEAD + len(path) - loose else REACH_TOL
        if float(np.linalg.norm(np.asarray(st[4]) - pos)) > tol or \
                float(np.linalg.norm(matrix_rotvec(quat_matrix(st[5]) @ rot.T))) > TURN_TOL:
            return False
    return True


def pick_swing_yaw(ctrl: Any, hg: HandleGrasp, yaws: list[float], swing0: np.ndarray, backoff: float,
                   hover: float) -> float:
    """Of the candidate ``yaws`` (the two of one pinch), the one the flip is made with.

    The yaw counter-clockwise of the controller's home yaw first, then the others in the order given; the
    first whose approach the arm reaches (:func:`reaches`) wins, else the first candidate.
    """
    order = sorted(yaws, key=lambda y: wrap(y - ctrl.home_yaw) <= 0.0)
    for yaw in order:
        if reaches(ctrl, approach_path(hg, yaw, swing0, backoff, hover)):
            return float(yaw)
    return float(order[0])
