"""Sort-from-tote: the scripted expert's success and task progress over generated scenes, with 95% intervals.

For each prompt, ``scenegen generate --no-qa`` makes N settled scenes (layout and physics accepted,
no QA: the expert is what is measured), then the expert runs once on each scene
(:func:`scenegen.tasks.expert.run_expert`, its step budget scaled with the number of goals). Success:
Wilson interval; progress (parts in their compartment / parts to sort): bootstrap interval.

    .venv/bin/python benchmarks/sort_expert.py -n 20 --out benchmarks/sort_expert.json

An existing ``--out`` file is merged into: only the prompts run are replaced (each with the command
and date that made it); its other prompts and keys are kept.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPTS = {
    "3 parts": "sort a nut, a bolt and a washer from the tote into the sorter",
    "10 parts": "sort 4 nuts, 3 bolts and 3 washers from the tote into the sorter",
}


def measure(prompt: str, n: int, seed: int, work: Path, max_steps: int) -> dict:
    """Generate ``n`` scenes of ``prompt`` and run the expert on each; the figures and per-scene rows."""
    from rl.stats import bootstrap_ci, wilson_interval
    from scenegen.pack.reader import load_pack
    from scenegen.pipeline import generate
    from scenegen.tasks.expert import run_expert

    t0 = time.monotonic()
    generate(prompt, n, work, seed=seed, progress=False)
    pack = load_pack(work)
    rows = []
    for scene in pack.scenes():
        t = time.monotonic()
        res = run_expert(scene, pack.asset_lookup, max_steps=max_steps, seed=0)
        rows.append({"scene": scene.id[:12], "goals": len(scene.graph.goals), "success": bool(res.success),
                     "progress": round(float(res.progress), 4), "steps": int(res.steps), "failure": res.failure,
                     "seconds": round(time.monotonic() - t, 1)})
        print(json.dumps(rows[-1]), flush=True)
    wins = sum(r["success"] for r in rows)
    prog = [r["progress"] for r in rows]
    return {"prompt": prompt, "scenes": len(rows), "success": wins / len(rows),
            "success_ci95": list(wilson_interval(wins, len(rows))),
            "progress": sum(prog) / len(prog), "progress_ci95": list(bootstrap_ci(prog)),
            "mean_steps": sum(r["steps"] for r in rows) / len(rows),
            "wall_clock_s": round(time.monotonic() - t0, 1), "rows": rows}


def main() -> None:
    """Run every prompt of :data:`PROMPTS` (or the ones named) and merge the results into the JSON file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="scenes per prompt")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=400, help="QA's feasibility budget per 4 goals")
    ap.add_argument("--only", choices=sorted(PROMPTS), action="append", help="run only these prompts")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sort_expert.json")
    args = ap.parse_args()
    out = json.loads(args.out.read_text()) if args.out.exists() else {}
    made = {"command": shlex.join([".venv/bin/python", "benchmarks/sort_expert.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat()}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or PROMPTS:
            res = measure(PROMPTS[name], args.n, args.seed, Path(tmp) / name.replace(" ", "_"), args.max_steps)
            out[name] = {**made, **res}
            print(name, {k: v for k, v in res.items() if k != "rows"}, flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
