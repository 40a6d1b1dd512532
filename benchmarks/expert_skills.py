"""The scripted expert's success per prompt on raw generated scenes (no QA), with Wilson 95% intervals.

For each ``--prompt``, :func:`scenegen.pipeline.generate` makes ``-n`` settled scenes (layout and
physics accepted, no QA: the expert is what is measured) into ``--work/<prompt>`` (an existing pack
of the same prompt, seed and config there is reused), then the expert runs one episode of at most
``--max-steps`` steps on every scene (reset seed 0). Each prompt's row (success, Wilson interval,
failure kinds, per-scene results and the command that made it) replaces that prompt's row in the
``--out`` JSON list, so one file holds rows made by several commands.

    .venv/bin/python benchmarks/expert_skills.py --prompt "flip the mug upright" -n 24 --seed 11
    .venv/bin/python benchmarks/expert_skills.py --prompt "put the banana in the bowl" -n 12 --seed 11
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(prompt: str, n: int, seed: int, work: Path, max_steps: int) -> dict:
    """Generate (or reuse) ``n`` raw scenes of ``prompt`` and run the expert once on each.

    Returns:
        ``{"prompt", "scenes", "success", "success_ci95", "failures", "mean_steps", "rows", ...}``.

    """
    from rl.stats import wilson_interval
    from scenegen.pipeline import generate
    from scenegen.tasks.config import EpisodeConfig
    from scenegen.tasks.episode import TaskEpisode
    from scenegen.tasks.expert import make_expert, rollout

    t0 = time.monotonic()
    pack = generate(prompt, n, work, seed=seed, progress=False)
    env = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=max_steps))
    rows = []
    try:
        for sid in pack.scene_ids:
            t = time.monotonic()
            res, _ = rollout(env, make_expert(env), seed=0, options={"scene_id": sid})
            rows.append({"scene": sid[:12], "success": bool(res.success), "progress": round(float(res.progress), 4),
                         "steps": int(res.steps), "failure": res.failure, "seconds": round(time.monotonic() - t, 1)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        env.close()
    wins = sum(r["success"] for r in rows)
    fails: dict[str, int] = {}
    for r in rows:
        if not r["success"]:
            kind = re.sub(r"\b[a-z]+(?:_[a-z]+)*_\d+\b", "X", str(r["failure"] or "unfinished"))  # node ids -> X
            fails[kind] = fails.get(kind, 0) + 1
    return {"prompt": prompt, "seed": seed, "max_steps": max_steps, "scenes": len(rows), "successes": wins,
            "success": wins / len(rows), "success_ci95": [round(v, 4) for v in wilson_interval(wins, len(rows))],
            "failures": dict(sorted(fails.items())), "mean_steps": sum(r["steps"] for r in rows) / len(rows),
            "wall_clock_s": round(time.monotonic() - t0, 1), "rows": rows}


def main() -> None:
    """Measure every ``--prompt`` and merge its row into ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompt", action="append", required=True, help="a prompt (repeat for several)")
    ap.add_argument("-n", type=int, default=12, help="scenes per prompt")
    ap.add_argument("--seed", type=int, default=11, help="generation seed")
    ap.add_argument("--max-steps", type=int, default=300, help="episode step budget")
    ap.add_argument("--work", type=Path, default=Path("/tmp/expert_skills"), help="pack folders (reused)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "expert_skills.json")
    args = ap.parse_args()
    if args.n < 1 or args.max_steps < 1:
        print("expert_skills: -n and --max-steps must be at least 1", file=sys.stderr)
        raise SystemExit(2)
    command = ".venv/bin/python benchmarks/expert_skills.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    for prompt in args.prompt:
        slug = "".join(c if c.isalnum() else "_" for c in prompt)[:60]
        row = measure(prompt, args.n, args.seed, args.work / f"{slug}_s{args.seed}_n{args.n}", args.max_steps)
        row = {"command": command, "machine": platform.machine(), "date": time.strftime("%Y-%m-%d"), **row}
        print(prompt, {k: v for k, v in row.items() if k != "rows"}, flush=True)
        rows = [r for r in rows if r.get("prompt") != prompt] + [row]
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
