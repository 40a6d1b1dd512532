"""The pick-and-place gymnasium environment over a scene pack: a thin wrapper of a task episode.

The world, arm control, task bookkeeping and observations live in
:class:`scenegen.tasks.episode.TaskEpisode` (so the scripted expert and QA use the same code
without gymnasium); this module adds the gymnasium spaces, seeding, domain randomization
(:mod:`rl.envs.randomization`) and ``render()``.

Observation (a ``Dict``): one ``uint8`` HxWx3 image per name in ``image_keys``
(``front``, ``wrist``), ``proprio`` (float32: arm and finger joint positions, end-effector
position and quaternion, gripper width), ``instruction`` (text: one of the scene's paraphrases,
drawn per episode) and, optionally,
``points`` (float32 Nx3 world-frame point cloud from the front depth).

Action (``action_space``): ``Box(-1, 1, (7,))`` ``(dx, dy, dz, droll, dpitch, dyaw, gripper)`` by
default (``action_mode="ee7"``), ``Box(-1, 1, (5,))`` ``(dx, dy, dz, dyaw, gripper)`` with
``action_mode="ee5"`` (see :mod:`scenegen.sim.control` and ``docs/rl.md``).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rl.envs import randomization
from rl.envs.config import EnvConfig, make_config
from rl.envs.spaces import observation_space
from scenegen.errors import ConfigError
from scenegen.scene import Scene
from scenegen.sim.control import ArmController
from scenegen.sim.views import Renderer, View, nominal_view
from scenegen.sim.world import World
from scenegen.tasks.episode import TaskEpisode
from scenegen.tasks.tracker import TaskTracker
from scenegen.tasks.worlds import CachedWorld, SceneSource


class PickPlaceEnv(gym.Env):
    """Language-conditioned pick-and-place over the scenes of a pack.

    Args:
        pack: a pack folder, a :class:`~scenegen.pack.reader.Pack` or a
            :class:`~scenegen.tasks.worlds.SceneSet`.
        config: environment settings (see :class:`~rl.envs.config.EnvConfig`).
        render_mode: ``"rgb_array"`` to allow :meth:`render` (front camera, 256x256), or None.
        **overrides: :class:`EnvConfig` fields that replace those of ``config``.

    Raises:
        PackError: the pack cannot be read or holds no scene.
        ConfigError: a bad setting or an unknown scene id.

    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, pack: str | os.PathLike | SceneSource, config: EnvConfig | None = None,
                 render_mode: str | None = None, **overrides: Any) -> None:
        self.cfg = make_config(config, **overrides)
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"render_mode = {render_mode!r} must be None or 'rgb_array'")
        self.render_mode = render_mode
        self.episode = TaskEpisode(pack, self.cfg, randomize=self._randomize)
        self.source = self.episode.source
        self.scene_ids = self.episode.scene_ids
        self.cache = self.episode.cache
        self.observation_space = observation_space(self.cfg, self.episode.n_joints, self.episode.n_arms)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self.episode.action_dim,), np.float32)
        self.metadata = {**self.metadata, "render_fps": int(round(self.cfg.control_hz))}
        self._viewer: Renderer | None = None

    def _randomize(self, entry: CachedWorld, rng: np.random.Generator) -> tuple[View, dict]:
        if self.cfg.dr is not None:
            s = randomization.sample(entry, self.cfg.dr, rng)
            randomization.apply(entry, s)
            return s.view, s.to_dict()
        randomization.restore(entry)
        return nominal_view(entry.world), {}

    # ------------------------------------------------------------------ privileged access (expert, tests)
    @property
    def world(self) -> World:
        """The current episode's world."""
        return self.episode.world

    @property
    def scene(self) -> Scene:
        """The current episode's scene (robot name as built)."""
        return self.episode.scene

    @property
    def scene_id(self) -> str | None:
        """Id of the current episode's scene."""
        return self.episode.scene_id

    @property
    def controller(self) -> ArmController:
        """The current world's end-effector controller."""
        return self.episode.controller

    @property
    def task(self) -> TaskTracker:
        """The current episode's task tracker."""
        return self.episode.task

    @property
    def n_arms(self) -> int:
        """Arms of the robot (the action holds one arm action per arm)."""
        return self.episode.n_arms

    @property
    def elapsed_steps(self) -> int:
        """Steps taken in the current episode."""
        return self.episode.elapsed_steps

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode; ``options={"scene_id": id}`` picks the scene instead of drawing it."""
        super().reset(seed=seed)
        return self.episode.reset(options=options, rng=self.np_random)

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action (see :mod:`scenegen.sim.control`).

        Raises:
            ValueError: the action is NaN/inf, outside [-1, 1] or of the wrong shape.
            StateError: no episode was started with :meth:`reset`.

        """
        return self.episode.step(action)

    def advance(self, action: Any) -> tuple[float, bool, bool, dict]:
        """:meth:`step` without rendering the observation: ``(reward, terminated, truncated, info)``.

        For the inner actions of an open-loop chunk, whose observations nobody reads; :meth:`observe`
        renders the current one.
        """
        return self.episode.advance(action)

    def observe(self) -> dict:
        """The current observation, as :meth:`step` returns it."""
        return self.episode.observe()

    def render(self) -> np.ndarray | None:
        """The front camera at 256x256 (``render_mode="rgb_array"``), else None."""
        if self.render_mode != "rgb_array":
            return None
        world = self.episode.world
        if self._viewer is None or self._viewer.world is not world:
            self._viewer = Renderer(world, 256)
        self._viewer.view = self.episode.renderer.view
        return self._viewer.render("front")[0]

    def close(self) -> None:
        """Close every cached world."""
        self._viewer = None
        self.episode.close()

    def proprio(self) -> np.ndarray:
        """Joint positions, end-effector position and quaternion, gripper width (float32)."""
        return self.episode.proprio()
