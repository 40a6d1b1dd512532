"""One run of a diversity ablation (an arm at one training seed), and the runners that spread runs over a machine.

:func:`run_arm` is what a worker executes: PPOFlow from the shared BC initialisation on the
arm's own training scenes for the ablation's env-step budget (:mod:`rl.ppoflow`), or, with the
``bc`` learner, BC from scratch on a fixed number of demonstrations of those scenes; then the
policy on the arm's frozen ID set and on the shared OOD set (:mod:`rl.evalrun`).
Each phase leaves a file written atomically (``train.json``, ``eval_id.json``, ``eval_ood.json``,
then ``result.json``), so a killed run resumes at its last finished phase, PPOFlow from its
checkpoint, and a finished run is never redone.

:func:`dispatch` runs many of them: in this process one after another (``sequential``), in a
local process pool (``process``) or as Ray tasks (``ray``: a local Ray, or a cluster address),
each Ray task asking for its GPU fraction and the CPUs its environments use.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenegen.errors import BackendError, BudgetError, ConfigError
from scenegen.fileio import write_atomic

BACKENDS = ("sequential", "process", "ray")
"""Arm runners: one after another in this process, a local process pool, or Ray tasks."""
OVERRUN_S = 600.0
"""How long past the ablation's deadline a runner waits for running arms before it gives up on them."""


@dataclass(frozen=True)
class ArmTask:
    """Everything a worker needs to run one arm at one training seed (plain data, picklable)."""

    name: str
    """The arm's name (its knobs), e.g. ``n005`` or ``n005-nodr``."""
    seed: int
    """Training seed (PPOFlow's seed)."""
    folder: str
    """The run's folder (``ABL/runs/<arm>/seed-<s>``)."""
    pool: str
    """The pack the arm trains on."""
    scene_ids: tuple[str, ...]
    """The arm's training scenes (ids in the pool)."""
    init: str
    """The shared BC initialisation (a run or checkpoint folder)."""
    id_set: str
    """The arm's frozen ID eval set (configurations over its own training scenes)."""
    ood_set: str
    """The shared frozen OOD eval set."""
    ppo: dict
    """PPOFlowConfig fields (its seed and env-step budget set for this run)."""
    dr: bool
    """Domain randomization in training."""
    max_episode_steps: int
    """Episode length in training."""
    image_size: int
    """Camera image side in training and evaluation."""
    train_categories: tuple[str, ...] = ()
    """Object categories that appear in the arm's training scenes (OOD scenes showing others are split out)."""
    env_backend: str = "async"
    """PPOFlow's environments: ``async`` (a process each) or ``sync`` (in the worker)."""
    eval_workers: int = 1
    """Processes evaluating the policy (configurations split among them)."""
    eval_device: str = "cpu"
    """Torch device of the evaluated policy."""
    gpu_fraction: float = 0.0
    """Share of a GPU this run holds (GPU-minutes = wall minutes x this)."""
    deadline: float | None = None
    """Epoch seconds after which the run stops (PPOFlow checkpoints first; resume finishes it)."""
    evaluate: bool = True
    """Evaluate after training (off: a training-only run, e.g. to measure the runner's scaling)."""
    knobs: dict = field(default_factory=dict)
    """The arm's diversity knobs (N, distractors, instances, layouts, DR), recorded in its result."""
    learner: str = "ppoflow"
    """``ppoflow`` (PPOFlow from ``init`` on the arm's scenes) or ``bc`` (BC from scratch on demonstrations
    recorded on the arm's scenes)."""
    bc: dict = field(default_factory=dict)
    """With ``learner="bc"``: ``demos`` (successful episodes), ``demo_seed``, ``workers`` (recording
    processes), ``cameras``, ``config`` (a :class:`rl.bc.BCConfig`) and ``policy`` (a FlowVLA config)."""


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.time()


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _write(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=1, default=float), error=ConfigError)


