"""A task episode over the scenes of a pack: world, arm control and task bookkeeping, no gymnasium.

:class:`TaskEpisode` is the world-level core that the gymnasium env wraps and that the scripted
expert (and so QA's feasibility check) drives directly. Each reset draws a scene (seeded, from
the pack or a fixed ``scene_ids`` list), restores its cached world to the settled state with the
robot at home, optionally randomizes it through a hook, and returns the first observation.
Actions move the end effector (see :mod:`scenegen.sim.control`; a multi-arm robot takes one action
per arm side by side, see :mod:`scenegen.sim.multi_arm`); rewards and ``info`` come
from the scene graph's goals (see :mod:`scenegen.tasks.tracker`).

Observation (a dict): one ``uint8`` HxWx3 image per name in ``image_keys`` (``front``,
``wrist``; ``wrist_left``, ``wrist_right`` for a two-arm robot), ``proprio`` (float32: arm and finger
joint positions, then per arm its end-effector position and quaternion and gripper width),
``instruction`` (text: one of the scene's instructions, drawn per
episode with the episode's generator, see ``EpisodeConfig.paraphrase``) and, optionally,
``points`` (float32 Nx3 world-frame point cloud from the front depth).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from scenegen.errors import ConfigError, StateError
from scenegen.fileio import Closeable
from scenegen.scene import Scene
from scenegen.sim.control import ArmController, IKTwin, check_action, twin_key
from scenegen.sim.multi_arm import MultiArmController, make_controller
from scenegen.sim.robots import get_robot
from scenegen.sim.views import (
    PROPRIO_DIM_EXTRA,
    Renderer,
    View,
    instruction_text,
    nominal_view,
    pick_backend,
    point_cloud,
)
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig, episode_budget
from scenegen.tasks.privileged import privileged_state
from scenegen.tasks.tracker import StepReport, TaskTracker
from scenegen.tasks.worlds import CachedWorld, SceneSource, WorldCache, as_source, resolve_ids

Randomizer = Callable[[CachedWorld, np.random.Generator], tuple[View, dict]]
"""A reset hook: perturbs a restored world with the episode's generator; returns the view and a record."""


def _wake(world: World) -> None:
    """Wake every object and the robot (restarts their sleep timers)."""
    import pybullet as p

    for body in [world.robot_id, *(world.body_of[n] for n in world.objects())]:
        p.changeDynamics(body, -1, activationState=p.ACTIVATION_STATE_WAKE_UP, physicsClientId=world.client)


def _drop_contacts(world: World, sleeping: bool) -> None:
    """Forget the last episode's contacts and sleep states before the snapshot is restored.

    ``restoreState`` brings poses, velocities and the saved contacts back, but contact pairs made
    after the snapshot (a finger on an object) would survive it with their warm-start impulses,
    and so would the island manager's activation states of bodies that fell asleep: the next
    episode would depend on the last one. Every body is moved far from every other and collision
    detection drops every pair; with sleeping on, the bodies are woken and stepped once there, so
    every collider is active again. The restore then puts everything back.
    """
    import pybullet as p

    c = world.client
    for k in range(p.getNumBodies(physicsClientId=c)):
        body = p.getBodyUniqueId(k, physicsClientId=c)
        p.resetBasePositionAndOrientation(body, [1000.0 * (k + 1), 0.0, 0.0], [0.0, 0.0, 0.0, 1.0],
                                          physicsClientId=c)
    if sleeping:
        _wake(world)
        p.stepSimulation(physicsClientId=c)
    else:
        p.performCollisionDetection(physicsClientId=c)


class _Runtime:
    """Per-world helpers, made once per built world."""

    def __init__(self, entry: CachedWorld, cfg: EpisodeConfig, twin: IKTwin | None) -> None:
        self.entry = entry
        self.controller = make_controller(entry.world, cfg, twin)
        self.task = TaskTracker(entry.world, cfg)
        self.renderer = Renderer(entry.world, cfg.image_size)


