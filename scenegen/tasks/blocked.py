"""A lying bottle whose pinch would bring the hand down on a neighbour: pushed clear of it first, or given up.

A lying bottle is pinched across its long axis (:func:`scenegen.tasks.grasps.lying_axis`), so the Panda's
hand, 22 cm long along the closing axis, reaches far to both sides of it: beside a bin's wall it comes down
on the rim (the descent stalls, every try the same) or, grazing it, shoves the bin and the bottles already
in it aside (benchmark traces: tier-3 and tier-4 bottle scenes lost the bottles already binned, or knocked
one off the table). When the planned pinch leaves the hand on a neighbour (the test of QA's reachability
check, :func:`scenegen.tasks.clearance.blocker`, the hand allowed to graze), the closed fingers come down
beside the bottle, between it and the neighbour, and push it away along the closing axis until a pinch
clears (:class:`PushSkill`, once per goal). A bottle blocked by another bottle still to be put away is
taken up after the other goals (:class:`GoalQueue`). When there is no room for them there, or no push of up to
:data:`PUSH_MAX` would clear the pinch, the expert skips the goal (it counts as failed) and goes on with the
others, which keep their progress (:class:`GiveUp`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from shapely import affinity
from shapely.geometry import Point

from scenegen.relations import footprint
from scenegen.rotations import quat_matrix
from scenegen.sim.control import wrap
from scenegen.sim.world import World
from scenegen.tasks.clearance import FINGER_HALF_WIDTH, blocker, neighbours
from scenegen.tasks.grasps import lying_axis
from scenegen.tasks.precheck import out_of_reach

PUSH_STEP = 0.01
"""Push distances tried (m), in steps of this."""
PUSH_MAX = 0.1
"""Longest push (m)."""
PUSH_EXTRA = 0.01
"""Pushed this far (m) past the least distance that clears the open gripper."""
PUSH_GAP = FINGER_HALF_WIDTH + 0.006
"""The closed fingers' middle comes down this far (m) from the bottle's side."""


def _axis(yaw: float) -> np.ndarray:
    return np.array([math.sin(yaw), -math.cos(yaw)])


def blocked_lying(world: World, node: str, point: np.ndarray, yaw: float) -> str | None:
    """The neighbour the hand would come down on when pinching lying ``node`` at ``point``/``yaw``, or None."""
    if lying_axis(world.assets[node], world.pose(node)) != 2:
        return None
    return blocker(world, node, point, yaw, world.robot.max_opening, hand=False)


def push_yaw(home: float, grasp_yaw: float) -> float:
    """The gripper yaw of a push: the closing axis along the bottle (the closed fingers' thin side against it)."""
    return min((wrap(grasp_yaw + s * math.pi / 2) for s in (1.0, -1.0)), key=lambda y: abs(wrap(y - home)))


def push_plan(world: World, node: str, point: np.ndarray, yaw: float,
              home: float) -> tuple[np.ndarray, np.ndarray] | None:
    """How to push lying ``node`` clear before pinching it at ``point``/``yaw``: ``(shift, touch)``, or None.

    ``shift``: the bottle's move (world xy) along the closing axis, the least of :data:`PUSH_STEP` steps after
    which the pinch clears its neighbours with the hand kept clear, in reach, the bottle's footprint clear of
    the others and on the table; ``touch``: where the closed fingers come down (world xy), beside the bottle
    on the side it is pushed from, their hand clear of the neighbours. None when no push works.
    """
    asset, pose = world.assets[node], world.pose(node)
    around = neighbours(world, node)
    u = _axis(yaw)
    fp = footprint(pose, tuple(asset.extents))
    at = Point(float(point[0]), float(point[1]))
    others = [f for _, f, _ in around if not f.contains(at)]
    sup = world.scene.graph.support_id
    table = None if sup is None else footprint(world.pose(sup), tuple(world.assets[sup].extents)).buffer(-0.03)
    base = world.scene.robot_base.position
    radius = 0.5 * float(max(asset.extents[:2]))
    axis_z = float(point[2])
    rot = quat_matrix(pose.orientation)
    centre = np.asarray(pose.position, dtype=float) + rot[:, 2] * float((np.asarray(point) - pose.position) @ rot[:, 2])
    pyaw = push_yaw(home, yaw)
    for d in np.arange(PUSH_STEP, PUSH_MAX + 1e-9, PUSH_STEP):
        for s in (1.0, -1.0):
            moved = np.array([point[0] + s * d * u[0], point[1] + s * d * u[1], point[2]])
            if blocker(world, node, moved, yaw, world.robot.max_opening, around, hand=True) is not None:
                continue
            if out_of_reach(world.robot, base, moved) is not None:
                continue
            shift = s * (d + PUSH_EXTRA) * u
            rolled = affinity.translate(fp, float(shift[0]), float(shift[1]))
            if (table is not None and not table.contains(rolled)) or any(o.distance(rolled) < 0.01 for o in others):
                continue
            touch = centre[:2] - s * (radius + PUSH_GAP) * u
            spot = np.array([touch[0], touch[1], max(axis_z, float(centre[2]))])
            if blocker(world, node, spot, pyaw, 0.0, around, hand=False) is None:
                return shift, touch
    return None


class GoalQueue:
    """The expert's deferred goals: a lying bottle blocked by another goal's subject is taken up after the others."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.deferred: set[int] = set()
        self.current: int | None = None

    def defer(self, expert: Any) -> None:
        """Put the current goal off until every other goal has been handled (once per goal)."""
        self.pending.append(expert.goal_index)
        self.deferred.add(expert.goal_index)
        expert.goal_index, expert.tries = expert.goal_index + 1, 0
        expert._set("plan")

    def _pop(self, n: int) -> int:
        self.current = self.pending.pop(0) if self.pending else n
        return self.current

    def after(self, index: int, n: int) -> int:
        """The goal to take up after goal ``index`` of ``n`` (``n``: none): the next one, then the deferred ones."""
        if self.current is None and index + 1 < n:
            return index + 1
        return self._pop(n)

    def revisit(self, expert: Any, n: int) -> None:
        """Before planning goal ``expert.goal_index`` of ``n``: once past the last goal, the deferred ones, in turn."""
        if (self.current is None and expert.goal_index < n) or expert.goal_index == self.current:
            return
        if self.current is None and not self.pending:
            return
        expert.goal_index, expert.tries = self._pop(n), 0


class Defer:
    """A skill of no steps: the expert puts the current goal off (:meth:`GoalQueue.defer`)."""

    def __init__(self, expert: Any) -> None:
        self.ex = expert

    def step(self) -> None:
        """Defer the goal (no action: the expert plans the next goal within the same step)."""
        self.ex.queue.defer(self.ex)


class GiveUp:
    """A skill of no steps: the expert gives the current goal up with ``why`` and goes on with the next one."""

    def __init__(self, expert: Any, why: str) -> None:
        self.ex, self.why = expert, why

    def step(self) -> None:
        """Give the goal up (no action: the expert plans the next goal within the same step)."""
        self.ex.tries = self.ex.cfg.attempts - 1
        self.ex._retry(self.why)


def maybe_push(expert: Any, node: str, grasp: Any) -> PushSkill | Defer | GiveUp | None:
    """A push of lying ``node`` when its planned ``grasp`` is blocked (:func:`blocked_lying`), once per goal.

    A :class:`Defer` when the neighbour is the subject of a goal still to come (once per goal), a :class:`GiveUp`
    when the grasp is blocked and no push works, or it was pushed already; None when not blocked.
    """
    w = expert.env.world
    if (n := blocked_lying(w, node, grasp.point, grasp.yaw)) is None:
        return None
    queue = expert.queue
    later = {g.subject for i, g in enumerate(expert.goals) if i > expert.goal_index or i in queue.pending}
    if n in later and expert.goal_index not in queue.deferred:  # that bottle may be gone by then
        return Defer(expert)
    index = getattr(expert, "_pushed", -1)
    plan = None if index == expert.goal_index else push_plan(w, node, grasp.point, grasp.yaw,
                                                              expert.env.controller.home_yaw)
    if plan is None:
        return GiveUp(expert, f"descent to {node} blocked by {n}")
    expert._pushed = expert.goal_index
    return PushSkill(expert, node, grasp, *plan)


class Skill:
    """A skill the expert steps through: ``act`` gives its actions, None once it is over.

    :meth:`step` then hands back to the expert: it plans again, or, when the skill set a ``failure``, retries.
    """

    ex: Any
    failure: str | None = None

    def act(self) -> np.ndarray | None:
        """The next action, or None when the skill is over."""
        raise NotImplementedError

    def step(self) -> np.ndarray | None:
        """The expert's next action; when the skill is over, hands back (plan again, or retry on a failure)."""
        action = self.act()
        if action is None:
            self.ex._set("plan") if self.failure is None else self.ex._retry(self.failure)
        return action


class PushSkill(Skill):
    """Closed-loop push of one lying bottle from its side: above the touch point, down, push, rise."""

    def __init__(self, expert: Any, node: str, grasp: Any, shift: np.ndarray, touch: np.ndarray) -> None:
        self.ex, self.node = expert, node
        self.shift = np.asarray(shift, dtype=float)
        self.dir = self.shift / max(1e-9, float(np.linalg.norm(self.shift)))
        w = expert.env.world
        pose = w.pose(node)
        # the station of the planned grasp on the bottle's axis (asset z), followed as the bottle moves
        self.station = float((np.asarray(grasp.point) - np.asarray(pose.position))
                             @ quat_matrix(pose.orientation)[:, 2])
        self.radius = 0.5 * float(max(w.assets[node].extents[:2]))
        self.start = self._axis_point()[:2]
        self.touch = np.asarray(touch, dtype=float)
        self.phase, self.count = "above", 0
        self.yaw = push_yaw(expert.env.controller.home_yaw, grasp.yaw)

    def _axis_point(self) -> np.ndarray:
        """The world point of the bottle's axis at the planned grasp's station."""
        pose = self.ex.env.world.pose(self.node)
        return np.asarray(pose.position, dtype=float) + quat_matrix(pose.orientation)[:, 2] * self.station

    def act(self) -> np.ndarray | None:
        """The next action, or None when the push is over."""
        ex = self.ex
        ctrl = ex.env.controller
        pos, _ = ctrl.ee_pose()
        centre = self._axis_point()
        low = float(centre[2])  # the pads, from the fingertips up, cover the bottle's equator
        self.count += 1
        if self.count > 150:
            self.phase = "rise"
        if self.phase == "above":
            wp = np.array([*self.touch, low + self.radius + 0.06])
            if ex._reached(wp, self.yaw) and ctrl.gripper_width() < 0.01:
                self.phase = "down"
                return self.act()
            return ex._move(wp, self.yaw, True)
        if self.phase == "down":
            wp = np.array([*self.touch, low])
            if ex._reached(wp, z_tol=0.003) or (self.count > 2 and ex._stalled(pos[2])):
                self.phase = "push"
                return self.act()
            return ex._move(wp, self.yaw, True, 0.5)
        if self.phase == "push":
            gone = float((centre[:2] - self.start) @ self.dir)
            ahead = float((centre[:2] - pos[:2]) @ self.dir) > self.radius + 0.04  # it rolled off ahead
            if gone >= float(np.linalg.norm(self.shift)) - 0.003 or ahead or self.count > 120:
                self.phase = "rise"
                return self.act()
            wp = np.array([*(pos[:2] + 0.01 * self.dir), low])
            return ex._move(wp, self.yaw, True, 0.25)
        wp = np.array([pos[0], pos[1], low + self.radius + 0.06])
        if pos[2] > wp[2] - 0.01:
            return None
        return ex._move(wp, self.yaw, True, 0.5)
