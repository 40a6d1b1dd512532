"""Task benchmark: is every accepted scene a true, solvable task that the camera sees? (issue 13)

For each prompt of a fixed list (every prompt of issue 13 among them) a small pack is generated
with QA (every default check but ``feasibility``, which runs the expert: leaving it out keeps the
expert's success on accepted scenes an independent measurement), then every accepted scene is
reset in the env and measured:

- ``accepted / attempts``: scenes that passed QA over the designed graphs tried;
- ``expert``: successes of the scripted expert (one episode per scene, 400 steps) on them;
- ``held_at_reset``: scenes in which a goal already holds right after reset (must be 0);
- ``min_target_px``: the smallest goal subject's pixel count in the 128 x 128 front image;
- ``instructions``: mean instructions per scene (the prompt and its paraphrases).

A prompt the designer refuses (an impossible pairing) is recorded with its one-line error.

    .venv/bin/python benchmarks/tasks.py --n 5 --work /tmp/tasks_bench

Writes ``benchmarks/tasks.json`` and prints a markdown table.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the project's qa package, not this folder (and importable when run as a script from anywhere)
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() not in (HERE, ROOT))]

from qa.checks._common import task_nodes  # noqa: E402
from qa.config import DEFAULT_CHECKS, QAConfig  # noqa: E402
from qa.loop import generate_with_qa  # noqa: E402
from scenegen.errors import ScenegenError  # noqa: E402
from scenegen.pack.reader import load_pack  # noqa: E402
from scenegen.pipeline import PipelineConfig  # noqa: E402

ISSUE_PROMPTS = (
    "put the spoon and the fork in the mug",
    "put the red block to the left of the blue block",
    "place the marker in front of the mug",
    "put the small green cup next to the big yellow bowl",
    "put the apple behind the bowl on a cluttered table",
    "put the screwdriver in the basket",
    "flip the mug upright",
    "put the plate in the cup",
    "put the toy car in the box",
    "put the spatula on the pan",
)
"""Every prompt issue 13 names."""
MORE_PROMPTS = (
    "put the banana in the bowl",
    "put the apple on the plate",
    "stack the red block on the blue block",
    "put the peach in the bowl",
    "put the knife on the cutting board",
    "put the egg in the bowl",
    "put the phone next to the remote",
    "put the lemon in the colander",
    "put the marker in the mug",
    "put the tennis ball in the basket",
    "move the can to the right of the bottle",
    "put the kettle behind the teapot",
)
PROMPTS = ISSUE_PROMPTS + MORE_PROMPTS
QA = QAConfig(checks=tuple(c for c in DEFAULT_CHECKS if c != "feasibility"))


def slug(prompt: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", prompt.lower()).strip("_")[:48]


def measure(pack_dir: Path) -> dict:
    """Reset every scene of a pack in the env, count pixels and goals, run the expert once."""
    from rl.envs import PickPlaceEnv
    from scenegen.sim.camera import render_camera
    from scenegen.tasks.expert import rollout

    pack = load_pack(pack_dir)
    if not len(pack):
        return {"scenes": 0}
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=400)
    rows = []
    try:
        for sid in pack.scene_ids:
            _, info = env.reset(seed=0, options={"scene_id": sid})
            held = any(info["goals"])
            _, _, seg = render_camera(env.world, "front", 128, 128)
            targets, _ = task_nodes(env.world.scene)
            px = {n: int(env.world.node_mask(seg, n).sum()) for n in targets}
            res, _ = rollout(env, seed=0, options={"scene_id": sid})
            rows.append({"scene": sid[:12], "held_at_reset": held, "target_px": px, "success": res.success,
                         "failure": res.failure, "steps": res.steps,
                         "instructions": len(env.world.scene.graph.instructions) or 1})
    finally:
        env.close()
    failures: dict[str, int] = {}
    for r in rows:
        if not r["success"]:
            key = re.sub(r"\b[a-z_]+_\d+\b", "X", str(r["failure"]))[:80]
            failures[key] = failures.get(key, 0) + 1
    return {"scenes": len(rows), "expert_success": sum(r["success"] for r in rows),
            "held_at_reset": sum(r["held_at_reset"] for r in rows),
            "min_target_px": min(min(r["target_px"].values(), default=0) for r in rows),
            "median_target_px": statistics.median(v for r in rows for v in r["target_px"].values()),
            "instructions_mean": round(statistics.fmean(r["instructions"] for r in rows), 2),
            "expert_failures": failures, "rows": rows}


def run_prompt(prompt: str, n: int, work: Path, cache: Path, budget: float, seed: int = 0) -> dict:
    out = work / slug(prompt)
    cfg = PipelineConfig(preview_size=0, attempts_per_scene=3.0, time_budget_s=budget)
    t0 = time.perf_counter()
    try:
        run = generate_with_qa(prompt, n, out, seed=seed, config=cfg, qa_cfg=QA, cache_dir=cache, progress=False)
    except ScenegenError as exc:
        return {"refused": f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}",
                "seconds": round(time.perf_counter() - t0, 1)}
    gen = time.perf_counter() - t0
    out_row = {"accepted": run.accepted, "attempts": run.attempts, "generation_s": round(gen, 1),
               "rejections": dict(sorted(run.reasons.items(), key=lambda kv: -kv[1])[:6])}
    if run.accepted:
        out_row.update(measure(out))
    out_row["seconds"] = round(time.perf_counter() - t0, 1)
    return out_row


def table(results: dict) -> str:
    lines = ["| prompt | accepted / attempts | expert success | goal held at reset | smallest target px "
             "| instructions / scene |", "|---|---|---|---|---|---|"]
    for prompt, r in results.items():
        if "refused" in r:
            lines.append(f"| {prompt} | refused at design: {r['refused'][:90]} | - | - | - | - |")
            continue
        if not r.get("scenes"):
            lines.append(f"| {prompt} | {r['accepted']} / {r['attempts']} | - | - | - | - |")
            continue
        lines.append(f"| {prompt} | {r['accepted']} / {r['attempts']} | {r['expert_success']} / {r['scenes']} "
                     f"| {r['held_at_reset']} | {r['min_target_px']} | {r['instructions_mean']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5, help="scenes per prompt")
    ap.add_argument("--work", type=Path, default=Path("/tmp/tasks_bench"), help="packs (a new run starts afresh)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="asset cache (default WORK/cache)")
    ap.add_argument("--budget", type=float, default=45.0, help="generation seconds per prompt")
    ap.add_argument("--prompts", type=str, default="", help="comma-separated subset (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="generation seed (another seed: held-out scenes)")
    ap.add_argument("--out", type=Path, default=HERE / "tasks.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cache = args.cache_dir or args.work / "cache"
    prompts = [p.strip() for p in args.prompts.split(",") if p.strip()] or list(PROMPTS)
    t0 = time.time()
    results = {}
    for prompt in prompts:
        results[prompt] = run_prompt(prompt, args.n, args.work, cache, args.budget, args.seed)
        r = results[prompt]
        print(f"{prompt!r}: {json.dumps({k: v for k, v in r.items() if k != 'rows'})}", flush=True)
    measured = [r for r in results.values() if r.get("scenes")]
    data = {"scenes_per_prompt": args.n, "seed": args.seed, "budget_s_per_prompt": args.budget,
            "qa_checks": list(QA.checks),
            "seconds": round(time.time() - t0, 1),
            "totals": {"prompts": len(results), "refused": sum("refused" in r for r in results.values()),
                       "scenes": sum(r["scenes"] for r in measured),
                       "expert_success": sum(r["expert_success"] for r in measured),
                       "held_at_reset": sum(r["held_at_reset"] for r in measured)},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            "date": time.strftime("%Y-%m-%d"), "results": results}
    args.out.write_text(json.dumps(data, indent=1))
    print(table(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