# ---------------------------------------------------------------------------------------------- training
def train_arm(task: ArmTask) -> dict:
    """PPOFlow from the BC initialisation on the arm's scenes; ``status`` ``finished`` or ``unfinished``.

    Wall time adds up over resumed calls (``train_time.json``); a finished run exports its policy to
    ``policy/`` and records ``train.json``.
    """
    import torch

    from rl import ppoflow
    from rl.envs import DRConfig
    from rl.evaluate import env_config_from
    from rl.ppoflow_cli import load_policy
    from scenegen.sim.control import action_dim

    if task.learner == "bc":
        return train_arm_bc(task)
    out = Path(task.folder)
    cfg = ppoflow.PPOFlowConfig(**task.ppo)
    policy = load_policy(task.init, cfg.device)
    env_cfg = env_config_from(policy.provenance, scene_ids=task.scene_ids, dr=DRConfig() if task.dr else None,
                              max_episode_steps=task.max_episode_steps, image_size=task.image_size,
                              privileged=cfg.critic_privileged)
    cfg = ppoflow.timed(cfg, env_cfg.max_episode_steps)  # as `train ppoflow` does: the critic reads the time
    if action_dim(env_cfg.action_mode) != policy.action_dim:
        raise ConfigError(f"the initialisation {task.init} gives {policy.action_dim}-D actions, its env's action mode "
                          f"{env_cfg.action_mode!r} takes {action_dim(env_cfg.action_mode)}-D ones")
    cuda = cfg.device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    spent = (_read(out / "train_time.json") or {}).get("seconds", 0.0)
    t0 = time.perf_counter()
    envs = ppoflow.make_envs(cfg, policy, task.pool, task.env_backend, env_config=env_cfg)
    try:
        left = _remaining(task.deadline)
        s = ppoflow.train(cfg, policy, envs, out / "ppo", resume=True, time_budget_s=left, progress=False)
    finally:
        envs.close()
    spent += time.perf_counter() - t0
    _write(out / "train_time.json", {"seconds": spent})
    row = {"status": "finished" if s["finished"] else "unfinished", "iterations": s["iterations"],
           "env_steps": s["env_steps"], "budget_env_steps": cfg.total_env_steps, "dr": task.dr,
           "scene_ids": len(task.scene_ids), "train_seconds": round(spent, 2),
           "device": cfg.device, "gpu_fraction": task.gpu_fraction if cuda else 0.0,
           "gpu_minutes": round(spent * task.gpu_fraction / 60, 3) if cuda else 0.0,
           "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3) if cuda else 0.0,
           "last": {k: v for k, v in (s.get("last") or {}).items() if isinstance(v, (int, float))}}
    if s["finished"]:
        policy.save_finetuned(out / "policy", k=cfg.k, provenance={"ppoflow_run": str((out / "ppo").resolve()),
                                                                   "init": str(Path(task.init).resolve())})
        _write(out / "train.json", row)
    return row


