"""Run any policy over a frozen eval set and score it: success, progress, episode length, time to success.

A *policy* is a callable ``obs -> action`` (a float array of the env's action size, in [-1, 1]); it may have
``reset(seed)`` (called before each episode with the rollout seed) and a ``done`` attribute (True
when it gives up: the episode ends there as a failure). :func:`make_policy` builds the ones
every checkout has (``expert``, ``noisy-expert:SIGMA``, ``random``), loads a FlowVLA checkpoint
folder (:class:`CheckpointPolicy`) or imports a factory: ``module:attribute`` is called with the
env, ``module:attribute=ARG`` with the env and ``ARG``.

:func:`run_evalset` opens the set's packs with the set's frozen episode settings and DR, resets
each configuration with its frozen seed, refuses to go on when the reset differs from the frozen
record (:func:`rl.evalset.check_reset`), and rolls the policy out :attr:`EvalSet.repeats` times.
One episode is :func:`rollout_episode`, the boundary a vectorised runner can replace.
:func:`score` turns episode records into rates with 95% intervals (Wilson for success over
episodes, and a bootstrap over configurations when repeats > 1; bootstrap for means), overall,
per tier and per target category.
"""

from __future__ import annotations

import importlib
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rl.evalset import EvalSet, check_reset, env_config, load_evalset, record_reset
from rl.stats import bootstrap_ci, wilson_interval
from scenegen.errors import ConfigError
from scenegen.tasks.tracker import FAILURES

RESULT_SCHEMA = "scenegen.evalrun/1"
"""Schema tag of a run's ``result.json``."""
MODE_ORDER = ("knocked_off", "wrong_object", "dropped", "grasp_failed", "timeout")
"""A failed episode's primary failure mode is its first raised flag in this order."""


# ---------------------------------------------------------------------------------------------- policies
class ExpertPolicy:
    """The privileged scripted expert as a policy callable, optionally with Gaussian action noise."""

    def __init__(self, env: Any, noise: float = 0.0) -> None:
        from scenegen.tasks.expert import make_expert

        self.expert = make_expert(env)
        self.noise = float(noise)
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        """Start an episode (the seed drives the noise)."""
        self.expert.reset()
        self.rng = np.random.default_rng(seed)

    @property
    def done(self) -> bool:
        """The expert gave up on a goal."""
        return self.expert.phase == "failed"

    def __call__(self, obs: Any) -> np.ndarray:
        a = self.expert.act(obs)
        if self.noise > 0:
            a = np.clip(a + self.rng.normal(0.0, self.noise, a.shape), -1.0, 1.0).astype(np.float32)
        return a


class RandomPolicy:
    """Uniform random actions (a floor every learned policy should beat)."""

    def __init__(self, env: Any) -> None:
        self.dim = int(env.action_space.shape[0])
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        """Reseed."""
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: Any) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, self.dim).astype(np.float32)


class CheckpointPolicy:
    """A FlowVLA checkpoint or training run (issue 14) as a policy callable on one env.

    Chunks are predicted and queued by :class:`rl.evaluate.PolicyActor`; ``reset(seed)`` clears the
    queue and reseeds the sampling noise, so repeats of a configuration draw different flows.

    Raises:
        ConfigError: nothing loadable at ``path``, or an env whose actions, state or cameras do not fit.

    """

    def __init__(self, env: Any, path: str | os.PathLike, device: str = "cpu") -> None:
        from rl.evaluate import check_compatible
        from rl.policies.modeling_flow_vla import load_policy

        self.policy = load_policy(path, device)
        self.policy.eval()
        check_compatible(self.policy, env)
        self.reset(0)

    def reset(self, seed: int) -> None:
        """Start an episode: empty action queue, sampling noise seeded with ``seed``."""
        from rl.evaluate import PolicyActor

        self.actor = PolicyActor(self.policy, 1, seed=seed)

    def __call__(self, obs: Any) -> np.ndarray:
        import torch

        with torch.no_grad():
            return np.asarray(self.actor([obs], [0])[0], dtype=np.float32)


