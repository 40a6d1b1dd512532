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

``--jobs J`` runs J evaluations at once (one process each, one torch thread); with ``--runs-dir`` every
finished evaluation is kept, so a call stopped by ``--budget`` (or killed) resumes with the same line.
``benchmarks/gpu_session2.sh`` shows the run behind ``correlation_bc.json`` (8 BC checkpoints).
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


def label(spec: str) -> str:
    """A short name of a policy spec: ``bc_50/step-0002000`` for a checkpoint folder, the spec otherwise."""
    path = Path(spec)
    if not path.is_dir():
        return spec
    parts = [x for x in path.parts if x not in ("policy", "checkpoints")]
    return "/".join(parts[-2:])


def summary(spec: str, cond: str, res: dict, seconds: float) -> dict:
    """One run's row: episodes, success with its Wilson interval, progress with its bootstrap interval."""
    o = res["scores"]["overall"]
    return {"policy": spec, "label": label(spec), "condition": cond, "episodes": o["episodes"],
            "success_rate": o["success_rate"], "success_ci95": o["success_ci95"], "progress": o["progress"]["mean"],
            "progress_ci95": o["progress"]["ci95"], "seconds": round(seconds, 2)}


def run_one(spec: str, cond: str, set_dir: str, keys: tuple[str, ...], image_size: int,
            run_dir: str | None) -> dict:
    """Evaluate one policy on one set (in a worker process: one torch thread); keep its run under ``run_dir``."""
    import torch

    from rl.evalreport import write_run
    from rl.evalrun import run_evalset

    torch.set_num_threads(1)
    t = time.perf_counter()
    res, _ = run_evalset(set_dir, spec, image_keys=keys, image_size=image_size, progress=False)
    row = summary(spec, cond, res, time.perf_counter() - t)
    if run_dir:
        write_run(run_dir, res)
        (Path(run_dir) / "row.json").write_text(json.dumps(row))  # a resumed call reports it as it was measured
    return row


def main(argv: list[str] | None = None) -> dict | None:
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
    ap.add_argument("--jobs", type=int, default=1, help="Evaluations run at once (one process each).")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="Seconds this call may start evaluations for (0: no limit); rerun to resume (--runs-dir).")
    ap.add_argument("--sets-only", action="store_true", help="With --make-from: make the two sets, then stop.")
    ap.add_argument("-o", "--out", default="benchmarks/correlation.json")
    a = ap.parse_args(argv)

    from rl.correlate import correlate, scatter

    policies = [p for p in a.policies.split(",") if p] + a.policy
    if len(policies) < 2 and not a.sets_only:
        ap.error("give at least two policies (--policies a,b or --policy a --policy b)")
    if a.make_from:
        nominal, target = make_sets(a.make_from, a.n, Path(a.sets_dir), a.seed, a.max_steps, a.target_dr)
        if a.sets_only:
            print(f"sets: {nominal} {target}", flush=True)
            return None
    elif a.nominal and a.target:
        nominal, target = a.nominal, a.target
    else:
        ap.error("give --nominal and --target sets, or --make-from PACK")
    keys = tuple(c for c in a.cameras.split(",") if c)
    t0 = time.perf_counter()
    todo, runs = [], {}
    for spec in policies:
        for cond, set_dir in (("nominal", nominal), ("target", target)):
            run_dir = Path(a.runs_dir) / cond / label(spec).replace(":", "_").replace("/", "_") if a.runs_dir else None
            if run_dir is not None and (run_dir / "row.json").is_file():  # a finished run of an earlier call
                runs[spec, cond] = json.loads((run_dir / "row.json").read_text())
            else:
                todo.append((spec, cond, set_dir, run_dir and str(run_dir)))
    if todo:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max(1, a.jobs), mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(run_one, spec, cond, set_dir, keys, a.image_size, rd): (spec, cond)
                    for spec, cond, set_dir, rd in todo}
            for f in as_completed(futs):
                row = f.result()
                runs[futs[f]] = row
                print(f"{row['label']:>28s} {row['condition']:>8s}: success {row['success_rate']:.3f} "
                      f"[{row['success_ci95'][0]:.3f}, {row['success_ci95'][1]:.3f}] ({row['episodes']} episodes, "
                      f"{row['seconds']:.0f} s)", flush=True)
                if a.budget and time.perf_counter() - t0 > a.budget:
                    for g in futs:
                        g.cancel()  # runs not started yet wait for the next call
    missing = [k for k in ((s, c) for s in policies for c in ("nominal", "target")) if k not in runs]
    if missing:
        print(f"{len(missing)} of {2 * len(policies)} runs left: run the same command again to resume", flush=True)
        return None
    scores: dict[str, dict] = {"nominal": {}, "target": {}}
    for (spec, cond), row in runs.items():
        scores[cond][label(spec)] = {"score": row["success_rate"], "ci95": row["success_ci95"]}
    runs = [runs[s, c] for s in policies for c in ("nominal", "target")]
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
