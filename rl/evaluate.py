"""Policy evaluation: rollouts through the vector env, success and progress with 95% intervals, videos.

:func:`rollout_episodes` is the reusable core: an *actor* (anything with ``__call__(obs_list,
envs) -> actions`` and, optionally, ``reset(env)``), a vector env made with
:func:`make_eval_vec` and a list of reset configurations (``{"seed", "scene_id"}``)
give one record per episode. Each sub-env runs the next configuration as soon as its episode
ends (:class:`PendingReset` points the vector env's autoreset at it, while the others act).
:class:`PolicyActor` drives a chunking policy (one action queue per sub-env);
:func:`evaluate` puts it together for a checkpoint and a pack (``scenegen eval``).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from scenegen.errors import ConfigError

FLAG_KEYS = ("knocked_off", "dropped", "wrong_object", "grasp_failed", "timeout")
"""The env's failure flags (``info``), counted in a report's ``failures``."""


def _take(batched: Any, i: int) -> Any:
    if isinstance(batched, dict):
        return {k: _take(v, i) for k, v in batched.items()}
    return batched[i]


def _info_of(info: dict, i: int) -> dict:
    out = {}
    for k, v in info.items():
        if k.startswith("_"):
            continue
        mask = info.get("_" + k)
        if mask is None or bool(np.asarray(mask)[i]):
            out[k] = _take(v, i)
    return out


def stack_obs(obs_list: Sequence[dict]) -> dict:
    """Per-env observations stacked as a vector env gives them (instructions as a list of strings)."""
    out: dict[str, Any] = {}
    for k in obs_list[0]:
        vals = [o[k] for o in obs_list]
        out[k] = [str(v) for v in vals] if isinstance(vals[0], str) else np.stack([np.asarray(v) for v in vals])
    return out


def _frame(obs: dict, cameras: Sequence[str]) -> np.ndarray | None:
    imgs = [np.asarray(obs[c]) for c in cameras if c in obs]
    return np.concatenate(imgs, axis=1) if imgs else None


class PendingReset(gym.Wrapper):
    """Lets a vector env start a chosen episode in one sub-env while the others go on.

    ``vec.set_attr("pending", [...])`` gives each sub-env a ``{"seed", "scene_id"}`` (or None);
    the sub-env's next ``reset`` (the vector env's own autoreset, one step after its episode ended)
    uses it instead of drawing a scene. gymnasium's masked ``reset`` cannot give per-env options.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.pending: dict | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if self.pending is None:
            return self.env.reset(seed=seed, options=options)
        cfg, self.pending = self.pending, None
        return self.env.reset(seed=cfg.get("seed"), options={"scene_id": cfg.get("scene_id")})


def rollout_episodes(actor: Callable[[list[dict], list[int]], np.ndarray], vec: Any, resets: Sequence[dict], *,
                     video_episodes: int = 0, video_cameras: Sequence[str] = ("front", "wrist"),
                     progress: bool = False, deadline_s: float | None = None) -> list[dict]:
    """Run one episode per reset configuration on a vector env; one record each, in the order given.

    Args:
        actor: ``actor(obs_list, envs)`` gives the actions ``(len(envs), A)`` of the listed sub-envs;
            ``actor.reset(env)`` (if present) is called when a sub-env starts an episode.
        vec: a vector env of :class:`PendingReset`-wrapped envs with gymnasium's default
            (next-step) autoreset: :func:`make_eval_vec`.
        resets: ``{"seed": int, "scene_id": str | None}`` per episode.
        video_episodes: keep the camera frames of the first this many episodes (``record["frames"]``).
        video_cameras: cameras put side by side in those frames.
        progress: show a progress bar.
        deadline_s: stop starting new episodes after this many seconds (unfinished ones are dropped).

    Returns:
        Records with ``episode``, ``scene_id``, ``seed``, ``success``, ``progress``, ``return``,
        ``steps``, ``flags`` (the env's failure flags at the end) and ``failure`` (the first flag
        set, or None).

    """
    from tqdm import tqdm

    n_env = int(vec.num_envs)
    a_dim = int(np.prod(vec.single_action_space.shape))
    todo = deque(enumerate(resets))
    obs: list[dict | None] = [None] * n_env
    running: dict[int, dict] = {}
    starting: dict[int, tuple[int, dict]] = {}
    done: list[dict] = []
    t0 = time.monotonic()
    bar = tqdm(total=len(resets), desc="eval", unit="ep", disable=not progress)

    def assign(i: int) -> None:
        if todo and (deadline_s is None or time.monotonic() - t0 <= deadline_s):
            starting[i] = todo.popleft()

    def begin(o: Any, info: dict) -> None:
        for i, (k, cfg) in starting.items():
            obs[i] = _take(o, i)
            if hasattr(actor, "reset"):
                actor.reset(i)
            running[i] = {"episode": k, "scene_id": _info_of(info, i).get("scene_id", cfg.get("scene_id")),
                          "seed": cfg.get("seed"), "return": 0.0, "steps": 0}
            if k < video_episodes:
                running[i]["frames"] = [_frame(obs[i], video_cameras)]
        starting.clear()

    try:
        for i in range(n_env):
            assign(i)
        vec.set_attr("pending", [starting[i][1] if i in starting else None for i in range(n_env)])
        begin(*vec.reset(seed=list(range(n_env))))
        while running or starting:
            if starting:
                vec.set_attr("pending", [starting[i][1] if i in starting else None for i in range(n_env)])
            acting = sorted(running)
            actions = np.zeros((n_env, a_dim), dtype=np.float32)
            if acting:
                act = actor([obs[i] for i in acting], acting)
                actions[acting] = np.asarray(act, dtype=np.float32).reshape(len(acting), a_dim)
            o, reward, term, trunc, info = vec.step(actions)
            begin(o, info)  # the sub-envs that ended last step have reset into their next episode
            for i in acting:
                rec = running[i]
                obs[i] = _take(o, i)
                rec["return"] += float(reward[i])
                rec["steps"] += 1
                if "frames" in rec:
                    rec["frames"].append(_frame(obs[i], video_cameras))
                if term[i] or trunc[i]:
                    inf = _info_of(info, i)
                    flags = {k: bool(inf.get(k, False)) for k in FLAG_KEYS}
                    ok = bool(inf.get("success", False))
                    rec.update(success=ok, progress=float(inf.get("progress", 0.0)), flags=flags,
                               failure=None if ok else next((k for k, v in flags.items() if v), None))
                    done.append(running.pop(i))
                    bar.update(1)
                    assign(i)
    finally:
        bar.close()
    return sorted(done, key=lambda r: r["episode"])


