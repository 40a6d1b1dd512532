"""The expert's drag skill: slide a part lying against a tote's wall toward the tote's middle.

A part hugging a wall cannot be pinched from above: whichever way the fingers close, one of them (or
the hand) lands on the wall's rim. The closed fingertips press on the part's top and drag it
(:data:`DRAG` metres at most) toward the centre of the tote's opening, at a slow speed; the finger
pads' friction (1.5) holds it against the floor's (about 0.5). Then they rise, and the expert plans the
grasp again. :func:`drag_target` says when (the planned grasp's fingertips or hand would leave the
opening) and where to.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scenegen.relations import z_range
from scenegen.sim.world import World
from scenegen.tasks.bins import holder, wall_gap
from scenegen.tasks.blocked import Defer, GiveUp, GoalQueue, PushSkill, Skill, maybe_push
from scenegen.tasks.grasps import FINGERTIP_BELOW

__all__ = ["DragSkill", "GoalQueue", "drag_target", "maybe_drag"]

DRAG = 0.06
"""Longest drag (m)."""
CLEAR = 0.004
"""A planned grasp whose fingertips (or hand) keep less than this (m) inside the opening calls for a drag."""
STUCK_STEPS = 20
"""A hand that comes no nearer (by 1 mm) to its spot above the part for this many steps gives the drag up: it
rests on something (a mug's rim, the other piece) that keeps it off (held-out spoon and fork scene 55e15d2b5757:
the hand sat on the rim until the episode ran out)."""
PRESS = 0.002
"""How far (m) the closed fingertips press below the part's top while dragging, keeping 2 mm above the floor.
At 6 mm the arm pressed a nut into a thin tote floor (5 mm down) and it stayed behind as the fingers slid on
(sort benchmark, tier 5); the pads' friction (1.5) still beats the floor's under a lighter press."""


def drag_target(world: World, node: str, point: np.ndarray, yaw: float, opening: float) -> np.ndarray | None:
    """Where to drag ``node`` (its centre, world xy) before grasping it at ``point``/``yaw``; None: no need.

    Only a part lying in an open container whose walls the planned grasp would hit is dragged, toward the
    centre of the container's opening.
    """
    held_in = holder(world, node, point)
    if held_in is None:
        return None
    axis = np.array([math.sin(yaw), -math.cos(yaw)])
    if wall_gap(held_in, np.asarray(point, dtype=float), axis, opening) >= CLEAR:
        return None
    here = np.asarray(world.pose(node).position[:2], dtype=float)
    centre = np.asarray(held_in[0].centroid.coords[0], dtype=float)
    d = centre - here
    dist = float(np.linalg.norm(d))
    if dist < 0.01:
        return None
    return here + d / dist * min(DRAG, dist)


def maybe_drag(expert: Any, node: str, grasp: Any) -> DragSkill | PushSkill | Defer | GiveUp | None:
    """A drag of ``node`` when its planned ``grasp`` would hit its tote's walls, at most twice per goal; else None.

    A bottle lying beside a tall neighbour that the hand would come down on is pushed clear of it, or given
    up at once, or put off when another goal's subject blocks it (:func:`scenegen.tasks.blocked.maybe_push`).
    """
    if (push := maybe_push(expert, node, grasp)) is not None:
        return push
    w = expert.env.world
    target = drag_target(w, node, grasp.point, grasp.yaw, w.robot.max_opening)
    index, done = getattr(expert, "_drags", (-1, 0))
    done = done if index == expert.goal_index else 0
    if target is None or done >= 2:
        return None
    expert._drags = (expert.goal_index, done + 1)
    return DragSkill(expert, node, target)


class DragSkill(Skill):
    """Closed-loop drag of one part: above it, press, slide, rise (driven by the scripted expert)."""

    def __init__(self, expert: Any, node: str, target: np.ndarray) -> None:
        self.ex, self.node, self.target = expert, node, np.asarray(target, dtype=float)
        self.phase, self.count = "above", 0
        self.failure: str | None = None
        self.yaw = expert.env.controller.target_yaw
        self._nearest, self._still = math.inf, 0

    def _stuck(self, gap: float) -> bool:
        """The hand, ``gap`` (m) from its waypoint, came no nearer by 1 mm for :data:`STUCK_STEPS` steps."""
        self._still = self._still + 1 if gap > self._nearest - 0.001 else 0
        self._nearest = min(self._nearest, gap)
        return self._still >= STUCK_STEPS

    def _press_z(self) -> float:
        w = self.ex.env.world
        bottom, top = z_range(w.pose(self.node), tuple(w.assets[self.node].extents))
        return max(top - PRESS, bottom + 0.002) + FINGERTIP_BELOW

    def act(self) -> np.ndarray | None:
        """The next action, or None when the drag is over (``failure`` says if it failed)."""
        ex, w = self.ex, self.ex.env.world
        ctrl = ex.env.controller
        pos, _ = ctrl.ee_pose()
        here = np.asarray(w.pose(self.node).position[:2], dtype=float)
        hover = self._press_z() + 0.05  # straight down to just above the part (not first down from the start height)
        self.count += 1
        if self.count > 150:
            self.failure = f"could not drag {self.node} off the wall"
            return None
        if self.phase == "above":
            wp = np.array([here[0], here[1], hover])
            if ex._reached(wp) and ctrl.gripper_width() < 0.01:
                self.phase, self.start = "press", here
                return self.act()
            if self._stuck(float(np.linalg.norm(pos - wp))):
                self.failure = f"the hand cannot come down above {self.node}"
                return None
            return ex._move(wp, self.yaw, True)
        if self.phase == "press":
            wp = np.array([*self.start, self._press_z()])
            if ex._reached(wp, z_tol=0.002) or (pos[2] < self._press_z() + 0.004 and ex._stalled(pos[2])):
                self.phase = "slide"
                return self.act()
            return ex._move(wp, self.yaw, True, 0.5 if pos[2] < wp[2] + 0.03 else 1.0)
        if self.phase == "slide":
            wp = np.array([*(here + (self.target - here)), self._press_z()])
            lost = float(np.linalg.norm(pos[:2] - here)) > 0.03  # the part stayed behind: stop
            if float(np.linalg.norm(self.target - here)) < 0.006 or lost or self.count > 120:
                self.phase = "rise"
                return self.act()
            return ex._move(wp, self.yaw, True, 0.25)
        wp = np.array([pos[0], pos[1], self._press_z() + 0.06])
        if pos[2] > wp[2] - 0.01:
            return None
        return ex._move(wp, self.yaw, True, 0.5)
