"""A privileged scripted expert for :class:`~scenegen.tasks.episode.TaskEpisode` (or the gymnasium env wrapping one).

The expert reads object poses, extents and grasp hints from the env's world at every
step (closed loop) and outputs the env's own actions. For each goal in order it plans a
grasp from the object's shape (:func:`scenegen.tasks.plan.plan_grasp`: ``top`` for small or
flat objects, ``side`` for tall ones, ``rim`` for open containers, all with the gripper
pointing down), rises, approaches above the object, descends, closes, lifts, carries to
the placement of the goal's relation (:func:`scenegen.tasks.plan.place_target`), lowers,
releases and retreats; a missed or dropped grasp is retried a few times. State goals
(``upright``, ``inverted``, ``lying``) that do not hold already are reported as
unsupported: the 5-D action (position, yaw, gripper) cannot turn an object over.

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
from scenegen.sim.control import wrap
from scenegen.tasks.plan import Grasp, place_target, plan_grasp, top_of_others
from scenegen.tasks.tracker import world_goal_holds
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
    """Steps the gripper closes before lifting."""
    open_steps: int = 4
    """Steps the gripper opens before retreating."""
    attempts: int = 3
    """Tries per goal (a missed, dropped or misplaced object is tried again)."""
    stall_steps: int = 4
    """Steps without progress after which a descent counts as blocked."""
    carry_speed: float = 0.6
    """Largest action magnitude while an object is held (a gentler carry keeps loose grasps)."""

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
        self.goal_index = 0
        self.tries = 0
        self.phase = "plan"
        self.count = 0
        self.failure: str | None = None
        self.grasp: Grasp | None = None
        self.target: tuple[np.ndarray, float] | None = None
        self.carry_z = 0.0
        self._last_z = math.inf
        self._stall = 0

    @property
    def done(self) -> bool:
        """Every goal was handled (or the expert gave up)."""
        return self.phase in ("done", "failed")

    # ------------------------------------------------------------------ helpers
    @property
    def goals(self) -> list[Goal]:
        return list(self.env.world.scene.graph.goals)

    def _move(self, waypoint: np.ndarray, yaw: float, close: bool, speed: float = 1.0) -> np.ndarray:
        ctrl = self.env.controller
        d = (np.asarray(waypoint, dtype=float) - ctrl.target_pos) / self.env.cfg.max_delta
        d = d * min(1.0, speed / max(1e-9, float(np.abs(d).max()))) if np.abs(d).max() > speed else d
        # turn inside the controller's yaw band (home +- yaw_limit), never across its ends
        dyaw = (ctrl.home_yaw + wrap(yaw - ctrl.home_yaw) - ctrl.target_yaw) / self.env.cfg.max_yaw_delta
        a = np.concatenate([np.clip(d, -speed, speed), [np.clip(dyaw, -1, 1)], [1.0 if close else -1.0]])
        return a.astype(np.float32)

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
        if self.tries >= self.cfg.attempts:
            self.failure = why
            self._set("failed")
        else:
            self._set("reopen")

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
        goal = self.goals[self.goal_index]
        node = goal.subject
        hover_z = top_of_others(w) + self.cfg.hover
        if self.phase == "reopen":  # open and rise before trying again
            wp = np.array([pos[0], pos[1], max(hover_z, pos[2])])
            if self.count >= self.cfg.open_steps and self._reached(wp):
                self._set("plan")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        if self.phase == "rise":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], max(hover_z, ctrl.target_pos[2])])
            if pos[2] > hover_z - self.cfg.pos_tol:
                self._set("approach")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        self.grasp = plan_grasp(w, node, w.robot.max_opening, ctrl.home_yaw) if self.phase in (
            "approach", "descend") else self.grasp
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
            return self._move(g.point, g.yaw, False)
        if self.phase == "close":
            if self.count >= self.cfg.close_steps:
                bottom = self._subject_bottom(node)
                self.carry_z = pos[2] + max(0.0, top_of_others(w, (node,)) + self.cfg.clearance - bottom)
                self.carry_z = min(self.carry_z, ctrl.high[2])
                self._set("lift")
                return None
            return self._move(ctrl.target_pos, g.yaw, True)
        if self.phase == "lift":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], self.carry_z])
            if pos[2] > self.carry_z - self.cfg.pos_tol or (self.count > 40):
                if not self._held(node):
                    self._retry("grasp missed the object")
                    return None
                self.target = place_target(w, goal, (w.robot.reach_min, w.robot.reach_max))
                if self.target is None:
                    self.failure = f"no free place found for {goal.subject} {goal.predicate} {goal.object}"
                    self._set("failed")
                    return None
                self._set("carry")
                return None
            return self._move(wp, ctrl.target_yaw, True, self.cfg.carry_speed)
        if not self._held(node) and self.phase in ("carry", "lower"):
            self._retry("object dropped while carrying")
            return None
        if self.phase == "carry":
            if goal.predicate in ("in", "on"):
                self.target = place_target(w, goal, (w.robot.reach_min, w.robot.reach_max)) or self.target
            xy = self.target[0]
            obj = np.asarray(w.pose(node).position[:2])
            if float(np.linalg.norm(xy - obj)) < self.cfg.pos_tol:
                self._set("lower")
                return None
            wp = np.array([*(ctrl.target_pos[:2] + 0.5 * (xy - obj)), self.carry_z])
            return self._move(wp, ctrl.target_yaw, True, self.cfg.carry_speed)
        if self.phase == "lower":
            xy, release_z, tip_z = self.target
            bottom = self._subject_bottom(node)
            obj = np.asarray(w.pose(node).position[:2])
            z = max(pos[2] - (bottom - release_z), pos[2] - 0.015, tip_z)
            wp = np.array([*(ctrl.target_pos[:2] + 0.5 * (xy - obj)), z])
            if bottom < release_z + 0.005 or pos[2] < tip_z + 0.003 or (self.count > 2 and self._stalled(pos[2])):
                self._set("release")
                return None
            return self._move(wp, ctrl.target_yaw, True)
        if self.phase == "release":
            if self.count >= self.cfg.open_steps:
                self._set("retreat")
                return None
            return self._move(ctrl.target_pos, ctrl.target_yaw, False)
        if self.phase == "retreat":
            wp = np.array([ctrl.target_pos[0], ctrl.target_pos[1], max(hover_z, pos[2])])
            if self.count >= 3 and (pos[2] > hover_z - self.cfg.pos_tol or self.count > 30):
                if world_goal_holds(w, goal):
                    self.goal_index, self.tries = self.goal_index + 1, 0
                    self._set("plan")
                else:
                    self._retry(f"{goal.subject} is not {goal.predicate} {goal.object} after release")
                return None
            return self._move(wp, ctrl.target_yaw, False)
        raise ConfigError(f"expert: unknown phase {self.phase!r}")

    def _plan(self) -> np.ndarray | None:
        w = self.env.world
        goals = self.goals
        while self.goal_index < len(goals) and goals[self.goal_index].is_state:
            g = goals[self.goal_index]
            if not world_goal_holds(w, g):
                self.failure = f"unsupported: {g.subject} must become {g.predicate}, which needs a flip"
                self._set("failed")
                return None
            self.goal_index += 1
        if self.goal_index >= len(goals):
            self._set("done")
            return None
        g = goals[self.goal_index]
        if world_goal_holds(w, g) and not self._held(g.subject):
            self.goal_index += 1
            return None
        grasp = plan_grasp(w, g.subject, w.robot.max_opening, self.env.controller.home_yaw)
        reach = float(np.hypot(grasp.point[0], grasp.point[1]))
        if not 0.8 * w.robot.reach_min <= reach <= 1.1 * w.robot.reach_max:
            self.failure = f"{g.subject} is out of reach ({reach:.2f} m from the base)"
            self._set("failed")
            return None
        if grasp.width > w.robot.max_opening - 0.004:
            self.failure = f"{g.subject} is {grasp.width * 100:.1f} cm wide: too wide for the gripper"
            self._set("failed")
            return None
        self.grasp = grasp
        self._set("rise")
        return None


def rollout(env: Any, expert: ScriptedExpert | None = None, seed: int | None = None,
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
    expert = expert or ScriptedExpert(env)
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
        max_steps: step budget.
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
    opts = {"image_keys": (), "max_episode_steps": int(max_steps), "max_cached_worlds": 1, **env_options}
    names = {f.name for f in fields(EpisodeConfig)}
    unknown = sorted(set(opts) - names)
    if unknown:
        raise ConfigError(f"unknown episode option(s) {unknown}; valid options: {', '.join(sorted(names))}")
    env = TaskEpisode(SceneSet([scene], lookup), EpisodeConfig(**opts))
    try:
        result, _ = rollout(env, ScriptedExpert(env, config), seed=seed)
    finally:
        env.close()
    return result