def make_eval_vec(pack: str | os.PathLike, workers: int, config: Any) -> Any:
    """The vector env :func:`rollout_episodes` needs: ``workers`` sub-envs (processes when > 1)."""
    from rl.envs import make_vec

    return make_vec(str(pack), workers, mode="async" if workers > 1 else "sync", config=config,
                    wrapper=PendingReset)


class PolicyActor:
    """Drives a chunking policy on a vector env: one action queue per sub-env, chunks predicted in batches.

    Args:
        policy: a policy with ``predict_action_chunk(batch, generator=)``, ``config.cameras`` and ``n_action_steps``.
        num_envs: sub-envs.
        seed: seeds the policy's sampling noise.
        num_steps: K for inference (None: the policy's).
        deterministic: integrate from zero noise (the noise distribution's mean) instead of sampling it.

    """

    def __init__(self, policy: Any, num_envs: int, seed: int = 0, num_steps: int | None = None,
                 deterministic: bool = False) -> None:
        import torch

        self.policy = policy
        self.queues: list[deque] = [deque() for _ in range(num_envs)]
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self.num_steps = num_steps
        self.deterministic = deterministic
        self.cameras = tuple(policy.config.cameras or ())

    def reset(self, i: int) -> None:
        """Forget sub-env ``i``'s queued actions."""
        self.queues[i].clear()

    def __call__(self, obs_list: list[dict], envs: list[int]) -> np.ndarray:
        from rl.policies.base import env_to_batch

        need = [j for j, i in enumerate(envs) if not self.queues[i]]
        if need:
            batch = env_to_batch(stack_obs([obs_list[j] for j in need]), self.cameras, self.policy.device)
            noise = None
            if self.deterministic:
                noise = self.policy.sample_noise(len(need), self.generator).zero_()
            chunk = self.policy.predict_action_chunk(batch, generator=self.generator, noise=noise,
                                                     num_steps=self.num_steps)
            chunk = chunk.float().cpu().numpy()
            for row, j in enumerate(need):
                self.queues[envs[j]].extend(chunk[row, : self.policy.n_action_steps])
        return np.stack([self.queues[i].popleft() for i in envs])


def summarize(records: list[dict]) -> dict:
    """Success rate and mean progress with 95% intervals (Wilson; bootstrap), failure-flag counts."""
    from rl.stats import bootstrap_ci, wilson_interval

    n = len(records)
    if n == 0:
        raise ConfigError("no episode finished; raise the time limit or check the env")
    wins = sum(r["success"] for r in records)
    prog = [r["progress"] for r in records]
    return {"episodes": n, "successes": wins, "success_rate": wins / n,
            "success_ci95": list(wilson_interval(wins, n)), "progress": float(np.mean(prog)),
            "progress_ci95": list(bootstrap_ci(prog)), "return": float(np.mean([r["return"] for r in records])),
            "steps": float(np.mean([r["steps"] for r in records])),
            "failures": {k: sum(r["flags"][k] for r in records) for k in FLAG_KEYS}}


def env_config_from(provenance: dict, **overrides: Any) -> Any:
    """The :class:`~rl.envs.config.EnvConfig` a policy was trained in (from its checkpoint), with overrides."""
    from rl.envs.config import EnvConfig, make_config

    saved = dict(provenance.get("env_config") or {})
    names = {f.name for f in fields(EnvConfig)} - {"world", "dr", "scene_ids"}
    kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in saved.items() if k in names}
    return make_config(EnvConfig(**kw), **overrides)