def train_arm_bc(task: ArmTask) -> dict:
    """BC from scratch on ``bc["demos"]`` expert demonstrations recorded on the arm's own training scenes.

    Every arm records the same number of successful episodes and trains the same steps, so the number of
    distinct scenes is the only variable; the training seed seeds the demonstrations' resets and BC.
    Demonstrations are recorded once (``demos.json``); BC resumes from its checkpoint until the deadline.
    """
    import dataclasses

    from rl.bc import BCConfig, train_bc
    from rl.data.demos import record_demos
    from rl.envs import DRConfig
    from rl.policies.configuration_flow_vla import FlowVLAConfig

    out = Path(task.folder)
    spec = task.bc
    times = _read(out / "train_time.json") or {}
    spent, bc_spent = times.get("seconds", 0.0), times.get("bc_seconds", 0.0)
    t0 = time.perf_counter()
    demos = _read(out / "demos.json")
    if demos is None:
        demos = record_demos(task.pool, int(spec["demos"]), str(out / "demos"),
                             seed=int(spec["demo_seed"]) + 100_003 * task.seed, image_size=task.image_size,
                             cameras=tuple(spec.get("cameras", ("front",))),
                             dr=DRConfig() if task.dr else None,  # the expert's own step limit, as the shared BC
                             overwrite=True, progress=False, workers=int(spec.get("workers", 1)),
                             scene_ids=task.scene_ids)
        _write(out / "demos.json", demos)
    left = _remaining(task.deadline)
    cfg: BCConfig = dataclasses.replace(spec["config"], seed=task.seed,
                                        time_limit_s=0.0 if left is None else max(1.0, left))
    policy: FlowVLAConfig = spec["policy"]
    t_bc = time.perf_counter()
    s = train_bc(out / "demos", out / "bc", policy, cfg, resume=True, progress=False)
    spent += time.perf_counter() - t0
    bc_spent += time.perf_counter() - t_bc
    _write(out / "train_time.json", {"seconds": spent, "bc_seconds": bc_spent})
    cuda = str(s.get("device", "")).startswith("cuda")
    row = {"status": "finished" if s["done"] else "unfinished", "learner": "bc", "iterations": s["steps"],
           "env_steps": int(demos["frames"]), "budget_env_steps": None, "demos": int(demos["saved"]),
           "demo_attempts": int(demos["attempts"]), "bc_steps": cfg.steps, "dr": task.dr,
           "scene_ids": len(task.scene_ids), "train_seconds": round(spent, 2), "bc_seconds": round(bc_spent, 2),
           "device": s.get("device"), "gpu_fraction": task.gpu_fraction if cuda else 0.0,
           "gpu_minutes": round(bc_spent * task.gpu_fraction / 60, 3) if cuda else 0.0,  # BC's wall, not the demos'
           "loss_last": s.get("loss_last"), "policy": s.get("policy")}
    if s["done"]:
        _write(out / "train.json", row)
    return row


# ---------------------------------------------------------------------------------------------- evaluation
def _eval_chunk(doc: dict, root: str, policy_dir: str, device: str, image_keys: tuple, image_size: int) -> list:
    """Episodes of some configurations of a frozen set (the worker side of :func:`evaluate_policy`)."""
    from rl.evalrun import CheckpointPolicy, run_evalset
    from rl.evalset import EvalSet

    factory = functools.partial(CheckpointPolicy, path=policy_dir, device=device)
    result, _ = run_evalset(EvalSet(doc, Path(root)), factory, image_keys=image_keys, image_size=image_size,
                            progress=False)
    return result["episodes"]


def _one_thread() -> None:
    """An evaluation worker's torch uses one thread (the workers share the machine's cores)."""
    import torch

    torch.set_num_threads(1)


def evaluate_policy(set_path: str, policy_dir: str, *, workers: int = 1, device: str = "cpu",
                    image_size: int = 64) -> dict:
    """A policy on every configuration of a frozen set, split over ``workers`` processes; episodes and scores.

    Raises:
        ConfigError: the set changed since it was frozen, or the policy does not fit its env.

    """
    from rl.evalrun import score
    from rl.evalset import load_evalset
    from rl.policies.modeling_flow_vla import load_policy

    es = load_evalset(set_path)
    cams = tuple(load_policy(policy_dir, "cpu").config.cameras or ())
    confs = es.configurations
    n = max(1, min(workers, len(confs)))
    parts = [({**es.doc, "configurations": confs[i::n]}, str(es.root), policy_dir, device, cams, image_size)
             for i in range(n)]
    t0 = time.perf_counter()
    if n == 1:
        episodes = _eval_chunk(*parts[0])
    else:
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread) as ex:
            episodes = [e for chunk in ex.map(_eval_chunk, *zip(*parts, strict=True)) for e in chunk]
    order = {c["id"]: i for i, c in enumerate(confs)}
    episodes.sort(key=lambda e: (order[e["config"]], e["repeat"]))
    return {"set": {"path": str(es.root), "content_hash": es.content_hash, "version": es.version,
                    "configurations": len(confs), "repeats": es.repeats},
            "seconds": round(time.perf_counter() - t0, 2), "env_steps": sum(int(e["steps"]) for e in episodes),
            "episodes": episodes, "scores": score(episodes)}


