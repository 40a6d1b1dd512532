"""Failure diagnosis of an eval run: the most frequent failure modes and the conditions under which they rise.

Each episode of a run carries the env's failure flags and the factors its configuration froze
(tier, target category, nearest-neighbour distance, clutter, light, camera offset, the target's
friction and mass scales). For every mode (a flag raised in a failed episode, or a failed
episode's primary mode for ``timeout``/``unfinished``), :func:`diagnose`:

* counts it over all episodes (rate with a Wilson 95% interval);
* for each categorical factor, compares the mode's rate at each level with its rate elsewhere;
* for each numeric factor, tries thresholds at the 10/25/50/75/90% quantiles, below and above;
* scores each condition with a two-proportion test, Holm-adjusts the p-values over every condition
  tried for that mode (so picking the best split is paid for), ranks modes by frequency and keeps, per
  factor, the significant condition with the largest rise;
* says it in words ("knocked_off rises when nn_distance < 0.06 m: 41% (n=...) vs 8% otherwise").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from rl.stats import two_proportion_test, wilson_interval
from scenegen.errors import ConfigError

CATEGORICAL = ("tier", "target_category")
"""Factors compared level by level."""
NUMERIC = ("nn_distance", "clutter", "n_objects", "n_distractors", "light_diffuse", "light_elevation_deg",
           "camera_offset", "target_friction_scale", "target_mass_scale")
"""Factors split at a threshold."""
UNITS = {"nn_distance": " m", "camera_offset": " m", "light_elevation_deg": " deg"}
ALPHA = 0.05
"""Holm-adjusted p-value under which a condition counts."""
MIN_GROUP = 3
"""Episodes a side of a split needs at least."""


def episode_modes(e: dict) -> set[str]:
    """The failure modes of one episode (none when it succeeded)."""
    if e["success"]:
        return set()
    modes = {k for k, v in e["flags"].items() if v}
    if e.get("failure") and e["failure"] not in e["flags"]:
        modes.add(e["failure"])
    return modes or {"unfinished"}


def _condition(name: str, mask: np.ndarray, hit: np.ndarray, text: str) -> dict | None:
    n_in, n_out = int(mask.sum()), int((~mask).sum())
    if n_in < MIN_GROUP or n_out < MIN_GROUP:
        return None
    s_in, s_out = int(hit[mask].sum()), int(hit[~mask].sum())
    t = two_proportion_test(s_in, n_in, s_out, n_out)
    return {"factor": name, "condition": text, "rate_in": s_in / n_in,
            "rate_in_ci95": list(wilson_interval(s_in, n_in)), "n_in": n_in, "rate_out": s_out / n_out,
            "rate_out_ci95": list(wilson_interval(s_out, n_out)), "n_out": n_out, "diff": t["diff"],
            "diff_ci95": t["diff_ci95"], "p_value": t["p_value"]}


def _fmt(v: float, factor: str) -> str:
    return f"{v:.3g}{UNITS.get(factor, '')}"


def conditions(episodes: Sequence[dict], hit: np.ndarray) -> list[dict]:
    """Every condition tried for one mode (``hit`` marks its episodes), with Holm-adjusted p-values."""
    out = []
    for f in CATEGORICAL:
        vals = np.array([str(e["factors"].get(f)) for e in episodes])
        for level in sorted(set(vals)):
            c = _condition(f, vals == level, hit, f"{f} = {level}")
            if c:
                out.append(c)
    for f in NUMERIC:
        raw = [e["factors"].get(f) for e in episodes]
        if any(v is None for v in raw):
            continue
        x = np.asarray(raw, dtype=float)
        if np.unique(x).size < 2:
            continue
        for thr in sorted(set(np.quantile(x, [0.1, 0.25, 0.5, 0.75, 0.9]).round(6))):
            for below in (True, False):
                mask = x <= thr if below else x > thr
                c = _condition(f, mask, hit, f"{f} {'<=' if below else '>'} {_fmt(thr, f)}")
                if c:
                    out.append(c)
    # Holm step-down over everything tried for this mode
    order = sorted(range(len(out)), key=lambda i: out[i]["p_value"])
    m, running = len(out), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * out[i]["p_value"]))
        out[i]["p_adjusted"] = running
    return out


def _words(mode: str, c: dict) -> str:
    return (f"{mode} rises when {c['condition']}: {100 * c['rate_in']:.0f}% of {c['n_in']} episodes "
            f"[{100 * c['rate_in_ci95'][0]:.0f}-{100 * c['rate_in_ci95'][1]:.0f}%] vs {100 * c['rate_out']:.0f}% "
            f"of {c['n_out']} otherwise [{100 * c['rate_out_ci95'][0]:.0f}-{100 * c['rate_out_ci95'][1]:.0f}%] "
            f"(p = {c['p_adjusted']:.2g}, Holm-adjusted)")


def diagnose(result: dict, top: int = 3) -> dict:
    """Ranked failure modes of a run and the conditions under which each rises.

    Args:
        result: a run result (:func:`rl.evalrun.load_result`) or ``{"episodes": [...]}``.
        top: significant conditions kept per mode.

    Returns:
        ``{"episodes", "failures", "modes": [{"mode", "count", "rate", "rate_ci95", "share_of_failures",
        "conditions", "tried", "summary"}], "summary": [lines]}``; modes ranked by count.

    Raises:
        ConfigError: no episodes.

    """
    eps = list(result.get("episodes", []))
    if not eps:
        raise ConfigError("the eval result has no episodes to diagnose")
    n = len(eps)
    failures = sum(not e["success"] for e in eps)
    modes_of = [episode_modes(e) for e in eps]
    counts = Counter(m for ms in modes_of for m in ms)
    modes = []
    for mode, k in counts.most_common():
        hit = np.array([mode in ms for ms in modes_of])
        tried = conditions(eps, hit)
        sig = sorted((c for c in tried if c["p_adjusted"] < ALPHA and c["diff"] > 0),
                     key=lambda c: (-c["diff"], c["p_adjusted"]))
        kept, seen = [], set()
        for c in sig:
            if c["factor"] in seen:
                continue
            seen.add(c["factor"])
            kept.append(c)
            if len(kept) >= top:
                break
        lo, hi = wilson_interval(k, n)
        head = (f"{mode}: {k} of {n} episodes ({100 * k / n:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}%]), "
                f"{100 * k / max(failures, 1):.0f}% of the {failures} failures")
        words = [_words(mode, c) for c in kept] or [f"{mode}: no condition tried rises significantly "
                                                     f"({len(tried)} tried; more episodes narrow the intervals)"]
        modes.append({"mode": mode, "count": k, "rate": k / n, "rate_ci95": [lo, hi],
                      "share_of_failures": k / max(failures, 1), "conditions": kept, "tried": len(tried),
                      "summary": [head, *words]})
    by_level = {}
    for f in CATEGORICAL:
        acc: dict[str, list[int]] = {}
        for e in eps:
            a = acc.setdefault(str(e["factors"].get(f)), [0, 0])
            a[0] += int(not e["success"])
            a[1] += 1
        by_level[f] = {k: {"failures": a, "episodes": b, "rate": a / b, "rate_ci95": list(wilson_interval(a, b))}
                       for k, (a, b) in sorted(acc.items())}
    lines = [f"{failures} of {n} episodes failed ({100 * failures / n:.0f}%)."]
    for m in modes:
        lines += m["summary"]
    return {"episodes": n, "failures": failures, "set": result.get("set"), "policy": result.get("policy"),
            "modes": modes, "failure_by_level": by_level, "summary": lines}


def markdown(d: dict) -> str:
    """The diagnosis as a ranked Markdown table and sentences."""
    lines = [f"# Failure diagnosis: {d.get('policy')}", "", d["summary"][0], "",
             "| rank | mode | episodes | rate [95% CI] | share of failures | strongest condition |",
             "|---|---|---|---|---|---|"]
    for i, m in enumerate(d["modes"], 1):
        c = m["conditions"][0] if m["conditions"] else None
        cond = "-" if c is None else (f"{c['condition']}: {100 * c['rate_in']:.0f}% vs {100 * c['rate_out']:.0f}% "
                                      f"(p={c['p_adjusted']:.2g})")
        lines.append(f"| {i} | {m['mode']} | {m['count']} | {100 * m['rate']:.0f}% "
                     f"[{100 * m['rate_ci95'][0]:.0f}, {100 * m['rate_ci95'][1]:.0f}] | "
                     f"{100 * m['share_of_failures']:.0f}% | {cond} |")
    lines.append("")
    for m in d["modes"]:
        lines += [f"- {s}" for s in m["summary"][1:]]
    return "\n".join(lines) + "\n"
