"""The two-arm handover of an inverted mug: one arm lifts and tilts it, the other takes it and stands it up.

:class:`HandoverSkill` runs one :class:`~scenegen.tasks.handover_plan.HandoverPlan` (see that module for
the geometry) as a closed-loop state machine over both arms of a multi-arm episode; the giver's
phases start ``g_``, the taker's ``t_``:

1. ``g_home`` (when the giver is away from its home pose), ``g_rise``, ``g_over``, ``g_descend``, ``g_close``:
   the giver pinches the handle's bar top-down;
2. ``g_lift``, ``g_carry``: it lifts the mug clear of every other object and carries it to the handover
   point (22 cm up, between the arms), turning it about the vertical so that the handle points at the taker;
3. ``g_tilt``: it tilts its hand 90 degrees about the closing axis; the mug hangs on its side below the
   hand, its opening facing the taker;
4. ``t_pre``, ``t_advance``, ``t_close``: the taker, its hand horizontal, pinches the rim's wall at the side;
5. ``g_release``, ``g_back``: the giver lets go and backs off along its hand, then goes to its parking spot;
6. ``t_tip``: the taker tilts its hand back to pointing down: the mug stands upright in its fingers;
7. ``t_carry``, ``t_lower``, ``t_release``, ``t_up``: it carries the mug back over its spot, lowers it to
   the table, lets go and rises.

Every target is recomputed from the mug's pose at each step (the taker's rim point from the presented
mug, the place from where the mug's axis is). An arm the skill does not drive (``None`` in
:meth:`HandoverSkill.act`'s answer) waits at its parking spot; the arms of one URDF body do not
collide with each other in the simulation, so the plan keeps them apart (the taker comes from its
own side, toward the opening; the giver holds the handle on the far side).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scenegen.graph import Goal
from scenegen.relations import up_axis, z_range
from scenegen.rotations import quat_matrix
from scenegen.tasks.carry import tilted
from scenegen.tasks.flip import horizontal_swing, servo
from scenegen.tasks.handover_plan import BACKOFF, HandoverPlan, rim_side, taker_pose
from scenegen.tasks.plan import top_of_others
from scenegen.tasks.tracker import world_goal_holds

PHASE_STEPS = 120
"""Most steps of one phase before the skill gives up."""
TAKE_TILT = 0.6
"""The taker goes for the mug while the sine of its axis' tilt from horizontal stays below this (the mug may
pivot a little in the giver's pinch; the taker's hand stays horizontal, pointing along the axis' heading)."""
TILT_SPEED = 0.4
"""Action magnitude of the giver's 90 degree tilt (slower: a fast one swings the mug about in its pinch)."""
TIP_SPEED = 0.6
"""Action magnitude of the taker's tilt back to pointing down."""


def held_by(env: Any, arm: int, node: str) -> bool:
    """True when both fingers of arm ``arm`` touch ``node``."""
    import pybullet as p

    w = env.world
    sets = []
    for link in env.task.arm_fingers[arm]:
        pts = p.getContactPoints(bodyA=w.robot_id, linkIndexA=link, physicsClientId=w.client)
        sets.append({w.node_of[c[2]] for c in pts if c[2] in w.node_of})
    return bool(sets) and node in set.intersection(*sets)


