"""Diversity ablations over N training scenes, in and out of distribution (``scenegen ablate``).

One pool of scenes is generated once and ordered by a seeded permutation of its scene ids;
the arm with N scenes trains on the first N, so the pools are nested (the N=1 scene is among
the N=5 ones, and so on) and arms differ only in diversity. Every arm and training seed starts
from the same BC initialisation and gets the same PPOFlow env-step budget; each is evaluated on
a frozen ID set over its own training scenes and on one frozen OOD set of the same prompt from
another seed (new layouts, distractors and object instances) that no arm trains on.

Other diversity knobs are arm axes too (each a comma list; arms are the product):
``distractors`` (one pool per count), ``instances`` and ``layouts`` (the training scenes are
restricted, in permutation order, to at most V distinct task-object instances or L distinct
start-quadrant patterns of the task objects) and ``dr`` (domain randomization in training).
``learner="bc"`` compares behaviour cloning instead of PPOFlow: each run trains a fresh policy on the
same number of expert demonstrations recorded on its arm's own scenes (:func:`rl.ablate_arm.train_arm_bc`).

A folder ``ABL`` holds::

    plan.json                 the prompt, settings and every arm's training scenes (--resume checks them)
    pools/<key>/              the pool pack(s), generated once (one per distractor count)
    ood/                      the OOD eval set (frozen, hashed), unless --ood-set gives one
    bc/{pack,demos,run}/      the shared BC initialisation, unless --init gives one
    id_sets/<hash>/           the ID eval set of each training scene set (frozen, hashed)
    runs/<arm>/seed-<s>/      ppo/ (PPOFlow), policy/, train.json, eval_id.json, eval_ood.json, result.json
    results.json, results.md, results.png

Runs go through :func:`rl.ablate_arm.dispatch` (sequential, a process pool, or Ray tasks); a
killed ablation resumes arm by arm (:mod:`rl.ablate_arm`). Reports are :mod:`rl.ablate_report`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rl.ablate_arm import BACKENDS, ArmTask, dispatch
from rl.ablate_select import (  # noqa: F401 - the selection is part of this module's API
    ORDER_STREAM,
    instance_key,
    layout_key,
    nested_order,
    restrict,
    task_objects,
    training_ids,
)
from scenegen.errors import ConfigError, ScenegenError
from scenegen.fileio import write_atomic
from scenegen.validate import int_in

LEARNERS = ("ppoflow", "bc")
"""What each run trains: PPOFlow from a shared BC initialisation, or BC from scratch on the arm's scenes."""


class AblationError(ScenegenError):
    """Some arms of an ablation failed (the others' results are kept; ``--resume`` retries the failed ones)."""


