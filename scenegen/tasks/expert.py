"""A privileged scripted expert for :class:`~scenegen.tasks.episode.TaskEpisode` (or the gymnasium env wrapping one).

The expert reads object poses, extents and grasp hints from the env's world at every
step (closed loop) and outputs the env's own actions. For each goal in order it plans a
grasp from the object's shape (:func:`scenegen.tasks.plan.plan_grasp`: ``top`` for small or
flat objects, ``side`` for tall ones, ``rim`` for open containers, all with the gripper
pointing down), rises, approaches above the object, descends, closes, lifts, carries to
the placement of the goal's relation (:func:`scenegen.tasks.plan.place_target`), lowers,
releases and retreats; a missed or dropped grasp is retried a few times. A state goal
``upright`` of an inverted mug or a lying bottle is handed to the flip skill
(:mod:`scenegen.tasks.flip`, ``ee7`` actions); other state goals that do not hold already
are reported as unsupported.

:func:`run_expert` runs it on one scene (QA's feasibility check uses it);
:func:`rollout` runs one episode of an env and can record it (demonstrations).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from scenegen.errors import ConfigError
from scenegen.graph import Goal
from scenegen.relations import z_range
from scenegen.sim.control import matrix_rotvec, rotvec_matrix, wrap
from scenegen.tasks.bimanual import MultiArmExpert
from scenegen.tasks.carry import anchor_xy, descent_target, stand_step, stand_up, steady, tilted, turned_yaw
from scenegen.tasks.drag import DragSkill, GoalQueue
from scenegen.tasks.flip import FlipSkill, flip_kind, stay_goals
from scenegen.tasks.plan import (
    INSERT_RESERVE,
    Grasp,
    Placement,
    place_target,
    top_of_others,
    upright_modes,
)
from scenegen.tasks.precheck import out_of_reach
from scenegen.tasks.recheck import bumps, knocked_out
from scenegen.tasks.regrasp import before_grasp
from scenegen.tasks.release import release_step
from scenegen.tasks.tracker import world_goal_holds
from scenegen.tasks.wallclear import plan_clear, wall_stop
from scenegen.validate import int_in, is_finite, require


@dataclass(frozen=True)
class ExpertConfig:
    """Tolerances and heights of the scripted expert (metres, radians, steps)."""

    pos_tol: float = 0.008
    """A waypoint counts as reached within this distance."""
    yaw_tol: float = 0.06
    """The gripper yaw counts as reached within this angle."""
    hover: float = 0.06
    """Fingertips pass this far above the highest object when moving empty-handed."""
    clearance: float = 0.05
    """A carried object's bottom passes this far above the highest other object."""
    close_steps: int = 5
    """Least steps the gripper closes before lifting (it goes on while the fingers still move, up to 4x)."""
    open_steps: int = 4
    """Steps the gripper opens before retreating."""
    attempts: int = 3
    """Tries per goal (a missed, dropped or misplaced object is tried again)."""
    stall_steps: int = 4
    """Steps without progress after which a descent counts as blocked."""
    carry_speed: float = 0.6
    """Largest action magnitude while an object is held (a gentler carry keeps loose grasps)."""
    skip_failed: bool = True
    """A goal failing ``attempts`` times is given up for the next one (progress counts the rest); False: stop."""

    def __post_init__(self) -> None:
        for name in ("pos_tol", "yaw_tol", "hover", "clearance", "carry_speed"):
            v = getattr(self, name)
            require(f"ExpertConfig.{name}", v, is_finite(v) and 0 < v <= 1, "in (0, 1]")
        for name in ("close_steps", "open_steps", "attempts", "stall_steps"):
            int_in(f"ExpertConfig.{name}", getattr(self, name), 1, 100)


@dataclass
class ExpertResult:
    """How an expert episode ended."""

    success: bool
    progress: float
    """Fraction of goals holding at the end."""
    steps: int
    failure: str | None = None
    """Why it failed (None on success)."""
    info: dict = field(default_factory=dict)
    """The env's last ``info``."""


