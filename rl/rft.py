"""Rejection fine-tuning data: roll a policy out under DR, keep what worked, mix it with the original demonstrations.

:func:`rft_dataset` rolls ``policy`` out ``rollouts`` times on a pack's scenes under domain
randomization, keeps each successful episode whole (or, with ``keep="grasp_segments"``, a failed
episode's frames up to the last step at which it held a goal object lifted), and writes a new
LeRobot v3.0 dataset (:class:`rl.data.writer.DemoWriter`) holding those episodes mixed with
episodes of the original demonstrations: ``demo_fraction`` of the output's episodes are original
demonstrations (cycled when more are needed than exist). BC fine-tuning then trains on the
output folder as on any demonstration dataset. The rollouts observe what the original
demonstrations recorded (same cameras, image size, point clouds, environment-state slots), so
the two mix into one dataset. ``meta/scenegen.json`` records the sources and the counts.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from rl.envs.config import DRConfig
from scenegen.errors import ConfigError
from scenegen.validate import finite, int_in

KEEP = ("episodes", "grasp_segments")
"""What a rollout contributes: only successful episodes, or also failed episodes' successful grasps."""
_INDEX = ("frame_index", "timestamp", "episode_index", "index", "task_index")


@dataclass(frozen=True)
class RFTConfig:
    """Collection settings of rejection fine-tuning (``scenegen train rft``); the fine-tuning itself is BC."""

    rollouts: int = 50
    """Policy episodes to try under domain randomization."""
    keep: str = "episodes"
    """``episodes`` keeps successful episodes; ``grasp_segments`` also failed ones up to their last lifted grasp."""
    demo_fraction: float = 0.5
    """Share of the fine-tuning dataset's episodes taken from the original demonstrations (0: rollouts only)."""
    rollout_seed: int = 0
    """Rollout ``i`` resets with this seed + ``i`` on scene ``i`` mod the number of scenes."""
    max_episode_steps: int = 300
    """Step budget of each rollout."""
    min_segment: int = 10
    """Shortest grasp segment (frames) worth keeping with ``keep="grasp_segments"``."""
    randomize: bool = True
    """Domain randomization of the rollouts (DRConfig defaults, or the weights of ``--dr``)."""
    workers: int = 1
    """Rollout processes (each loads the policy on the CPU with one torch thread); the dataset is the same."""

    def __post_init__(self) -> None:
        int_in("RFTConfig.rollouts", self.rollouts, 1, 1_000_000)
        int_in("RFTConfig.workers", self.workers, 1, 256)
        if self.keep not in KEEP:
            raise ConfigError(f"RFTConfig.keep = {self.keep!r} must be one of {KEEP}")
        finite("RFTConfig.demo_fraction", self.demo_fraction, 0.0, 0.95)
        int_in("RFTConfig.rollout_seed", self.rollout_seed, 0, 2**31 - 1)
        int_in("RFTConfig.max_episode_steps", self.max_episode_steps, 1, 100_000)
        int_in("RFTConfig.min_segment", self.min_segment, 1, 100_000)

    def to_kwargs(self) -> dict:
        """The keyword arguments of :func:`rft_dataset` (all but ``randomize``, which picks its ``dr``)."""
        kw = {k: v for k, v in asdict(self).items() if k != "randomize"}
        kw["seed"] = kw.pop("rollout_seed")
        return kw


def _lifted_goal(env: Any) -> bool:
    task = env.unwrapped.task
    return bool(task.subjects & task.lifted & task.held)


def judge(recorder: Any, policy: Callable, seed: int, scene_id: str, keep: str,
          min_segment: int) -> tuple[str, Any, str | None]:
    """Roll ``policy`` out once: ``("success" | "segment", record, None)``, or ``("failed", None, failure mode)``."""
    from rl.data.demos import episode_record
    from rl.evalrun import MODE_ORDER, primary_mode

    rec, info, grasp_end = _rollout(recorder, policy, seed, scene_id)
    if info.get("success"):
        return "success", episode_record(rec, recorder.states, recorder.ids, seed), None
    if keep == "grasp_segments" and grasp_end >= min_segment:
        return "segment", episode_record(_cut(rec, grasp_end), recorder.states, recorder.ids, seed), None
    return "failed", None, primary_mode(False, {k: bool(info.get(k)) for k in MODE_ORDER})


