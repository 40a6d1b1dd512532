"""Intervals and agreement metrics against known values and hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rl import stats
from scenegen.errors import ConfigError


def test_wilson_against_known_values():
    # Wilson score at z = 1.96: 8/10 -> [0.4902, 0.9433]; 0/10 -> [0, 0.2775]; 50/100 -> [0.4038, 0.5962]
    assert stats.wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert stats.wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert stats.wilson_interval(10, 10)[1] == 1.0 and stats.wilson_interval(0, 12)[0] == 0.0
    assert stats.wilson_interval(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    lo90, hi90 = stats.wilson_interval(50, 100, confidence=0.90)
    assert 0.4038 < lo90 < 0.5 < hi90 < 0.5962
    with pytest.raises(ConfigError):
        stats.wilson_interval(3, 2)
    with pytest.raises(ConfigError):
        stats.wilson_interval(0, 0)


def test_bootstrap_mean_interval_covers_and_is_seeded():
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 1.0, 400)
    lo, hi = stats.bootstrap_ci(x, seed=1)
    se = x.std() / math.sqrt(x.size)
    assert lo < x.mean() < hi and (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert stats.bootstrap_ci(x, seed=1) == (lo, hi)
    assert stats.bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    lo_m, hi_m = stats.bootstrap_ci(x, statistic=np.median, resamples=300)
    assert lo_m < np.median(x) < hi_m
    with pytest.raises(ConfigError):
        stats.bootstrap_ci([])


def test_two_proportion_test():
    res = stats.two_proportion_test(80, 100, 50, 100)
    assert res["diff"] == pytest.approx(0.3) and res["p_value"] < 1e-4
    assert res["diff_ci95"][0] > 0
    same = stats.two_proportion_test(5, 10, 5, 10)
    assert same["p_value"] == pytest.approx(1.0) and same["diff_ci95"][0] < 0 < same["diff_ci95"][1]


def test_paired_bootstrap_finds_a_real_difference_only():
    rng = np.random.default_rng(0)
    base = rng.random(200)
    better = stats.paired_bootstrap(base + 0.1, base)
    assert better["diff"] == pytest.approx(0.1) and better["p_value"] < 0.01
    noise = stats.paired_bootstrap(base + rng.normal(0, 0.05, 200), base)
    assert noise["p_value"] > 0.05 or abs(noise["diff"]) < 0.01


def test_pearson_hand_computed():
    assert stats.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert stats.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = 1,2,3,4 and y = 1,3,2,4: cov = 1.0 (population), var = 1.25 each -> r = 0.8
    assert stats.pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(stats.pearson([1, 1, 1], [1, 2, 3]))


def test_mmrv_hand_computed_ties_and_reversal():
    assert stats.mmrv([0.1, 0.5, 0.9], [0.2, 0.4, 0.8]) == 0.0  # same order
    # reversed ranking: each i is violated by every j; the largest |real_i - real_j| is 0.6, 0.3, 0.6
    assert stats.mmrv([0.1, 0.5, 0.9], [0.8, 0.5, 0.2]) == pytest.approx((0.6 + 0.3 + 0.6) / 3)
    # a tie in sim against a strict order in real: only the policy real ranks higher is violated (0.4 / 2)
    assert stats.mmrv([0.5, 0.5], [0.2, 0.6]) == pytest.approx(0.2)
    assert stats.mmrv([0.5, 0.5], [0.3, 0.3]) == 0.0
    # asymmetric: real ties, sim strict -> |real_i - real_j| = 0, no cost
    assert stats.mmrv([0.2, 0.6], [0.5, 0.5]) == 0.0
    with pytest.raises(ConfigError):
        stats.mmrv([0.1], [0.2])


def test_paired_metric_ci():
    sim = [0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.6, 0.4]
    real = [0.15, 0.25, 0.55, 0.65, 0.95, 0.1, 0.7, 0.45]
    lo, hi = stats.paired_metric_ci(stats.pearson, sim, real, resamples=500)
    assert 0.7 < lo <= stats.pearson(sim, real) <= hi <= 1.0
