"""``benchmarks/ppoflow_noise_scale.py --summarise``: a training run's metrics summarised as the probe's are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _row(i: int, signal: float, noise: float, warm: bool = False) -> dict:
    return {"kind": "ppoflow", "iteration": i, "critic_warmup": warm, "pg_signal_sq": signal, "pg_noise_tr": noise,
            "episodes": 10, "pg_groups": 10, "success_rate": 0.5, "time_env_s": 3.0, "time_policy_s": 1.0,
            "pg_grad_cos": 0.1}


def _metrics(path: Path, rows: list[dict]) -> Path:
    """``rows`` written as a run's metrics.jsonl at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _summarise(tmp_path: Path, rows: list[dict]) -> dict:
    """The script's --summarise output for these metrics rows."""
    f = _metrics(tmp_path / "metrics.jsonl", rows)
    out = tmp_path / "summary.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ppoflow_noise_scale.py"), "--summarise", str(f),
                    "--out", str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def test_summarise_pools_the_updates_after_the_warm_up(tmp_path):
    rows = [_row(0, float("nan"), float("nan"), warm=True), _row(1, 2.0, 100.0), _row(2, 4.0, 300.0)]
    doc = _summarise(tmp_path, rows)
    assert doc["iterations"] == 3 and doc["rollouts"] == 2 and doc["episodes"] == 20
    assert abs(doc["noise_scale_episodes"] - 200.0 / 3.0) < 1e-9  # mean tr C / mean |g|^2, pooled
    assert abs(doc["rollout_seconds_per_episode"] - 0.4) < 1e-9


def test_summarise_reports_no_signal_as_a_lower_bound(tmp_path):
    rows = [_row(i, s, 1000.0) for i, s in enumerate((-5.0, 1.0, -3.0, 2.0))]
    doc = _summarise(tmp_path, rows)
    assert doc["noise_scale_episodes"] is None  # the pooled signal is not positive: no point estimate
    lo, hi = doc["noise_scale_ci95"]
    assert lo is not None and lo > 0 and hi is None


def test_summarise_a_group_run_in_episodes_with_its_critic_baseline_beside(tmp_path):
    """A group run's units are groups (4 episodes each here); its rows also carry the critic baseline's measure."""
    rows = [{**_row(i, 2.0, 100.0), "pg_groups": 2.5, "pg_signal_sq_critic": 1.0, "pg_noise_tr_critic": 200.0}
            for i in (1, 2)]
    doc = _summarise(tmp_path, rows)
    assert abs(doc["noise_scale_episodes"] - 50.0 * 4) < 1e-9  # 50 groups of 4 episodes
    assert abs(doc["with_critic_baseline"]["noise_scale_episodes"] - 200.0 * 4) < 1e-9


def test_plot_reads_a_runs_metrics_file(tmp_path):
    """plot_ppoflow.py draws an unscored run from its metrics.jsonl: one point per PPOFlow row, in order."""
    rows = [_row(1, 1.0, 10.0), {"kind": "eval", "success_rate": 0.9}, {**_row(2, 1.0, 10.0), "success_rate": 0.25}]
    f = _metrics(tmp_path / "run_metrics.jsonl", rows)
    out = tmp_path / "curves.png"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plot_ppoflow.py"), str(f), "-o", str(out)],
                   check=True, capture_output=True)
    assert out.stat().st_size > 1000
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from plot_ppoflow import curves
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert curves([str(f)]) == {"run_metrics": [0.5, 0.25]}