@dataclass(frozen=True)
class AblationConfig:
    """What an ablation compares and how it measures it (a resumed ablation must have the same values)."""

    ns: tuple[int, ...] = (1, 5, 10, 25, 50)
    """Training-scene counts N, one arm each (nested: the N=1 scene is among the N=5 ones, and so on)."""
    seeds: int = 3
    """Training seeds per arm (PPOFlow seeds 0, 1, ...: the same for every arm)."""
    budget_env_steps: int = 20_000
    """PPOFlow env steps of every arm and seed (the same for all, so diversity is the only variable)."""
    pool_size: int = 0
    """Scenes of each generated pool (0: the largest N; give more when instances or layouts filter it)."""
    pool_seed: int = 0
    """Seed of the pool's generation and of the permutation that orders its scenes."""
    distractors: tuple[int, ...] = ()
    """Distractor counts to ablate, one pool each (the prompt gets "with K distractors"); empty: the prompt's own."""
    instances: tuple[int, ...] = (0,)
    """Object-instance variety: training scenes show at most this many task-object instance sets (0: no limit)."""
    layouts: tuple[int, ...] = (0,)
    """Layout variety: the task objects' start quadrants take at most this many patterns (0: no limit)."""
    dr: tuple[bool, ...] = (True,)
    """Domain randomization in training, per arm (``on``, ``off`` or ``on,off``)."""
    ood_configs: int = 50
    """Configurations (per tier) of the generated OOD set."""
    ood_seed: int = 1
    """Seed of the generated OOD set (its scenes and reset seeds)."""
    ood_tiers: tuple[int, ...] = ()
    """Difficulty tiers of the generated OOD set (more distractors, packed closer); empty: the prompt as written."""
    id_configs: int = 50
    """ID configurations per arm: reset seeds over the arm's own training scenes, in turn."""
    id_seed: int = 2
    """Seed of the ID sets' reset seeds."""
    eval_repeats: int = 1
    """Rollouts per eval configuration."""
    eval_dr: bool = True
    """Domain randomization frozen into the ID and OOD configurations (the same draw for every arm)."""
    max_episode_steps: int = 200
    """Episode length in training and evaluation."""
    image_size: int = 64
    """Camera image side of the demonstrations, training and evaluation."""
    qa: bool = True
    """QA-check generated scenes (only solvable, well-formed ones are kept)."""
    bc_scenes: int = 10
    """Scenes of the BC base pack (its own seed: neither pool nor OOD scenes)."""
    bc_demos: int = 50
    """Expert demonstrations the shared BC initialisation is trained on (with ``learner="bc"``: each run's)."""
    bc_seed: int = 3
    """Seed of the BC base pack and of its demonstrations (with ``learner="bc"``: of each arm's demonstrations)."""
    cameras: tuple[str, ...] = ("front",)
    """Cameras of the expert demonstrations, so of the policies BC trains on them (``front``, ``wrist``)."""
    learner: str = "ppoflow"
    """``ppoflow``: PPOFlow from the shared BC initialisation, ``budget_env_steps`` per run; ``bc``: BC from scratch
    per run on ``bc_demos`` expert demonstrations of the arm's own training scenes (the same count and BC steps
    for every arm), no shared initialisation and no PPOFlow."""

    def __post_init__(self) -> None:
        for name, lo, hi in (("ns", 1, 100_000), ("instances", 0, 100_000), ("layouts", 0, 100_000),
                             ("distractors", 0, 30), ("ood_tiers", 1, 99)):
            vals = tuple(getattr(self, name))
            object.__setattr__(self, name, vals)
            if (name in ("ns", "instances", "layouts") and not vals) or len(set(vals)) != len(vals):
                raise ConfigError(f"AblationConfig.{name} = {vals!r} must list distinct values")
            for v in vals:
                int_in(f"AblationConfig.{name}", v, lo, hi)
        dr = tuple(self.dr)
        object.__setattr__(self, "dr", dr)
        if not dr or len(set(dr)) != len(dr) or not all(isinstance(v, bool) for v in dr):
            raise ConfigError(f"AblationConfig.dr = {dr!r} must be on, off or on,off")
        for name, lo, hi in (("seeds", 1, 100), ("budget_env_steps", 1, 10**10), ("pool_size", 0, 100_000),
                             ("ood_configs", 1, 100_000), ("id_configs", 1, 100_000), ("eval_repeats", 1, 1000),
                             ("max_episode_steps", 1, 100_000), ("image_size", 8, 1024), ("bc_scenes", 1, 100_000),
                             ("bc_demos", 1, 1_000_000)):
            int_in(f"AblationConfig.{name}", getattr(self, name), lo, hi)
        if self.pool_size and self.pool_size < max(self.ns):
            raise ConfigError(f"AblationConfig.pool_size = {self.pool_size} is below the largest N ({max(self.ns)})")
        cams = tuple(self.cameras)
        object.__setattr__(self, "cameras", cams)
        if not cams or len(set(cams)) != len(cams) or not all(c in ("front", "wrist") for c in cams):
            raise ConfigError(f"AblationConfig.cameras = {cams!r} must list distinct cameras of front, wrist")
        if self.learner not in LEARNERS:
            raise ConfigError(f"AblationConfig.learner = {self.learner!r} must be one of {LEARNERS}")
        seeds = {"pool_seed": self.pool_seed, "ood_seed": self.ood_seed, "bc_seed": self.bc_seed}
        if len(set(seeds.values())) != 3:
            raise ConfigError(f"AblationConfig: {seeds} must differ (pool, OOD and BC scenes come from other seeds)")

    @property
    def pool_scenes(self) -> int:
        """Scenes each pool is generated with."""
        return self.pool_size or max(self.ns)


