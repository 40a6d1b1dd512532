"""Statistics for evaluation: intervals for success rates and means, tests on differences, sim-real agreement.

Every function is pure numpy and seeded where it draws: the same inputs and seed give the
same interval. Rates are fractions in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from scenegen.errors import ConfigError

Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile (a two-sided 95% interval)."""


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence = {confidence!r} must be in (0, 1), e.g. 0.95")
    if abs(confidence - 0.95) < 1e-12:
        return Z95
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial rate (sensible at 0 and n successes, unlike the normal one).

    Raises:
        ConfigError: ``n < 1`` or ``successes`` outside ``0..n``.

    """
    if n < 1 or not 0 <= successes <= n:
        raise ConfigError(f"wilson_interval needs 0 <= successes <= n and n >= 1, got {successes}/{n}")
    z = _z(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact bounds at 0 and n (no rounding residue)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def bootstrap_ci(values: Sequence[float] | np.ndarray, statistic: Callable[[np.ndarray], float] = np.mean,
                 confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over ``values`` (seeded).

    Raises:
        ConfigError: no values, or fewer than 100 resamples.

    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ConfigError("bootstrap_ci needs at least one value")
    if resamples < 100:
        raise ConfigError(f"resamples = {resamples} must be >= 100")
    _z(confidence)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    stats = np.array([statistic(x[i]) for i in idx]) if statistic is not np.mean else x[idx].mean(axis=1)
    lo, hi = np.quantile(stats, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def two_proportion_test(s1: int, n1: int, s2: int, n2: int) -> dict:
    """Two-sided z-test of ``p1 == p2`` with a pooled variance; the difference and its 95% (Newcombe) interval.

    Returns:
        ``{"diff", "diff_ci95", "z", "p_value"}`` with ``diff = p1 - p2``.

    """
    for s, n in ((s1, n1), (s2, n2)):
        if n < 1 or not 0 <= s <= n:
            raise ConfigError(f"two_proportion_test needs 0 <= successes <= n, got {s}/{n}")
    p1, p2 = s1 / n1, s2 / n2
    pool = (s1 + s2) / (n1 + n2)
    se = math.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
    z = 0.0 if se == 0 else (p1 - p2) / se
    from scipy.stats import norm

    p_value = float(2 * norm.sf(abs(z))) if se > 0 else 1.0
    l1, u1 = wilson_interval(s1, n1)
    l2, u2 = wilson_interval(s2, n2)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return {"diff": d, "diff_ci95": [lo, hi], "z": z, "p_value": p_value}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 5000, seed: int = 0) -> dict:
    """Paired bootstrap over configurations of ``mean(a) - mean(b)`` (same configurations, same order).

    Returns:
        ``{"diff", "diff_ci95", "p_value"}``; the p-value is two-sided: twice the smaller share of
        resampled differences on either side of 0.

    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ConfigError(f"paired_bootstrap needs two equal-length non-empty score lists, got {x.size} and {y.size}")
    d = x - y
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    p = 2 * min((means <= 0).mean(), (means >= 0).mean())
    return {"diff": float(d.mean()), "diff_ci95": [float(lo), float(hi)], "p_value": float(min(1.0, p))}


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient (NaN when either side is constant).

    Raises:
        ConfigError: fewer than two pairs or unequal lengths.

    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.size < 2:
        raise ConfigError(f"pearson needs two equal-length lists of >= 2 scores, got {a.size} and {b.size}")
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return float("nan")
    return float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb))


def mmrv(sim: Sequence[float], real: Sequence[float]) -> float:
    """Mean maximum rank violation of ``sim`` against ``real`` (SIMPLER's definition; asymmetric).

    For each policy i, the largest ``|real_i - real_j|`` over the policies j that sim and real order
    differently (``(sim_i > sim_j) != (real_i > real_j)``), 0 when there is none; averaged over i.

    Raises:
        ConfigError: fewer than two policies or unequal lengths.

    """
    s, r = np.asarray(sim, dtype=float), np.asarray(real, dtype=float)
    if s.shape != r.shape or s.size < 2:
        raise ConfigError(f"mmrv needs two equal-length lists of >= 2 scores, got {s.size} and {r.size}")
    worst = np.zeros(s.size)
    for i in range(s.size):
        for j in range(s.size):
            if (s[i] > s[j]) != (r[i] > r[j]):
                worst[i] = max(worst[i], abs(r[i] - r[j]))
    return float(worst.mean())


def paired_metric_ci(metric: Callable[[np.ndarray, np.ndarray], float], x: Sequence[float], y: Sequence[float],
                     resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95% interval of a paired metric (e.g. :func:`pearson`, :func:`mmrv`) over resampled policies.

    Resamples with a constant side (Pearson undefined) are dropped; an interval over fewer than
    half of the resamples is returned as ``(nan, nan)``.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(resamples):
        i = rng.integers(0, a.size, a.size)
        if np.unique(i).size < 2:
            continue
        v = metric(a[i], b[i])
        if math.isfinite(v):
            vals.append(v)
    if len(vals) < resamples / 2:
        return float("nan"), float("nan")
    lo, hi = np.quantile(vals, [0.025, 0.975])
    return float(lo), float(hi)
