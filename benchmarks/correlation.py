"""Sim-to-target correlation: score a list of policies on a nominal eval set and on a shifted one, then r and MMRV.

With no real robot, the "real" side is a shifted target condition: the same scenes under
another camera pose, lighting and physics (an eval set frozen with a DR.json of large
perturbations), or any other frozen set of the same configurations. Each policy is evaluated
on both sets (success rate with its Wilson interval), the two score lists go through
``rl.correlate.correlate`` (Pearson r and MMRV(nominal, target) with bootstrap intervals), and
everything is written to the output JSON with the commands' inputs.

Usage::

    # two frozen sets of one pack: nominal, and shifted by a DR.json
    .venv/bin/python benchmarks/correlation.py --make-from out/demo -n 12 --sets-dir out/corr_sets \\
        --policies expert,noisy-expert:0.3,noisy-expert:0.6,random -o benchmarks/correlation.json
    # or given sets and policies (FlowVLA checkpoint folders, or module:factory=ARG)
    .venv/bin/python benchmarks/correlation.py --nominal sets/nominal --target sets/shifted \\
        --policy runs/bc-100 --policy runs/bc-400 ... --cameras front --image-size 64 -o benchmarks/correlation.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_DR = {"camera_position": 0.06, "camera_target": 0.04, "light_direction_deg": 45.0, "light_intensity": 0.5,
             "object_color": 0.3, "table_color": 0.3, "friction": 0.6, "mass": 0.6}
"""The default shifted condition (DRConfig fields): twice the default camera, light and physics perturbations."""


def make_sets(pack: str, n: int, sets_dir: Path, seed: int, max_steps: int, target_dr: str | None) -> tuple[str, str]:
    from rl.envs import DRConfig
    from rl.evalset import load_evalset, make_evalset
    from rl.guided_dr import load_dr

    nominal, target = sets_dir / "nominal", sets_dir / "target"
    if not (nominal / "evalset.json").exists():
        make_evalset(None, nominal, n, packs=[pack], seed=seed, max_episode_steps=max_steps, dr=None)
    if not (target / "evalset.json").exists():
        dr = load_dr(target_dr) if target_dr else DRConfig(**TARGET_DR)
        make_evalset(None, target, n, packs=[pack], seed=seed, max_episode_steps=max_steps, dr=dr)
    load_evalset(nominal)
    load_evalset(target)
    return str(nominal), str(target)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nominal", help="The nominal eval set.")
    ap.add_argument("--target", help="The shifted (target) eval set.")
    ap.add_argument("--make-from", help="A pack: make the nominal and target sets from it (under --sets-dir).")
    ap.add_argument("-n", type=int, default=12, help="Configurations per set with --make-from.")
    ap.add_argument("--sets-dir", default="out/correlation_sets")
    ap.add_argument("--target-dr", default=None, help="DR.json of the target condition (default: TARGET_DR).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--policies", default="", help="Comma-separated policy specs.")
    ap.add_argument("--policy", action="append", default=[], help="A policy spec (repeatable).")
    ap.add_argument("--cameras", default="front")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--runs-dir", default=None, help="Keep each run's result.json and report here.")
    ap.add_argument("-o", "--out", default="benchmarks/correlation.json")
    a = ap.parse_args(argv)

    from rl.correlate import correlate, scatter
    from rl.evalreport import write_run
    from rl.evalrun import run_evalset

    policies = [p for p in a.policies.split(",") if p] + a.policy
    if len(policies) < 2:
        ap.error("give at least two policies (--policies a,b or --policy a --policy b)")
    if a.make_from:
        nominal, target = make_sets(a.make_from, a.n, Path(a.sets_dir), a.seed, a.max_steps, a.target_dr)
    elif a.nominal and a.target:
        nominal, target = a.nominal, a.target
    else:
        ap.error("give --nominal and --target sets, or --make-from PACK")
    keys = tuple(c for c in a.cameras.split(",") if c)
    t0 = time.perf_counter()
    scores: dict[str, dict] = {"nominal": {}, "target": {}}
    runs = []
    for spec in policies:
        for cond, set_dir in (("nominal", nominal), ("target", target)):
            t = time.perf_counter()
            res, _ = run_evalset(set_dir, spec, image_keys=keys, image_size=a.image_size, progress=False)
            o = res["scores"]["overall"]
            scores[cond][spec] = {"score": o["success_rate"], "ci95": o["success_ci95"]}
            runs.append({"policy": spec, "condition": cond, "episodes": o["episodes"],
                         "success_rate": o["success_rate"], "success_ci95": o["success_ci95"],
                         "progress": o["progress"]["mean"], "progress_ci95": o["progress"]["ci95"],
                         "seconds": round(time.perf_counter() - t, 2)})
            if a.runs_dir:
                write_run(Path(a.runs_dir) / cond / spec.replace(":", "_").replace("/", "_"), res)
            print(f"{spec:>28s} {cond:>8s}: success {o['success_rate']:.3f} "
                  f"[{o['success_ci95'][0]:.3f}, {o['success_ci95'][1]:.3f}] ({o['episodes']} episodes)", flush=True)
    corr = correlate(scores["nominal"], scores["target"])
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scatter(corr, out.with_suffix(".png"), labels=("nominal (sim)", "target (shifted)"))
    doc = {"command": "python benchmarks/correlation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "machine": {"platform": platform.platform(), "python": platform.python_version()},
           "sets": {"nominal": nominal, "target": target}, "policies": policies, "runs": runs,
           "correlation": {k: corr[k] for k in ("pearson", "mmrv", "pearson_ci95", "mmrv_ci95", "n")},
           "seconds": round(time.perf_counter() - t0, 1)}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc["correlation"], indent=1))
    return doc


if __name__ == "__main__":
    main()
