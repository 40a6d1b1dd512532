"""Sim-real correlation: Pearson r and MMRV against hand-computed cases, CSV input, JSON keys, errors."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from rl.correlate import correlate, read_scores, results_csv, scatter
from scenegen.errors import ConfigError


def write_csv(path, rows, header="policy,score"):
    path.write_text(header + "\n" + "\n".join(",".join(str(v) for v in r) for r in rows) + "\n")
    return path


def test_identical_rankings_are_perfect():
    r = correlate({"a": 0.1, "b": 0.5, "c": 0.9}, {"a": 0.2, "b": 0.4, "c": 0.8})
    # dx = (-.4, 0, .4), dy = (-4/15, -1/15, 5/15): sum dxdy = 0.24, sum dx^2 = 0.32, sum dy^2 = 42/225
    assert r["pearson"] == pytest.approx(0.24 / math.sqrt(0.32 * 42 / 225))
    assert r["mmrv"] == 0.0
    assert r["n"] == 3


def test_hand_computed_pearson():
    # dx = (-1.5, -.5, .5, 1.5), dy = (-1.5, -.5, -.5, 2.5): sum dxdy = 6, sum dx^2 = 5, sum dy^2 = 9
    r = correlate({"p0": 0, "p1": 1, "p2": 2, "p3": 3}, {"p0": 0, "p1": 1, "p2": 1, "p3": 4})
    assert r["pearson"] == pytest.approx(6 / math.sqrt(45))


def test_reversed_ranking():
    # real (3, 2, 1) against sim (1, 2, 3): every pair is violated.
    # policy a: max(|3-2|, |3-1|) = 2; b: max(|2-3|, |2-1|) = 1; c: 2  ->  MMRV = 5/3
    r = correlate({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1})
    assert r["pearson"] == pytest.approx(-1.0)
    assert r["mmrv"] == pytest.approx(5 / 3)


def test_ties_and_the_argument_order():
    # sim (1, 1, 2), real (1, 2, 3): only the pair (b, a) is ordered differently (sim ties it, real does not):
    # policy b's worst violation is |2 - 1| = 1, the others have none -> MMRV(sim, real) = 1/3.
    sim, real = {"a": 1, "b": 1, "c": 2}, {"a": 1, "b": 2, "c": 3}
    assert correlate(sim, real)["mmrv"] == pytest.approx(1 / 3)
    # swapped, the violated pair's gap is measured on the tied side: |1 - 1| = 0 -> MMRV = 0 (asymmetric)
    assert correlate(real, sim)["mmrv"] == pytest.approx(0.0)


def test_csv_roundtrip_keeps_the_order_sim_then_real(tmp_path):
    sim = write_csv(tmp_path / "sim.csv", [("a", 1), ("b", 1), ("c", 2)])
    real = write_csv(tmp_path / "real.csv", [("c", 3), ("a", 1), ("b", 2)])
    from rl.eval_cli import correlate as cmd

    out = CliRunner().invoke(cmd, [str(sim), str(real), "--json", "--plot", str(tmp_path / "s.png")])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {"pearson", "mmrv", "pearson_ci95", "mmrv_ci95", "n"} <= set(data)
    assert data["n"] == 3 and data["mmrv"] == pytest.approx(1 / 3)
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_bootstrap_intervals_cover_the_estimate():
    sim = {f"p{i}": i / 10 for i in range(10)}
    real = {f"p{i}": (i + (1 if i % 3 == 0 else 0)) / 10 for i in range(10)}
    r = correlate(sim, real, resamples=500)
    lo, hi = r["pearson_ci95"]
    assert lo <= r["pearson"] <= hi and hi <= 1.0 and lo > 0.5
    mlo, mhi = r["mmrv_ci95"]
    assert 0.0 <= mlo <= r["mmrv"] <= mhi


def test_per_policy_intervals_from_n_or_explicit(tmp_path):
    p = write_csv(tmp_path / "s.csv", [("a", 0.5, 20, "", ""), ("b", 0.9, "", 0.8, 0.95)],
                  header="policy,score,n,ci_low,ci_high")
    s = read_scores(p)
    assert s["a"]["ci95"][0] < 0.5 < s["a"]["ci95"][1]
    assert s["b"]["ci95"] == [0.8, 0.95]
    scatter(correlate(s, {"a": 0.4, "b": 0.7}, resamples=200), tmp_path / "p.png")


def test_bad_inputs_raise_typed_errors(tmp_path):
    with pytest.raises(ConfigError, match="different policies"):
        correlate({"a": 1, "b": 2}, {"a": 1, "c": 2})
    with pytest.raises(ConfigError, match="at least two"):
        correlate({"a": 1}, {"a": 1})
    with pytest.raises(ConfigError, match="policy,score"):
        read_scores(write_csv(tmp_path / "x.csv", [("a", 1)], header="name,value"))
    with pytest.raises(ConfigError, match="not a number"):
        read_scores(write_csv(tmp_path / "y.csv", [("a", "high")]))
    with pytest.raises(ConfigError, match="twice"):
        read_scores(write_csv(tmp_path / "z.csv", [("a", 1), ("a", 2)]))


def test_constant_side_gives_no_pearson():
    r = correlate({"a": 0.5, "b": 0.5, "c": 0.5}, {"a": 0.1, "b": 0.2, "c": 0.3}, resamples=200)
    assert r["pearson"] is None and r["pearson_ci95"] is None
    # sim ties everything: a pair is violated where real orders i above j; a: none, b: 0.1, c: max(0.2, 0.1)
    assert r["mmrv"] == pytest.approx((0.0 + 0.1 + 0.2) / 3)


def test_results_csv_from_runs(tmp_path):
    runs = [{"policy": "a", "scores": {"overall": {"success_rate": 0.5, "success_ci95": [0.3, 0.7], "episodes": 20,
                                                   "progress": {"mean": 0.6, "ci95": [0.5, 0.7]}}}},
            {"policy": "b", "scores": {"overall": {"success_rate": 0.8, "success_ci95": [0.6, 0.9], "episodes": 20,
                                                   "progress": {"mean": 0.9, "ci95": [0.8, 1.0]}}}}]
    s = read_scores(results_csv(runs, tmp_path / "r.csv"))
    assert s == {"a": {"score": 0.5, "ci95": [0.3, 0.7]}, "b": {"score": 0.8, "ci95": [0.6, 0.9]}}