class ScriptedExpert:
    """Closed-loop scripted policy over a :class:`~scenegen.tasks.episode.TaskEpisode` or its gym env (privileged)."""

    def __init__(self, env: Any, config: ExpertConfig | None = None) -> None:
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        self.cfg = config or ExpertConfig()
        self.reset()

    def reset(self) -> None:
        """Start over (call after each env reset)."""
        self.goal_index = self.tries = 0
        self.phase, self.count = "plan", 0
        self.failure: str | None = None
        self.grasp: Grasp | None = None
        self.target: Placement | None = None
        self.carry_z = self.carry_yaw = 0.0
        self.swing: np.ndarray | None = None
        self.reserve, self.upright = 0.0, False
        self.flip: FlipSkill | None = None
        self.opened_at: int | None = None  # the release step the fingers began to open at (tasks.release)
        self.drag: DragSkill | None = None
        self.queue = GoalQueue()  # goals put off until the others are handled (scenegen.tasks.blocked)
        self._last_width = self._last_z = math.inf
        self._stall = 0

    @property
    def done(self) -> bool:
        """Every goal was handled (or the expert gave up)."""
        return self.phase in ("done", "failed")

    # ------------------------------------------------------------------ helpers
    @property
    def goals(self) -> list[Goal]:
        return [*self.env.world.scene.graph.goals, *stay_goals(self.env)]  # knocked-over mugs are stood back up

    def _move(self, waypoint: np.ndarray, yaw: float, close: bool, speed: float = 1.0,
              swing: np.ndarray | None = None) -> np.ndarray:
        """The env's action toward an end-effector position, gripper yaw and swing (None: pointing down).

        In ``ee5`` mode the swing is ignored (the gripper cannot tilt). A grasp of a light object closes and
        holds gently (its finger speed as the gripper command, see :mod:`scenegen.sim.control`).
        """
        ctrl, cfg = self.env.controller, self.env.cfg
        d = (np.asarray(waypoint, dtype=float) - ctrl.target_pos) / cfg.max_delta
        d = d * min(1.0, speed / max(1e-9, float(np.abs(d).max()))) if np.abs(d).max() > speed else d
        # turn inside the controller's yaw band (home +- yaw_limit), never across its ends
        dyaw = (ctrl.home_yaw + wrap(yaw - ctrl.home_yaw) - ctrl.target_yaw) / cfg.max_yaw_delta
        grip = [((self.grasp and self.grasp.finger_speed) or 1.0) if close else -1.0]
        if cfg.action_mode == "ee5":
            return np.concatenate([np.clip(d, -speed, speed), [np.clip(dyaw, -1, 1)], grip]).astype(np.float32)
        want = np.zeros(3) if swing is None else np.asarray(swing, dtype=float)
        tilt = np.zeros(2)
        if np.any(want) or np.any(ctrl.target_swing):
            # the world-frame rotation from the commanded swing to the wanted one (about horizontal axes)
            err = matrix_rotvec(rotvec_matrix(want) @ rotvec_matrix(ctrl.target_swing).T)
            tilt = err[:2] / cfg.max_tilt_delta
        rot = np.clip(np.concatenate([tilt, [dyaw]]), -speed, speed)
        return np.concatenate([np.clip(d, -speed, speed), rot, grip]).astype(np.float32)

    def _reached(self, waypoint: np.ndarray, yaw: float | None = None, z_tol: float | None = None) -> bool:
        ctrl = self.env.controller
        pos, _ = ctrl.ee_pose()
        ok = float(np.linalg.norm(pos - waypoint)) < self.cfg.pos_tol
        if z_tol is not None:
            ok = ok and abs(float(pos[2] - waypoint[2])) < z_tol
        return ok and (yaw is None or abs(wrap(ctrl.target_yaw - yaw)) < self.cfg.yaw_tol)

    def _stalled(self, z: float) -> bool:
        self._stall = self._stall + 1 if z > self._last_z - 0.001 else 0
        self._last_z = min(self._last_z, z)
        return self._stall >= self.cfg.stall_steps

    def _set(self, phase: str) -> None:
        self.phase, self.count, self._stall, self._last_z = phase, 0, 0, math.inf

    def _retry(self, why: str) -> None:
        self.tries += 1
        if self.tries < self.cfg.attempts:
            return self._set("reopen")
        self.failure = self.failure or why  # the first goal given up names the episode's failure
        if self.cfg.skip_failed and (nxt := self.queue.after(self.goal_index, len(self.goals))) < len(self.goals):
            self.goal_index, self.tries = nxt, 0
            return self._set("reopen")
        self._set("failed")

    def _held(self, node: str) -> bool:
        _, both = self.env.task.touching()
        return node in both

    def _subject_bottom(self, node: str) -> float:
        w = self.env.world
        return z_range(w.pose(node), tuple(w.assets[node].extents))[0]

    # ------------------------------------------------------------------ policy
    def act(self, obs: Any = None) -> np.ndarray:
        """The next action (``obs`` is ignored: the expert reads the simulator)."""
        for _ in range(12):  # phases that finish at once hand over within the same step
            action = self._phase_action()
            if action is not None:
                self.count += 1
                return action
        return self._move(self.env.controller.target_pos, self.env.controller.target_yaw, False)

    def _phase_action(self) -> np.ndarray | None:
        w, ctrl = self.env.world, self.env.controller
        pos, _ = ctrl.ee_pose()
        if self.phase in ("done", "failed"):
            return self._move(ctrl.target_pos, ctrl.target_yaw, False)
        if self.phase == "plan":
            return self._plan()
        if self.phase == "flip":
            return self._flip_step()
        if self.phase == "drag":  # a part against a tote's wall is slid off it first (scenegen.tasks.drag)
            return self.drag.step()
        goal = self.goals[self.goal_index]
        node = goal.subject
        hover_z = top_of_others(w) + self.cfg.hover
        if self.phase == "reopen":  # open and rise before trying again
            wp = np.array([pos[0], pos[1], max(hover_z, pos[2])])
            if self.count >= self.cfg.open_steps and self._reached(wp):
                self._set("plan")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        if self.phase == "home":
            wp = np.array([*ctrl.home_pos[:2], max(hover_z, ctrl.home_pos[2])])
            if (self._reached(wp, ctrl.home_yaw) and tilted(ctrl, None)) or self.count > 60:
                self._set("plan")
                return None
            return self._move(wp, ctrl.home_yaw, False)
        if self.phase == "rise":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], max(hover_z, ctrl.target_pos[2])])
            if pos[2] > hover_z - self.cfg.pos_tol:
                self._set("approach")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        self.grasp = steady(self, plan_clear(w, node, w.robot.max_opening, ctrl.home_yaw, self.reserve)) if \
            self.phase in ("approach", "descend") else self.grasp
        g = self.grasp
        if self.phase == "approach":
            wp = np.array([g.point[0], g.point[1], max(hover_z, g.point[2] + 0.05)])
            if self.count > 60:
                self._retry(f"could not reach above {node}")
                return None
            if self._reached(wp, g.yaw) and ctrl.gripper_width() > min(g.width + 0.01, w.robot.max_opening - 0.005):
                self._set("descend")
                return None
            return self._move(wp, g.yaw, False)
        if self.phase == "descend":
            if self._reached(g.point, z_tol=0.003):
                self._set("close")
                return None
            if self.count > 2 and self._stalled(pos[2]):
                if pos[2] > g.point[2] + 0.03:  # blocked well above the object: closing would catch nothing
                    self._retry(f"descent to {node} blocked")
                else:
                    self._set("close")
                return None
            return self._move(descent_target(pos, g.point, wall_stop(self, node)), g.yaw, False)
        if self.phase == "close":
            width = ctrl.gripper_width()
            settled = abs(width - self._last_width) < 5e-4  # the fingers stopped: on the object, or shut
            self._last_width = width
            if self.count >= self.cfg.close_steps and (settled or self.count >= 4 * self.cfg.close_steps):
                bottom = self._subject_bottom(node)
                self.carry_z = pos[2] + max(0.0, top_of_others(w, (node,)) + self.cfg.clearance - bottom)
                self.carry_z = min(self.carry_z, ctrl.high[2])
                self._set("lift")
                return None
            # hold where the fingers got to (the arm may have dipped below the commanded point), not above it
            hold = np.array([*ctrl.target_pos[:2], max(g.point[2], min(ctrl.target_pos[2], pos[2]))])
            return self._move(hold, g.yaw, True)
        if self.phase == "lift":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], self.carry_z])
            if pos[2] > self.carry_z - self.cfg.pos_tol or (self.count > 40):
                if not self._held(node):
                    self._retry("grasp missed the object")
                    return None
                self.target = place_target(w, goal, (w.robot.reach_min, w.robot.reach_max), upright=self.upright)
                if self.target is None:
                    self.failure = f"no free place found for {goal.subject} {goal.predicate} {goal.object}"
                    self._set("failed")
                    return None
                self.carry_yaw = turned_yaw(ctrl, self.target.turn, self.env.cfg.yaw_limit)
                if self.target.upright:
                    self.carry_yaw, self.swing, below = stand_up(w, ctrl, node, self.env.cfg.yaw_limit)
                    # the hanging subject's end clears everything by 2 cm; no higher: the tilted arm reaches less
                    self.carry_z = min(ctrl.high[2], top_of_others(w, (node,)) + 0.02 + below)
                self._set("carry")
                return None
            return self._move(wp, ctrl.target_yaw, True, self.cfg.carry_speed)
        if not self._held(node) and self.phase in ("carry", "lower"):
            self._retry("object dropped while carrying")
            return None
        if self.phase == "carry":
            if goal.predicate in ("in", "on"):
                again = place_target(w, goal, (w.robot.reach_min, w.robot.reach_max), upright=self.upright)
                self.target.xy = self.target.xy if again is None else again.xy
            obj = anchor_xy(w, node, self.target.upright)
            turned = abs(wrap(ctrl.target_yaw - self.carry_yaw)) < self.cfg.yaw_tol and tilted(ctrl, self.swing)
            tol = 2 * self.cfg.pos_tol if self.target.upright else self.cfg.pos_tol  # a hanging subject sways
            if float(np.linalg.norm(self.target.xy - obj)) < tol and turned:
                self._set("lower")
                return None
            if self.count > 150:
                self._retry(f"could not carry {node} over its placement")
                return None
            if self.swing is not None and not turned:  # stand the subject up in place: turn, tilt slowly, carry it
                up = stand_step(self, node)  # its heavy end ending straight down (carry.level_swing)
                return self._move(np.array([*ctrl.target_pos[:2], self.carry_z]), self.carry_yaw, True, 0.3, up)
            wp = np.array([*(self._steer_from()[:2] + 0.5 * (self.target.xy - obj)), self.carry_z])
            speed = self.cfg.carry_speed * (0.5 if self.target.upright else 1.0)  # a hanging subject swings
            return self._move(wp, self.carry_yaw, True, speed, self.swing)
        if self.phase == "lower":
            t = self.target
            bottom = self._subject_bottom(node)
            obj = anchor_xy(w, node, t.upright)
            z = max(pos[2] - (bottom - t.release_z), pos[2] - 0.015, t.tip_z)
            wp = np.array([*(self._steer_from()[:2] + 0.5 * (t.xy - obj)), z])
            if bottom < t.release_z + 0.005 or pos[2] < t.tip_z + 0.003 or (self.count > 2 and self._stalled(pos[2])) \
                    or bumps(self, goal):  # the hand came down on a piece already in the receptacle: let go
                self._set("release")
                return None
            return self._move(wp, self.carry_yaw, True, swing=self.swing)
        if self.phase == "release":  # over a sorter, the fingertips rise clear of its walls first
            return release_step(self)
        if self.phase == "retreat":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], max(hover_z, pos[2])])
            if self.count >= 3 and (pos[2] > hover_z - self.cfg.pos_tol or self.count > 30):
                if world_goal_holds(w, goal):
                    self.goal_index, self.tries = self.goal_index + 1, 0
                    # after standing a subject up, the tilted arm goes home before the next goal (IK branch)
                    self._set("home" if self.swing is not None and self.goal_index < len(self.goals) else "plan")
                elif self.count < 45:  # the subject may still be settling
                    return self._move(wp, ctrl.target_yaw, False, swing=self.swing)
                else:
                    self._retry(f"{goal.subject} is not {goal.predicate} {goal.object} after release")
                return None
            return self._move(wp, ctrl.target_yaw, False, swing=self.swing)
        raise ConfigError(f"expert: unknown phase {self.phase!r}")

    def _flip_step(self) -> np.ndarray | None:
        """One step of the flip skill (:mod:`scenegen.tasks.flip`) on the current state goal."""
        action = self.flip.act()
        if action is not None:
            return action
        if self.flip.failure is None:
            self.goal_index, self.tries = self.goal_index + 1, 0
            self._set("home" if self.goal_index < len(self.goals) else "plan")  # untilt before the next goal
        else:
            self._retry(self.flip.failure)
        return None

    # ------------------------------------------------------------------ placing helpers
    def _steer_from(self) -> np.ndarray:
        """The commanded position, or the actual one when the arm lags it (no wind-up against a limit)."""
        ctrl = self.env.controller
        pos, _ = ctrl.ee_pose()
        return ctrl.target_pos if float(np.linalg.norm(ctrl.target_pos - pos)) < 0.02 else pos

    def _plan(self) -> np.ndarray | None:
        w, goals = self.env.world, self.goals
        self.queue.revisit(self, len(goals))
        while self.goal_index < len(goals) and goals[self.goal_index].is_state:
            g = goals[self.goal_index]
            if not world_goal_holds(w, g):
                kind = flip_kind(w, g.subject, g) if self.env.cfg.action_mode == "ee7" else None  # flips tilt
                if kind is None:  # given up on: the next goals are still tried (unless skip_failed is off)
                    self.failure = self.failure or (f"unsupported: {g.subject} must become {g.predicate}, "
                                                    "which no flip of it reaches")
                    self.goal_index = self.goal_index + 1 if self.cfg.skip_failed else len(goals)
                    continue
                self.flip = FlipSkill(self, g, kind)
                self._set("flip")
                return None
            self.goal_index += 1
        self.goal_index = knocked_out(self, goals)  # a finished goal undone since is taken up again
        if self.goal_index >= len(goals):
            self._set("failed" if self.failure else "done")  # a goal given up on the way fails the episode
            return None
        g = goals[self.goal_index]
        if world_goal_holds(w, g) and not self._held(g.subject):
            self.goal_index += 1
            return None
        self.swing, self.target = None, None
        modes = upright_modes(w, g)
        self.upright = modes[self.tries % len(modes)]  # a failed try takes the other way, if any
        self.reserve = INSERT_RESERVE if self.upright else 0.0
        grasp = plan_clear(w, g.subject, w.robot.max_opening, self.env.controller.home_yaw, self.reserve)
        base = w.scene.robot_base.position  # the arm's base (the robot's for a single arm)
        reach = out_of_reach(w.robot, base, grasp.point)  # QA's reachability check makes the same test
        if reach is not None:
            self.failure = f"{g.subject} is out of reach ({reach:.2f} m from the base)"
            self._set("failed")
            return None
        if grasp.width > w.robot.max_opening - 0.004:
            self.failure = f"{g.subject} is {grasp.width * 100:.1f} cm wide: too wide for the gripper"
            self._set("failed")
            return None
        if (drag := before_grasp(self, g.subject, grasp)) is not None:  # a drag, push or regrasp first
            self.drag = drag
            self._set("drag")
            return None
        self.grasp = grasp
        self._set("rise")
        return None