def make_policy(spec: str | Callable, env: Any) -> Callable:
    """A policy for ``env``: ``expert``, ``noisy-expert:SIGMA``, ``random``, a checkpoint folder, ``module:attr[=ARG]``.

    A callable ``spec`` is a factory called with the env.

    Raises:
        ConfigError: an unknown spec, a bad noise level or a factory that cannot be imported.

    """
    if callable(spec):
        return spec(env)
    if spec == "expert":
        return ExpertPolicy(env)
    if spec == "random":
        return RandomPolicy(env)
    if Path(spec).is_dir():
        return CheckpointPolicy(env, spec)
    if spec.startswith("noisy-expert:"):
        try:
            sigma = float(spec.split(":", 1)[1])
        except ValueError:
            sigma = -1.0
        if not 0.0 <= sigma <= 2.0:
            raise ConfigError(f"policy {spec!r}: the noise level must be a number in 0..2, e.g. noisy-expert:0.3")
        return ExpertPolicy(env, sigma)
    if ":" in spec:
        target, _, arg = spec.partition("=")
        module, attr = target.split(":", 1)
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"policy {spec!r} cannot be imported ({exc})") from None
        return factory(env, arg) if arg else factory(env)
    raise ConfigError(f"unknown policy {spec!r}; use expert, noisy-expert:SIGMA, random, module:factory or "
                      "module:factory=ARG (e.g. a checkpoint path)")


# ---------------------------------------------------------------------------------------------- rollouts
def primary_mode(success: bool, flags: dict, gave_up: bool = False) -> str | None:
    """A failed episode's main failure mode (None on success)."""
    if success:
        return None
    for k in MODE_ORDER:
        if flags.get(k):
            return k
    return "gave_up" if gave_up else "unfinished"


def rollout_episode(env: Any, policy: Callable, conf: dict, seed: int, repeat: int,
                    frames: list | None = None) -> dict:
    """Roll ``policy`` out on one configuration of a set; refuse a reset that differs from the frozen one.

    Args:
        env: a :class:`~rl.envs.pick_place.PickPlaceEnv` over the configuration's pack, with the set's config.
        policy: ``obs -> action`` (see the module docstring).
        conf: the configuration.
        seed: the rollout seed (passed to ``policy.reset``).
        repeat: repeat index (recorded).
        frames: a list to append rendered front-camera frames to (``render_mode="rgb_array"``), or None.

    Returns:
        The episode record: ``config``, ``tier``, ``repeat``, ``seed``, ``success``, ``progress``, ``steps``,
        ``success_step``, ``time_to_success_s``, ``flags``, ``failure``, ``factors``.

    """
    obs, info = env.reset(seed=int(conf["seed"]), options={"scene_id": conf["scene_id"]})
    check_reset(conf, record_reset(env, info))
    if hasattr(policy, "reset"):
        policy.reset(seed)
    steps, terminated, truncated, success_step, gave_up = 0, False, False, None, False
    while not (terminated or truncated):
        if frames is not None and steps % 2 == 0:
            frames.append(env.render())
        obs, _, terminated, truncated, info = env.step(policy(obs))
        steps += 1
        if info.get("success") and success_step is None:
            success_step = steps
        if not (terminated or truncated) and getattr(policy, "done", False):
            gave_up = True
            break
    success = bool(info.get("success", False))
    flags = {k: bool(info.get(k, False)) for k in FAILURES}
    return {"config": conf["id"], "tier": int(conf["tier"]), "repeat": repeat, "seed": seed,
            "scene_id": conf["scene_id"], "success": success, "progress": float(info.get("progress", 0.0)),
            "steps": steps, "success_step": success_step,
            "time_to_success_s": None if success_step is None else round(success_step / env.cfg.control_hz, 4),
            "flags": flags, "failure": primary_mode(success, flags, gave_up), "factors": dict(conf["factors"])}