_WORKER: dict = {}
"""A rollout process's env, recorder and policy (:func:`_worker_init`)."""


def _worker_init(pack: str, env_kw: dict, slots: int, policy: str) -> None:
    import torch

    from rl.data.demos import PoseRecorder
    from rl.envs import PickPlaceEnv
    from rl.evalrun import make_policy

    torch.set_num_threads(1)
    recorder = PoseRecorder(PickPlaceEnv(pack, **env_kw), slots)
    _WORKER.update(recorder=recorder, policy=make_policy(policy, recorder))


def _worker_rollout(job: tuple) -> tuple[str, Any, str | None]:
    return judge(_WORKER["recorder"], _WORKER["policy"], *job)


def _rollout(recorder: Any, policy: Callable, seed: int, scene_id: str) -> tuple[dict, dict, int]:
    """One recorded episode: (record for :func:`rl.data.demos.episode_record`, last info, last lifted-grasp frame)."""
    obs, info = recorder.reset(seed=seed, options={"scene_id": scene_id})
    if hasattr(policy, "reset"):
        policy.reset(seed)
    rec: dict = {"obs": [], "actions": [], "rewards": [], "scene_id": info.get("scene_id"),
                 "instruction": info.get("instruction", "")}
    terminated = truncated = False
    grasp_end = 0
    while not (terminated or truncated):
        action = np.asarray(policy(obs), dtype=np.float32)
        rec["obs"].append(obs)
        rec["actions"].append(action)
        obs, reward, terminated, truncated, info = recorder.step(action)
        rec["rewards"].append(float(reward))
        if _lifted_goal(recorder):
            grasp_end = len(rec["actions"])
        if getattr(policy, "done", False):
            break
    return rec, info, grasp_end


def _cut(rec: dict, n: int) -> dict:
    return {**rec, "obs": rec["obs"][:n], "actions": rec["actions"][:n], "rewards": rec["rewards"][:n]}


