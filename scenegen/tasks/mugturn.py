"""How far to turn an inverted mug before the flip skill (:mod:`scenegen.tasks.flip`) pinches its handle.

The flip pinches the handle with the hand horizontal, its approach from the handle toward the
mug's axis. The Panda reaches that pose when the approach points sideways, across the line out
from the robot's base; pointing out along that line (the forearm meets the table) or back at the
base (out of reach) it fails. So when the approach is out of :data:`SIDEWAYS`, the skill first
pinches the handle top-down and turns the mug about its axis: :func:`turn_plan` picks the turn,
:class:`MugTurn` (mixed into the skill) runs it and the retries of a descent blocked on the way to
the handle (the wrist turned over, else the mug turned to the other side). :class:`HandleGrasp` is
the handle pinch both modules share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenegen.relations import state_holds
from scenegen.sim.control import wrap
from scenegen.tasks.plan import YAW_RANGE

SIDEWAYS = (math.radians(75), math.radians(130))
"""Band of angles between a handle grasp's approach and the line out from the base that the arm reaches."""
WRIST_RETRY = 1.5
"""A blocked descent is retried with the wrist turned over when that yaw lies this close (rad) to home."""
TURN_STALL = 10
"""Steps a turned hand may come no closer to the turn's last waypoint before the mug is lowered where it is."""
TURN_TO = math.radians(100)
"""The angle from the line out from the base that a turn brings the approach to (either side)."""


@dataclass(frozen=True)
class HandleGrasp:
    """A horizontal pinch of a mug's handle, in the world (:func:`scenegen.tasks.flip.handle_grasp`)."""

    point: np.ndarray
    """Fingertip centre: on the handle's outer bar, at its middle height."""
    approach: np.ndarray
    """Unit horizontal approach axis: from the handle toward the mug's axis."""
    axis: np.ndarray
    """Unit horizontal closing axis (tangent to the mug)."""
    width: float
    """Handle thickness between the fingers (m)."""
    lever: float
    """Horizontal distance (m) from the grasp point to the mug's axis."""
    reach: float
    """Largest distance (m) from the grasp point to any point of the mug (its swing radius)."""
    height: float
    """Height (m) of the grasp point above the mug's base (its height when the mug stands upright)."""


def turn_plan(hg: HandleGrasp, base_xy: np.ndarray, home: float,
              side: float | None = None, to: float = TURN_TO) -> tuple[float, float] | None:
    """How to turn an inverted mug about its axis before the flip: ``(top-down gripper yaw, turn)``, or None.

    Args:
        hg: the mug's handle grasp (:func:`scenegen.tasks.flip.handle_grasp`).
        base_xy: the (arm's) base position on the table.
        home: the gripper's home yaw (rad); start and end yaw stay within :data:`YAW_RANGE` of it.
        side: 1 (counter-clockwise of the line out from the base) or -1 to force that side, even when the
            approach already points sideways; None picks it.
        to: the angle (rad) from the line out from the base to bring the approach to (:data:`TURN_TO`).

    Returns:
        None when the approach already lies in :data:`SIDEWAYS` (or no turn fits the yaw band). Else
        the yaw that pinches the handle top-down across ``hg.axis``, and the turn (rad, at most half a
        turn) that brings the approach to ``to`` from the line out from the base:
        counter-clockwise of it when the yaw band allows (the side the Panda's wrist reaches more
        often), else clockwise.
    """
    rel = np.asarray(hg.point[:2], dtype=float) - np.asarray(base_xy, dtype=float)
    rho, alpha = math.atan2(rel[1], rel[0]), math.atan2(hg.approach[1], hg.approach[0])
    if side is None and SIDEWAYS[0] <= abs(wrap(alpha - rho)) <= SIDEWAYS[1]:
        return None
    y = math.atan2(hg.axis[0], -hg.axis[1])
    best, best_key = None, None
    for s in (1.0, -1.0) if side is None else (float(side),):
        d = wrap(rho + s * to - alpha)
        for y0 in (home + wrap(y - home), home + wrap(y + math.pi - home)):
            key = (s < 0, abs(d))
            if abs(y0 - home) <= YAW_RANGE and abs(y0 + d - home) <= YAW_RANGE and (best_key is None or key < best_key):
                best, best_key = (float(y0), float(d)), key
    return best


