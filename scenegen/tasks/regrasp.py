"""A piece whose pinch for standing it up is blocked is first moved clear at a pinch that is not, then picked again.

Cutlery stood up in a mug is pinched at least :data:`~scenegen.tasks.plan.INSERT_RESERVE` from its heavy
end, so that the hand stays above the rim as the piece goes down into the cavity. When the piece lies beside
the mug with its handle toward it, every pinch that far from the head can have an open finger come down on
the mug's rim (benchmark traces: the fingertip caught the rim, tipped the mug and spilled the spoon already
standing in it), while a pinch nearer its centre of mass is clear: that is the pinch QA tests
(:mod:`scenegen.tasks.clearance`). :func:`maybe_regrasp` sees this before the expert comes down, and
:class:`RegraspSkill` picks the piece at the clear pinch, lifts it a little, sets it down moved away from
what blocked it (the least shift, along the line from the blocker, after which the reserved pinch is clear,
the piece on the table, in reach and clear of the other objects), lets go and rises; the expert then plans
the goal again from the new pose. Once per goal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely.affinity

from scenegen.relations import footprint
from scenegen.sim.world import World
from scenegen.tasks.blocked import Skill
from scenegen.tasks.clearance import blocker, neighbours
from scenegen.tasks.drag import maybe_drag
from scenegen.tasks.plan import Grasp, plan_grasp
from scenegen.tasks.precheck import out_of_reach

SHIFTS = tuple(np.arange(0.03, 0.151, 0.01))
"""Shifts (m) tried, shortest first."""
KEEP_CLEAR = 0.015
"""Least gap (m) between the piece set down and any other object."""
LIFT = 0.03
"""How high (m) the piece is lifted to be moved."""
LIMIT = 120
"""Steps after which the regrasp is given up (the expert tries the goal as planned)."""


def regrasp_shift(world: World, node: str, reserved: Grasp, opening: float) -> np.ndarray | None:
    """The least move (world xy) of lying ``node`` after which its ``reserved`` pinch clears its neighbours.

    Directions: away from the object the pinch comes down on, and along the piece's closing axis both ways;
    the piece's footprint, moved, must lie on the table (2 cm inside its edge), clear of every other object by
    :data:`KEEP_CLEAR` and its moved pinch in reach. None when the pinch is clear already or no move clears it.
    """
    block = blocker(world, node, reserved.point, reserved.yaw, opening)
    if block is None:
        return None
    here = np.asarray(world.pose(node).position[:2], dtype=float)
    away = here - np.asarray(world.pose(block).position[:2], dtype=float)
    if float(np.linalg.norm(away)) < 1e-6:
        return None
    away /= np.linalg.norm(away)
    axis = np.array([np.sin(reserved.yaw), -np.cos(reserved.yaw)])
    dirs = [away, *(s * axis for s in (1.0, -1.0) if float(s * axis @ away) > 0.0)]
    around = neighbours(world, node)
    fp = footprint(world.pose(node), tuple(world.assets[node].extents))
    others = [f for n, f, _ in around]
    sup = world.scene.graph.support_id
    table = None if sup is None else footprint(world.pose(sup), tuple(world.assets[sup].extents)).buffer(-0.02)
    base = world.scene.robot_base.position
    for dist in SHIFTS:
        for d in dirs:
            shift = d * float(dist)
            moved_fp = shapely.affinity.translate(fp, float(shift[0]), float(shift[1]))
            if table is not None and not table.contains(moved_fp):
                continue
            if any(o.distance(moved_fp) < KEEP_CLEAR for o in others):
                continue
            point = np.asarray(reserved.point, dtype=float) + np.r_[shift, 0.0]
            if out_of_reach(world.robot, base, point) is not None:
                continue
            if blocker(world, node, point, reserved.yaw, opening, around) is None:
                return shift
    return None


def maybe_regrasp(expert: Any, node: str, grasp: Grasp) -> RegraspSkill | None:
    """A regrasp of ``node`` before its planned ``grasp``, or None.

    Only when the grasp (with the expert's reserve) is blocked, a pinch without the reserve is clear, and a
    move clears the reserved one (:func:`regrasp_shift`); once per goal.
    """
    if expert.reserve <= 0.0 or getattr(expert, "_regrasped", None) == expert.goal_index:
        return None
    w = expert.env.world
    opening, home = w.robot.max_opening, expert.env.controller.home_yaw
    if blocker(w, node, grasp.point, grasp.yaw, opening) is None:
        return None
    free = plan_grasp(w, node, opening, home, 0.0)
    if blocker(w, node, free.point, free.yaw, opening) is not None:
        return None
    shift = regrasp_shift(w, node, grasp, opening)
    if shift is None:
        return None
    expert._regrasped = expert.goal_index
    return RegraspSkill(expert, node, free, shift)


class RegraspSkill(Skill):
    """Pick a piece at a clear pinch, move it by ``shift`` a little above the table, set it down, rise."""

    def __init__(self, expert: Any, node: str, grasp: Grasp, shift: np.ndarray) -> None:
        self.ex, self.node, self.grasp = expert, node, grasp
        self.shift = np.asarray(shift, dtype=float)
        self.phase, self.count = "above", 0
        self.goal = np.r_[np.asarray(grasp.point[:2], dtype=float) + self.shift, float(grasp.point[2])]

    def act(self) -> np.ndarray | None:
        """The next action, or None when the regrasp is over (done or given up)."""
        ex, g = self.ex, self.grasp
        ctrl = ex.env.controller
        pos, _ = ctrl.ee_pose()
        self.count += 1
        if self.count > LIMIT:
            return None
        point = np.asarray(g.point, dtype=float)
        if self.phase == "above":
            wp = np.array([point[0], point[1], max(float(pos[2]), point[2] + 0.05)])
            if ex._reached(wp, g.yaw) and ctrl.gripper_width() > g.width + 0.01:
                self.phase = "down"
                return self.act()
            return ex._move(wp, g.yaw, False)
        if self.phase == "down":
            if ex._reached(point, z_tol=0.003) or (pos[2] < point[2] + 0.02 and ex._stalled(pos[2])):
                self.phase, self.closing = "close", 0
                return self.act()
            return ex._move(point, g.yaw, False, 0.5 if pos[2] < point[2] + 0.03 else 1.0)
        if self.phase == "close":
            self.closing += 1
            if self.closing > ex.cfg.close_steps + 3:
                self.phase = "carry"
                return self.act()
            return ex._move(point, g.yaw, True)
        if self.phase == "carry":
            if not ex._held(self.node):  # it slipped out: the expert plans from wherever it lies
                return None
            high = self.goal + np.array([0.0, 0.0, LIFT])
            start = np.r_[point[:2], point[2] + LIFT]
            wp = start if pos[2] < start[2] - 0.01 and float(np.linalg.norm(pos[:2] - point[:2])) < 0.01 else high
            if ex._reached(high):
                self.phase = "set"
                return self.act()
            return ex._move(wp, g.yaw, True, ex.cfg.carry_speed)
        if self.phase == "set":
            if ex._reached(self.goal, z_tol=0.004) or (pos[2] < self.goal[2] + 0.015 and ex._stalled(pos[2])):
                self.phase, self.opening = "open", 0
                return self.act()
            return ex._move(self.goal, g.yaw, True, 0.5)
        if self.phase == "open":
            self.opening += 1
            if self.opening > ex.cfg.open_steps:
                self.phase = "rise"
                return self.act()
            return ex._move(np.asarray(ctrl.target_pos, dtype=float), g.yaw, False)
        wp = np.array([pos[0], pos[1], self.goal[2] + 0.06])
        if pos[2] > wp[2] - 0.01:
            return None
        return ex._move(wp, g.yaw, False)


def before_grasp(expert: Any, node: str, grasp: Grasp) -> Any:
    """The skill the expert runs before coming down on ``node`` at ``grasp``, or None.

    A drag, push, deferral or give-up of :func:`scenegen.tasks.drag.maybe_drag` first, else a regrasp
    (:func:`maybe_regrasp`).
    """
    return maybe_drag(expert, node, grasp) or maybe_regrasp(expert, node, grasp)