def rft_dataset(policy: str | Callable, pack: str | os.PathLike, demos: str | os.PathLike, out: str | os.PathLike, *,
                rollouts: int = 50, keep: str = "episodes", demo_fraction: float = 0.5, dr: DRConfig | None = None,
                seed: int = 0, max_episode_steps: int = 300, min_segment: int = 10, overwrite: bool = False,
                progress: bool = True, workers: int = 1) -> dict:
    """Build a rejection-fine-tuning dataset at ``out`` (see the module docstring).

    Args:
        policy: a spec for :func:`rl.evalrun.make_policy` or a factory ``env -> policy``.
        pack: the pack whose scenes the rollouts use.
        demos: the original demonstration dataset (LeRobot v3.0, as ``scenegen demos`` writes it).
        out: the new dataset's folder.
        rollouts: policy episodes to try.
        keep: ``episodes`` (successes only) or ``grasp_segments`` (also failed episodes up to their last lifted grasp).
        demo_fraction: share of the output's episodes taken from ``demos`` (0 keeps only rollouts).
        dr: domain randomization of the rollouts (default: :class:`DRConfig` defaults).
        seed: rollout ``i`` resets with ``seed + i`` on scene ``i mod (number of scenes)``.
        max_episode_steps: rollout length.
        min_segment: shortest grasp segment (frames) worth keeping.
        overwrite: replace a dataset already at ``out``.
        progress: a progress bar.
        workers: rollout processes (``policy`` must then be a spec string); rollouts are kept in order, so the
            dataset does not depend on it.

    Returns:
        ``{"out", "rollouts", "successes", "segments", "kept", "demo_episodes", "episodes", "frames", "failures"}``.

    Raises:
        ConfigError: bad settings, or no rollout worth keeping (nothing to fine-tune on).

    """
    from tqdm import tqdm

    from rl.data.demos import PoseRecorder, feature_names
    from rl.data.reader import DemoDataset
    from rl.data.writer import DemoWriter
    from rl.envs import PickPlaceEnv
    from rl.evalrun import make_policy

    if keep not in KEEP:
        raise ConfigError(f"keep = {keep!r} must be one of {KEEP}")
    if isinstance(rollouts, bool) or not isinstance(rollouts, int) or not 1 <= rollouts <= 1_000_000:
        raise ConfigError(f"rollouts = {rollouts!r} must be an int in 1..1000000")
    if not 0.0 <= demo_fraction <= 0.95:
        raise ConfigError(f"demo_fraction = {demo_fraction} must be in [0, 0.95]")
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 256:
        raise ConfigError(f"workers = {workers!r} must be an int in 1..256")
    if workers > 1 and not isinstance(policy, str):
        raise ConfigError("rollouts in worker processes need the policy as a spec string (a checkpoint folder, "
                          "expert, ...), not a callable; use workers=1")
    src = DemoDataset(demos)
    slots = int(src.scenegen.get("environment_state_slots") or
                src.features["observation.environment_state"]["shape"][0] // 7)
    mode = (src.scenegen.get("env_config") or {}).get("action_mode")
    env_kw = dict(image_keys=tuple(src.cameras), image_size=src.image_size or 128,
                  pointcloud="observation.points" in src.features, max_episode_steps=max_episode_steps,
                  dr=dr if dr is not None else DRConfig(), **({"action_mode": mode} if mode else {}))
    env = PickPlaceEnv(pack, **env_kw)
    recorder = PoseRecorder(env, slots)
    ids = env.scene_ids
    kept: list = []
    failures: Counter = Counter()
    successes = segments = 0
    bar = tqdm(total=rollouts, desc="rft", unit="ep", disable=not progress)
    jobs = [(seed + i, ids[i % len(ids)], keep, min_segment) for i in range(rollouts)]
    pool = None
    try:
        if workers > 1:
            import multiprocessing as mp

            pool = mp.get_context("spawn").Pool(workers, _worker_init, (str(pack), env_kw, slots, policy))
            results = pool.imap(_worker_rollout, jobs, chunksize=1)
        else:
            pol = make_policy(policy, recorder)
            results = (judge(recorder, pol, *job) for job in jobs)
        for kind, record, mode_name in results:
            if kind == "success":
                successes += 1
                kept.append(record)
            elif kind == "segment":
                segments += 1
                kept.append(record)
            else:
                failures[mode_name] += 1
            bar.update(1)
            bar.set_postfix(kept=len(kept))
        if not kept:
            raise ConfigError(f"none of {rollouts} rollouts succeeded (or held a goal object for {min_segment}+ "
                              "frames); nothing to fine-tune on: try --keep grasp_segments, more rollouts or less DR")
        n_demo = int(round(len(kept) * demo_fraction / (1.0 - demo_fraction)))
        meta = {"rft": {"policy": policy if isinstance(policy, str) else repr(policy), "pack": str(pack),
                        "demos": str(demos), "demos_content_hash": src.content_hash(), "rollouts": rollouts,
                        "successes": successes, "segments": segments, "keep": keep, "demo_fraction": demo_fraction,
                        "demo_episodes": n_demo, "seed": seed,
                        "dr": {f.name: getattr(env.cfg.dr, f.name) for f in fields(env.cfg.dr)}},
                "environment_state_slots": slots, "pack": str(pack),
                "pack_content_hash": getattr(env.source, "content_hash", None),
                "env_config": {k: v for k, v in asdict(env.cfg).items() if k not in ("world", "dr")}}
        if "action_space" in src.scenegen:
            meta["action_space"] = src.scenegen["action_space"]
        if pool is not None:  # this process's env ran no episode: the feature names need one
            env.reset(seed=seed, options={"scene_id": ids[0]})
        writer = DemoWriter(out, src.fps, robot_type=src.robot_type, meta=meta, names=feature_names(env, slots),
                            image_format="video" if src.info.get("video_path") else "image", overwrite=overwrite)
        try:
            for j in range(n_demo):
                writer.add(_demo_record(src, j % len(src)))
            for ep in kept:
                writer.add(ep)
        finally:
            writer.close()
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
            pool.join()
        env.close()
    return {"out": str(writer.root), "rollouts": rollouts, "successes": successes, "segments": segments,
            "kept": len(kept), "demo_episodes": n_demo, "episodes": writer.num_episodes, "frames": writer.frames,
            "failures": dict(failures)}


def _demo_record(src: Any, i: int) -> Any:
    """An original demonstration as a writer record (dataset feature names, index columns dropped)."""
    from rl.data.writer import EpisodeRecord

    e = src.episodes_meta[i]
    frames = {k: v for k, v in src.frames(i).items() if k not in _INDEX}
    return EpisodeRecord(frames, e["tasks"][0], e.get("scene_id"), e.get("seed"), list(e.get("object_ids") or []))
