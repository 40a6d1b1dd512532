"""What a PPOFlow update's KL comes from, on CPU (-> ppoflow_kl_split.json).

Usage::

    python benchmarks/ppoflow_kl_split.py [--work out/bench_klsplit] [--iterations 3]

PPOFlow's trust region (``--target-kl`` with ``--adaptive-lr``) throttled the fifth GPU session's learning
rate to ~4e-7 (benchmarks/README.md). This asks which part of the policy moved the KL, with
``--grad-diag``'s closed-form split (:func:`rl.ppoflow_math.kl_split`): a 6-scene banana pack (QA off),
6 expert demonstrations (front and wrist cameras, 64 px), a default-size FlowVLA trained by BC for
``--bc-steps`` (batch 32), then ``--iterations`` PPOFlow iterations (K = 1, 2 envs x 16 decisions,
minibatch 16, actor lr 3e-6, noise lr 1e-4, target KL 0.05, no critic warm-up) in each of three variants:
the fifth session's (sigma in [0.05, 0.10]), the encoder frozen, and sigma in [0.15, 0.30]. Everything runs
through the ``scenegen`` CLI in subprocesses, on one BLAS thread; it is deterministic on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "fifth_session": [],
    "freeze_encoder": ["--freeze-encoder"],
    "sigma_0.15_0.30": ["--sigma-min", "0.15", "--sigma-max", "0.3"],
}
KEYS = ("approx_kl_chain", "kl_mean_part", "kl_std_part", "kl_closed_form", "mean_shift_rms", "sigma",
        "early_stop", "pg_grad_cos", "clip_frac")


def cli(*args: str) -> None:
    """Run ``scenegen ARGS`` in a subprocess (one BLAS thread); raise with its output's tail on failure."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "scenegen.cli", *args], env=env, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"scenegen {args[0]} failed:\n{(res.stdout + res.stderr)[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="out/bench_klsplit")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--bc-steps", type=int, default=150)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "ppoflow_kl_split.json"))
    a = ap.parse_args()
    w = Path(a.work)
    t0 = time.perf_counter()
    if not (w / "pack" / "manifest.json").is_file():
        cli("generate", "put the banana in the bowl", "-n", "6", "-o", str(w / "pack"), "--no-qa", "--seed", "0")
    if not (w / "demos" / "meta").is_dir():
        cli("demos", str(w / "pack"), "-n", "6", "-o", str(w / "demos"), "--image-size", "64",
            "--cameras", "front,wrist")
    if not (w / "bc" / "policy").is_dir():
        cli("train", "bc", str(w / "demos"), "-o", str(w / "bc"), "--steps", str(a.bc_steps), "--batch-size", "32",
            "--device", "cpu", "--cameras", "front,wrist", "--no-progress", "--eval-every", "0")
    rows = {}
    for name, extra in VARIANTS.items():
        run = w / f"ppo_{name}"
        if not (run / "metrics.jsonl").is_file():
            cli("train", "ppoflow", "--init", str(w / "bc"), "--pack", str(w / "pack"), "-o", str(run),
                "--num-envs", "2", "--decisions-per-env", "16", "--k", "1", "--device", "cpu", "--minibatch-size",
                "16", "--lr-actor", "3e-6", "--lr-noise", "1e-4", "--sigma-min", "0.05", "--sigma-max", "0.1",
                "--clip-eps", "0.2", "--target-kl", "0.05", "--critic-warmup-iters", "0", "--grad-diag",
                "--max-iterations", str(a.iterations), "--eval-episodes", "0", "--steps", "100000",
                "--backend", "sync", *extra)
        lines = (run / "metrics.jsonl").read_text().splitlines()
        rows[name] = [{k: json.loads(x).get(k) for k in KEYS} for x in lines]
        print(name, [(round(r["kl_mean_part"], 4), f"{r['kl_std_part']:.1e}") for r in rows[name]], flush=True)
    out = {"command": "python benchmarks/ppoflow_kl_split.py " + " ".join(sys.argv[1:]),
           "date": time.strftime("%Y-%m-%d"), "seconds": round(time.perf_counter() - t0, 1),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
           "settings": {"iterations": a.iterations, "bc_steps": a.bc_steps, "variants": VARIANTS},
           "iterations": rows}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"-> {a.out}")


if __name__ == "__main__":
    main()
