"""How many episodes a PPOFlow update needs before its policy gradient is signal, per noise level (-> JSON).

The seventh GPU session's PPOFlow run (benchmarks/README.md) logged the cosine between the policy gradients of
two random halves of every rollout: -0.03 +- 0.14 over 67 updates of ~34 episodes, i.e. no measurable signal.
This puts a number on it. For each ``--sigmas`` value it runs ``scenegen train ppoflow`` from a BC checkpoint
with the policy held still (actor and noise learning rates 0, the noise std fixed at sigma, encoder frozen):
``--warmup`` iterations train only the critic, then ``--measure`` iterations log, per rollout,
:func:`rl.ppoflow_math.grad_noise_scale`'s unbiased estimates of the per-episode gradient's signal energy |g|^2
and noise energy tr C. Since the policy does not change, every measured rollout draws from the same
distribution, and the means over rollouts give the noise scale B = tr C / |g|^2: the number of episodes at
which an update's signal and noise energies are equal (a 95% interval by bootstrap over rollouts). Also per
sigma: the training rollouts' success (with the injected noise), episodes and seconds per iteration, and so
the wall-clock one update of B episodes would take with these envs. Non-finite values are written as null
(an infinite noise scale: the signal estimate was not positive).

``--summarise METRICS.jsonl`` applies the same summary to a training run's metrics (a run that moved its policy,
so the rollouts are only nearly one distribution: a run whose KL per update is small) and writes it to ``--out``.

Usage (each sigma's run resumes where a killed call stopped; sigmas already measured are skipped)::

    python benchmarks/ppoflow_noise_scale.py --init BC_RUN --pack PACK --work W --device cuda \\
        --sigmas 0.075,0.15,0.3 --num-envs 14 --decisions-per-env 64 --out benchmarks/ppoflow_noise_scale.json
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run_sigma(a: argparse.Namespace, sigma: float, run: Path, budget: float) -> None:
    """Train (the critic only) and measure at one sigma, resuming; stops within ``budget`` seconds."""
    iters = a.warmup + a.measure
    done = len(rows_of(run))
    if done >= iters:
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "scenegen.cli", "train", "ppoflow", "--init", a.init, "--pack", a.pack, "-o", str(run),
           "--num-envs", str(a.num_envs), "--steps", "100000000", "--k", "1", "--device", a.device,
           "--max-iterations", str(iters - done), "--time-budget", str(int(budget)), "--eval-episodes", "0",
           "--decisions-per-env", str(a.decisions_per_env), "--minibatch-size", str(a.minibatch_size),
           "--lr-actor", "0", "--lr-noise", "0", "--sigma-min", str(sigma), "--sigma-max", str(sigma),
           "--critic-warmup-iters", str(a.warmup), "--grad-diag", "--freeze-encoder", *a.extra.split()]
    if done or (run / "checkpoint.pt").exists():
        cmd.append("--resume")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"train ppoflow (sigma {sigma}) failed:\n{(res.stdout + res.stderr)[-2000:]}")


def rows_of(run: Path) -> list[dict]:
    """The metrics rows (PPOFlow iterations) of a run folder or of its metrics.jsonl, [] before its first."""
    f = run if run.suffix == ".jsonl" else run / "metrics.jsonl"
    if not f.is_file():
        return []
    return [r for r in (json.loads(x) for x in f.read_text().splitlines()) if r.get("kind", "ppoflow") == "ppoflow"]


def summarise(rows: list[dict], seed: int = 0, suffix: str = "") -> dict:
    """Noise scale over the measured (post-warm-up) rollouts, its bootstrap 95% interval, and the rollouts' cost.

    ``suffix`` ``"_critic"`` reads a group run's second measurement: the same rollouts with the critic's advantages.
    """
    m = [r for r in rows if not r["critic_warmup"] and r.get("pg_signal_sq" + suffix) is not None
         and np.isfinite(r["pg_signal_sq" + suffix])]
    if not m:
        return {"rollouts": 0}
    sig = np.array([r["pg_signal_sq" + suffix] for r in m])
    noi = np.array([r["pg_noise_tr" + suffix] for r in m])
    eps = np.array([r["episodes"] for r in m], dtype=float)
    groups = np.array([r["pg_groups"] for r in m], dtype=float)
    secs = np.array([r["time_env_s"] + r["time_policy_s"] for r in m])
    # the estimator's units are the rollout's episode pieces (episodes cut by the rollout's ends count too);
    # a piece is on average groups/eps of a whole episode's decisions, and the noise scale goes as 1/size
    per_episode = eps.mean() / groups.mean()

    def scale_of(i: np.ndarray) -> float:
        s = sig[i].mean()
        return float(noi[i].mean() / s * per_episode) if s > 0 else float("inf")
    scale = scale_of(np.arange(len(m)))
    g = np.random.default_rng(seed)
    boot = np.sort([scale_of(g.integers(0, len(m), len(m))) for _ in range(2000)])
    ci = [float(boot[50]), float(boot[1949])] if len(m) >= 2 else None
    succ = sum(r["success_rate"] * r["episodes"] for r in m if r["episodes"])
    per_ep = secs.sum() / max(eps.sum(), 1)
    return {"rollouts": len(m), "episodes": int(eps.sum()), "episodes_per_rollout": round(float(eps.mean()), 1),
            "train_success": round(succ / max(eps.sum(), 1), 4),
            "signal_sq_mean": float(sig.mean()), "noise_tr_mean": float(noi.mean()),
            "noise_scale_episodes": scale, "noise_scale_ci95": ci,
            "batch_snr_at_rollout_size": float(eps.mean() / scale) if np.isfinite(scale) else 0.0,
            "grad_cos_mean": float(np.mean([r["pg_grad_cos"] for r in m])),
            "rollout_seconds_per_episode": round(float(per_ep), 3),
            "seconds_per_snr1_update": float(scale * per_ep) if np.isfinite(scale) else float("inf")}


def strict(x):
    """``x`` with every non-finite float as None (strict JSON; an infinite noise scale: no signal resolved)."""
    if isinstance(x, dict):
        return {k: strict(v) for k, v in x.items()}
    if isinstance(x, list):
        return [strict(v) for v in x]
    return None if isinstance(x, float) and not np.isfinite(x) else x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summarise", default=None, help="only summarise this training run's metrics.jsonl")
    ap.add_argument("--init", help="the BC run (its policy/ folder's parent) to start from")
    ap.add_argument("--pack", help="the training pool")
    ap.add_argument("--work")
    ap.add_argument("--sigmas", default="0.075,0.15,0.3")
    ap.add_argument("--num-envs", type=int, default=14)
    ap.add_argument("--decisions-per-env", type=int, default=64)
    ap.add_argument("--minibatch-size", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=3, help="critic-only iterations before measuring")
    ap.add_argument("--measure", type=int, default=4, help="measured iterations per sigma")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--budget", type=float, default=1e9, help="seconds for this call; rerun to resume")
    ap.add_argument("--extra", default="--critic-privileged", help="more `train ppoflow` options, one string")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "ppoflow_noise_scale.json"))
    a = ap.parse_args()
    if a.summarise:
        f = Path(a.summarise)
        rows = rows_of(f)
        doc = {"command": "python benchmarks/ppoflow_noise_scale.py " + " ".join(sys.argv[1:]), "metrics": f.name,
               "iterations": len(rows), **strict(summarise(rows))}
        if any("pg_signal_sq_critic" in r for r in rows):  # a group run: the same rollouts, the critic's baseline
            doc["with_critic_baseline"] = strict(summarise(rows, suffix="_critic"))
        Path(a.out).write_text(json.dumps(doc, indent=1))
        print(json.dumps(doc, indent=1))
        return
    if not (a.init and a.pack and a.work):
        ap.error("--init, --pack and --work are needed (or --summarise METRICS.jsonl)")
    t0 = time.perf_counter()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(a.out)
    doc = json.loads(out.read_text()) if out.is_file() else {}
    doc.update({"command": "python benchmarks/ppoflow_noise_scale.py " + " ".join(sys.argv[1:]),
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                            "python": platform.python_version()},
                "settings": {k: v for k, v in vars(a).items() if k not in ("budget", "out")}})
    doc.setdefault("sigmas", {})
    for s in (float(x) for x in a.sigmas.split(",")):
        left = a.budget - (time.perf_counter() - t0)
        if left < 60:
            print(f"budget spent before sigma {s}; run the same command again to resume")
            break
        run = work / f"sigma_{s:g}"
        t = time.perf_counter()
        run_sigma(a, s, run, left - 30)
        rows = rows_of(run)
        doc["sigmas"][f"{s:g}"] = {**strict(summarise(rows)), "iterations_done": len(rows),
                                   "seconds_this_call": round(time.perf_counter() - t, 1)}
        out.write_text(json.dumps(doc, indent=1))
        print(f"sigma {s:g}: {json.dumps(doc['sigmas'][f'{s:g}'])}", flush=True)
    out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
