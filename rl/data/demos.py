"""Record scripted-expert demonstrations of a pack into a LeRobot v3.0 dataset (see :mod:`rl.data.writer`).

Each frame holds what the policy saw and did: ``observation.images.<camera>``,
``observation.state`` (the env's ``proprio``), optionally ``observation.points``, the
``action`` taken, ``next.reward`` / ``next.done``, plus scenegen's ``scene_id`` and the
privileged ``observation.environment_state``: the position and quaternion of every object
in slots (goal subjects first, then goal targets, then the rest by id; unused slots are
zeros, and ``meta/episodes``' ``object_ids`` names each episode's slots).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from rl.data.reader import DemoDataset, Episode
from rl.data.writer import DemoWriter, EpisodeRecord
from scenegen.errors import ConfigError

__all__ = ["DemoDataset", "DemoWriter", "Episode", "EpisodeRecord", "record_demos"]

POSE_FIELDS = ("x", "y", "z", "qx", "qy", "qz", "qw")
EE_NAMES = ["ee_x", "ee_y", "ee_z", "ee_qx", "ee_qy", "ee_qz", "ee_qw", "gripper_width"]


def slot_order(scene: Any) -> list[str]:
    """A scene's dynamic objects: goal subjects, goal targets, then the others by id."""
    graph = scene.graph
    support = graph.support_id
    objects = sorted(o.id for o in graph.objects() if o.id != support)
    first = [g.subject for g in graph.goals] + [g.object for g in graph.goals if g.object]
    order = list(dict.fromkeys(n for n in first if n in objects))
    return order + [n for n in objects if n not in order]


class PoseRecorder:
    """Wraps an env: after each reset and step, keeps the object poses (the state the next action sees)."""

    def __init__(self, env: Any, slots: int) -> None:
        self.env, self.slots = env, slots
        self.unwrapped = env
        self.states: list[np.ndarray] = []
        self.ids: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def _snap(self) -> None:
        world = self.env.world
        out = np.zeros(self.slots * 7, np.float32)
        for i, n in enumerate(self.ids[: self.slots]):
            p = world.pose(n)
            out[7 * i: 7 * i + 7] = [*p.position, *p.orientation]
        self.states.append(out)

    def reset(self, **kw: Any) -> tuple[dict, dict]:
        obs, info = self.env.reset(**kw)
        self.ids = slot_order(self.env.world.scene)
        self.states = []
        self._snap()
        return obs, info

    def step(self, action: Any) -> tuple:
        out = self.env.step(action)
        self._snap()
        return out


def episode_record(rec: dict, states: list[np.ndarray], object_ids: list[str], seed: int | None) -> EpisodeRecord:
    """The writer's record of one recorded rollout (:func:`scenegen.tasks.expert.rollout` with ``record=True``)."""
    t = len(rec["actions"])
    if t == 0:
        raise ConfigError("an episode needs at least one step")
    frames: dict[str, np.ndarray] = {}
    for key in rec["obs"][0]:
        if key == "instruction":
            continue
        arr = np.stack([np.asarray(o[key]) for o in rec["obs"]])
        if key == "proprio":
            frames["observation.state"] = arr.astype(np.float32)
        elif key == "points":
            frames["observation.points"] = arr.astype(np.float32)
        else:
            frames[f"observation.images.{key}"] = arr.astype(np.uint8)
    frames["action"] = np.asarray(rec["actions"], dtype=np.float32).reshape(t, -1)
    frames["next.reward"] = np.asarray(rec["rewards"], dtype=np.float32)
    done = np.zeros(t, dtype=bool)
    done[-1] = True
    frames["next.done"] = done
    frames["observation.environment_state"] = np.stack(states[:t]).astype(np.float32)
    frames["scene_id"] = np.asarray([str(rec.get("scene_id"))] * t, dtype=object)
    return EpisodeRecord(frames, str(rec.get("instruction", "")), rec.get("scene_id"), seed, list(object_ids))


def feature_names(env: Any, slots: int) -> dict[str, list[str]]:
    """``info.json`` names of the state, action and environment-state dimensions."""
    from scenegen.sim.control import ACTION_MODES
    from scenegen.sim.robots import get_robot

    spec = get_robot(env.scene.robot)
    ee = EE_NAMES if not spec.arms else [f"{a.name}_{n}" for a in spec.arms for n in EE_NAMES]
    state = [*spec.arm_joints, *spec.finger_joints, *ee]
    a = int(env.action_space.shape[0])
    action = list(ACTION_MODES.get(getattr(env.cfg, "action_mode", ""), ()))
    if spec.arms and len(action) * len(spec.arms) == a:  # one action per arm, side by side
        action = [f"{arm.name}_{n}" for arm in spec.arms for n in action]
    action = action if len(action) == a else [f"a{i}" for i in range(a)]
    envs = [f"slot{i}.{f}" for i in range(slots) for f in POSE_FIELDS]
    return {"observation.state": state if len(state) == env.observation_space["proprio"].shape[0] else None,
            "action": action, "observation.environment_state": envs}


_WORKER: dict = {}


def _worker_init(pack: str, env_kw: dict, slots: int) -> None:
    """A recording process: its own env, expert and pose recorder."""
    from rl.envs import PickPlaceEnv
    from scenegen.tasks.expert import make_expert

    env = PickPlaceEnv(pack, **env_kw)
    _WORKER.update(env=env, expert=make_expert(env), recorder=PoseRecorder(env, slots))