class HandoverSkill:
    """One handover attempt (see the module); :meth:`act` gives per-arm actions until it returns None.

    Args:
        env: the multi-arm :class:`~scenegen.tasks.episode.TaskEpisode`.
        experts: the per-arm single-arm experts of :class:`~scenegen.tasks.bimanual.MultiArmExpert` (their
            moves, tolerances and settings are reused).
        plan: the handover (:func:`~scenegen.tasks.handover_plan.plan_handover`).
        goal: the ``upright`` goal of the mug.

    After None, :attr:`failure` is None on success (the goal holds), else why it failed.
    """

    def __init__(self, env: Any, experts: list[Any], plan: HandoverPlan, goal: Goal) -> None:
        self.env, self.experts, self.plan, self.goal, self.node = env, experts, plan, goal, goal.subject
        self.cfg = experts[0].cfg
        giver = env.controller.arms[plan.giver]
        away = float(np.linalg.norm(giver.ee_pose()[0] - giver.home_pos)) > 0.03
        self.phase, self.count = ("g_home" if away else "g_rise"), 0
        self.failure: str | None = None
        self.finished = False
        w = env.world
        self.table = w.scene.table_height
        self.hover = top_of_others(w) + self.cfg.hover
        self.grip = plan.grasp.point + np.array([0.0, 0.0, 0.01])
        self.hand = plan.centre + np.array([0.0, 0.0, plan.grasp.lever])
        self.g_swing = horizontal_swing(plan.opening)
        self.t_yaw = 0.0
        self.t_swing = np.zeros(3)
        self.t_point = np.zeros(3)
        self.t_approach = np.zeros(3)
        self._last_width, self._last_z, self._stall = math.inf, math.inf, 0
        self.back = np.zeros(3)

    # ------------------------------------------------------------------ helpers
    def _ctrl(self, arm: int) -> Any:
        return self.env.controller.arms[arm]

    def _set(self, phase: str) -> None:
        self.phase, self.count, self._stall, self._last_z = phase, 0, 0, math.inf
        self._last_width = math.inf

    def _fail(self, why: str) -> None:
        self.failure, self.finished = f"handover: {why}", True

    def _reached(self, arm: int, waypoint: np.ndarray, tol: float | None = None) -> bool:
        pos, _ = self._ctrl(arm).ee_pose()
        return float(np.linalg.norm(pos - waypoint)) < (tol or self.cfg.pos_tol)

    def _stalled(self, z: float) -> bool:
        self._stall = self._stall + 1 if z > self._last_z - 0.001 else 0
        self._last_z = min(self._last_z, z)
        return self._stall >= self.cfg.stall_steps

    def _settled(self, arm: int) -> bool:
        """The gripper of ``arm`` has closed for long enough and its fingers stopped."""
        width = self._ctrl(arm).gripper_width()
        settled = abs(width - self._last_width) < 5e-4
        self._last_width = width
        return self.count >= self.cfg.close_steps and (settled or self.count >= 4 * self.cfg.close_steps)

    def _servo(self, arm: int, wp: np.ndarray, yaw: float, swing: np.ndarray | None, close: bool,
               speed: float = 1.0) -> np.ndarray:
        return servo(self._ctrl(arm), self.env.cfg, wp, yaw, swing, close, speed)

    def _giver_hold(self, close: bool = True) -> np.ndarray:
        """The giver's action that keeps its hand where it is commanded, tilted, the gripper as given."""
        c = self._ctrl(self.plan.giver)
        return self._servo(self.plan.giver, c.target_pos, self.plan.yaw1, self.g_swing, close)

    def _taker_target(self) -> bool:
        """Aim the taker at the presented mug's rim (from its pose now); False when the mug is not on its side."""
        w = self.env.world
        pose = w.pose(self.node)
        up = up_axis(pose)
        if abs(float(up[2])) > TAKE_TILT:
            return False
        opening = np.array([up[0], up[1], 0.0]) / (np.linalg.norm(up[:2]) + 1e-12)  # the hand stays horizontal
        perp = np.cross([0.0, 0.0, 1.0], opening) * self.plan.side
        got = rim_side(w.assets[self.node], pose, perp)
        if got is None:
            return False
        c = self._ctrl(self.plan.taker)
        self.t_approach, self.t_yaw, self.t_swing = taker_pose(opening, self.plan.side, c.target_yaw, c.home_yaw)
        self.t_point = got[0]
        return True

    def _axis_xy(self) -> np.ndarray:
        """Where the mug's axis meets its base now (xy)."""
        w = self.env.world
        pose = w.pose(self.node)
        x_axis = float((w.assets[self.node].grasp or {}).get("x", 0.0))
        return (quat_matrix(pose.orientation) @ np.array([x_axis, 0.0, 0.0]) + np.asarray(pose.position))[:2]

    # ------------------------------------------------------------------ policy
    def act(self) -> list[np.ndarray | None] | None:
        """Per-arm actions (None: that arm waits at its parking spot), or None when the attempt is over."""
        for _ in range(8):
            if self.finished:
                return None
            if self.count > PHASE_STEPS:
                self._fail(f"stuck in phase {self.phase}")
                return None
            out = self._giver() if self.phase.startswith("g_") and self.phase not in ("g_release", "g_back") \
                else self._taker()
            if out is not None:
                self.count += 1
                return out
        return None

    def _both(self, giver: np.ndarray | None, taker: np.ndarray | None) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = [None] * len(self.env.world.arms)
        out[self.plan.giver], out[self.plan.taker] = giver, taker
        return out

    def _giver(self) -> list[np.ndarray | None] | None:
        g, pl, cfg = self.plan.giver, self.plan, self.cfg
        ex, c = self.experts[g], self._ctrl(g)
        pos, _ = c.ee_pose()
        if self.phase == "g_home":  # from the arm's home pose the wrist has the most room for the turns ahead
            if (ex._reached(c.home_pos, c.home_yaw) and tilted(c, None, 0.05)) or self.count > 60:
                self._set("g_rise")
                return None
            return self._both(ex._move(c.home_pos, c.home_yaw, False), None)
        if self.phase == "g_rise":
            if pos[2] > self.hover - cfg.pos_tol:
                self._set("g_over")
                return None
            return self._both(ex._move(np.array([pos[0], pos[1], self.hover]), c.target_yaw, False), None)
        if self.phase == "g_over":
            wp = np.array([self.grip[0], self.grip[1], max(self.hover, self.grip[2] + 0.05)])
            if ex._reached(wp, pl.yaw0) and c.gripper_width() > pl.grasp.width + 0.02:
                self._set("g_descend")
                return None
            return self._both(ex._move(wp, pl.yaw0, False), None)
        if self.phase == "g_descend":
            if ex._reached(self.grip, z_tol=0.003):
                self._set("g_close")
                return None
            if self.count > 2 and self._stalled(pos[2]):
                if pos[2] > self.grip[2] + 0.02:
                    self._fail(f"descent to the handle of {self.node} blocked")
                    return None
                self._set("g_close")
                return None
            return self._both(ex._move(self.grip, pl.yaw0, False), None)
        if self.phase == "g_close":
            if self._settled(g):
                if not held_by(self.env, g, self.node):
                    self._fail(f"the giver missed the handle of {self.node}")
                    return None
                self._set("g_lift")
                return None
            return self._both(ex._move(c.target_pos, pl.yaw0, True), None)
        if not held_by(self.env, g, self.node):
            self._fail(f"{self.node} dropped by the giver in phase {self.phase}")
            return None
        if self.phase == "g_lift":  # straight up until the mug clears every other object, then on the diagonal
            wp = np.array([*c.target_pos[:2], self.hand[2]])
            w = self.env.world
            bottom = z_range(w.pose(self.node), tuple(w.assets[self.node].extents))[0]
            clear = bottom > top_of_others(w, (self.node,)) + cfg.clearance
            if clear or pos[2] > self.hand[2] - cfg.pos_tol or self.count > 60:
                self._set("g_carry")
                return None
            return self._both(ex._move(wp, pl.yaw0, True, cfg.carry_speed), None)
        if self.phase == "g_carry":
            if ex._reached(self.hand, pl.yaw1) or (self.count > 90 and self._reached(g, self.hand, 0.03)):
                self._set("g_tilt")
                return None
            return self._both(ex._move(self.hand, pl.yaw1, True, cfg.carry_speed), None)
        # g_tilt: the hand turns 90 degrees about its closing axis; the mug comes to hang on its side
        side_on = abs(float(up_axis(self.env.world.pose(self.node))[2])) < math.sin(math.radians(30))
        if tilted(c, self.g_swing, 0.06) and (side_on or self.count > 40) and self.count > 5:
            if not self._taker_target():
                self._fail(f"{self.node} is not on its side after the giver's tilt")
                return None
            self._set("t_pre")
            return None
        return self._both(self._servo(g, self.hand, pl.yaw1, self.g_swing, True, TILT_SPEED), None)

    def _taker(self) -> list[np.ndarray | None] | None:
        t, cfg = self.plan.taker, self.cfg
        c = self._ctrl(t)
        pos, _ = c.ee_pose()
        if self.phase in ("t_pre", "t_advance"):
            if not self._taker_target():
                self._fail(f"{self.node} is no longer on its side")
                return None
            pre = self.t_point - self.t_approach * BACKOFF
            if self.phase == "t_pre":
                if self._reached(t, pre, 0.012) and tilted(c, self.t_swing, 0.08):
                    self._set("t_advance")
                    return None
                return self._both(self._giver_hold(), self._servo(t, pre, self.t_yaw, self.t_swing, False, 0.8))
            if self._reached(t, self.t_point):
                self._set("t_close")
                return None
            return self._both(self._giver_hold(), self._servo(t, self.t_point, self.t_yaw, self.t_swing, False, 0.4))
        if self.phase == "t_close":
            if self._settled(t):
                if not held_by(self.env, t, self.node):
                    self._fail(f"the taker missed the rim of {self.node}")
                    return None
                self._set("g_release")
                return None
            return self._both(self._giver_hold(), self._servo(t, c.target_pos, self.t_yaw, self.t_swing, True))
        hold_t = self._servo(t, c.target_pos, self.t_yaw, self.t_swing, True)
        if self.phase == "g_release":
            if self.count >= cfg.open_steps:
                gc = self._ctrl(self.plan.giver)
                self.back = gc.target_pos - self.plan.opening * BACKOFF + np.array([0.0, 0.0, 0.03])
                self._set("g_back")
                return None
            return self._both(self._giver_hold(False), hold_t)
        if self.phase == "g_back":
            if self._reached(self.plan.giver, self.back) or self.count > 25:
                self._set("t_tip")
                return None
            g_act = self._servo(self.plan.giver, self.back, self.plan.yaw1, self.g_swing, False, 0.5)
            return self._both(g_act, hold_t)
        if not held_by(self.env, t, self.node) and self.phase in ("t_tip", "t_carry", "t_lower"):
            self._fail(f"{self.node} dropped by the taker in phase {self.phase}")
            return None
        pose = self.env.world.pose(self.node)
        if self.phase == "t_tip":  # the hand back to pointing down: the mug turns upright in the fingers
            upright = float(up_axis(pose)[2]) > math.cos(math.radians(15))
            if tilted(c, None, 0.06) and (upright or self.count > 40):
                self._set("t_carry")
                return None
            return self._both(None, self._servo(t, c.target_pos, self.t_yaw, None, True, TIP_SPEED))
        if self.phase == "t_carry":
            off = self.plan.spot - self._axis_xy()
            if float(np.linalg.norm(off)) < 2 * cfg.pos_tol:
                self._set("t_lower")
                return None
            wp = np.array([*(c.target_pos[:2] + 0.5 * off), c.target_pos[2]])
            return self._both(None, self._servo(t, wp, self.t_yaw, None, True, cfg.carry_speed))
        if self.phase == "t_lower":
            bottom = z_range(pose, tuple(self.env.world.assets[self.node].extents))[0]
            if bottom < self.table + 0.004 or (self.count > 2 and self._stalled(pos[2])):
                self._set("t_release")
                return None
            z = max(pos[2] - (bottom - self.table), pos[2] - 0.012)
            wp = np.array([*c.target_pos[:2], z])
            return self._both(None, self._servo(t, wp, self.t_yaw, None, True, 0.5))
        if self.phase == "t_release":
            if self.count >= cfg.open_steps:
                self._set("t_up")
                return None
            return self._both(None, self._servo(t, c.target_pos, self.t_yaw, None, False))
        if self.phase == "t_up":
            if pos[2] > self.hover - cfg.pos_tol or self.count > 30:
                if world_goal_holds(self.env.world, self.goal):
                    self.finished = True
                    return None
                if self.count > 45:
                    self._fail(f"{self.node} is not upright after the taker let go")
                    return None
            wp = np.array([*c.target_pos[:2], max(self.hover, pos[2])])
            return self._both(None, self._servo(t, wp, self.t_yaw, None, False))
        self._fail(f"unknown phase {self.phase!r}")
        return None