class MugTurn:
    """The flip skill's turn of an inverted mug and its retries (a mixin of :class:`scenegen.tasks.flip.FlipSkill`)."""

    max_turns = 2
    """Turns of one mug a flip may make before pinching it horizontally (a turn that fell short gets another)."""

    def _plan_turn(self, plan: tuple[float, float] | None, shift: np.ndarray | None = None, rise: float = 0.0) -> None:
        """Start with a turn ``plan`` of :func:`turn_plan` (None: none): a top-down pinch of the handle's bar.

        ``shift`` (world xy, m): how far the hand carries the mug while it turns, ``rise`` (m) how much higher than
        the turn's own lift (:mod:`scenegen.tasks.mugshift`).
        """
        self.turn, self.rise = plan, float(rise)
        self.shift = np.zeros(2) if shift is None else np.asarray(shift, dtype=float)
        if plan is not None:
            self.yaw, self.point = plan[0], self.hg.point + np.array([0.0, 0.0, 0.01])

    def _carry_table(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The table's world box when the turn may carry the mug elsewhere first (:mod:`scenegen.tasks.mugshift`).

        Only on the retry of a flip of this mug that could not reach above its handle (else None): a first try often
        works where the dry run reaches nothing, and a carry after another failure (a missed grasp) crowded a neighbour.
        """
        last = getattr(getattr(self.ex, "flip", None), "failure", None)
        if last != f"could not reach above the handle of {self.node}":
            return None
        w = self.env.world
        return w.aabb(w.scene.graph.support_id)

    def _retry_descent(self) -> bool:
        """After a blocked descent toward the handle: set up a retry (True), else False.

        The first retry turns the wrist over (the same pinch) when that yaw lies within
        :data:`WRIST_RETRY` of home; else, once, the mug is turned to point the approach to the other side.
        """
        ctrl, w = self.env.controller, self.env.world
        alt = self.yaw - math.copysign(math.pi, self.yaw - ctrl.home_yaw)
        if not self.retried and abs(alt - ctrl.home_yaw) <= WRIST_RETRY:
            self.retried, self.yaw = True, alt
        elif not self.returned:
            base = np.asarray(w.scene.robot_base.position[:2], dtype=float)
            rel = self.hg.point[:2] - base
            off = wrap(math.atan2(self.hg.approach[1], self.hg.approach[0]) - math.atan2(rel[1], rel[0]))
            plan = turn_plan(self.hg, base, ctrl.home_yaw, side=-1.0 if off > 0 else 1.0)
            if plan is None:
                return False
            self.returned = True
            self._plan_turn(plan)
        else:
            return False
        self._set("rise")
        return True

    def _turn_mug(self) -> np.ndarray | None:
        """Pinch the handle top-down, lift a little, turn the mug about its axis, put it down, let go, rise."""
        ex, ctrl = self.ex, self.env.controller
        pos, _ = ctrl.ee_pose()
        y0, turn = self.turn
        if self.phase in ("rise", "over", "descend", "close"):
            return self._common(None)
        if not self._held() and self.phase in ("lift", "turn"):
            self._fail(f"{self.node} dropped while turning it")
            return None
        if self.phase == "lift":
            self.lift_z = self.point[2] + 0.02 + self.rise
            if pos[2] > self.lift_z - ex.cfg.pos_tol:
                self.turn_xy0 = ctrl.target_pos[:2].copy()
                self._set("turn")
                return None
            return self._move(np.array([*ctrl.target_pos[:2], self.lift_z]), y0, True, ex.cfg.carry_speed)
        if self.phase == "turn":  # the hand circles the mug's axis while it turns (and carries it along its shift)
            done = wrap(ctrl.target_yaw - y0)
            nxt = done + math.copysign(min(0.12, abs(turn - done)), turn - done)
            c, s = math.cos(nxt), math.sin(nxt)
            r = self.turn_xy0 - self.axis_xy
            frac = abs(nxt / turn) if abs(turn) > 1e-6 else 1.0  # the carry keeps pace with the turn
            xy = self.axis_xy + frac * self.shift + np.array([c * r[0] - s * r[1], s * r[0] + c * r[1]])
            wp = np.array([*xy, self.lift_z])
            if abs(turn - done) < ex.cfg.yaw_tol and (ex._reached(wp) or self._no_progress(pos, wp, TURN_STALL, 0.0)):
                self._set("lower")  # turned: down where the hand is, even when it stopped short of the waypoint
                return None
            return self._move(wp, y0 + nxt, True, 0.3 if self.shift.any() else 0.6)
        if self.phase == "lower":
            return self._lower(np.zeros(3), ctrl.target_pos[:2])
        if self.phase == "release":
            if self.count >= ex.cfg.open_steps:
                self._set("up")
                return None
            return self._move(ctrl.target_pos, ctrl.target_yaw, False)
        if pos[2] > self.hover - ex.cfg.pos_tol or self.count > 30:  # risen: plan the flip from the new pose
            if not state_holds("inverted", self.env.world.pose(self.node)):
                self._fail(f"{self.node} is no longer inverted after turning it")
                return None
            self._start_mug(turn=self.turns < self.max_turns)
            self._set("home" if self.home_first else "rise")
            return None
        return self._move(np.array([*ctrl.target_pos[:2], self.hover]), ctrl.target_yaw, False)
