"""Rollouts of action chunks: chunks as macro-actions over a vector of environments, local or on Ray actors.

:class:`ChunkEnv` wraps one environment so that one step executes the first ``action_steps``
actions of a chunk (stopping early when the episode ends) and returns the chunk's discounted
reward and the number of env steps it took. :class:`ChunkVec` runs N of them through
gymnasium's vector env (:func:`rl.envs.vector.make_vec` for a pack) in *same-step* autoreset
mode: an episode that ends is reset at once, and its true final observation is kept in
:attr:`ChunkStep.final_obs` (a truncated episode's value bootstraps from it, never from the
reset observation). :class:`RayChunkVec` spreads the same over Ray actors (each holding a
synchronous vector of environments), so rollouts can use the CPUs of several machines.

Observation batches are dicts of numpy arrays (strings as object arrays, so they index like arrays).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from scenegen.errors import BackendError, BudgetError, ConfigError

BACKENDS = ("async", "sync", "ray")
"""``async``: one process per environment; ``sync``: in this process; ``ray``: Ray actors."""
SAME_STEP = "SameStep"
EnvFn = Callable[[], gym.Env]


# ---------------------------------------------------------------------- observation batches
def as_batch(obs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A vector env's observation dict with string tuples turned into object arrays."""
    out = {}
    for k, v in obs.items():
        if isinstance(v, np.ndarray):
            out[k] = v
        else:
            arr = np.empty(len(v), dtype=object)
            arr[:] = list(v)
            out[k] = arr
    return out