class TaskEpisode(Closeable):
    """Language-conditioned pick-and-place episodes over the scenes of a pack (world level).

    Args:
        pack: a pack folder, a :class:`~scenegen.pack.reader.Pack` or a
            :class:`~scenegen.tasks.worlds.SceneSet`.
        config: episode settings (see :class:`~scenegen.tasks.config.EpisodeConfig`).
        randomize: a reset hook (domain randomization); None renders the nominal view.

    Raises:
        PackError: the pack cannot be read or holds no scene.
        ConfigError: a bad setting or an unknown scene id.

    """

    def __init__(self, pack: str | os.PathLike | SceneSource, config: EpisodeConfig | None = None,
                 randomize: Randomizer | None = None) -> None:
        self.cfg = config or EpisodeConfig()
        self.source = as_source(pack)
        self.scene_ids = resolve_ids(self.source, self.cfg.scene_ids)
        first = self.source.scene(self.scene_ids[0])
        spec = get_robot(first.robot)
        self.n_joints = len(spec.arm_joints) + len(spec.finger_joints)
        self.n_arms = len(spec.arm_specs)
        """Arms of the robot (the action holds one arm action per arm)."""
        self.randomize = randomize
        self.cache = WorldCache(self.source, self.cfg)
        self.np_random = np.random.default_rng()
        self._runtimes: dict[str, _Runtime] = {}
        self._twins: dict[tuple, IKTwin] = {}
        self._rt: _Runtime | None = None
        self._scene_id: str | None = None
        self._steps = 0
        self.step_limit = self.cfg.max_episode_steps
        """The current episode's step limit (set at reset: scaled with its goals by default)."""
        self._last: StepReport | None = None
        self._instruction = ""
        self._instruction_index = 0
        self.dr_info: dict = {}
        self._pc_rng = np.random.default_rng(0)
        self._backend = pick_backend(self.cfg.pointcloud_backend) if self.cfg.pointcloud else "numpy"

    @property
    def action_dim(self) -> int:
        """Components of an action (7 for ``ee7``, 5 for ``ee5``, per arm; see :mod:`scenegen.sim.control`)."""
        return self.cfg.action_dim * self.n_arms

    @property
    def proprio_dim(self) -> int:
        """Size of ``proprio``: the joint positions, then 8 per arm (end-effector position, quaternion, width)."""
        return self.n_joints + PROPRIO_DIM_EXTRA * self.n_arms

    # ------------------------------------------------------------------ privileged access (expert, tests)
    @property
    def world(self) -> World:
        """The current episode's world."""
        return self.runtime().entry.world

    @property
    def scene(self) -> Scene:
        """The current episode's scene (robot name as built)."""
        return self.world.scene

    @property
    def scene_id(self) -> str | None:
        """Id of the current episode's scene."""
        return self._scene_id

    @property
    def controller(self) -> ArmController | MultiArmController:
        """The current world's end-effector controller (one per arm inside a :class:`MultiArmController`)."""
        return self.runtime().controller

    @property
    def task(self) -> TaskTracker:
        """The current episode's task tracker."""
        return self.runtime().task

    @property
    def renderer(self) -> Renderer:
        """The current world's observation renderer."""
        return self.runtime().renderer

    @property
    def instruction(self) -> str:
        """The current episode's instruction (one of the scene's paraphrases, see ``EpisodeConfig.paraphrase``)."""
        return self._instruction

    @property
    def elapsed_steps(self) -> int:
        """Steps taken in the current episode."""
        return self._steps

    def runtime(self) -> _Runtime:
        """The current world's helpers.

        Raises:
            StateError: no episode was started with :meth:`reset`.

        """
        if self._rt is None:
            raise StateError("the environment has no episode yet; call reset() first")
        return self._rt

    # ------------------------------------------------------------------ episode API
    def reset(self, *, seed: int | None = None, options: dict | None = None,
              rng: np.random.Generator | None = None) -> tuple[dict, dict]:
        """Start an episode; ``options={"scene_id": id}`` picks the scene instead of drawing it.

        Args:
            seed: reseeds the episode's generator (as gymnasium's ``reset(seed=...)`` does).
            options: ``{"scene_id": id}`` or None.
            rng: a generator to use from now on instead (the gymnasium env passes its ``np_random``).

        """
        if rng is not None:
            self.np_random = rng
        elif seed is not None:
            self.np_random = np.random.default_rng(seed)
        if options is not None and not isinstance(options, dict):
            raise ConfigError(f"reset options = {options!r} must be a dict such as {{'scene_id': ID}} or None")
        options = options or {}
        if options.get("scene_id") is not None:
            scene_id = resolve_ids(self.source, (str(options["scene_id"]),))[0]
        else:
            scene_id = self.scene_ids[int(self.np_random.integers(len(self.scene_ids)))]
        # restoreState puts bodies, velocities and saved contacts back but not Bullet's broadphase (its pairs, the
        # order of its manifolds): in a used world, objects would fall asleep at other times than in a fresh one
        entry = self.cache.get(scene_id, unused=self.cfg.fresh_worlds)
        entry.episodes += 1
        rt = self._runtimes.get(scene_id)
        if rt is None or rt.entry is not entry:
            self._runtimes = {k: v for k, v in self._runtimes.items() if not v.entry.world.closed}
            key = twin_key(entry.world)
            if self.cfg.ik_refine and key not in self._twins:
                self._twins[key] = IKTwin(entry.world)
            rt = self._runtimes[scene_id] = _Runtime(entry, self.cfg, self._twins.get(key))
        world = entry.world
        import pybullet as p

        _drop_contacts(world, self.cfg.sleeping)
        p.restoreState(stateId=entry.state_id, physicsClientId=world.client)
        if self.cfg.sleeping:
            _wake(world)
        world.reset_robot()
        world.time = 0.0
        if self.randomize is not None:
            rt.renderer.view, self.dr_info = self.randomize(entry, self.np_random)
        else:
            rt.renderer.view, self.dr_info = nominal_view(world), {}
        self._pc_rng = np.random.default_rng(int(self.np_random.integers(2**62)))
        graph = world.scene.graph
        texts = graph.instructions or [graph.instruction]
        self._instruction_index = int(self.np_random.integers(len(texts))) if self.cfg.paraphrase else 0
        self._instruction = texts[self._instruction_index]
        rt.controller.reset()
        rt.task.reset()
        self._rt, self._scene_id, self._steps = rt, scene_id, 0
        self.step_limit = (episode_budget(self.cfg.max_episode_steps, graph.goals)
                           if self.cfg.steps_scale_with_goals else self.cfg.max_episode_steps)
        self._last = rt.task.last
        info = {"scene_id": scene_id, "instruction": self._instruction, "instruction_index": self._instruction_index,
                **rt.task.info(self._last)}
        if self.dr_info:
            info["dr"] = self.dr_info
        return self.observe(), info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action (see :mod:`scenegen.sim.control`).

        Raises:
            ValueError: the action is NaN/inf, outside [-1, 1] or of the wrong shape.
            StateError: no episode was started with :meth:`reset`.

        """
        reward, terminated, truncated, info = self.advance(action)  # first the action, then what it shows
        return self.observe(), reward, terminated, truncated, info

    def advance(self, action: Any) -> tuple[float, bool, bool, dict]:
        """:meth:`step` without the observation: ``(reward, terminated, truncated, info)``.

        For actions whose observation nobody reads (the inner actions of an open-loop chunk): the
        cameras, a large part of a step's cost with images, are not rendered. :meth:`observe` gives the
        observation when it is needed.

        Raises:
            ValueError: the action is NaN/inf, outside [-1, 1] or of the wrong shape.
            StateError: no episode was started with :meth:`reset`.

        """
        a = check_action(action, self.cfg.action_mode, self.n_arms)
        rt = self.runtime()
        rt.controller.apply(a)
        self._steps += 1
        rep = rt.task.evaluate(rt.controller.closed, rt.controller.gripper_width())
        self._last = rep
        terminated = bool((rep.success and self.cfg.terminate_on_success) or rep.subject_lost)
        truncated = bool(not terminated and self._steps >= self.step_limit)
        if truncated and not rep.success:
            rt.task.flags["timeout"] = True
        info = {"scene_id": self._scene_id, **rt.task.info(rep)}
        return float(rep.reward), terminated, truncated, info

    def _close(self) -> None:
        """Close every cached world and IK twin (:meth:`close` calls this once)."""
        self._runtimes.clear()
        self._rt = None
        self.cache.close()
        for twin in self._twins.values():
            twin.close()
        self._twins.clear()

    # ------------------------------------------------------------------ observation
    def observe(self) -> dict:
        """The current observation (images, proprioception, instruction, optional points)."""
        rt = self.runtime()
        obs: dict[str, Any] = {}
        depth = None
        for key in self.cfg.image_keys:
            want_depth = self.cfg.pointcloud and key == "front"
            obs[key], d = rt.renderer.render(key, depth=want_depth)
            depth = d if d is not None else depth
        if self.cfg.pointcloud:
            if depth is None:
                _, depth = rt.renderer.render("front", depth=True)
            obs["points"] = point_cloud(rt.renderer, depth, self.cfg, self._backend, self._pc_rng)
        obs["proprio"] = self.proprio()
        obs["instruction"] = instruction_text(self._instruction, self.cfg.instruction_max_length)
        if self.cfg.privileged:
            world = rt.entry.world
            obs["privileged"] = privileged_state(world, world.scene.graph.goals, self._last.goals,
                                                 self._last.progress, rt.controller.ee_pose()[0],
                                                 world.scene.table_height)
        return obs

    def proprio(self) -> np.ndarray:
        """Joint positions, end-effector position and quaternion, gripper width (float32)."""
        rt = self.runtime()
        q = rt.entry.world.joint_positions()
        if len(q) != self.n_joints:
            raise ConfigError(f"scene {self._scene_id[:12]}: its robot has {len(q)} joints, the first scene's "
                              f"{self.n_joints}; one env needs scenes of one robot")
        arms = rt.controller.arms if isinstance(rt.controller, MultiArmController) else [rt.controller]
        ee = []
        for arm in arms:
            pos, orn = arm.ee_pose()
            ee += [*pos, *orn, arm.gripper_width()]
        return np.asarray([*q, *ee], dtype=np.float32)