def novel_split(episodes: Sequence[dict], set_path: str, seen: Sequence[str]) -> dict:
    """OOD scores split by whether a configuration shows an object category no training scene showed."""
    from rl.evalrun import score_group
    from rl.evalset import load_evalset

    seen_set = set(seen)
    novel = {c["id"] for c in load_evalset(set_path, verify_packs=False).configurations
             if any(o["category"] not in seen_set for o in c["objects"])}
    groups = {"novel_category": [e for e in episodes if e["config"] in novel],
              "seen_categories": [e for e in episodes if e["config"] not in novel]}
    return {k: score_group(v) if v else None for k, v in groups.items()}


# ---------------------------------------------------------------------------------------------- one run
def run_arm(task: ArmTask) -> dict:
    """Train, evaluate (ID, OOD) and record one arm at one seed, resuming at its last finished phase.

    Returns:
        The run's result (``status`` ``done``), or ``status`` ``unfinished`` when the deadline came first.

    """
    out = Path(task.folder)
    done = _read(out / "result.json")
    if done is not None:
        return done
    out.mkdir(parents=True, exist_ok=True)
    train = _read(out / "train.json") or train_arm(task)
    head = {"arm": task.name, "seed": task.seed, "knobs": task.knobs, "scenes": list(task.scene_ids)}
    if train["status"] != "finished" or not task.evaluate:
        return {**head, "status": "unfinished" if train["status"] != "finished" else "trained", "train": train}
    evals = {}
    for name, where in (("id", task.id_set), ("ood", task.ood_set)):
        f = out / f"eval_{name}.json"
        evals[name] = _read(f)
        if evals[name] is None:
            left = _remaining(task.deadline)
            if left is not None and left <= 0:
                return {**head, "status": "unfinished", "train": train}
            evals[name] = evaluate_policy(where, train.get("policy") or str(out / "policy"), workers=task.eval_workers,
                                          device=task.eval_device, image_size=task.image_size)
            _write(f, evals[name])
    ood = evals["ood"]
    result = {**head, "status": "done", "train": train,
              "id": {**evals["id"]["scores"]["overall"], "set": evals["id"]["set"],
                     "env_steps": evals["id"]["env_steps"], "seconds": evals["id"]["seconds"]},
              "ood": {**ood["scores"]["overall"], "set": ood["set"], "env_steps": ood["env_steps"],
                      "seconds": ood["seconds"],
                      "split": novel_split(ood["episodes"], task.ood_set, task.train_categories)}}
    _write(out / "result.json", result)
    return result


