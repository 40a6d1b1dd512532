"""Sim-to-real agreement of policy scores: Pearson r and MMRV (as SIMPLER defines it), each with a bootstrap 95% CI.

Input: two CSV files with a header and the columns ``policy,score`` (one row per policy; the
same policies in both), optionally ``n`` (episodes behind the score, for a Wilson interval when
the score is a rate) or ``ci_low,ci_high``. :func:`correlate` pairs them by policy name and
reports ``pearson``, ``mmrv`` (``rl.stats.mmrv(sim, real)``: for each policy, the largest real
score gap to a policy that sim orders the other way, averaged; asymmetric), their bootstrap 95%
intervals over resampled policies, and ``n``. :func:`scatter` draws sim against real with each
policy's interval.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rl.stats import mmrv, paired_metric_ci, pearson, wilson_interval
from scenegen.errors import ConfigError


def _num(text: str, what: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} = {text!r} is not a number") from None
    if not math.isfinite(v):
        raise ConfigError(f"{what} = {text!r} must be finite")
    return v


def read_scores(path: str | os.PathLike) -> dict[str, dict]:
    """``policy -> {"score", "ci95"}`` from a ``policy,score[,n][,ci_low,ci_high]`` CSV.

    Raises:
        ConfigError: missing file or columns, a repeated policy, a non-numeric value.

    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc})") from None
    reader = csv.DictReader(text.splitlines())
    cols = [c.strip() for c in reader.fieldnames or []]
    if "policy" not in cols or "score" not in cols:
        raise ConfigError(f"{path}: needs a header with the columns policy,score (found {cols or 'none'})")
    out: dict[str, dict] = {}
    for i, row in enumerate(reader, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        name = row["policy"]
        if not name:
            raise ConfigError(f"{path}:{i}: empty policy name")
        if name in out:
            raise ConfigError(f"{path}:{i}: policy {name!r} appears twice")
        s = _num(row["score"], f"{path}:{i} score")
        ci = None
        if row.get("ci_low") and row.get("ci_high"):
            ci = [_num(row["ci_low"], f"{path}:{i} ci_low"), _num(row["ci_high"], f"{path}:{i} ci_high")]
        elif row.get("n"):
            n = int(_num(row["n"], f"{path}:{i} n"))
            if 0 <= s <= 1 and n >= 1:
                ci = list(wilson_interval(int(round(s * n)), n))
        out[name] = {"score": s, "ci95": ci}
    if not out:
        raise ConfigError(f"{path}: no policies")
    return out


def correlate(sim: dict[str, dict] | dict[str, float], real: dict[str, dict] | dict[str, float],
              resamples: int = 2000, seed: int = 0) -> dict:
    """Pearson r and MMRV of sim scores against real ones, with bootstrap 95% intervals over policies.

    Args:
        sim: policy -> score (or ``{"score", "ci95"}``) in simulation.
        real: the same policies' real (or target-condition) scores.
        resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        ``{"pearson", "mmrv", "pearson_ci95", "mmrv_ci95", "n", "policies": [{"policy", "sim", "real", ...}]}``
        (a NaN Pearson r, when a side is constant, is written as None).

    Raises:
        ConfigError: the two sides name different policies, or fewer than two policies.

    """
    def score(v: dict | float) -> float:
        return float(v["score"]) if isinstance(v, dict) else float(v)

    if set(sim) != set(real):
        raise ConfigError(f"sim and real name different policies: only in sim {sorted(set(sim) - set(real))}, "
                          f"only in real {sorted(set(real) - set(sim))}")
    names = sorted(sim)
    if len(names) < 2:
        raise ConfigError(f"correlation needs at least two policies, got {len(names)}")
    s = np.array([score(sim[k]) for k in names])
    r = np.array([score(real[k]) for k in names])

    def clean(x: float) -> float | None:
        return None if not math.isfinite(x) else float(x)

    p = pearson(s, r)
    p_ci = paired_metric_ci(pearson, s, r, resamples=resamples, seed=seed)
    m_ci = paired_metric_ci(mmrv, s, r, resamples=resamples, seed=seed)
    rows = [{"policy": k, "sim": float(a), "real": float(b),
             "sim_ci95": sim[k].get("ci95") if isinstance(sim[k], dict) else None,
             "real_ci95": real[k].get("ci95") if isinstance(real[k], dict) else None}
            for k, a, b in zip(names, s, r, strict=True)]
    return {"pearson": clean(p), "mmrv": float(mmrv(s, r)),
            "pearson_ci95": None if not math.isfinite(p_ci[0]) else [max(-1.0, p_ci[0]), min(1.0, p_ci[1])],
            "mmrv_ci95": None if not math.isfinite(m_ci[0]) else list(m_ci), "n": len(names), "policies": rows}


def _err(v: float, ci: Sequence[float] | None) -> list | None:
    """Error-bar lengths of an interval around ``v`` (never negative: an end may sit a rounding error inside)."""
    return None if not ci else [[max(0.0, v - ci[0])], [max(0.0, ci[1] - v)]]


def scatter(result: dict, path: str | os.PathLike, labels: Sequence[str] = ("sim", "real")) -> None:
    """Sim against real, one point per policy with its 95% intervals, and the line y = x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    vals = []
    for row in result["policies"]:
        x, y = row["sim"], row["real"]
        ax.errorbar([x], [y], xerr=_err(x, row["sim_ci95"]), yerr=_err(y, row["real_ci95"]), fmt="o", ms=4,
                    capsize=2, lw=0.8)
        ax.annotate(row["policy"], (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        vals += [x, y]
    lo, hi = min(vals), max(vals)
    pad = 0.05 * (hi - lo or 1.0)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=0.7)
    pr = "n/a" if result["pearson"] is None else f"{result['pearson']:.3f}"
    ax.set_title(f"Pearson r = {pr}, MMRV = {result['mmrv']:.3f} (n = {result['n']})", fontsize=8)
    ax.set_xlabel(f"{labels[0]} score")
    ax.set_ylabel(f"{labels[1]} score")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def results_csv(results: Sequence[dict], path: str | os.PathLike, key: str = "success") -> Path:
    """Write eval run results (:func:`rl.evalrun.load_result`) as a ``policy,score,n,ci_low,ci_high`` CSV."""
    from scenegen.fileio import write_atomic

    lines = ["policy,score,n,ci_low,ci_high"]
    for r in results:
        o = r["scores"]["overall"]
        v, ci = (o["success_rate"], o["success_ci95"]) if key == "success" else \
            (o["progress"]["mean"], o["progress"]["ci95"])
        name = str(r["policy"]).replace(",", ";")
        lines.append(f"{name},{v:.6g},{o['episodes']},{ci[0]:.6g},{ci[1]:.6g}")
    return write_atomic(path, "\n".join(lines) + "\n", error=ConfigError)
