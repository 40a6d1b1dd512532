"""Vectorized environments: ``make_vec(pack, num_envs)`` over gymnasium's Async/SyncVectorEnv.

Each sub-environment opens the pack itself (by folder, so nothing heavy is pickled) and
builds its own worlds. ``vec.reset(seed=s)`` seeds sub-environment ``i`` with ``s + i``,
so seeded resets repeat exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rl.envs.config import EnvConfig, make_config
from scenegen.errors import ConfigError
from scenegen.tasks.worlds import SceneSource, as_source, source_path

MODES = ("async", "sync")


def _factory(pack: Any, config: EnvConfig, wrapper: Callable[[gym.Env], gym.Env] | None) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        from rl.envs.pick_place import PickPlaceEnv

        env = PickPlaceEnv(pack, config)
        return env if wrapper is None else wrapper(env)

    return make


def make_vec(pack: str | os.PathLike | SceneSource, num_envs: int, *, mode: str = "async",
             config: EnvConfig | None = None, context: str | None = None,
             wrapper: Callable[[gym.Env], gym.Env] | None = None, autoreset_mode: str = "NextStep",
             **overrides: Any) -> gym.vector.VectorEnv:
    """A vector of ``num_envs`` :class:`~rl.envs.pick_place.PickPlaceEnv` over one pack.

    Args:
        pack: a pack folder, a Pack, or (``mode="sync"`` only) any scene source.
        num_envs: sub-environments (1..256).
        mode: ``async`` (one process each, gymnasium's AsyncVectorEnv) or ``sync`` (in this process).
        config: environment settings shared by every sub-environment.
        context: multiprocessing start method for ``async`` (None: the platform default).
        wrapper: applied to each sub-environment (e.g. :class:`rl.rollout.ChunkEnv`); picklable for ``async``.
        autoreset_mode: gymnasium's ``NextStep`` (default) or ``SameStep`` (the final observation in ``info``).
        **overrides: :class:`~rl.envs.config.EnvConfig` fields.

    Raises:
        ConfigError: a bad ``num_envs`` or ``mode``, or an in-memory source with ``mode="async"``.

    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or not 1 <= num_envs <= 256:
        raise ConfigError(f"num_envs = {num_envs!r} must be an int in 1..256")
    if mode not in MODES:
        raise ConfigError(f"mode = {mode!r} must be one of {MODES}")
    cfg = make_config(config, **overrides)
    src = as_source(pack)
    path = source_path(src)
    if mode == "async":
        if path is None:
            raise ConfigError("mode='async' needs a pack folder (sub-processes reopen it); use mode='sync' "
                              "for an in-memory SceneSet")
        # observations travel through pipes: gymnasium 1.x reads Text spaces back wrong from shared memory
        return gym.vector.AsyncVectorEnv([_factory(path, cfg, wrapper) for _ in range(num_envs)], context=context,
                                         shared_memory=False, autoreset_mode=autoreset_mode)
    return gym.vector.SyncVectorEnv([_factory(src, cfg, wrapper) for _ in range(num_envs)],
                                    autoreset_mode=autoreset_mode)
