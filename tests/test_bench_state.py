"""The resumable stage state shared by the long benchmarks (``benchmarks/_bench.py``): old state files still resume."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("scenegen_bench", ROOT / "benchmarks" / "_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(work: Path, budget: float = 100.0) -> argparse.Namespace:
    return argparse.Namespace(work=str(work), budget=budget)


def test_a_state_file_of_an_earlier_run_resumes_and_new_stages_keep_its_format(bench, tmp_path):
    old = {"done": {"s/pack": {"scenes": 3, "stage_seconds": 12.5}}}  # as bc_scaling.py wrote it before
    (tmp_path / "state.json").write_text(json.dumps(old))
    b = bench.Bench(_args(tmp_path), timing_key="stage_seconds", none_unfinished=True, echo=False)
    assert b.stage("s/pack", lambda: pytest.fail("a finished stage ran again")) == old["done"]["s/pack"]
    with pytest.raises(bench.OutOfTime):
        b.stage("s/bc_50", lambda: None)  # unfinished: nothing stored, the next call resumes it
    assert b.stage("s/eval_50", lambda: {"success": 0.5}, need=10)["success"] == 0.5
    state = json.loads((tmp_path / "state.json").read_text())
    assert set(state["done"]) == {"s/pack", "s/eval_50"} and "stage_seconds" in state["done"]["s/eval_50"]

    fresh = bench.Bench(_args(tmp_path / "p"), {"ppo_seconds": {}})  # ppoflow_lift.py's first call
    assert fresh.state == {"done": {}, "ppo_seconds": {}}
    assert set(fresh.stage("latency", lambda: None)) == {"wall_clock_s"}
    with pytest.raises(bench.OutOfTime):
        bench.Bench(_args(tmp_path / "q", budget=5.0)).stage("x", dict, need=30)


@pytest.mark.parametrize("script", ["ablation.py", "bc_scaling.py", "ppoflow_lift.py"])
def test_the_benchmarks_still_start(script):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0 and "--budget" in res.stdout, res.stderr[-2000:]


def test_ppoflow_lift_counts_a_share_with_under_a_minute_left_as_done(tmp_path, monkeypatch):
    """The eleventh GPU session's call C stopped 'out of time' with 6 s of its PPOFlow share left and no score."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("scenegen_ppoflow_lift", ROOT / "benchmarks" / "ppoflow_lift.py")
    lift = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lift)
    args = argparse.Namespace(work=str(tmp_path), budget=600.0, ppo_minutes=10.0, num_envs=2, device="cpu",
                              ppo_args="")
    key = f"{lift.slug('p q')}/ppo_k1"
    run = tmp_path / lift.slug("p q") / "ppo_k1"
    run.mkdir(parents=True)
    row = {"env_steps": 10, "success_rate": 0.5, "env_steps_per_s": 1.0, "decisions_per_s": 1.0, "time_env_s": 1.0,
           "time_policy_s": 1.0, "time_update_s": 1.0}
    (run / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    calls = []
    b = lift.Bench(args, {"ppo_seconds": {key: 600.0 - 0.5 * lift.MIN_CHUNK_S}})
    b.cli = lambda *a: calls.append(a)
    out = lift.ppoflow(b, "p q", 1, "bc", "pack")
    assert not calls and out["wall_clock_total_s"] == 600.0 - 0.5 * lift.MIN_CHUNK_S and out["iterations"] == 1
    b2 = lift.Bench(argparse.Namespace(**{**vars(args), "work": str(tmp_path / "w2")}), {"ppo_seconds": {}})
    b2.left = lambda: 100.0  # a share of 10 min with 40 s of the call left to run it in: out of time, resumable
    b2.cli = lambda *a: calls.append(a)
    with pytest.raises(lift.OutOfTime):
        lift.ppoflow(b2, "p q", 1, "bc", "pack")
    assert not calls
    b3 = lift.Bench(argparse.Namespace(**{**vars(args), "ppo_steps": 10}), {"ppo_seconds": {}})
    b3.cli = lambda *a: calls.append(a)  # --ppo-steps 10, and the run's last row says 10 env steps: done
    assert lift.ppoflow(b3, "p q", 1, "bc", "pack")["env_steps"] == 10 and not calls
