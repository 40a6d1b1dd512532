"""QA benchmark: pass rate per check and QA cost per scene over a 100-scene pack per prompt.

Each prompt's pack is generated with QA in audit mode (``QAConfig(enforce=False)``): every
check runs on every scene that passes the pipeline's own acceptance test and is recorded in
the scene's ``qa.json``, but QA rejects nothing, so every check's pass rate is measured over
the same scenes. The run is resumable: packs and accumulated counts live in ``--work``;
rerun the same command to continue (``--max-seconds`` bounds one invocation). Writes
``benchmarks/qa.json`` and prints a markdown table.

    .venv/bin/python benchmarks/qa.py --n 100 --work /tmp/qa_bench --max-seconds 540
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
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
# run as a script, this file's folder comes first on sys.path and its name would hide the qa package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

from qa.config import QAConfig  # noqa: E402
from qa.loop import failure_kinds, generate_with_qa  # noqa: E402
from qa.report import check_stats  # noqa: E402
from scenegen.pack.reader import load_pack  # noqa: E402
from scenegen.pipeline import PipelineConfig  # noqa: E402
from scenegen.sim.world import WorldConfig  # noqa: E402

WORLD_FIELDS = {f.name for f in fields(WorldConfig)}

PROMPTS = ("put the banana in the bowl", "stack the red block on the blue block with 3 distractors")


def slug(prompt: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", prompt.lower()).strip("_")[:48]


def advance(prompt: str, n: int, work: Path, cache: Path, workers: int, chunk: int, deadline: float,
            attempts_per_scene: float) -> dict:
    """Grow the prompt's pack towards ``n`` scenes until the deadline; return the accumulated state."""
    out = work / slug(prompt)
    state_path = work / f"{slug(prompt)}.state.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {
        "reasons": {}, "attempts": 0, "seconds": 0.0, "runs": 0}
    have = len(load_pack(out)) if (out / "manifest.json").is_file() else 0
    while have < n and time.time() < deadline - 30:
        target = min(n, have + chunk)
        cfg = PipelineConfig(workers=workers, preview_size=128, attempts_per_scene=attempts_per_scene,
                             time_budget_s=max(30.0, deadline - time.time() - 20))
        if (out / "manifest.json").is_file():  # resume with the physics the pack was started with
            world = load_pack(out).config.get("world", {})
            cfg = replace(cfg, world=WorldConfig(**{k: v for k, v in world.items() if k in WORLD_FIELDS}))
        t0 = time.perf_counter()
        run = generate_with_qa(prompt, target, out, seed=0, config=cfg, qa_cfg=QAConfig(enforce=False),
                               cache_dir=cache, progress=False)
        state["seconds"] += time.perf_counter() - t0
        state["runs"] += 1
        state["attempts"] = run.attempts
        state["reasons"] = dict(Counter(state["reasons"]) + Counter(run.reasons))
        state_path.write_text(json.dumps(state, indent=1))
        print(f"{prompt!r}: {run.accepted}/{n} scenes, {run.attempts} attempts, {state['seconds']:.0f}s", flush=True)
        if run.accepted <= have and not run.complete:
            break
        have = run.accepted
    state["scenes"] = have
    return state


def summarise(prompt: str, work: Path, state: dict) -> dict:
    pack = load_pack(work / slug(prompt))
    records = [q for q in (pack.qa(s) for s in pack.scene_ids) if q]
    costs = sorted(float(q.get("seconds") or 0.0) for q in records)
    fails: Counter = Counter()
    for q in records:
        fails.update(failure_kinds(q))
    all_pass = sum(bool(q.get("qa_passed", q.get("passed"))) for q in records)
    stats = check_stats(records)
    return {
        "scenes": len(records), "attempts": state.get("attempts"),
        "pipeline_rejections": dict(sorted(state.get("reasons", {}).items(), key=lambda kv: -kv[1])),
        "generation_seconds": round(state.get("seconds", 0.0), 1),
        "pass_all_checks": round(all_pass / len(records), 4) if records else None,
        "qa_cost_per_scene_s": {"mean": round(statistics.fmean(costs), 4) if costs else None,
                                "median": round(statistics.median(costs), 4) if costs else None,
                                "p90": round(costs[int(0.9 * (len(costs) - 1))], 4) if costs else None},
        "checks": {k: {"pass_rate": v["pass_rate"], "passed": v["passed"], "failed": v["failed"],
                       "skipped": v["skipped"], "seconds_mean": v["seconds_mean"]} for k, v in stats.items()},
        "failures": dict(fails.most_common()),
    }


def table(results: dict) -> str:
    names = []
    for r in results.values():
        names += [n for n in r["checks"] if n not in names]
    head = "| check | " + " | ".join(f"{p} (pass / s)" for p in results) + " |"
    lines = [head, "|---" * (len(results) + 1) + "|"]
    for n in names:
        cells = []
        for r in results.values():
            c = r["checks"].get(n)
            if c is None:
                cells.append("-")
                continue
            rate = "skipped" if c["pass_rate"] is None else f"{c['pass_rate']:.0%}"
            cells.append(f"{rate} / {c['seconds_mean']:.3f}")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("| all checks | " + " | ".join(
        f"{r['pass_all_checks']:.0%} / {r['qa_cost_per_scene_s']['mean']:.3f}" for r in results.values()) + " |")
    lines.append("| scenes | " + " | ".join(str(r["scenes"]) for r in results.values()) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100, help="scenes per prompt")
    ap.add_argument("--work", type=Path, default=Path("/tmp/qa_bench"), help="packs and state (resumable)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="asset cache (default WORK/cache)")
    ap.add_argument("--workers", type=int, default=1, help="pipeline workers (>1: see the note in docs/qa.md)")
    ap.add_argument("--chunk", type=int, default=10, help="scenes added per pipeline run")
    ap.add_argument("--attempts-per-scene", type=float, default=6.0, help="pipeline attempt budget per scene")
    ap.add_argument("--max-seconds", type=float, default=3600.0, help="wall budget of this invocation")
    ap.add_argument("--out", type=Path, default=HERE / "qa.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cache = args.cache_dir or args.work / "cache"
    deadline = time.time() + args.max_seconds
    states = {p: advance(p, args.n, args.work, cache, args.workers, args.chunk, deadline, args.attempts_per_scene)
              for p in PROMPTS}
    results = {p: summarise(p, args.work, s) for p, s in states.items()
               if (args.work / slug(p) / "manifest.json").is_file()}
    done = len(results) == len(PROMPTS) and all(r["scenes"] >= args.n for r in results.values())
    data = {"complete": done, "scenes_per_prompt": args.n, "qa_config": QAConfig(enforce=False).to_dict(),
            "pipeline_config": PipelineConfig(workers=args.workers, preview_size=128,
                                              attempts_per_scene=args.attempts_per_scene).content_dict(),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            "date": time.strftime("%Y-%m-%d"), "results": results}
    args.out.write_text(json.dumps(data, indent=1))
    print(table(results))
    print(f"{'complete' if done else 'INCOMPLETE: rerun to continue'}; wrote {args.out}")


if __name__ == "__main__":
    main()