def make_expert(env: Any, config: ExpertConfig | None = None) -> ScriptedExpert | MultiArmExpert:
    """The scripted expert of an env's robot.

    A :class:`ScriptedExpert`, or for a multi-arm robot a :class:`~scenegen.tasks.bimanual.MultiArmExpert`
    driving one per arm.
    """
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    arms = getattr(base, "n_arms", None) or getattr(getattr(base, "episode", None), "n_arms", 1)
    if arms > 1:
        return MultiArmExpert(base, config or ExpertConfig(), ScriptedExpert)
    return ScriptedExpert(env, config)


def rollout(env: Any, expert: ScriptedExpert | MultiArmExpert | None = None, seed: int | None = None,
            options: dict | None = None, record: bool = False,
            on_step: Callable[[dict, np.ndarray, float, dict], None] | None = None) -> tuple[ExpertResult, dict]:
    """Run one expert episode.

    Args:
        env: a PickPlaceEnv (or a wrapper of one).
        expert: the expert (a new :class:`ScriptedExpert` when None).
        seed: reset seed.
        options: reset options (e.g. ``{"scene_id": ...}``).
        record: keep observations, actions and rewards.
        on_step: called with ``(obs, action, reward, info)`` after each step.

    Returns:
        The result, and (when ``record``) ``{"obs": [...], "actions": [...], "rewards": [...],
        "scene_id", "instruction"}`` where ``obs[i]`` is the observation ``actions[i]`` was taken in.

    """
    expert = expert or make_expert(env)
    obs, info = env.reset(seed=seed, options=options)
    expert.reset()
    rec: dict = {"obs": [], "actions": [], "rewards": [], "scene_id": info.get("scene_id"),
                 "instruction": info.get("instruction", "")}
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        action = expert.act(obs)
        if record:
            rec["obs"].append(obs)
            rec["actions"].append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if record:
            rec["rewards"].append(float(reward))
        if on_step is not None:
            on_step(obs, action, reward, info)
        if expert.phase == "failed":
            break
    success = bool(info.get("success", False))
    failure = None
    if not success:
        flags = [k for k in ("knocked_off", "dropped", "wrong_object", "grasp_failed") if info.get(k)]
        failure = expert.failure or ("timeout" if truncated else None) or (flags[0] if flags else "unfinished")
    return ExpertResult(success, float(info.get("progress", 0.0)), steps, failure, dict(info)), rec


