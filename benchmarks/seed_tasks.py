"""Seed-task benchmark: the blog's three tasks, tier by tier, with the scripted expert (issue 19).

For each task family of ``assets/tasks/`` (``flip_mugs``, ``bottles_in_bin``, ``sort_from_tote``)
and each tier, a pack of ``--n`` scenes is generated with QA (every default check but
``feasibility``: that check runs the expert, so leaving it out keeps the expert's results on the
accepted scenes an independent measurement) and the scripted expert runs one episode on every
accepted scene. Per task and tier it records:

- ``accepted / attempts``: scenes that passed QA (without feasibility) over the graphs tried;
- ``progress``: the expert's task progress (``info["progress"]``, the blog's definition), mean and
  bootstrap 95% interval;
- ``success``: episodes with progress 1, rate and Wilson 95% interval (the share of accepted
  scenes the feasibility check would keep, so full-QA acceptance ~= accepted / attempts x success);
- ``steps``: episode length (mean, and mean over successes), under a budget of
  ``max(400, --steps-per-goal x goals)`` steps for the pack's largest task, a flip counting as two goals
  (:data:`scenegen.tasks.config.GOAL_WEIGHTS`), which the env scales once more per four goals begun
  (:func:`~scenegen.tasks.config.episode_budget`: each row's ``limit`` is the episode's own);
- ``failures``: the expert's failure kinds.

Results go to ``benchmarks/seed_tasks.json`` after every cell, keyed ``ROBOT/TASK/tier-K``; a rerun
skips cells already measured with the same ``--n`` and ``--seed`` (and resumes half-generated packs
under ``--work``), so an interrupted run picks up where it stopped. ``--robot`` runs the tiers with
another registered robot (a two-arm one, when registered), recorded beside the single-arm cells.

    .venv/bin/python benchmarks/seed_tasks.py --n 5 --work /tmp/seed_bench
    .venv/bin/python benchmarks/seed_tasks.py --tasks bottles_in_bin --tiers 1-2 --n 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # the qa package, not this folder

from qa.config import DEFAULT_CHECKS, QAConfig  # noqa: E402
from qa.loop import generate_with_qa  # noqa: E402
from rl.evalset_tiers import parse_tiers  # noqa: E402
from rl.stats import bootstrap_ci, wilson_interval  # noqa: E402
from scenegen.design.families import families  # noqa: E402
from scenegen.errors import ScenegenError  # noqa: E402
from scenegen.fileio import write_atomic  # noqa: E402
from scenegen.layout.compose import SceneConfig  # noqa: E402
from scenegen.pack.reader import load_pack  # noqa: E402
from scenegen.pipeline import PipelineConfig  # noqa: E402

QA = QAConfig(checks=tuple(c for c in DEFAULT_CHECKS if c != "feasibility"))
MIN_STEPS = 400
"""Least episode budget (QA's feasibility check runs the expert for 400 steps)."""


def _r(x: float, d: int = 3) -> float:
    return round(float(x), d)


def measure(pack_dir: Path, steps_per_goal: int, seed: int) -> dict:
    """One expert episode on every scene of a pack: progress, success, steps, failures."""
    from rl.envs import PickPlaceEnv
    from scenegen.tasks.config import goal_units
    from scenegen.tasks.expert import rollout

    pack = load_pack(pack_dir)
    if not len(pack):
        return {"scenes": 0}
    goals = max(goal_units(pack.scene(s).graph.goals) for s in pack.scene_ids)
    budget = max(MIN_STEPS, steps_per_goal * goals)
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=budget)
    rows = []
    try:
        for sid in pack.scene_ids:
            res, _ = rollout(env, seed=seed, options={"scene_id": sid})
            rows.append({"scene": sid[:12], "goals": len(pack.scene(sid).graph.goals), "progress": _r(res.progress),
                         "success": bool(res.success), "steps": int(res.steps), "limit": int(env.episode.step_limit),
                         "failure": res.failure})
    finally:
        env.close()
    prog = [r["progress"] for r in rows]
    wins = sum(r["success"] for r in rows)
    failures: dict[str, int] = {}
    for r in rows:
        if not r["success"]:
            key = re.sub(r"\b[a-z_]+_\d+\b", "X", str(r["failure"]))
            key = re.sub(r"\d+(\.\d+)?", "N", key)[:80]
            failures[key] = failures.get(key, 0) + 1
    lo, hi = bootstrap_ci(prog, seed=seed)
    slo, shi = wilson_interval(wins, len(rows))
    won = [r["steps"] for r in rows if r["success"]]
    return {"scenes": len(rows), "step_budget": budget,
            "progress": {"mean": _r(statistics.fmean(prog)), "ci95": [_r(lo), _r(hi)]},
            "success": {"count": wins, "rate": _r(wins / len(rows)), "ci95": [_r(slo), _r(shi)]},
            "steps": {"mean": _r(statistics.fmean(r["steps"] for r in rows), 1),
                      "mean_success": _r(statistics.fmean(won), 1) if won else None},
            "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1])), "rows": rows}


def run_cell(task: str, tier: int, args: argparse.Namespace, cache: Path) -> dict:
    """Generate one tier's pack (QA without feasibility) and measure the expert on it."""
    out = args.work / args.robot / task / f"tier-{tier}"
    cfg = PipelineConfig(preview_size=0, attempts_per_scene=args.attempts_per_scene, time_budget_s=args.budget,
                         tier=tier, scene=replace(SceneConfig(), robot=args.robot))
    t0 = time.perf_counter()
    try:
        run = generate_with_qa(task, args.n, out, seed=args.seed, config=cfg, qa_cfg=QA, cache_dir=cache,
                               progress=False)
    except ScenegenError as exc:
        return {"refused": f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}",
                "seconds": _r(time.perf_counter() - t0, 1)}
    row: dict = {"accepted": run.accepted, "attempts": run.attempts,
                 "generation_s": _r(time.perf_counter() - t0, 1),
                 "rejections": dict(sorted(run.reasons.items(), key=lambda kv: -kv[1])[:6])}
    if run.accepted:
        row.update(measure(out, args.steps_per_goal, args.seed))
    row["seconds"] = _r(time.perf_counter() - t0, 1)
    return row


