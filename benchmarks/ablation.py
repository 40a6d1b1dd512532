"""The diversity ablation over N on the GPU machine: ID / OOD success vs N, its cost, the runner's scaling.

Run the same line until it prints ``all stages done`` (each call stops within ``--budget`` seconds; the
next call resumes: finished arms are kept, a running arm resumes from its PPOFlow checkpoint)::

    PYTHONUNBUFFERED=1 python benchmarks/ablation.py --work out/ablation --device cuda --budget 540

Stages (state in ``WORK/state.json``; results in ``--json``, default ``benchmarks/ablation.json``):

1. ``ablation``: ``rl.ablate.run_ablation`` (the code of ``scenegen ablate``) for one prompt, N in
   ``--n`` (1,5,10,25,50), ``--seeds`` training seeds per arm, ``--budget-env-steps`` PPOFlow env
   steps per arm and seed, arms ``--concurrent`` at a time in a local process pool (``--backend``).
   The pool, the OOD set, the BC base pack, its demos and the BC initialisation are made once.
   Per arm: ID and OOD success (95% Wilson over episodes), the gap, env steps, GPU-minutes (wall
   minutes of PPOFlow x the arm's GPU share), evaluation cost; and the paper's shape test.
2. ``scaling_cK`` for each K of ``--scaling`` (1,2): K training-only runs of the N=``--scaling-n`` arm
   (``--scaling-steps`` env steps each, other seeds) K at a time; wall-clock, env steps/s and speedup.

Nothing is tuned on the OOD set: it is only evaluated. Figures are as measured, whatever they show.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _bench import Bench, OutOfTime  # noqa: E402 - after the path set-up


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default="out/ablation", help="Work folder (kept between calls).")
    p.add_argument("--json", default=str(ROOT / "benchmarks" / "ablation.json"), help="Results file.")
    p.add_argument("--budget", type=float, default=540.0, help="Seconds this call may use.")
    p.add_argument("--device", default="cuda")
    p.add_argument("--prompt", default="put the banana in the bowl")
    p.add_argument("--n", default="1,5,10,25,50")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--budget-env-steps", type=int, default=12_000, help="PPOFlow env steps per arm and seed.")
    p.add_argument("--num-envs", type=int, default=6)
    p.add_argument("--decisions-per-env", type=int, default=16)
    p.add_argument("--concurrent", type=int, default=2)
    p.add_argument("--backend", default="process", choices=["sequential", "process", "ray"])
    p.add_argument("--ood-configs", type=int, default=40)
    p.add_argument("--id-configs", type=int, default=30)
    p.add_argument("--max-steps", type=int, default=150, help="Episode length in training and evaluation.")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--bc-scenes", type=int, default=10)
    p.add_argument("--bc-demos", type=int, default=30)
    p.add_argument("--bc-steps", type=int, default=1000)
    p.add_argument("--bc-batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=12, help="Generation workers.")
    p.add_argument("--eval-workers", type=int, default=3, help="Evaluation processes per arm.")
    p.add_argument("--no-qa", action="store_true", help="Skip QA of generated scenes.")
    p.add_argument("--init", default=None, help="A BC run to start every arm from, instead of training one.")
    p.add_argument("--learner", default="ppoflow", choices=["ppoflow", "bc"],
                   help="bc: every run trains BC from scratch on --bc-demos demonstrations of its own scenes.")
    p.add_argument("--cameras", default="front", help="Cameras of the demonstrations (comma list: front,wrist).")
    p.add_argument("--dr", default="on", help="Domain randomization in training, an arm axis: on, off or on,off.")
    p.add_argument("--scaling", default="1,2", help="Concurrency levels of the scaling stage ('' skips it).")
    p.add_argument("--scaling-n", type=int, default=10)
    p.add_argument("--scaling-steps", type=int, default=6000)
    return p.parse_args(argv)


def configs(b: Bench):
    from rl.ablate import AblationConfig
    from rl.bc import BCConfig
    from rl.policies.configuration_flow_vla import FlowVLAConfig
    from rl.ppoflow import PPOFlowConfig
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig

    a = b.args
    cfg = AblationConfig(ns=tuple(int(x) for x in a.n.split(",")), seeds=a.seeds, budget_env_steps=a.budget_env_steps,
                         ood_configs=a.ood_configs, id_configs=a.id_configs, max_episode_steps=a.max_steps,
                         image_size=a.image_size, qa=not a.no_qa, bc_scenes=a.bc_scenes, bc_demos=a.bc_demos,
                         learner=a.learner, cameras=tuple(c for c in a.cameras.split(",") if c),
                         dr=tuple({"on": True, "off": False}[x.strip()] for x in a.dr.split(",")))
    ppo = PPOFlowConfig(num_envs=a.num_envs, decisions_per_env=a.decisions_per_env, k=1, device=a.device)
    bc = BCConfig(steps=a.bc_steps, batch_size=a.bc_batch_size, device=a.device, log_every=100, checkpoint_every=500)
    pipeline = PipelineConfig(collision=CollisionConfig.fast(), preview_size=0, workers=a.workers,
                              time_budget_s=max(60.0, b.left() - 30))
    return cfg, ppo, bc, FlowVLAConfig(), pipeline


def ablation(b: Bench) -> dict:
    from rl.ablate import RunnerConfig, run_ablation
    from scenegen.errors import BudgetError

    a = b.args
    cfg, ppo, bc, policy, pipeline = configs(b)
    left = b.left() - 45  # the last arms' evaluation and the report
    if left < 60:
        raise OutOfTime("ablation")
    runner = RunnerConfig(backend=a.backend, concurrent=a.concurrent, eval_workers=a.eval_workers,
                          workers=a.workers, time_budget_s=left)
    t = time.perf_counter()
    try:
        res = run_ablation(a.prompt, b.work / "abl", cfg, runner=runner, ppo=ppo, bc=bc, policy=policy,
                           pipeline=pipeline, init=a.init, cache_dir=str(b.work / "cache"), resume=True,
                           progress=False)
    except BudgetError as exc:  # generation ran out of this call's time: the next call resumes it
        print(f"  generation stopped: {exc.one_line()[:200]}", flush=True)
        raise OutOfTime("ablation") from None
    finally:
        b.state["ablation_seconds"] = b.state.get("ablation_seconds", 0.0) + time.perf_counter() - t
        b.save()
    if not res.get("complete"):
        from collections import Counter

        print(f"  not complete yet: {res.get('note') or dict(Counter(r['status'] for r in res['runs']))}", flush=True)
        raise OutOfTime("ablation")
    return {"wall_clock_total_s": round(b.state["ablation_seconds"], 1)}


def scaling(b: Bench, k: int) -> dict:
    """``k`` training-only runs of one arm, ``k`` at a time; wall-clock and env steps/s."""
    import dataclasses

    from rl.ablate_arm import ArmTask, dispatch

    a = b.args
    root = b.work / "abl"
    plan = json.loads((root / "plan.json").read_text())
    name, arm = next((n, x) for n, x in plan["arms"].items() if x["n"] == a.scaling_n)
    ood = plan["ood_set"]["path"]
    if b.left() < 120:
        raise OutOfTime(f"scaling_c{k}")
    base = ArmTask(name, 0, "", arm["pool"], tuple(arm["scene_ids"]), plan["init"], arm["id_set"], ood,
                   {**plan["spec"]["ppo"], "total_env_steps": a.scaling_steps}, True, a.max_steps, a.image_size,
                   gpu_fraction=1.0 / k if a.device.startswith("cuda") else 0.0, evaluate=False,
                   deadline=time.time() + b.left() - 30)
    tasks = [dataclasses.replace(base, seed=100 + i, folder=str(b.work / "scaling" / f"c{k}" / f"t{i}"),
                                 ppo={**base.ppo, "seed": 100 + i}) for i in range(k)]
    t = time.perf_counter()
    out = dispatch(tasks, backend=a.backend, concurrent=k,
                   cpus_per_task=a.num_envs + 1, deadline=base.deadline)
    wall = time.perf_counter() - t
    if any(o.get("status") != "trained" for o in out):
        raise RuntimeError(f"scaling_c{k}: {[o.get('status') for o in out]} {[o.get('error') for o in out]}")
    steps = sum(o["train"]["env_steps"] for o in out)
    return {"runs": k, "wall_clock_s": round(wall, 1), "env_steps": steps, "env_steps_per_s": round(steps / wall, 1),
            "per_run_train_s": [o["train"]["train_seconds"] for o in out],
            "peak_gpu_memory_gib": [o["train"]["peak_gpu_memory_gib"] for o in out]}


def machine() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}


def summary(b: Bench) -> dict:
    from rl.ablate_report import collect

    res = collect(b.work / "abl")
    arms = [{"arm": x["arm"], "n": x["knobs"]["n"], "dr": x["knobs"]["dr"], "seeds_done": x["seeds_done"],
             **{k: x[k] for k in ("id", "ood", "gap", "ood_novel_category", "env_steps", "iterations",
                                 "train_seconds", "gpu_minutes", "eval_env_steps", "eval_seconds")}}
            for x in res["arms"]]
    scale = {k: v for k, v in b.state["done"].items() if k.startswith("scaling_c")}
    if "scaling_c1" in scale:
        one = scale["scaling_c1"]["env_steps_per_s"]
        for v in scale.values():
            v["speedup_vs_1"] = round(v["env_steps_per_s"] / one, 2)
    return {"prompt": res["prompt"], "learner": res.get("learner"), "budget": res.get("budget"),
            "budget_env_steps": res["budget_env_steps"], "seeds": res["seeds"],
            "ood_set": res["ood_set"], "complete": res["complete"], "arms": arms, "shape": res["shape"],
            "scaling": scale}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    b = Bench(args, {"calls": []})
    b.state["calls"].append({"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%d %H:%M:%S")})
    stages = [("ablation", lambda: ablation(b))]
    stages += [(f"scaling_c{k}", lambda k=int(k): scaling(b, k)) for k in args.scaling.split(",") if k.strip()]
    try:
        for name, fn in stages:
            if name in b.state["done"]:
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {name} ...", flush=True)
            t = time.perf_counter()
            res = {**fn(), "stage_wall_clock_s": round(time.perf_counter() - t, 1)}
            b.state["done"][name] = res
            b.save()
            print(f"  {name}: {json.dumps(res)[:400]}", flush=True)
    except OutOfTime as exc:
        print(f"out of time in {exc}; run the same command again to resume", flush=True)
        return
    finally:
        b.save()
    out = {"command": "PYTHONUNBUFFERED=1 python benchmarks/ablation.py " + " ".join(sys.argv[1:]),
           "calls": b.state["calls"],
           "date": time.strftime("%Y-%m-%d"), "machine": machine(), "settings": vars(args),
           "stages": b.state["done"], **summary(b)}
    Path(args.json).write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(f"all stages done; results in {args.json} and {b.work / 'abl' / 'results.md'}", flush=True)


if __name__ == "__main__":
    main()