def stack_obs(items: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """One batch from single observations (e.g. the final observations of some episodes)."""
    return as_batch({k: (np.stack([o[k] for o in items]) if isinstance(items[0][k], np.ndarray)
                         else [o[k] for o in items]) for k in items[0]})


def concat_obs(batches: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Batches joined along the first axis."""
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def take_obs(batch: Mapping[str, np.ndarray], idx: np.ndarray | slice) -> dict[str, np.ndarray]:
    """The rows ``idx`` of a batch."""
    return {k: v[idx] for k, v in batch.items()}


# ---------------------------------------------------------------------- one environment, chunk steps
def _scalar_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """The info entries that batch cleanly (numbers, bools, the scene id); ``success``/``progress`` always."""
    out: dict[str, Any] = {"success": False, "progress": 0.0}
    for k, v in info.items():
        if isinstance(v, (bool, np.bool_)):
            out[k] = bool(v)
        elif isinstance(v, (int, float, np.integer, np.floating)):
            out[k] = float(v)
        elif k == "scene_id" and isinstance(v, str):
            out[k] = v
    return out


class ChunkEnv(gym.Wrapper):
    """One step = the first ``action_steps`` actions of a ``(horizon, A)`` chunk, a macro-action.

    The step's reward is ``sum_j gamma^j r_j`` over the env steps taken; its info adds
    ``chunk_steps`` (env steps taken) and ``chunk_return`` (their undiscounted reward). Actions
    are clipped to the env's action box (the policy's log-probability is of the unclipped chunk).
    With ``progress_reward`` w, each env step's reward adds ``w * (progress - previous progress)``
    (``chunk_return`` stays the env's own reward). An env with ``advance(action)`` (a step without its
    observation) and ``observe()``, as :class:`~rl.envs.pick_place.PickPlaceEnv` has, wrapped directly,
    renders only the chunk's last observation, the one the policy reads.

    Raises:
        ConfigError: ``action_steps`` outside ``1..horizon`` or ``gamma`` outside (0, 1].

    """

    def __init__(self, env: gym.Env, horizon: int, action_steps: int, gamma: float,
                 progress_reward: float = 0.0) -> None:
        super().__init__(env)
        if not 1 <= action_steps <= horizon:
            raise ConfigError(f"action_steps = {action_steps} must be in 1..horizon ({horizon})")
        if not 0 < gamma <= 1:
            raise ConfigError(f"gamma = {gamma} must be in (0, 1]")
        box = env.action_space
        self.low, self.high = box.low.astype(np.float32), box.high.astype(np.float32)
        self.horizon, self.action_steps, self.gamma = horizon, action_steps, gamma
        self.progress_reward, self._progress = progress_reward, 0.0
        self.action_space = gym.spaces.Box(np.tile(self.low, (horizon, 1)), np.tile(self.high, (horizon, 1)),
                                           dtype=np.float32)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        """Reset the wrapped env; info as :meth:`step` gives it (no chunk yet)."""
        obs, info = self.env.reset(**kwargs)
        info = _scalar_info(info)
        self._progress = info["progress"]
        return obs, {**info, "chunk_steps": 0, "chunk_return": 0.0}

    def step(self, chunk: Any) -> tuple[Any, float, bool, bool, dict]:
        """Execute a chunk's first ``action_steps`` actions, stopping at the end of the episode."""
        a = np.asarray(chunk, dtype=np.float32).reshape(self.horizon, -1)
        total = raw = 0.0
        n, term, trunc, info, obs = 0, False, False, {}, None
        blind = getattr(self.env, "advance", None) if self.env is self.env.unwrapped else None  # no wrapper between
        for j in range(self.action_steps):
            if blind is not None:
                r, term, trunc, info = blind(np.clip(a[j], self.low, self.high))
            else:
                obs, r, term, trunc, info = self.env.step(np.clip(a[j], self.low, self.high))
            progress = float(info.get("progress", 0.0))
            bonus = self.progress_reward * (progress - self._progress)
            self._progress = progress
            total += self.gamma ** j * (float(r) + bonus)
            raw += float(r)
            n += 1
            if term or trunc:
                break
        if blind is not None:
            obs = self.env.observe()
        return obs, total, bool(term), bool(trunc), {**_scalar_info(info), "chunk_steps": n, "chunk_return": raw}


# ---------------------------------------------------------------------- vectors of chunk envs
@dataclass
class ChunkStep:
    """What one chunk step of N environments returns (index i = environment i)."""

    obs: dict[str, np.ndarray]
    """Observations to act on next (a new episode's first one where ``done``)."""
    reward: np.ndarray
    """Discounted reward of each chunk."""
    raw_reward: np.ndarray
    """Undiscounted reward of each chunk."""
    steps: np.ndarray
    """Env steps each chunk took (int)."""
    terminated: np.ndarray
    """The episode reached a terminal state (no bootstrap)."""
    truncated: np.ndarray
    """The episode hit its time limit (bootstrap from ``final_obs``)."""
    final_obs: list
    """The true last observation of each ended episode, else None."""
    info: dict[str, np.ndarray]
    """Per-environment info of the step (an ended episode's final info): success, progress, flags."""

    @property
    def done(self) -> np.ndarray:
        """Episodes that ended at this step."""
        return self.terminated | self.truncated

    @staticmethod
    def concat(parts: Sequence[ChunkStep]) -> ChunkStep:
        """One step result from the results of consecutive groups of environments."""
        keys = set.intersection(*(set(p.info) for p in parts))
        return ChunkStep(concat_obs([p.obs for p in parts]),
                         *(np.concatenate([getattr(p, f) for p in parts])
                           for f in ("reward", "raw_reward", "steps", "terminated", "truncated")),
                         [o for p in parts for o in p.final_obs],
                         {k: np.concatenate([p.info[k] for p in parts]) for k in sorted(keys)})


def _merge_info(infos: Mapping[str, Any], done: np.ndarray) -> dict[str, np.ndarray]:
    final = infos.get("final_info", {})
    out = {}
    for k, v in infos.items():
        if k.startswith("_") or k in ("final_obs", "final_info"):
            continue
        arr = np.array(v)
        if k in final:
            arr = np.where(done, np.array(final[k]), arr)
        out[k] = arr
    return out


class ChunkVec:
    """N chunk environments through a gymnasium vector env in same-step autoreset mode."""

    def __init__(self, vec: gym.vector.VectorEnv) -> None:
        mode = vec.metadata.get("autoreset_mode")
        if str(getattr(mode, "value", mode)) != SAME_STEP:
            raise ConfigError(f"ChunkVec needs a vector env with autoreset_mode={SAME_STEP!r}, got {mode!r}")
        self.vec, self.num_envs = vec, vec.num_envs

    def reset(self, seed: int | Sequence[int] | None = None) -> dict[str, np.ndarray]:
        """Reset every environment (environment i with ``seed + i``, or with ``seed[i]`` for a list)."""
        obs, _ = self.vec.reset(seed=list(seed) if isinstance(seed, Sequence) else seed)
        return as_batch(obs)

    def step(self, chunks: np.ndarray) -> ChunkStep:
        """One chunk ``(H, A)`` per environment, ``chunks`` ``(N, H, A)``."""
        obs, rew, term, trunc, infos = self.vec.step(np.asarray(chunks, dtype=np.float32))
        done = np.asarray(term) | np.asarray(trunc)
        finals = infos.get("final_obs", np.full(self.num_envs, None, dtype=object))
        info = _merge_info(infos, done)
        return ChunkStep(as_batch(obs), np.asarray(rew, dtype=np.float64), info.pop("chunk_return").astype(float),
                         info.pop("chunk_steps").astype(np.int64), np.asarray(term, bool), np.asarray(trunc, bool),
                         [finals[i] if done[i] else None for i in range(self.num_envs)], info)

    def close(self) -> None:
        """Close the environments."""
        self.vec.close()


def chunk_vec(envs: str | os.PathLike | Sequence[EnvFn], num_envs: int, *, horizon: int, action_steps: int,
              gamma: float, progress_reward: float = 0.0, mode: str = "async", env_config: Any = None) -> ChunkVec:
    """A :class:`ChunkVec` over a pack folder (through :func:`~rl.envs.vector.make_vec`) or env factories.

    Args:
        envs: a pack folder, or one zero-argument env factory per environment.
        num_envs: environments (must equal the number of factories when factories are given).
        horizon: the policy's chunk length H.
        action_steps: actions of a chunk executed per decision.
        gamma: the per-env-step discount of the chunk reward.
        progress_reward: weight of the dense progress bonus (see :class:`ChunkEnv`).
        mode: ``async`` or ``sync``.
        env_config: an :class:`~rl.envs.config.EnvConfig` (pack only).

    """
    def wrap(env: gym.Env) -> gym.Env:
        return ChunkEnv(env, horizon, action_steps, gamma, progress_reward)

    if isinstance(envs, (str, os.PathLike)):
        from rl.envs.vector import make_vec

        return ChunkVec(make_vec(envs, num_envs, mode=mode, config=env_config, wrapper=wrap,
                                 autoreset_mode=SAME_STEP))
    fns = list(envs)
    if len(fns) != num_envs:
        raise ConfigError(f"{len(fns)} env factories for num_envs = {num_envs}")
    factories = [_Wrapped(fn, wrap) for fn in fns]
    cls = gym.vector.AsyncVectorEnv if mode == "async" else gym.vector.SyncVectorEnv
    return ChunkVec(cls(factories, autoreset_mode=SAME_STEP))


class _Wrapped:
    """A picklable ``wrap(fn())``."""

    def __init__(self, fn: EnvFn, wrap: Callable[[gym.Env], gym.Env]) -> None:
        self.fn, self.wrap = fn, wrap

    def __call__(self) -> gym.Env:
        return self.wrap(self.fn())


# ---------------------------------------------------------------------- Ray actors
class _Worker:
    """A Ray actor's body: a synchronous :class:`ChunkVec` of some environments."""

    def __init__(self, envs: Any, n: int, kwargs: dict) -> None:
        self.vec = chunk_vec(envs, n, mode="sync", **kwargs)

    def reset(self, seed: int | list[int] | None) -> dict:
        return self.vec.reset(seed)

    def step(self, chunks: np.ndarray) -> ChunkStep:
        return self.vec.step(chunks)

    def close(self) -> None:
        self.vec.close()


class RayChunkVec:
    """Chunk environments on Ray actors (``actors`` of them, environments split evenly), same API as :class:`ChunkVec`.

    Raises:
        BackendError: Ray is not installed.
        BudgetError: a step took longer than ``step_timeout_s``.

    """

    def __init__(self, envs: str | os.PathLike | Sequence[EnvFn], num_envs: int, *, actors: int | None = None,
                 address: str | None = None, step_timeout_s: float = 600.0, **kwargs: Any) -> None:
        try:
            import ray
        except ImportError:
            raise BackendError("--backend ray needs Ray: pip install 'scenegen[ray]'") from None
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        self.ray, self.num_envs, self.timeout = ray, num_envs, step_timeout_s
        n_act = max(1, min(actors or num_envs, num_envs))
        sizes = [num_envs // n_act + (i < num_envs % n_act) for i in range(n_act)]
        self.offsets = np.cumsum([0, *sizes[:-1]]).tolist()
        self.slices = [slice(o, o + s) for o, s in zip(self.offsets, sizes, strict=True)]
        remote = ray.remote(num_cpus=1)(_Worker)
        fns = None if isinstance(envs, (str, os.PathLike)) else list(envs)
        self.actors = [remote.remote(str(envs) if fns is None else fns[sl], s, kwargs)
                       for sl, s in zip(self.slices, sizes, strict=True)]

    def _get(self, refs: list) -> list:
        try:
            return self.ray.get(refs, timeout=self.timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise BudgetError(f"a Ray rollout step took longer than {self.timeout:.0f} s") from None

    def reset(self, seed: int | Sequence[int] | None = None) -> dict[str, np.ndarray]:
        """Reset every environment (environment i with ``seed + i``, or with ``seed[i]`` for a list)."""
        seeds = [list(seed[sl]) if isinstance(seed, Sequence) else None if seed is None else seed + o
                 for o, sl in zip(self.offsets, self.slices, strict=True)]
        return concat_obs(self._get([a.reset.remote(s) for a, s in zip(self.actors, seeds, strict=True)]))

    def step(self, chunks: np.ndarray) -> ChunkStep:
        """One chunk per environment, ``chunks`` ``(N, H, A)``."""
        refs = [a.step.remote(chunks[sl]) for a, sl in zip(self.actors, self.slices, strict=True)]
        return ChunkStep.concat(self._get(refs))

    def close(self) -> None:
        """Close the environments and end the actors (and Ray, when this object started it)."""
        try:
            self._get([a.close.remote() for a in self.actors])
        finally:
            for a in self.actors:
                self.ray.kill(a)
            if self._owns_ray:
                self.ray.shutdown()


def make_rollout_vec(envs: str | os.PathLike | Sequence[EnvFn], num_envs: int, backend: str = "async", *,
                     ray_address: str | None = None, **kwargs: Any) -> ChunkVec | RayChunkVec:
    """:func:`chunk_vec` (``async`` / ``sync``) or :class:`RayChunkVec` (``ray``).

    Raises:
        ConfigError: an unknown backend.

    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend = {backend!r} must be one of {BACKENDS}")
    if backend == "ray":
        return RayChunkVec(envs, num_envs, address=ray_address, **kwargs)
    return chunk_vec(envs, num_envs, mode=backend, **kwargs)