# ---------------------------------------------------------------------------------------------- runners
def _error(task: ArmTask, exc: BaseException) -> dict:
    exc = getattr(exc, "cause", None) or exc  # a Ray task's own exception, not Ray's wrapper
    return {"arm": task.name, "seed": task.seed, "knobs": task.knobs, "status": "failed",
            "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}


def dispatch(tasks: Sequence[ArmTask], *, backend: str = "sequential", concurrent: int = 1, cpus_per_task: int = 1,
             ray_address: str | None = None, deadline: float | None = None,
             run: Callable[[ArmTask], dict] | None = None) -> list[dict]:
    """Run tasks (at most ``concurrent`` at a time); one result per task, in the order given.

    A task that raises is reported as ``status`` ``failed`` with its error, and the others go on.
    Tasks not started by ``deadline`` are reported ``unfinished``; running ones are given
    :data:`OVERRUN_S` past it to checkpoint and return.

    Raises:
        ConfigError: an unknown backend or a bad count.
        BackendError: ``ray`` without Ray installed, or GPU fractions on a Ray cluster without GPUs.
        BudgetError: running tasks did not return within :data:`OVERRUN_S` past the deadline.

    """
    run = run or run_arm
    if backend not in BACKENDS:
        raise ConfigError(f"backend = {backend!r} must be one of {BACKENDS}")
    if isinstance(concurrent, bool) or not isinstance(concurrent, int) or not 1 <= concurrent <= 256:
        raise ConfigError(f"concurrent = {concurrent!r} must be an int in 1..256")
    results: list[dict | None] = [None] * len(tasks)

    def late() -> bool:
        return deadline is not None and time.time() >= deadline

    if backend == "sequential":
        for i, t in enumerate(tasks):
            if late():
                results[i] = {"arm": t.name, "seed": t.seed, "knobs": t.knobs, "status": "unfinished"}
                continue
            try:
                results[i] = run(t)
            except Exception as exc:  # one arm's failure is reported; the ablation goes on
                results[i] = _error(t, exc)
        return results  # type: ignore[return-value]
    if backend == "ray":
        submit, get, stop = _ray_runner(run, cpus_per_task, ray_address, tasks)
    else:
        ex = ProcessPoolExecutor(concurrent, mp_context=multiprocessing.get_context("spawn"))
        submit = functools.partial(ex.submit, run)

        def get(fut: Any) -> dict:
            return fut.result()

        def stop() -> None:
            if running:  # given up on past the overrun: end the busy workers
                for p in list(getattr(ex, "_processes", {}).values()):
                    p.terminate()
            ex.shutdown(wait=not running, cancel_futures=True)
    todo: list[int] = list(range(len(tasks)))
    running: dict[Any, int] = {}
    try:
        while todo or running:
            while todo and len(running) < concurrent and not late():
                i = todo.pop(0)
                running[submit(tasks[i])] = i
            if not running:
                break
            limit = None if deadline is None else max(1.0, deadline + OVERRUN_S - time.time())
            finished = _wait(backend, list(running), limit)
            if not finished:
                raise BudgetError(f"{len(running)} arm(s) still running {OVERRUN_S:.0f} s past the ablation's "
                                  "deadline; their checkpoints are kept: rerun with --resume")
            for fut in finished:
                i = running.pop(fut)
                try:
                    results[i] = get(fut)
                except Exception as exc:  # noqa: BLE001 - Ray wraps the task's exception
                    results[i] = _error(tasks[i], exc)
        for i in todo:
            t = tasks[i]
            results[i] = {"arm": t.name, "seed": t.seed, "knobs": t.knobs, "status": "unfinished"}
    finally:
        stop()
    return results  # type: ignore[return-value]


def _wait(backend: str, futures: list, timeout: float | None) -> list:
    if backend == "ray":
        import ray

        ready, _ = ray.wait(futures, num_returns=1, timeout=timeout)
        return ready
    done, _ = wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
    return list(done)


def _ray_runner(run: Callable, cpus: int, address: str | None, tasks: Sequence[ArmTask]) -> tuple:
    try:
        import ray
    except ImportError:
        raise BackendError("--backend ray needs Ray: pip install 'scenegen[ray]'") from None
    owns = not ray.is_initialized()
    if owns:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    gpus = max((t.gpu_fraction for t in tasks), default=0.0)
    if gpus > 0 and ray.cluster_resources().get("GPU", 0) <= 0:
        if owns:
            ray.shutdown()
        raise BackendError("arms ask for a GPU fraction but the Ray cluster has no GPU; use --device cpu or a "
                           "cluster with GPUs")
    remote = ray.remote(run)

    def submit(t: ArmTask) -> Any:
        return remote.options(num_cpus=cpus, num_gpus=t.gpu_fraction, max_retries=0).remote(t)

    def stop() -> None:
        if owns:
            ray.shutdown()

    return submit, ray.get, stop
