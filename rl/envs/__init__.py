"""Gymnasium environments over scene packs; importing this registers ``scenegen/PickPlace-v0``."""

from __future__ import annotations

import gymnasium as gym

from rl.envs.config import DRConfig, EnvConfig
from rl.envs.pick_place import PickPlaceEnv
from rl.envs.vector import make_vec
from scenegen.tasks.worlds import SceneSet

ENV_ID = "scenegen/PickPlace-v0"

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="rl.envs.pick_place:PickPlaceEnv", disable_env_checker=True)

__all__ = ["ENV_ID", "DRConfig", "EnvConfig", "PickPlaceEnv", "SceneSet", "make_vec"]