def table(results: dict) -> str:
    """The results as a markdown table."""
    lines = ["| robot / task / tier | accepted / attempts | progress (95% CI) | success (95% CI) | steps |",
             "|---|---|---|---|---|"]
    for key, r in results.items():
        if "refused" in r:
            lines.append(f"| {key} | refused: {r['refused'][:90]} | - | - | - |")
        elif not r.get("scenes"):
            lines.append(f"| {key} | {r['accepted']} / {r['attempts']} | - | - | - |")
        else:
            p, s = r["progress"], r["success"]
            lines.append(f"| {key} | {r['accepted']} / {r['attempts']} | {p['mean']:.2f} [{p['ci95'][0]:.2f}, "
                         f"{p['ci95'][1]:.2f}] | {s['count']}/{r['scenes']} = {s['rate']:.2f} [{s['ci95'][0]:.2f}, "
                         f"{s['ci95'][1]:.2f}] | {r['steps']['mean']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50, help="scenes per task and tier")
    ap.add_argument("--tasks", default="", help="comma-separated task families (default: every family)")
    ap.add_argument("--tiers", default="1-5", help="tiers, e.g. 1-5 or 1,3")
    ap.add_argument("--robot", default="panda", help="registered robot (e.g. a two-arm one)")
    ap.add_argument("--seed", type=int, default=0, help="generation and episode seed")
    ap.add_argument("--work", type=Path, default=Path("/tmp/seed_tasks_bench"), help="packs (resumed)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="asset cache (default: the user cache)")
    ap.add_argument("--budget", type=float, default=1800.0, help="generation seconds per task and tier")
    ap.add_argument("--attempts-per-scene", type=float, default=3.0, help="graph budget per wanted scene")
    ap.add_argument("--steps-per-goal", type=int, default=150, help="expert step budget per goal (at least 400)")
    ap.add_argument("--out", type=Path, default=HERE / "seed_tasks.json")
    ap.add_argument("--cell-workers", type=int, default=1,
                    help="cells (task x tier) measured at a time, one process each (e.g. 14 on a 16-core machine)")
    args = ap.parse_args(argv)
    fams = families()
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] or sorted(fams)
    unknown = [t for t in tasks if t not in fams]
    if unknown:
        sys.exit(f"unknown task family {unknown[0]!r}; use {', '.join(sorted(fams))}")
    tiers = parse_tiers(args.tiers)
    args.work.mkdir(parents=True, exist_ok=True)
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results: dict = data.get("results", {})
    t0 = time.time()
    todo = []
    for task in tasks:
        for tier in tiers:
            key = f"{args.robot}/{task}/tier-{tier}"
            old = results.get(key)
            if old and old.get("n") == args.n and old.get("seed") == args.seed and "refused" not in old:
                print(f"{key}: measured already, skipped", flush=True)
                continue
            todo.append((task, tier))

    def record(task: str, tier: int, row: dict) -> None:
        key = f"{args.robot}/{task}/tier-{tier}"
        results[key] = {"n": args.n, "seed": args.seed, "task": task, "tier": tier, "robot": args.robot,
                        "recipe": fams[task].tier(tier).to_dict(), **row}
        print(f"{key}: {json.dumps({k: v for k, v in row.items() if k != 'rows'})}", flush=True)
        doc = {**data, "qa_checks": list(QA.checks), "steps_per_goal": args.steps_per_goal,
               "min_steps": MIN_STEPS, "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                   "platform": platform.platform()},
               "date": time.strftime("%Y-%m-%d"), "seconds_last_run": _r(time.time() - t0, 1),
               "results": dict(sorted(results.items()))}
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n")

    if args.cell_workers > 1 and len(todo) > 1:  # the costliest cells (highest tiers) first
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        todo.sort(key=lambda c: -c[1])
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(args.cell_workers, len(todo)), mp_context=ctx) as ex:
            futs = {ex.submit(run_cell, task, tier, args, args.cache_dir): (task, tier) for task, tier in todo}
            for f in as_completed(futs):
                record(*futs[f], f.result())
    else:
        for task, tier in todo:
            record(task, tier, run_cell(task, tier, args, args.cache_dir))
    print(table({k: v for k, v in sorted(results.items()) if v.get("robot") == args.robot}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
