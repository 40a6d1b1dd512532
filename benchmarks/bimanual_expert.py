"""The two-arm expert over a pack of ``bimanual_panda`` scenes (-> a JSON summary).

Make the pack with the QA loop, then run the expert once per scene (seed 0)::

    scenegen generate "put the banana in the bowl" -n 24 -o out/bimanual --robot bimanual_panda
    python benchmarks/bimanual_expert.py out/bimanual --out benchmarks/bimanual_expert.json

Reports expert success with its 95% Wilson interval, mean task progress, episode length, which
arm took each goal, and the least distance between the two arms over every episode (the arms are
one PyBullet body whose links do not collide with each other, so the expert must keep them apart).

``--handover`` picks when an inverted mug is handed from one arm to the other
(:mod:`scenegen.tasks.handover`; the modes of :class:`scenegen.tasks.bimanual.MultiArmExpert`:
``auto``, the expert's default, ``fallback``, ``first``, ``off``); the summary counts the handovers
started and won. For the mug flip (issue 19; QA without the feasibility check, which runs this
expert, so that the expert's results stay an independent measurement)::

    scenegen generate "flip the mug upright" -n 12 -o out/flip2 --robot bimanual_panda \
        --checks geometry,physics,semantic,visibility,reachability
    for m in auto fallback first off; do
        python benchmarks/bimanual_expert.py out/flip2 --handover $m --max-steps 400 --out flip2_$m.json
    done
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
from scenegen.tasks.bimanual import HANDOVER_MODES, MultiArmExpert, arm_gap
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.episode import TaskEpisode
from scenegen.tasks.expert import ExpertConfig, ScriptedExpert, make_expert, rollout


def run(pack_dir: str, max_steps: int = 300, gap_every: int = 5, handover: str = "auto") -> dict:
    """Run the expert once per scene of the pack (``handover``: see the module); return the summary."""
    pack = load_pack(pack_dir)
    env = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=max_steps))
    rows = []
    t0 = time.monotonic()
    try:
        for sid in pack.scene_ids:
            expert = make_expert(env)
            if isinstance(expert, MultiArmExpert):
                expert = MultiArmExpert(env, ExpertConfig(), ScriptedExpert, handover=handover)
            gaps: list[float] = []
            step = [0]

            def watch(obs, action, reward, info, gaps=gaps, step=step) -> None:  # noqa: ANN001
                step[0] += 1
                if step[0] % gap_every == 0:
                    gaps.append(arm_gap(env.world))

            res, _ = rollout(env, expert, seed=0, options={"scene_id": sid}, on_step=watch)
            rows.append({"scene_id": sid, "success": res.success, "progress": res.progress, "steps": res.steps,
                         "failure": res.failure, "arms": [a for _, a in getattr(expert, "arm_log", [])],
                         "min_arm_gap": min(gaps, default=float("inf")),
                         "handovers": list(getattr(expert, "handover_log", []))})
    finally:
        env.close()
    n, s = len(rows), sum(r["success"] for r in rows)
    lo, hi = wilson_interval(s, n)
    return {"pack": str(pack_dir), "robot": pack.scene(pack.scene_ids[0]).robot, "scenes": n, "successes": s,
            "success_rate": s / n if n else 0.0, "wilson95": [round(lo, 4), round(hi, 4)],
            "mean_progress": float(np.mean([r["progress"] for r in rows])) if rows else 0.0,
            "mean_steps": float(np.mean([r["steps"] for r in rows])) if rows else 0.0,
            "arms_used": dict(Counter(a for r in rows for a in r["arms"])), "handover_mode": handover,
            "handovers": {"episodes": sum(bool(r["handovers"]) for r in rows),
                          "started": sum(h["arms"] is not None for r in rows for h in r["handovers"]),
                          "won": sum(r["success"] and h["arms"] is not None and h["failure"] is None
                                     for r in rows for h in r["handovers"]),  # the episode ended with it
                          "successes_with_handover": sum(r["success"] and bool(r["handovers"]) for r in rows),
                          "why": dict(Counter(h["why"].split(":")[0] for r in rows for h in r["handovers"]))},
            "min_arm_gap": min((r["min_arm_gap"] for r in rows), default=float("inf")),
            "failures": dict(Counter(r["failure"] for r in rows if r["failure"])),
            "seconds": round(time.monotonic() - t0, 1), "episodes": rows}


def main() -> None:
    """Command line: ``bimanual_expert.py PACK [--out FILE]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pack")
    ap.add_argument("--out", default=None, help="write the summary here (JSON)")
    ap.add_argument("--max-steps", type=int, default=300)
    ap.add_argument("--handover", choices=HANDOVER_MODES, default="auto", help="when a mug is handed over")
    args = ap.parse_args()
    summary = run(args.pack, args.max_steps, handover=args.handover)
    text = json.dumps(summary, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "episodes"}, indent=2))


if __name__ == "__main__":
    main()
