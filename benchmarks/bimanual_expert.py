"""The two-arm expert over a pack of ``bimanual_panda`` scenes (-> a JSON summary).

Make the pack with the QA loop, then run the expert once per scene (seed 0)::

    scenegen generate "put the banana in the bowl" -n 24 -o out/bimanual --robot bimanual_panda
    python benchmarks/bimanual_expert.py out/bimanual --out benchmarks/bimanual_expert.json

Reports expert success with its 95% Wilson interval, mean task progress, episode length, which
arm took each goal, and the least distance between the two arms over every episode (the arms are
one PyBullet body whose links do not collide with each other, so the expert must keep them apart).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from rl.stats import wilson_interval
from scenegen.pack.reader import load_pack
from scenegen.tasks.bimanual import arm_gap
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.episode import TaskEpisode
from scenegen.tasks.expert import make_expert, rollout


def run(pack_dir: str, max_steps: int = 300, gap_every: int = 5) -> dict:
    """Run the expert once per scene of the pack; return the summary."""
    pack = load_pack(pack_dir)
    env = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=max_steps))
    rows = []
    t0 = time.monotonic()
    try:
        for sid in pack.scene_ids:
            expert = make_expert(env)
            gaps: list[float] = []
            step = [0]

            def watch(obs, action, reward, info, gaps=gaps, step=step) -> None:  # noqa: ANN001
                step[0] += 1
                if step[0] % gap_every == 0:
                    gaps.append(arm_gap(env.world))

            res, _ = rollout(env, expert, seed=0, options={"scene_id": sid}, on_step=watch)
            rows.append({"scene_id": sid, "success": res.success, "progress": res.progress, "steps": res.steps,
                         "failure": res.failure, "arms": [a for _, a in getattr(expert, "arm_log", [])],
                         "min_arm_gap": min(gaps, default=float("inf"))})
    finally:
        env.close()
    n, s = len(rows), sum(r["success"] for r in rows)
    lo, hi = wilson_interval(s, n)
    return {"pack": str(pack_dir), "robot": pack.scene(pack.scene_ids[0]).robot, "scenes": n, "successes": s,
            "success_rate": s / n if n else 0.0, "wilson95": [round(lo, 4), round(hi, 4)],
            "mean_progress": float(np.mean([r["progress"] for r in rows])) if rows else 0.0,
            "mean_steps": float(np.mean([r["steps"] for r in rows])) if rows else 0.0,
            "arms_used": dict(Counter(a for r in rows for a in r["arms"])),
            "min_arm_gap": min((r["min_arm_gap"] for r in rows), default=float("inf")),
            "failures": dict(Counter(r["failure"] for r in rows if r["failure"])),
            "seconds": round(time.monotonic() - t0, 1), "episodes": rows}


def main() -> None:
    """Command line: ``bimanual_expert.py PACK [--out FILE]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pack")
    ap.add_argument("--out", default=None, help="write the summary here (JSON)")
    ap.add_argument("--max-steps", type=int, default=300)
    args = ap.parse_args()
    summary = run(args.pack, args.max_steps)
    text = json.dumps(summary, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "episodes"}, indent=2))


if __name__ == "__main__":
    main()
