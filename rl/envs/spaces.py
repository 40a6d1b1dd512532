"""The gymnasium observation space of a task episode's observations."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from scenegen.sim.views import CHARSET, PROPRIO_DIM_EXTRA
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.privileged import PRIVILEGED_DIM


def observation_space(cfg: EpisodeConfig, n_joints: int, arms: int = 1) -> spaces.Dict:
    """The observation space for a config and a robot with ``n_joints`` arm + finger joints on ``arms`` arms."""
    s = cfg.image_size
    d: dict[str, spaces.Space] = {k: spaces.Box(0, 255, (s, s, 3), np.uint8) for k in cfg.image_keys}
    d["proprio"] = spaces.Box(-np.inf, np.inf, (n_joints + PROPRIO_DIM_EXTRA * arms,), np.float32)
    d["instruction"] = spaces.Text(cfg.instruction_max_length, min_length=0, charset=CHARSET)
    if cfg.pointcloud:
        d["points"] = spaces.Box(-np.inf, np.inf, (cfg.pointcloud_points, 3), np.float32)
    if cfg.privileged:
        d["privileged"] = spaces.Box(-np.inf, np.inf, (PRIVILEGED_DIM,), np.float32)
    return spaces.Dict(d)