def run_evalset(evalset: EvalSet | str | os.PathLike, policy: str | Callable, *, label: str | None = None,
                image_keys: Sequence[str] = ("front",), image_size: int = 128, videos: int = 0,
                progress: bool = True, **observation: Any) -> tuple[dict, list]:
    """Evaluate a policy on every configuration (x repeats) of a frozen set.

    Args:
        evalset: an opened set or its folder (a tampered set is refused).
        policy: a spec for :func:`make_policy` or a factory ``env -> policy``.
        label: the run's name (default: the spec).
        image_keys: cameras the policy observes.
        image_size: their side in pixels.
        videos: record this many episodes' front-camera frames (the first ones).
        progress: a progress bar.
        **observation: further observation fields of the env (``pointcloud``...).

    Returns:
        The result (``schema``, ``set``, ``policy``, ``episodes``, ``scores``) and the recorded videos
        (``[(config id, repeat, frames)]``).

    """
    from tqdm import tqdm

    from rl.envs import PickPlaceEnv

    es = evalset if isinstance(evalset, EvalSet) else load_evalset(evalset)
    cfg = env_config(es, image_keys=tuple(image_keys), image_size=image_size, **observation)
    by_pack: dict[str, list] = defaultdict(list)
    for conf, r, seed in es.episodes():
        by_pack[conf["pack"]].append((conf, r, seed))
    episodes, clips = [], []
    bar = tqdm(total=len(es.configurations) * es.repeats, desc="eval", unit="ep", disable=not progress)
    try:
        for pack, items in by_pack.items():
            env = PickPlaceEnv(es.pack_dir(pack), cfg, render_mode="rgb_array" if videos else None)
            try:
                pol = make_policy(policy, env)
                for conf, r, seed in items:
                    frames = [] if len(clips) < videos else None
                    episodes.append(rollout_episode(env, pol, conf, seed, r, frames))
                    if frames is not None:
                        clips.append((conf["id"], r, frames))
                    bar.update(1)
                    bar.set_postfix(success=f"{np.mean([e['success'] for e in episodes]):.2f}")
            finally:
                env.close()
    finally:
        bar.close()
    order = {c["id"]: i for i, c in enumerate(es.configurations)}
    episodes.sort(key=lambda e: (order[e["config"]], e["repeat"]))
    result = {"schema": RESULT_SCHEMA, "policy": label or (policy if isinstance(policy, str) else repr(policy)),
              "set": {"path": str(es.root), "name": es.doc["name"], "version": es.version,
                      "content_hash": es.content_hash, "repeats": es.repeats,
                      "episode_steps": es.episode["max_episode_steps"]},
              "observation": {"image_keys": list(image_keys), "image_size": image_size, **observation},
              "episodes": episodes, "scores": score(episodes)}
    return result, clips


# ---------------------------------------------------------------------------------------------- scores
def _mean_ci(values: Sequence[float], seed: int = 0) -> dict:
    if not values:
        return {"mean": None, "ci95": None, "n": 0}
    lo, hi = bootstrap_ci(values, seed=seed)
    return {"mean": float(np.mean(values)), "ci95": [lo, hi], "n": len(values)}


def score_group(episodes: Sequence[dict]) -> dict:
    """Scores of a group of episodes: success (Wilson; by configuration too), progress, length, time to success."""
    n = len(episodes)
    s = sum(bool(e["success"]) for e in episodes)
    per_conf: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        per_conf[e["config"]].append(float(e["success"]))
    conf_means = [float(np.mean(v)) for v in per_conf.values()]
    out = {"episodes": n, "configurations": len(per_conf), "successes": s, "success_rate": s / n,
           "success_ci95": list(wilson_interval(s, n)),
           "success_ci95_by_configuration": list(bootstrap_ci(conf_means)) if n > len(conf_means) > 1 else None,
           "progress": _mean_ci([float(e["progress"]) for e in episodes]),
           "episode_length": _mean_ci([float(e["steps"]) for e in episodes]),
           "time_to_success_s": _mean_ci([float(e["time_to_success_s"]) for e in episodes if e["success"]]),
           "failures": dict(Counter(e["failure"] for e in episodes if not e["success"]).most_common())}
    return out


def score(episodes: Sequence[dict]) -> dict:
    """Overall, per-tier and per-target-category scores of a run's episodes.

    Raises:
        ConfigError: no episodes.

    """
    if not episodes:
        raise ConfigError("no episodes to score")
    tiers: dict[int, list] = defaultdict(list)
    cats: dict[str, list] = defaultdict(list)
    for e in episodes:
        tiers[int(e["tier"])].append(e)
        cats[str(e["factors"].get("target_category", "none"))].append(e)
    return {"overall": score_group(episodes),
            "per_tier": {str(t): score_group(tiers[t]) for t in sorted(tiers)},
            "per_category": {c: score_group(cats[c]) for c in sorted(cats)}}


def load_result(path: str | os.PathLike) -> dict:
    """A run's ``result.json`` (a folder or the file).

    Raises:
        ConfigError: missing or not a run result.

    """
    from rl.evalset import read_json

    p = Path(path)
    f = p / "result.json" if p.is_dir() else p
    data = read_json(f, "eval result", "run scenegen evalset run first")
    if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA or "episodes" not in data:
        raise ConfigError(f"{f} is not an eval result (schema {RESULT_SCHEMA!r})")
    return data