def _attempt(job: tuple[int, int, str]) -> tuple[int, str | None, EpisodeRecord | None]:
    """One expert episode: ``(attempt, failure reason or None, record on success)``."""
    from scenegen.tasks.expert import rollout

    k, seed, scene_id = job
    rec_env = _WORKER["recorder"]
    result, rec = rollout(rec_env, _WORKER["expert"], seed=seed, options={"scene_id": scene_id}, record=True)
    if not result.success:
        return k, (result.failure or "failed").split(":")[0], None
    return k, None, episode_record(rec, rec_env.states, rec_env.ids, seed)


def record_demos(pack: str, n: int, out: str, seed: int = 0, image_size: int = 128,
                 cameras: tuple[str, ...] = ("front",), max_steps: int = 300, max_attempts: int | None = None,
                 pointcloud: bool = False, randomize: bool = False, overwrite: bool = False,
                 progress: bool = True, image_format: str = "video", episodes_per_file: int = 50,
                 action_mode: str | None = None, workers: int = 1, dr: Any = None,
                 scene_ids: Sequence[str] | None = None) -> dict:
    """Record ``n`` successful expert episodes of the pack's scenes into a LeRobot v3.0 dataset at ``out``.

    Episode attempt ``i`` resets with seed ``seed + i`` on scene ``i mod (number of scenes)``;
    failed episodes are counted by reason (``meta/scenegen.json``), not saved. With ``workers > 1``
    attempts run in that many processes and are written in attempt order: the same dataset.
    ``randomize`` records under the env's default domain randomization; ``dr`` (a
    :class:`~rl.envs.config.DRConfig`, e.g. from a ``DR.json`` of ``scenegen dr propose``) under that one
    (it implies ``randomize``); the metadata records the DR used. ``scene_ids`` restricts the episodes
    to those scenes of the pack (in that order).

    Returns:
        A summary: ``saved``, ``frames``, ``attempts``, ``failures`` (reason -> count), ``out``.

    Raises:
        ConfigError: bad counts or sizes, or fewer than ``n`` successes within ``max_attempts``.
        PackError: the pack cannot be read.

    """
    from dataclasses import asdict

    from tqdm import tqdm

    from rl.envs import DRConfig, PickPlaceEnv
    from scenegen.tasks.expert import make_expert

    if not (isinstance(n, int) and 1 <= n <= 1_000_000):
        raise ConfigError(f"-n {n!r} must be an int in 1..1000000")
    attempts_budget = max_attempts if max_attempts is not None else 3 * n + 5
    if attempts_budget < n:
        raise ConfigError(f"--max-attempts {attempts_budget} must be at least -n {n}")
    if not (isinstance(workers, int) and 1 <= workers <= 256):
        raise ConfigError(f"--workers {workers!r} must be an int in 1..256")
    env_kw = dict(image_keys=tuple(cameras), image_size=image_size, max_episode_steps=max_steps,
                  pointcloud=pointcloud, dr=dr if dr is not None else DRConfig() if randomize else None)
    if action_mode:
        env_kw["action_mode"] = action_mode
    if scene_ids is not None:
        env_kw["scene_ids"] = tuple(scene_ids)
    env = PickPlaceEnv(pack, **env_kw)
    ids = env.scene_ids
    slots = max(len(slot_order(env.source.scene(s))) for s in ids)
    env_cfg = {k: v for k, v in asdict(env.cfg).items() if k not in ("world", "dr")}
    meta = {"pack": getattr(env.source, "root", None) and str(env.source.root),
            "pack_content_hash": getattr(env.source, "content_hash", None), "seed": seed,
            "env_config": env_cfg, "randomized": env_kw["dr"] is not None, "environment_state_slots": slots,
            "action_space": {"shape": list(env.action_space.shape), "low": float(np.min(env.action_space.low)),
                             "high": float(np.max(env.action_space.high))}}
    if env_kw["dr"] is not None:
        from rl.guided_dr import dr_summary

        meta["dr"] = dr_summary(env_kw["dr"])
    recorder = PoseRecorder(env, slots)
    env.reset(seed=seed, options={"scene_id": ids[0]})
    writer = DemoWriter(out, env.cfg.control_hz, robot_type=env.source.scene(ids[0]).robot, meta=meta,
                        names=feature_names(env, slots), image_format=image_format,
                        episodes_per_file=episodes_per_file, overwrite=overwrite)
    jobs = ((k, seed + k, ids[k % len(ids)]) for k in range(attempts_budget))
    pool = None
    if workers > 1:
        import multiprocessing as mp

        env.close()
        pool = mp.get_context("spawn").Pool(workers, _worker_init, (str(pack), env_kw, slots))
        results = pool.imap(_attempt, jobs, chunksize=1)
    else:
        _WORKER.update(env=env, expert=make_expert(env), recorder=recorder)
        results = map(_attempt, jobs)
    failures: Counter = Counter()
    attempts = 0
    bar = tqdm(total=n, desc="demos", unit="ep", disable=not progress)
    try:
        for _, reason, record in results:
            attempts += 1
            if record is not None:
                writer.add(record)
                bar.update(1)
            else:
                failures[reason] += 1
                writer.count_failure(reason)
            bar.set_postfix(failed=sum(failures.values()))
            if writer.num_episodes >= n:
                break
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
        writer.meta["attempts"] = attempts
        writer.close()
        env.close()
    saved = writer.num_episodes
    summary = {"saved": saved, "frames": writer.frames, "attempts": attempts, "failures": dict(failures),
               "out": str(writer.root)}
    if saved < n:
        top = ", ".join(f"{k} x{v}" for k, v in failures.most_common(3))
        raise ConfigError(f"only {saved}/{n} successful episodes in {attempts} attempts ({top}); "
                          f"the {saved} saved are in {out}; raise --max-attempts or check the pack")
    return summary
