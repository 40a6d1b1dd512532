"""Behaviour-cloning data scaling: FlowVLA success after 50 / 100 / 200 / 400 expert episodes (-> bc_scaling.json).

Run this line until it prints ``all stages done`` (each call stops within ``--budget`` seconds and
the next call resumes: finished stages are skipped, a training run continues from its checkpoint)::

    PYTHONUNBUFFERED=1 python benchmarks/bc_scaling.py --work out/bc_scaling --device cuda --budget 540

CPU smoke test at tiny sizes (minutes)::

    python benchmarks/bc_scaling.py --work /tmp/bc_tiny --tiny --out /tmp/bc_tiny/bc_scaling.json

Per prompt (``--prompts``: a banana-in-the-bowl prompt and a multi-object one):

1. ``pack``: a training pool of ``--pool-scenes`` scenes (seed 0) and ``--held-scenes`` held-out scenes of the
   same prompt (seed 1); cheap CoACD settings, QA off (the expert's failures are counted while recording).
2. ``demos``: ``max(--episodes)`` successful scripted-expert episodes over the pool (``record_demos``, in
   ``--workers`` processes); each size N trains on the first N episodes of this one dataset.
3. ``bc_N``: ``train_bc`` for ``--steps`` steps (resumed across calls; its samples/s is the training throughput).
4. ``eval_N``: the policy on the pool's scenes (``--eval-episodes``, scenes in turn) and on the held-out scenes
   (``--held-episodes``), through ``rl.evaluate`` (the code of ``scenegen eval``).

Nothing is tuned on the held-out scenes: they are only evaluated. Success rates carry 95% Wilson intervals
and episode counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from _bench import Bench, OutOfTime

PROMPTS = ("put the banana in the bowl", "put the apple and the banana in the bowl")


def slug(text: str) -> str:
    return "_".join(text.split())[:60]


def make_packs(b: Bench, prompt: str) -> dict:
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig, generate

    cfg = PipelineConfig(collision=CollisionConfig.fast(), preview_size=0, workers=b.args.workers)
    out = {}
    for which, n, seed in (("pool", b.args.pool_scenes, 0), ("held", b.args.held_scenes, 1)):
        pk = generate(prompt, n, b.work / slug(prompt) / which, seed=seed, config=cfg, cache_dir=b.work / "cache",
                      progress=False)
        out[which] = {"path": str(pk.root), "scenes": len(pk.scene_ids)}
    return out


def record(b: Bench, prompt: str, packs: dict) -> dict:
    from rl.data.demos import record_demos

    n = max(b.args.episodes)
    out = b.work / slug(prompt) / "demos"
    s = record_demos(packs["pool"]["path"], n, str(out), image_size=b.args.image_size, cameras=b.args.cameras,
                     max_steps=b.args.max_steps, overwrite=True, progress=False, workers=b.args.workers,
                     max_attempts=3 * n + 20, randomize=b.args.randomize)
    return {"path": str(out), "randomized": b.args.randomize, "saved": s["saved"], "frames": s["frames"],
            "attempts": s["attempts"],
            "expert_success": s["saved"] / s["attempts"], "failures": s["failures"]}


def train(b: Bench, demos: dict, n: int, run: Path) -> dict | None:
    return train_for(b.args, demos, n, str(run), max(1.0, b.left() - 30))


def train_for(a: argparse.Namespace, demos: dict, n: int, run_dir: str, time_limit_s: float) -> dict | None:
    """One size's BC run (resumed from its checkpoint), stopping after ``time_limit_s``; None if unfinished."""
    from rl.bc import BCConfig, train_bc
    from rl.policies.configuration_flow_vla import FlowVLAConfig, VisionConfig

    run = Path(run_dir)
    pcfg = FlowVLAConfig(d_model=a.d_model, chunk_size=a.chunk, n_action_steps=a.action_steps,
                         vision=VisionConfig(channels=(16, 32) if a.tiny else (32, 64, 128, 128)),
                         obs_layers=1 if a.tiny else 2, expert_layers=1 if a.tiny else 4)
    cfg = BCConfig(steps=a.steps, batch_size=a.batch_size, episodes=n, device=a.device, warmup_steps=min(500,
                   a.steps // 10), checkpoint_every=max(1, a.steps // 5), log_every=max(1, a.steps // 50),
                   time_limit_s=time_limit_s)
    resume = (run / "run.json").is_file()
    s = train_bc(demos["path"], run, pcfg, cfg, resume=resume, progress=False)
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    print(f"  step {s['steps']}/{a.steps} loss {s['loss_last']:.4f} {s['samples_per_s']:.0f} samples/s", flush=True)
    if not s["done"]:
        return None
    rates = [x["samples_per_s"] for x in lines if x["kind"] == "train"]
    return {"steps": s["steps"], "loss_last": s["loss_last"], "samples_per_s_last_call": s["samples_per_s"],
            "samples_per_s_median": sorted(rates)[len(rates) // 2], "episodes": s["episodes"], "frames": s["frames"],
            "parameters": s["parameters"], "device": s["device"], "run": str(run)}


def train_parallel(b: Bench, s: str, demos: dict) -> None:
    """Train every unfinished size at once, one process each (small models leave the GPU mostly idle)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    todo = [n for n in sorted(b.args.episodes) if f"{s}/bc_{n}" not in b.state["done"]]
    if not todo:
        return
    if b.left() < 60:
        raise OutOfTime(f"{s}/bc_{todo[0]}")
    limit = max(1.0, b.left() - (30 if b.args.skip_eval else 150))  # leave room for an evaluation stage
    print(f"[{time.strftime('%H:%M:%S')}] training sizes {todo} in parallel for up to {limit:.0f} s", flush=True)
    t = time.monotonic()
    with ProcessPoolExecutor(len(todo), mp_context=mp.get_context("spawn")) as ex:
        futs = {n: ex.submit(train_for, b.args, demos, n, str(b.work / s / f"bc_{n}"), limit) for n in todo}
        outs = {n: f.result() for n, f in futs.items()}
    for n, out in outs.items():
        if out is not None:
            b.state["done"][f"{s}/bc_{n}"] = {**out, "stage_seconds": round(time.monotonic() - t, 1),
                                              "trained_in_parallel_with": todo}
    b.save()
    if any(out is None for out in outs.values()):
        raise OutOfTime(f"{s}/bc (parallel)")


def evaluate_run(b: Bench, run: str, packs: dict) -> dict:
    from rl.evaluate import evaluate

    out = {}
    for which, n in (("pool", b.args.eval_episodes), ("held", b.args.held_episodes)):
        rep = evaluate(run, packs[which]["path"], n, workers=b.args.workers, device=b.args.device)
        out[which] = {k: rep[k] for k in ("success_rate", "success_ci95", "successes", "episodes", "progress",
                                          "progress_ci95", "failures", "seconds")}
        print(f"  {which}: {rep['successes']}/{rep['episodes']} = {rep['success_rate']:.3f} {rep['success_ci95']}",
              flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default="out/bc_scaling")
    p.add_argument("--out", default=str(Path(__file__).with_name("bc_scaling.json")))
    p.add_argument("--device", default="auto")
    p.add_argument("--budget", type=float, default=540.0, help="Seconds this call may run.")
    p.add_argument("--prompts", nargs="+", default=list(PROMPTS))
    p.add_argument("--episodes", type=int, nargs="+", default=[50, 100, 200, 400])
    p.add_argument("--pool-scenes", type=int, default=40)
    p.add_argument("--held-scenes", type=int, default=20)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--chunk", type=int, default=16)
    p.add_argument("--action-steps", type=int, default=8)
    p.add_argument("--image-size", type=int, default=96)
    p.add_argument("--cameras", default="front,wrist")
    p.add_argument("--max-steps", type=int, default=300)
    p.add_argument("--eval-episodes", type=int, default=100)
    p.add_argument("--held-episodes", type=int, default=40)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--parallel-train", action="store_true",
                   help="Train the sizes at once, one process each (samples/s is then per process, shared GPU).")
    p.add_argument("--randomize", action="store_true", help="Record the demonstrations under the env's default DR.")
    p.add_argument("--skip-eval", action="store_true", help="Train only (checkpoints are scored elsewhere).")
    p.add_argument("--tiny", action="store_true", help="CPU smoke test: tiny packs, model and runs.")
    a = p.parse_args()
    if a.tiny:
        a.prompts, a.episodes, a.pool_scenes, a.held_scenes = a.prompts[:1], [2, 4], 2, 2
        a.steps, a.batch_size, a.d_model, a.chunk, a.action_steps = 20, 8, 32, 4, 4
        a.image_size, a.cameras, a.max_steps, a.eval_episodes, a.held_episodes = 32, "front", 200, 2, 2
        a.workers = min(a.workers, 2)
    a.cameras = tuple(c for c in a.cameras.split(",") if c)
    import torch

    from rl.bc import pick_device

    a.device = pick_device(a.device)
    if a.device in ("auto", "cpu") and not torch.cuda.is_available():
        torch.set_num_threads(1 if a.tiny else torch.get_num_threads())
    b = Bench(a, timing_key="stage_seconds", none_unfinished=True, echo=False)
    try:
        results = {}
        for prompt in a.prompts:
            s = slug(prompt)
            packs = b.stage(f"{s}/pack", lambda prompt=prompt: make_packs(b, prompt), need=120)
            demos = b.stage(f"{s}/demos", lambda prompt=prompt, packs=packs: record(b, prompt, packs), need=200)
            rows = {}
            if a.parallel_train:
                train_parallel(b, s, demos)
            for n in sorted(a.episodes):
                run = b.work / s / f"bc_{n}"
                tr = b.stage(f"{s}/bc_{n}", lambda n=n, run=run, demos=demos: train(b, demos, n, run), need=60)
                ev = None if a.skip_eval else b.stage(f"{s}/eval_{n}", lambda tr=tr, packs=packs: evaluate_run(
                    b, tr["run"], packs), need=120)
                rows[str(n)] = {"train": tr, "eval": ev}
            results[prompt] = {"packs": packs, "demos": demos, "by_episodes": rows}
    except OutOfTime as stop:
        print(f"out of time before {stop}; run the same command again to resume", flush=True)
        return
    import torch

    report = {"benchmark": "bc_scaling", "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
              "python": platform.python_version(), "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
              "settings": {k: v for k, v in vars(a).items() if k not in ("work", "out")}, "results": results}
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(f"all stages done -> {a.out}", flush=True)


if __name__ == "__main__":
    main()
