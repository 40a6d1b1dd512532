"""The expert's flip skill: turn an inverted mug upright, stand a lying bottle or mug up (single arm, ``ee7``).

Three regrasp-free strategies, each a small closed-loop state machine driven by
:class:`scenegen.tasks.expert.ScriptedExpert` for a state goal ``upright``:

- **inverted mug** (:func:`handle_grasp`): the hand comes in horizontally, pointing from the
  handle at the mug's axis, and pinches the handle's outer bar across its thickness (the closing
  axis horizontal, tangent to the mug). It lifts the mug until it can swing below the handle, then
  turns the hand 180 degrees about the closing axis, its approach axis going from horizontal through
  straight down to horizontal the other way (never more than 90 degrees from down). The mug, turned
  about that horizontal axis, is upright; the hand carries it back over its own spot, lowers it
  until it touches the table, opens, backs off and rises. When that approach would not point
  sideways (:mod:`scenegen.tasks.mugturn`), it first pinches the handle top-down and turns the mug
  about its axis; a blocked descent is retried once with the wrist turned over.
- **lying bottle** (:func:`lying_grasp`): a top-down pinch across the diameter near the centre of
  mass, a lift, a turn about the vertical (so the tilted hand will point sideways, where the arm
  reaches) and a 90 degree turn about the closing axis that points the bottle's base down (the
  approach axis horizontal), then lower until contact, release, back off, rise.
- **lying mug** (:mod:`scenegen.tasks.mugstand`): a pinch of the thin wall of its rim, the hand pointing
  into the opening, a lift, a quarter turn that stands the mug up, then lower, release, back off, rise.

The expert knocks nothing over: the hand moves above every other object when empty, and the
mug swings in place, high enough to clear the table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scenegen.assets.base import Asset
from scenegen.errors import ConfigError
from scenegen.graph import Goal
from scenegen.relations import state_holds, up_axis, z_range
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.control import compose_orientation, matrix_rotvec, wrap
from scenegen.tasks.carry import stand_up, tilted
from scenegen.tasks.flipplan import (
    SWING_CLEARANCE,
    closing_yaw,
    horizontal_swing,
    mug_vertices,
    other_boxes,
    pinch_yaws,
    plan_flip,
)
from scenegen.tasks.grasps import TABLE_CLEARANCE, grasp_mesh
from scenegen.tasks.mugland import TIP_TOL, MugLand
from scenegen.tasks.mugstand import MugStand, first_rim_grasp
from scenegen.tasks.mugturn import HandleGrasp, MugTurn
from scenegen.tasks.plan import top_of_others
from scenegen.tasks.swingcheck import pick_swing_yaw
from scenegen.tasks.tracker import world_goal_holds

_DOWN = np.array([0.0, 0.0, -1.0])
BACKOFF = 0.08
"""How far (m) the open hand starts behind, and backs off from, a horizontal grasp."""
SWING_STEP = 0.12
"""Largest turn (rad) of the commanded hand per step while a mug swings over."""
YAW_LEAD = 1.0
"""Yaw (rad) ahead of the commanded one that :func:`servo` aims at while it turns the long way round its band."""


def has_handle(asset: Asset) -> bool:
    """True for a mug-like asset: an upright-built body with a handle sticking out along +x."""
    return "handle_reach" in (asset.params or {}) and grasp_mesh(asset) is not None


def handle_grasp(asset: Asset, pose: Pose) -> HandleGrasp | None:
    """Where to pinch the handle of a mug lying upside down (or upright) at ``pose``; None without a handle.

    The handle is the part of the mesh beyond the body's radius on +x (the asset frame of
    :mod:`scenegen.assets.procedural.revolved`); its outer bar is pinched 5 mm inside its outer edge.
    """
    if not has_handle(asset):
        return None
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    if abs(rot[2, 2]) < math.cos(math.radians(25)):  # the mug's axis must be about vertical
        return None
    verts = grasp_mesh(asset)[0]
    x_axis = float((asset.grasp or {}).get("x", 0.0))
    radius = float(asset.extents[1]) / 2
    handle = verts[verts[:, 0] > x_axis + radius + 0.002]
    if len(handle) < 4:
        return None
    x_out = float(handle[:, 0].max())
    bar = handle[handle[:, 0] > x_out - 0.008]
    z_lo, z_hi = float(bar[:, 2].min()), float(bar[:, 2].max())
    z_mid = 0.5 * (z_lo + z_hi)
    width = 2.0 * float(np.abs(bar[:, 1]).max())
    local = np.array([x_out - 0.005, 0.0, z_mid])
    point = rot @ local + pos
    out = rot[:, 0].copy()
    out[2] = 0.0
    out /= np.linalg.norm(out)
    approach = -out
    axis = np.cross(_DOWN, approach)
    axis /= np.linalg.norm(axis)
    lever = float(local[0] - x_axis)
    reach = float(np.max(np.linalg.norm(verts - local, axis=1)))
    return HandleGrasp(point, approach, axis, width, lever, reach, float(z_mid))


def lying_grasp(asset: Asset, pose: Pose, table: float, opening: float) -> tuple[np.ndarray, np.ndarray, float] | None:
    """A top-down pinch across a lying bottle near its centre of mass: ``(point, closing axis, width)``, or None.

    The bottle's long axis is its asset z axis. Cross-sections are searched outward from the centre
    of mass (1 cm steps, up to 40 % of the length) for one narrower than the opening less 6 mm.
    """
    mesh = grasp_mesh(asset)
    if mesh is None:
        return None
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    u = rot[:, 2]
    if abs(u[2]) > math.sin(math.radians(20)):
        return None
    verts = mesh[0]
    height = float(asset.extents[2])
    com_z = float(asset.com[2])
    r = np.linalg.norm(verts[:, :2], axis=1)
    for off in sorted(np.arange(-0.4 * height, 0.4 * height + 1e-9, 0.01), key=abs):
        z = com_z + float(off)
        if not 0.05 * height < z < 0.9 * height:
            continue
        band = np.abs(verts[:, 2] - z) < 0.006
        if band.sum() < 3:
            continue
        width = 2.0 * float(r[band].max())
        if width > opening - 0.006:
            continue
        point = rot @ np.array([0.0, 0.0, z]) + pos
        point[2] = max(float(point[2]), table + TABLE_CLEARANCE + 0.0075)
        axis = np.array([-u[1], u[0], 0.0])
        return point, axis / np.linalg.norm(axis), width
    return None


def flip_kind(world, node: str, goal: Goal) -> str | None:  # noqa: ANN001
    """``mug``, ``rim`` (a lying mug) or ``bottle`` when the flip skill can reach ``goal`` (``upright``); else None."""
    if goal.predicate != "upright":
        return None
    asset, pose = world.assets[node], world.pose(node)
    if state_holds("inverted", pose) and handle_grasp(asset, pose) is not None:
        return "mug"
    if state_holds("lying", pose) and first_rim_grasp(asset, pose, world.robot.max_opening) is not None:
        return "rim"
    ext = asset.extents
    if state_holds("lying", pose) and ext[2] >= 1.5 * max(ext[0], ext[1]) and \
            lying_grasp(asset, pose, world.scene.table_height, world.robot.max_opening) is not None:
        return "bottle"
    return None


def stay_goals(env: Any) -> list[Goal]:
    """A flip task's second pass (none for others): ``upright`` goals of the mugs kept upright, then of its subjects.

    The expert appends them to the scene's goals: one that holds costs nothing, a mug knocked over on the way (an
    upright neighbour, or one turned upright earlier) is stood back up from the state it lies in.
    """
    keep = getattr(getattr(env, "task", None), "stay_upright", None)
    goals = env.world.scene.graph.goals if keep is not None else []
    return [Goal(n, "upright") for n in [*(keep or []), *(g.subject for g in goals)]]


def flip_grasp_width(world, node: str, goals: list[Goal]) -> float | None:  # noqa: ANN001
    """Width (m) the flip skill pinches ``node`` across, when a state goal of it needs a flip; else None."""
    for g in goals:
        if g.subject != node or not g.is_state:
            continue
        kind = flip_kind(world, node, g)
        if kind == "mug":
            hg = handle_grasp(world.assets[node], world.pose(node))
            return None if hg is None else hg.width
        if kind == "rim":
            return first_rim_grasp(world.assets[node], world.pose(node), world.robot.max_opening).width
        if kind == "bottle":
            got = lying_grasp(world.assets[node], world.pose(node), world.scene.table_height, world.robot.max_opening)
            return None if got is None else got[2]
    return None


def servo(ctrl: Any, cfg: Any, waypoint: np.ndarray, yaw: float, swing: np.ndarray | None, close: bool,
          speed: float = 1.0) -> np.ndarray:
    """One arm's ``ee7`` action toward a position and the orientation ``compose_orientation(swing, yaw)``.

    The rotation is servoed on the whole orientation error (a world-frame rotation vector): the flip and
    handover skills move so. A yaw more than half a turn away inside the controller's band (home yaw +-
    ``cfg.yaw_limit``) is approached through :data:`YAW_LEAD`-sized steps the long way round: the shortest
    rotation would cross the band's far end, where the controller clamps the yaw and the hand never gets there.
    """
    d = (np.asarray(waypoint, dtype=float) - ctrl.target_pos) / cfg.max_delta
    if np.abs(d).max() > speed:
        d = d * (speed / float(np.abs(d).max()))
    goal = ctrl.home_yaw + wrap(float(yaw) - ctrl.home_yaw)  # the wanted yaw as the band holds it
    if abs(goal - ctrl.target_yaw) > math.pi:  # the short way round leaves the band: lead the yaw through home
        yaw = ctrl.target_yaw + math.copysign(YAW_LEAD, goal - ctrl.target_yaw)
    want = compose_orientation(np.zeros(3) if swing is None else np.asarray(swing, dtype=float), yaw)
    err = matrix_rotvec(want @ ctrl.target_rotation.T)
    rot = np.array([err[0] / cfg.max_tilt_delta, err[1] / cfg.max_tilt_delta, err[2] / cfg.max_yaw_delta])
    if np.abs(rot).max() > speed:
        rot = rot * (speed / float(np.abs(rot).max()))
    return np.concatenate([d, rot, [1.0 if close else -1.0]]).astype(np.float32)


class FlipSkill(MugLand, MugStand, MugTurn):
    """One attempt at turning ``goal.subject`` upright; :meth:`act` returns actions until it returns None.

    ``expert`` is the :class:`~scenegen.tasks.expert.ScriptedExpert` driving it (its moves, tolerances
    and held-object test are reused); ``kind`` is :func:`flip_kind`'s answer.

    After None, :attr:`failure` is None on success (the goal holds), else why it failed.
    """

    def __init__(self, expert: Any, goal: Goal, kind: str) -> None:
        self.ex, self.goal, self.node, self.kind = expert, goal, goal.subject, kind
        self.env = expert.env
        self.phase, self.count = "rise", 0
        self.failure: str | None = None
        self.finished, self.retried, self.returned = False, False, False
        w, ctrl = self.env.world, self.env.controller
        self.table = w.scene.table_height
        self.hover = top_of_others(w) + expert.cfg.hover
        self.swing0, self.swing1, self.lift_z = np.zeros(3), np.zeros(3), 0.0
        self.home_xy = np.asarray(w.pose(self.node).position[:2], dtype=float)
        self.turn: tuple[float, float] | None = None
        self.turns, self.home_first = 0, False
        if kind == "mug":
            self._start_mug(turn=True)
            self.phase = "home" if self.home_first else "rise"
        elif kind == "rim":
            self._start_rim(BACKOFF)
            self.phase = "home" if self.home_first else "rise"
        else:
            self.point, axis, self.width = lying_grasp(w.assets[self.node], w.pose(self.node), self.table,
                                                       w.robot.max_opening)
            self.yaw = closing_yaw(axis, ctrl.target_yaw, ctrl.home_yaw)
        self.carry_yaw = self.yaw
        self._last_width, self._last_z, self._stall = math.inf, math.inf, 0
        self._best, self._since = math.inf, 0

    def _start_mug(self, turn: bool) -> None:
        """Plan the handle grasp and the flip's yaw, with ``turn`` maybe a first turn of the mug (:mod:`flipplan`)."""
        w, ctrl = self.env.world, self.env.controller
        g = handle_grasp(w.assets[self.node], w.pose(self.node))
        self.hg, self.point, self.width = g, g.point, g.width
        self.swing0 = horizontal_swing(g.approach)
        self.swing1 = -self.swing0
        self.axis_xy = self.point[:2] + g.approach[:2] * g.lever  # the mug's axis, to put it back there
        base = np.asarray(w.scene.robot_base.position[:2], dtype=float)
        plan = plan_flip(ctrl, g, mug_vertices(w, self.node), base, BACKOFF, self.hover, self.table, turn,
                         other_boxes(w, self.node), carry=self._carry_table())
        self.yaw = plan.yaw if plan.yaw is not None else closing_yaw(g.axis, ctrl.target_yaw, ctrl.home_yaw)
        if plan.turn is None and plan.yaw is None:  # nothing reached on the twin: the approach alone decides
            self.yaw = pick_swing_yaw(ctrl, g, pinch_yaws(g, ctrl.target_yaw, ctrl.home_yaw), self.swing0, BACKOFF,
                                      self.hover)
        self.turns += plan.turn is not None
        self.home_first = plan.home and plan.turn is None
        self._plan_turn(plan.turn, plan.shift, plan.rise)

    # ------------------------------------------------------------------ helpers
    def _set(self, phase: str) -> None:
        self.phase, self.count, self._stall, self._last_z = phase, 0, 0, math.inf
        self._best, self._since = math.inf, 0

    def _no_progress(self, pos: np.ndarray, wp: np.ndarray, steps: int = 15, near: float | None = None) -> bool:
        """True once the hand has come no closer to ``wp`` for ``steps`` steps (within ``near``, 2 pos_tol: it has)."""
        d = float(np.linalg.norm(np.asarray(pos) - wp))
        if d < self._best - 0.002 or d < (2 * self.ex.cfg.pos_tol if near is None else near):
            self._best, self._since = min(d, self._best), 0
        else:
            self._since += 1
        return self._since >= steps

    def _fail(self, why: str) -> None:
        self.failure, self.finished = why, True

    def _held(self) -> bool:
        return self.ex._held(self.node)

    def _bottom(self) -> float:
        w = self.env.world
        return z_range(w.pose(self.node), tuple(w.assets[self.node].extents))[0]

    def _lowest(self) -> float:
        """World z of the subject's lowest mesh vertex (its box's corners reach far lower when it is tilted)."""
        w = self.env.world
        pose = w.pose(self.node)
        verts = grasp_mesh(w.assets[self.node])[0]
        return float((verts @ quat_matrix(pose.orientation)[2]).min() + pose.position[2])

    def _stalled(self, z: float) -> bool:
        self._stall = self._stall + 1 if z > self._last_z - 0.001 else 0
        self._last_z = min(self._last_z, z)
        return self._stall >= self.ex.cfg.stall_steps

    def _move(self, waypoint: np.ndarray, yaw: float, close: bool, speed: float = 1.0,
              swing: np.ndarray | None = None) -> np.ndarray:
        """The ``ee7`` action toward a position and the orientation ``compose_orientation(swing, yaw)``.

        The rotation is servoed on the whole orientation error (a world-frame rotation vector), so that a
        tilted hand turns about its own axes without the yaw and the tilt fighting each other.
        """
        return servo(self.env.controller, self.env.cfg, waypoint, yaw, swing, close, speed)

    def _approach_axis(self) -> np.ndarray:
        return quat_matrix(self.env.controller.ee_pose()[1])[:, 2]

    # ------------------------------------------------------------------ policy
    def act(self) -> np.ndarray | None:
        """The next action, or None when the attempt is over (see :attr:`failure`)."""
        for _ in range(8):
            if self.finished:
                return None
            a = self._mug() if self.kind == "mug" else self._rim() if self.kind == "rim" else self._bottle()
            if a is not None:
                self.count += 1
                if self.count > 160:
                    self._fail(f"flip of {self.node} stuck in phase {self.phase}")
                    return None
                return a
        return None

    def _common(self, swing: np.ndarray | None) -> np.ndarray | None:
        """Phases shared by both strategies, up to a closed grasp; None hands over to the strategy."""
        ex, ctrl = self.ex, self.env.controller
        pos, _ = ctrl.ee_pose()
        horizontal = swing is not None
        pre = self.point - (self._start_approach() * BACKOFF if horizontal else np.zeros(3))
        if self.phase == "home":  # the arm's home pose first: the flip is reached from there (flipplan.py)
            wp = np.array([*ctrl.home_pos[:2], max(self.hover, ctrl.home_pos[2])])
            if (ex._reached(wp, ctrl.home_yaw) and tilted(ctrl, None)) or self.count > 60:
                self._set("rise")
                return None
            return self._move(wp, ctrl.home_yaw, False)
        if self.phase == "rise":
            wp = np.array([pos[0], pos[1], max(self.hover, pos[2])])
            if pos[2] > self.hover - ex.cfg.pos_tol:
                self._set("over")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        if self.phase == "over":  # above the pre-grasp point, the hand turned (and tilted) for the grasp
            wp = np.array([pre[0], pre[1], max(self.hover, self.point[2] + 0.05)])
            if ex._reached(wp, self.yaw) and tilted(ctrl, swing, 0.06) and \
                    ctrl.gripper_width() > min(self.width + 0.02, self.env.world.robot.max_opening - 0.005):
                self._set("descend")
                return None
            if self.count > 30 and self._no_progress(pos, wp):  # out of reach: fail now, not at the step limit
                self._fail(f"could not reach above the handle of {self.node}")
                return None
            return self._move(wp, self.yaw, False, 0.6 if horizontal else 1.0, swing)
        if self.phase == "descend":
            if ex._reached(pre, z_tol=0.003):
                self._set("advance" if horizontal else "close")
                return None
            if self.count > 2 and self._stalled(pos[2]) and not (horizontal and self._retry_descent()):
                self._fail(f"descent to {self.node} blocked")
                return None
            return self._move(pre, self.yaw, False, 1.0, swing)
        if self.phase == "advance":
            if ex._reached(self.point):
                self._set("close")
                return None
            if self.count > 10 and self._no_progress(pos, self.point):
                self._fail(f"advance to the handle of {self.node} blocked")
                return None
            return self._move(self.point, self.yaw, False, 0.5, swing)
        if self.phase == "close":
            width = ctrl.gripper_width()
            settled = abs(width - self._last_width) < 5e-4
            self._last_width = width
            if self.count >= ex.cfg.close_steps and (settled or self.count >= 4 * ex.cfg.close_steps):
                if not self._held():
                    self._fail(f"grasp of {self.node} missed")
                    return None
                self._set("lift")
                return None
            return self._move(ctrl.target_pos, self.yaw, True, 1.0, swing)
        return None

    def _start_approach(self) -> np.ndarray:
        return self.hg.approach if self.kind == "mug" else self.rim.approach if self.kind == "rim" else _DOWN

    # ------------------------------------------------------------------ the mug
    def _mug(self) -> np.ndarray | None:
        ex, ctrl, w = self.ex, self.env.controller, self.env.world
        pos, _ = ctrl.ee_pose()
        if self.turn is not None:
            return self._turn_mug()
        if self.phase in ("home", "rise", "over", "descend", "advance", "close"):
            return self._common(self.swing0)
        if not self._held() and self.phase in ("lift", "swing", "lower", "tip"):
            self._fail(f"{self.node} dropped while flipping")
            return None
        if self.phase == "lift":
            self.lift_z = min(ctrl.high[2], self.table + self.hg.reach + 0.03)
            wp = np.array([*ctrl.target_pos[:2], self.lift_z])
            if pos[2] > self.lift_z - ex.cfg.pos_tol:
                self._set("swing")
                return None
            return self._move(wp, self.yaw, True, ex.cfg.carry_speed, self.swing0)
        if self.phase == "swing":
            a = self.swing0 / np.linalg.norm(self.swing0)
            theta = float(ctrl.target_swing @ a)
            done = theta <= -math.pi / 2 + 0.03 and (tilted(ctrl, self.swing1, 0.08) or self.count > 40)
            if done or state_holds("upright", w.pose(self.node)) and theta < -math.pi / 2 + 0.3:
                self._set("lower")
                return None
            nxt = a * max(-math.pi / 2, theta - SWING_STEP)
            frac = float(np.clip((math.pi / 2 - max(-math.pi / 2, theta - SWING_STEP)) / math.pi, 0.0, 1.0))
            # the grasp point moves from the handle's side to the far side, so that the mug lands on its spot
            start = self.point[:2]
            end = self.axis_xy + (self.axis_xy - start)
            xy = start + frac * (end - start)
            # the second half lowers the mug, so that a mug lagging the hand lands on its base edge and tips upright
            low = self.table + self.hg.height + 0.01
            z = self.lift_z if theta > 0 else self.lift_z + (low - self.lift_z) * min(1.0, -theta / (math.pi / 2))
            # but never into the table: a mug touching it while held is twisted in the fingers and pulled out
            z = max(z, pos[2] + self.table + SWING_CLEARANCE - self._lowest())
            return self._move(np.array([*xy, z]), self.yaw, True, 0.6, nxt)
        if self.phase == "lower":
            if float(up_axis(w.pose(self.node))[2]) < math.cos(TIP_TOL) and self.count == 0:
                self._set("tip")
                return None
            return self._lower(self.swing1, self._mug_xy())
        if self.phase == "tip":
            return self._tip()
        return self._finish(self.swing1)

    # ------------------------------------------------------------------ the bottle
    def _bottle(self) -> np.ndarray | None:
        ex, ctrl, w = self.ex, self.env.controller, self.env.world
        pos, _ = ctrl.ee_pose()
        if self.phase in ("rise", "over", "descend", "close"):
            return self._common(None)
        if not self._held() and self.phase in ("lift", "turn", "lower"):
            self._fail(f"{self.node} dropped while standing it up")
            return None
        if self.phase == "lift":
            if self.count == 0:
                bottom = np.asarray(w.pose(self.node).position, dtype=float)  # the asset origin: the base's centre
                below = float(np.linalg.norm(bottom - pos))
                self.lift_z = min(ctrl.high[2], max(self.table + below + 0.03,
                                                    top_of_others(w, (self.node,)) + 0.02 + below))
            wp = np.array([*ctrl.target_pos[:2], self.lift_z])
            if pos[2] > self.lift_z - ex.cfg.pos_tol:
                bottom = np.asarray(w.pose(self.node).position, dtype=float)
                self.carry_yaw, self.swing1, _ = stand_up(w, ctrl, self.node, self.env.cfg.yaw_limit, end=bottom)
                self._set("turn")
                return None
            return self._move(wp, self.yaw, True, ex.cfg.carry_speed)
        if self.phase == "turn":
            turned = abs(wrap(ctrl.target_yaw - self.carry_yaw)) < ex.cfg.yaw_tol and tilted(ctrl, self.swing1)
            if turned and (float(up_axis(w.pose(self.node))[2]) > math.cos(math.radians(12)) or self.count > 60):
                self._set("lower")
                return None
            return self._move(np.array([*ctrl.target_pos[:2], self.lift_z]), self.carry_yaw, True, 0.3, self.swing1)
        if self.phase == "lower":
            return self._lower(self.swing1, ctrl.target_pos[:2])
        return self._finish(self.swing1)

    # ------------------------------------------------------------------ shared ending
    def _lower(self, swing: np.ndarray, xy: np.ndarray) -> np.ndarray | None:
        ctrl = self.env.controller
        pos, _ = ctrl.ee_pose()
        bottom = self._bottom()
        if bottom < self.table + 0.004 or (self.count > 2 and self._stalled(pos[2])):
            self._set("release")
            return None
        z = max(pos[2] - (bottom - self.table), pos[2] - 0.012)
        return self._move(np.array([*xy, z]), ctrl.target_yaw, True, 0.5, swing)

    def _finish(self, swing: np.ndarray) -> np.ndarray | None:
        ex, ctrl, w = self.ex, self.env.controller, self.env.world
        pos, _ = ctrl.ee_pose()
        if self.phase == "release":
            if self.count >= ex.cfg.open_steps:
                self.back = ctrl.target_pos - self._approach_axis() * BACKOFF
                self.back[2] = ctrl.target_pos[2] + 0.005
                self._set("back")
                return None
            return self._move(ctrl.target_pos, ctrl.target_yaw, False, 1.0, swing)
        if self.phase == "back":  # straight back along the approach axis, clear of the subject
            if ex._reached(self.back) or self.count > 25:
                self._set("up")
                return None
            return self._move(self.back, ctrl.target_yaw, False, 0.5, swing)
        if self.phase == "up":
            wp = np.array([*ctrl.target_pos[:2], max(self.hover, pos[2])])
            if pos[2] > self.hover - ex.cfg.pos_tol or self.count > 30:
                if world_goal_holds(w, self.goal):
                    self.finished = True
                    return None
                if self.count > 45:
                    self._fail(f"{self.node} is not {self.goal.predicate} after release")
                    return None
            return self._move(wp, ctrl.target_yaw, False, 1.0, swing)
        raise ConfigError(f"flip skill: unknown phase {self.phase!r}")