def check_compatible(policy: Any, env: Any) -> None:
    """Refuse an env whose action or state size, cameras or robot differ from the policy's.

    Raises:
        ConfigError: one line naming the mismatch.

    """
    cfg = policy.config
    a = int(np.prod(env.single_action_space.shape if hasattr(env, "single_action_space") else env.action_space.shape))
    if a != cfg.action_dim:
        raise ConfigError(f"the checkpoint is for a {cfg.action_dim}-D action space, the env's actions are {a}-D; "
                          "evaluate it with the action mode it was trained with")
    space = env.single_observation_space if hasattr(env, "single_observation_space") else env.observation_space
    d = int(space["proprio"].shape[0])
    if d != cfg.state_dim:
        raise ConfigError(f"the checkpoint expects a {cfg.state_dim}-D state, the env's robot gives {d}-D "
                          "(a dataset or pack of another robot?)")
    missing = [c for c in cfg.cameras or () if c not in space.spaces]
    if missing:
        raise ConfigError(f"the checkpoint needs cameras {missing}, the env renders {list(space.spaces)}")


def evaluate(checkpoint: str | os.PathLike | Any, pack: str | os.PathLike, n: int = 100, *, workers: int = 1,
             video_dir: str | os.PathLike | None = None, videos: int = 4, seed: int = 1_000_000,
             device: str = "cpu", num_steps: int | None = None, scene_ids: Sequence[str] | None = None,
             deterministic: bool = False, policy_seed: int | None = None, progress: bool = False,
             **env_overrides: Any) -> dict:
    """Evaluate a policy (checkpoint folder, run folder or FlowVLA) on ``n`` episodes of a pack's scenes.

    Episode ``j`` runs scene ``j mod (number of scenes)`` (in the pack's order, or ``scene_ids``') with
    reset seed ``seed + j``. The env is the one the policy was trained in (from its checkpoint).
    ``deterministic`` integrates every chunk from zero noise (no sampling); the sampling noise is
    seeded by ``policy_seed`` (default ``seed``).

    Returns:
        :func:`summarize`'s report plus ``pack``, ``checkpoint``, ``num_inference_steps``, ``seconds``,
        ``per_episode`` and ``videos`` (paths written).

    Raises:
        ConfigError: a bad count, or a policy that does not fit the pack's env.
        PackError: the pack cannot be read.

    """
    from rl.policies.modeling_flow_vla import load_policy
    from scenegen.tasks.worlds import as_source, resolve_ids

    if not (isinstance(n, int) and 1 <= n <= 1_000_000):
        raise ConfigError(f"-n {n!r} must be an int in 1..1000000")
    if not (isinstance(workers, int) and 1 <= workers <= 256):
        raise ConfigError(f"--workers {workers!r} must be an int in 1..256")
    policy = checkpoint if hasattr(checkpoint, "predict_action_chunk") else load_policy(checkpoint, device)
    policy.eval()
    prov = getattr(policy, "provenance", {}) or {}
    cfg = env_config_from(prov, **env_overrides)
    source = as_source(str(pack))
    ids = resolve_ids(source, tuple(scene_ids) if scene_ids else None)
    robot = source.scene(ids[0]).robot
    if policy.config.robot_type and robot != policy.config.robot_type:
        raise ConfigError(f"the checkpoint drives robot {policy.config.robot_type!r}, the pack's scenes use "
                          f"{robot!r}")
    resets = [{"seed": seed + j, "scene_id": ids[j % len(ids)]} for j in range(n)]
    vec = make_eval_vec(pack, min(workers, n), cfg)
    t0 = time.perf_counter()
    try:
        check_compatible(policy, vec)
        actor = PolicyActor(policy, vec.num_envs, seed=seed if policy_seed is None else policy_seed,
                            num_steps=num_steps, deterministic=deterministic)
        recs = rollout_episodes(actor, vec, resets, video_episodes=videos if video_dir else 0, progress=progress)
    finally:
        vec.close()
    report = summarize(recs)
    written = []
    if video_dir:
        from rl.data.video import write_mp4

        for r in recs:
            frames = [f for f in r.pop("frames", []) or [] if f is not None]
            if frames:
                tag = "success" if r["success"] else (r["failure"] or "fail")
                written.append(str(write_mp4(Path(video_dir) / f"episode_{r['episode']:04d}_{tag}.mp4", frames,
                                             cfg.control_hz)))
    for r in recs:
        r.pop("frames", None)
    report.update(pack=str(pack), checkpoint=str(checkpoint) if not hasattr(checkpoint, "config") else None,
                  num_inference_steps=num_steps or policy.config.num_inference_steps, deterministic=deterministic,
                  seconds=round(time.perf_counter() - t0, 2), videos=written, per_episode=recs)
    return report