@dataclass(frozen=True)
class RunnerConfig:
    """How an ablation's runs are spread over a machine (not part of the results: may change on resume)."""

    backend: str = "sequential"
    """``sequential`` (in this process), ``process`` (a local process pool) or ``ray`` (Ray tasks)."""
    concurrent: int = 1
    """Runs at a time (``process`` / ``ray``)."""
    gpu_fraction: float = 0.0
    """GPU share each run asks Ray for, and counts in GPU-minutes (0: 1 / concurrent when the device is cuda)."""
    cpus_per_arm: int = 0
    """CPUs each run asks Ray for (0: PPOFlow's environments + 1)."""
    ray_address: str | None = None
    """Ray cluster to join with ``backend="ray"`` (None: a local one)."""
    env_backend: str = "async"
    """PPOFlow's environments: ``async`` (a process each) or ``sync`` (in the run's process)."""
    eval_workers: int = 4
    """Processes evaluating each policy."""
    eval_device: str = "cpu"
    """Torch device of evaluated policies."""
    workers: int = 1
    """Generation workers (pool, OOD and BC scenes)."""
    time_budget_s: float = 0.0
    """Stop starting work after this many seconds; running arms checkpoint (0: no limit). Resume to go on."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"RunnerConfig.backend = {self.backend!r} must be one of {BACKENDS}")
        if self.env_backend not in ("async", "sync"):
            raise ConfigError(f"RunnerConfig.env_backend = {self.env_backend!r} must be async or sync")
        for name, lo, hi in (("concurrent", 1, 256), ("cpus_per_arm", 0, 1024), ("eval_workers", 1, 256),
                             ("workers", 1, 512)):
            int_in(f"RunnerConfig.{name}", getattr(self, name), lo, hi)
        if not 0.0 <= self.gpu_fraction <= 1.0:
            raise ConfigError(f"RunnerConfig.gpu_fraction = {self.gpu_fraction} must be in [0, 1]")
        if not self.time_budget_s >= 0:
            raise ConfigError(f"RunnerConfig.time_budget_s = {self.time_budget_s} must be >= 0")


@dataclass(frozen=True)
class Arm:
    """One diversity setting: N training scenes and the other knobs."""

    n: int
    distractors: int | None = None
    instances: int = 0
    layouts: int = 0
    dr: bool = True

    @property
    def name(self) -> str:
        """A folder name: ``n005``, plus ``-d2`` / ``-i3`` / ``-l2`` / ``-nodr`` for knobs off their defaults."""
        parts = [f"n{self.n:03d}"]
        parts += [f"d{self.distractors}"] if self.distractors is not None else []
        parts += [f"i{self.instances}"] if self.instances else []
        parts += [f"l{self.layouts}"] if self.layouts else []
        return "-".join(parts + ([] if self.dr else ["nodr"]))


def arms(cfg: AblationConfig) -> list[Arm]:
    """Every arm: the product of the knob axes, N varying fastest."""
    dist: Sequence[int | None] = cfg.distractors or (None,)
    return [Arm(n, d, i, lay, dr) for d, i, lay, dr, n in
            itertools.product(dist, cfg.instances, cfg.layouts, cfg.dr, sorted(cfg.ns))]


def pool_prompt(prompt: str, distractors: int | None) -> str:
    """The pool's prompt: the prompt, with ``with K distractors`` when the arm sets the count.

    Raises:
        ConfigError: the prompt already sets its distractors and the ablation sets them too.

    """
    if distractors is None:
        return prompt
    from scenegen.design.lexicon import extract_clutter, normalize

    if extract_clutter(normalize(prompt))[1] is not None:
        raise ConfigError(f"prompt {prompt!r} sets its distractors; --distractors sets them per arm, so drop that part")
    return f"{prompt} with {distractors} distractors"


# ---------------------------------------------------------------------------------------------- preparation
def _check_plan(out: Path, spec: dict, resume: bool) -> None:
    path = out / "plan.json"
    if not path.is_file():
        return
    if not resume:
        raise ConfigError(f"{out} already holds an ablation; pass --resume to continue it or pick another -o")
    saved = json.loads(path.read_text()).get("spec", {})
    diff = sorted(k for k in set(saved) | set(spec) if saved.get(k) != spec.get(k))
    if diff:
        raise ConfigError(f"--resume: {out} was planned with other settings ({', '.join(diff)} differ); "
                          "resume with the same ones or pick another -o")


def _generate(prompt: str, n: int, out: Path, seed: int, cfg: AblationConfig, pipeline: Any,
              cache_dir: str | None, progress: bool) -> Any:
    """A pack of ``n`` scenes (QA-checked when asked); resumes a killed generation."""
    from scenegen.errors import BudgetError
    from scenegen.pack.reader import load_pack
    from scenegen.pipeline import generate

    if cfg.qa:
        from qa.loop import generate_with_qa

        run = generate_with_qa(prompt, n, out, seed, pipeline, cache_dir=cache_dir, progress=progress)
        if not run.complete:
            raise BudgetError(run.message)
        return load_pack(out)
    return generate(prompt, n, out, seed, pipeline, cache_dir=cache_dir, progress=progress)


def _bc_init(prompt: str, out: Path, cfg: AblationConfig, bc: Any, policy: Any, pipeline: Any,
             cache_dir: str | None, deadline: float | None, progress: bool) -> str | None:
    """The shared BC initialisation: expert demos on a base pack of its own seed, then BC (None: not done yet)."""
    from rl.bc import train_bc
    from rl.data.demos import record_demos

    root = out / "bc"
    if (root / "bc.json").is_file():
        return str(root / "run")
    pack = _generate(prompt, cfg.bc_scenes, root / "pack", cfg.bc_seed, cfg, pipeline, cache_dir, progress)
    if not (root / "demos.json").is_file():
        if deadline is not None and time.time() > deadline:
            return None
        s = record_demos(str(pack.root), cfg.bc_demos, str(root / "demos"), seed=cfg.bc_seed,
                         image_size=cfg.image_size, cameras=cfg.cameras, randomize=True, overwrite=True,
                         progress=progress,
                         workers=max(1, int(getattr(pipeline, "workers", 1) or 1)))  # the same dataset for any count
        write_atomic(root / "demos.json", json.dumps(s, indent=1, default=str), error=ConfigError)
    left = 0.0 if deadline is None else max(1.0, deadline - time.time())
    s = train_bc(root / "demos", root / "run", policy, dataclasses.replace(bc, time_limit_s=left),
                 resume=True, progress=progress)
    if not s["done"]:
        return None
    write_atomic(root / "bc.json", json.dumps(s, indent=1, default=str), error=ConfigError)
    return str(root / "run")


def _id_set(out: Path, pool: Any, ids: Sequence[str], cfg: AblationConfig) -> str:
    """The frozen ID set of one training scene set (made once, shared by every arm with those scenes)."""
    from rl.envs import DRConfig
    from rl.evalset import FILE, make_evalset

    key = hashlib.sha256(("\n".join([pool.content_hash, *ids])).encode()).hexdigest()[:16]
    where = out / "id_sets" / key
    if not (where / FILE).is_file():
        make_evalset(None, where, cfg.id_configs, packs=[pool.root], seed=cfg.id_seed, repeats=cfg.eval_repeats,
                     max_episode_steps=cfg.max_episode_steps, dr=DRConfig() if cfg.eval_dr else None,
                     progress=False, name=f"id-{key}", scene_ids=ids)
    return str(where)


def _ood_set(prompt: str, out: Path, cfg: AblationConfig, ood_set: str | None, pipeline: Any,
             cache_dir: str | None, progress: bool) -> Any:
    from rl.envs import DRConfig
    from rl.evalset import FILE, load_evalset, make_evalset

    if ood_set:
        return load_evalset(ood_set)
    where = out / "ood"
    if (where / FILE).is_file():
        return load_evalset(where)
    return make_evalset(prompt, where, cfg.ood_configs, tiers=cfg.ood_tiers, seed=cfg.ood_seed,
                        repeats=cfg.eval_repeats, max_episode_steps=cfg.max_episode_steps,
                        dr=DRConfig() if cfg.eval_dr else None, pipeline=pipeline, qa=cfg.qa, cache_dir=cache_dir,
                        progress=progress, name="ood")


def _check_disjoint(named: dict[str, set[str]]) -> None:
    for (a, x), (b, y) in itertools.combinations(named.items(), 2):
        if x & y:
            raise ConfigError(f"the {a} and the {b} share {len(x & y)} scene(s) (e.g. {sorted(x & y)[0][:12]}); "
                              "the OOD set must hold scenes no arm trains on: use other seeds")


def _ppo_fields(ppo: Any) -> dict:
    return {k: v for k, v in asdict(ppo).items() if k not in ("seed", "total_env_steps")}


def plan_ablation(prompt: str, out: str | os.PathLike, cfg: AblationConfig, *, runner: RunnerConfig | None = None,
                  ppo: Any = None, bc: Any = None, policy: Any = None, pipeline: Any = None,
                  pool: str | None = None, ood_set: str | None = None, init: str | None = None,
                  cache_dir: str | None = None, resume: bool = False, progress: bool = True,
                  deadline: float | None = None) -> list[ArmTask] | None:
    """Generate (or reuse) the pools, the OOD set, the BC initialisation and the ID sets; one task per run.

    Returns:
        The runs' tasks (arm x seed), or None when the deadline came before the BC initialisation was trained.

    Raises:
        ConfigError: bad settings, an existing ablation without ``resume`` (or one planned otherwise), a pool
            too small for an arm, or an OOD set that shares scenes with the pool.

    """
    from rl.bc import BCConfig
    from rl.policies.configuration_flow_vla import FlowVLAConfig
    from rl.ppoflow import PPOFlowConfig
    from scenegen.pack.reader import load_pack
    from scenegen.pipeline import PipelineConfig

    runner = runner or RunnerConfig()
    ppo, bc = ppo or PPOFlowConfig(), bc or BCConfig()
    policy, pipeline = policy or FlowVLAConfig(), pipeline or PipelineConfig(workers=runner.workers)
    root = Path(out)
    if pool and cfg.distractors:
        raise ConfigError("--pool gives one pool; --distractors needs one generated pool per count")
    per_run_bc = cfg.learner == "bc"
    if per_run_bc and init:
        raise ConfigError("--learner bc trains every run from scratch; drop --init (it is PPOFlow's start)")
    spec = {"prompt": prompt, "ablation": json.loads(json.dumps(asdict(cfg))), "ppo": _ppo_fields(ppo),
            "pipeline": json.loads(json.dumps(pipeline.content_dict(), default=str)), "pool": pool,
            "ood_set": ood_set, "init": init,
            "bc": None if init and not per_run_bc else {k: v for k, v in json.loads(json.dumps(asdict(bc))).items()
                                     if k != "time_limit_s"},
            "policy": None if init and not per_run_bc else json.loads(json.dumps(policy.to_dict()))}
    _check_plan(root, spec, resume)
    root.mkdir(parents=True, exist_ok=True)
    pools = {}
    for d in cfg.distractors or (None,):
        if pool:
            pools[d] = load_pack(pool)
        else:
            key = "default" if d is None else f"d{d}"
            pools[d] = _generate(pool_prompt(prompt, d), cfg.pool_scenes, root / "pools" / key, cfg.pool_seed, cfg,
                                 pipeline, cache_dir, progress)
        if len(pools[d]) < cfg.pool_scenes and not pool:
            raise ConfigError(f"pool {pools[d].root} has {len(pools[d])} scenes, the ablation needs {cfg.pool_scenes}")
    ood = _ood_set(prompt, root, cfg, ood_set, pipeline, cache_dir, progress)
    if not per_run_bc:
        init = init or _bc_init(prompt, root, cfg, bc, policy, pipeline, cache_dir, deadline, progress)
        if init is None:
            return None
    bc_spec = {"demos": cfg.bc_demos, "demo_seed": cfg.bc_seed, "workers": runner.eval_workers, "cameras": cfg.cameras,
               "config": bc, "policy": policy} if per_run_bc else {}
    ood_ids = {c["scene_id"] for c in ood.configurations}
    named = {"OOD set": ood_ids, **{f"pool {p.root}": set(p.scene_ids) for p in pools.values()}}
    if (root / "bc" / "pack").is_dir():
        named["BC base pack"] = set(load_pack(root / "bc" / "pack").scene_ids)
    _check_disjoint(named)
    cuda = str(bc.device if per_run_bc else ppo.device).startswith("cuda")
    frac = (runner.gpu_fraction or 1.0 / runner.concurrent) if cuda else 0.0
    tasks, plan_arms = [], {}
    scenes = {d: {s: p.scene(s) for s in p.scene_ids} for d, p in pools.items()}
    for arm in arms(cfg):
        pk, sc = pools[arm.distractors], scenes[arm.distractors]
        ids = training_ids(nested_order(pk.scene_ids, cfg.pool_seed), sc, arm)
        cats = sorted({o.category for s in ids for o in sc[s].graph.objects()})
        id_set = _id_set(root, pk, ids, cfg)
        knobs = {"n": arm.n, "distractors": arm.distractors, "instances": arm.instances, "layouts": arm.layouts,
                 "dr": arm.dr}
        plan_arms[arm.name] = {**knobs, "pool": str(pk.root), "scene_ids": ids, "id_set": id_set}
        for s in range(cfg.seeds):
            tasks.append(ArmTask(
                arm.name, s, str(root / "runs" / arm.name / f"seed-{s}"), str(pk.root), tuple(ids), str(init or ""),
                id_set, str(ood.root), {**asdict(ppo), "seed": s, "total_env_steps": cfg.budget_env_steps},
                arm.dr, cfg.max_episode_steps, cfg.image_size, tuple(cats), runner.env_backend, runner.eval_workers,
                runner.eval_device, frac, deadline, True, knobs, cfg.learner, bc_spec))
    doc = {"spec": spec, "init": None if per_run_bc else str(init),
           "ood_set": {"path": str(ood.root), "content_hash": ood.content_hash},
           "arms": plan_arms}
    write_atomic(root / "plan.json", json.dumps(doc, indent=1, default=str), error=ConfigError)
    return tasks


def run_ablation(prompt: str, out: str | os.PathLike, cfg: AblationConfig | None = None, *,
                 runner: RunnerConfig | None = None, progress: bool = True, **plan_kw: Any) -> dict:
    """Plan the ablation, run every arm and seed not finished yet, and write the results.

    Args:
        prompt: the task in English.
        out: the ablation's folder.
        cfg: what to compare (see :class:`AblationConfig`).
        runner: how to run it (see :class:`RunnerConfig`).
        progress: progress bars while generating and training BC.
        **plan_kw: :func:`plan_ablation`'s keywords (``ppo``, ``bc``, ``policy``, ``pipeline``, ``pool``,
            ``ood_set``, ``init``, ``cache_dir``, ``resume``).

    Returns:
        The results (:func:`rl.ablate_report.collect`), with ``complete`` False while runs remain.

    Raises:
        AblationError: some runs failed (each with its error; finished runs are kept, ``--resume`` retries).

    """
    from rl.ablate_report import collect, write_results

    cfg, runner = cfg or AblationConfig(), runner or RunnerConfig()
    deadline = time.time() + runner.time_budget_s if runner.time_budget_s else None
    tasks = plan_ablation(prompt, out, cfg, runner=runner, progress=progress, deadline=deadline, **plan_kw)
    if tasks is None:
        return {"complete": False, "note": "stopped at the time budget while training the BC initialisation"}
    num_envs = int(tasks[0].ppo["num_envs"]) if tasks else 1
    cpus = runner.cpus_per_arm or (max(num_envs if runner.env_backend == "async" else 1, runner.eval_workers) + 1)
    t0 = time.perf_counter()
    outcomes = dispatch(tasks, backend=runner.backend, concurrent=runner.concurrent, cpus_per_task=cpus,
                        ray_address=runner.ray_address, deadline=deadline)
    results = collect(Path(out), outcomes)
    results["runner"] = {**asdict(runner), "cpus_per_arm": cpus, "wall_seconds": round(time.perf_counter() - t0, 2)}
    write_results(Path(out), results)
    failed = [o for o in outcomes if o.get("status") == "failed"]
    if failed:
        raise AblationError(f"{len(failed)} of {len(outcomes)} runs failed (first: {failed[0]['arm']} seed "
                            f"{failed[0]['seed']}: {failed[0]['error']}); the others are kept in {out}: fix and "
                            "rerun with --resume")
    return results