def run_expert(scene: Any, world_or_asset_lookup: Any, max_steps: int = 300, seed: int = 0,
               config: ExpertConfig | None = None, **env_options: Any) -> ExpertResult:
    """Run the expert once on ``scene`` in a fresh env without images (QA's feasibility check).

    Args:
        scene: a :class:`~scenegen.scene.Scene` (its settled poses are used when present).
        world_or_asset_lookup: a built :class:`~scenegen.sim.world.World` of the scene (its assets are
            reused; the world itself is left untouched) or an asset lookup (dict or callable).
        max_steps: step budget per :data:`~scenegen.tasks.config.GOALS_PER_BUDGET` goals (see
            :func:`~scenegen.tasks.config.episode_budget`).
        seed: reset seed.
        config: expert settings.
        **env_options: :class:`~scenegen.tasks.config.EpisodeConfig` fields.

    """
    from scenegen.tasks.config import EpisodeConfig
    from scenegen.tasks.episode import TaskEpisode
    from scenegen.tasks.worlds import SceneSet

    lookup = world_or_asset_lookup
    if hasattr(lookup, "assets") and hasattr(lookup, "body_of"):
        lookup = {a.id: a for a in lookup.assets.values()}
    if not (isinstance(lookup, Mapping) or callable(lookup)):
        raise ConfigError(f"run_expert needs a World or an asset lookup, got {type(lookup).__name__}")
    opts = {"image_keys": (), "render_max_faces": 0,  # renders nothing: no decimated render copies
            "max_episode_steps": max_steps, "steps_scale_with_goals": True, "max_cached_worlds": 1, **env_options}
    names = {f.name for f in fields(EpisodeConfig)}
    unknown = sorted(set(opts) - names)
    if unknown:
        raise ConfigError(f"unknown episode option(s) {unknown}; valid options: {', '.join(sorted(names))}")
    env = TaskEpisode(SceneSet([scene], lookup), EpisodeConfig(**opts))
    try:
        result, _ = rollout(env, make_expert(env, config), seed=seed)
    finally:
        env.close()
    return result
