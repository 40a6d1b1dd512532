"""Reports of eval runs: a run's JSON, Markdown, bar chart per tier and videos; a comparison of several runs.

:func:`write_run` stores one run (``result.json``, ``report.md``, ``tiers.png``, ``videos/*.gif``).
:func:`compare` puts several runs of one frozen set side by side: success and progress with 95%
intervals, and for every run against the first a two-proportion test on success and a paired
bootstrap over configurations on success and on progress.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rl.stats import paired_bootstrap, two_proportion_test
from scenegen.errors import ConfigError
from scenegen.fileio import canonical_json, write_atomic


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ci(ci: Sequence[float] | None, pct: bool = True) -> str:
    if not ci:
        return "-"
    return f"[{_pct(ci[0])}, {_pct(ci[1])}]" if pct else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _row(name: str, g: dict) -> str:
    tts = g["time_to_success_s"]["mean"]
    return (f"| {name} | {g['episodes']} | {_pct(g['success_rate'])} {_ci(g['success_ci95'])} | "
            f"{g['progress']['mean']:.3f} {_ci(g['progress']['ci95'], False)} | "
            f"{g['episode_length']['mean']:.1f} | {'-' if tts is None else f'{tts:.2f}'} |")


def markdown(result: dict, chart: str | None = "tiers.png", videos: Sequence[str] = ()) -> str:
    """The Markdown report of one run."""
    s, sc = result["set"], result["scores"]
    head = "| group | episodes | success [95% CI] | progress [95% CI] | mean length (steps) | time to success (s) |\n" \
           "|---|---|---|---|---|---|"
    lines = [f"# Eval: {result['policy']} on {s['name']} v{s['version']}", "",
             f"Set hash `{s['content_hash'][:16]}`, {sc['overall']['configurations']} configurations x "
             f"{s['repeats']} repeat(s), {s['episode_steps']} steps per episode. Success intervals are Wilson over "
             "episodes; progress intervals are bootstrap.", "", "## Overall and per tier", "", head,
             _row("overall", sc["overall"]), *(_row(f"tier {t}", g) for t, g in sc["per_tier"].items()), ""]
    by_conf = sc["overall"].get("success_ci95_by_configuration")
    if by_conf:
        lines += [f"Success interval from a bootstrap over configurations (repeats are not independent): "
                  f"{_ci(by_conf)}.", ""]
    if chart:
        lines += [f"![success and progress per tier]({chart})", ""]
    lines += ["## Per target category", "", head, *(_row(c, g) for c, g in sc["per_category"].items()), ""]
    fails = sc["overall"]["failures"]
    if fails:
        n = sc["overall"]["episodes"]
        lines += ["## Failure modes (primary, of all episodes)", "", "| mode | episodes | share |", "|---|---|---|",
                  *(f"| {k} | {v} | {_pct(v / n)} |" for k, v in fails.items()), "",
                  "`scenegen diagnose` ranks the conditions under which each mode rises.", ""]
    if videos:
        lines += ["## Rollouts", "", *(f"![{v}]({v})" for v in videos), ""]
    return "\n".join(lines)


def tier_chart(result: dict, path: str | os.PathLike) -> None:
    """Bar chart of success and progress per tier with 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tiers = result["scores"]["per_tier"]
    names = list(tiers)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(names), 3.2))
    for off, key, label in ((-0.2, "success", "success"), (0.2, "progress", "progress")):
        vals, lo, hi = [], [], []
        for t in names:
            g = tiers[t]
            v, ci = (g["success_rate"], g["success_ci95"]) if key == "success" else \
                (g["progress"]["mean"], g["progress"]["ci95"])
            vals.append(v)
            lo.append(max(0.0, v - ci[0]))
            hi.append(max(0.0, ci[1] - v))
        ax.bar(x + off, vals, 0.38, yerr=[lo, hi], capsize=3, label=label)
    ax.set_xticks(x, [f"tier {t}\n(n={tiers[t]['episodes']})" for t in names])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("rate / mean (95% CI)")
    ax.set_title(f"{result['policy']} on {result['set']['name']} v{result['set']['version']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _gif(frames: list, path: Path, fps: int) -> None:
    from PIL import Image

    imgs = [Image.fromarray(np.asarray(f)) for f in frames if f is not None]
    if imgs:
        imgs[0].save(path, save_all=True, append_images=imgs[1:], duration=int(1000 / max(1, fps)), loop=0)


def write_run(out: str | os.PathLike, result: dict, clips: Sequence = (), fps: int = 10) -> Path:
    """Write a run: ``result.json``, ``report.md``, ``tiers.png`` and ``videos/<config>-r<repeat>.gif``."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for conf, rep, frames in clips:
        (root / "videos").mkdir(exist_ok=True)
        name = f"videos/{conf}-r{rep}.gif"
        _gif(frames, root / name, fps)
        names.append(name)
    write_atomic(root / "result.json", canonical_json(result, float_digits=None, indent=1, separators=None),
                 error=ConfigError)
    tier_chart(result, root / "tiers.png")
    write_atomic(root / "report.md", markdown(result, "tiers.png", names), error=ConfigError)
    return root


# ---------------------------------------------------------------------------------------------- compare
def _per_config(result: dict, key: str) -> dict[str, float]:
    acc: dict[str, list[float]] = defaultdict(list)
    for e in result["episodes"]:
        acc[e["config"]].append(float(e[key]))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def compare(results: Sequence[dict], set_hash: str | None = None) -> dict:
    """Several runs of one set side by side, each tested against the first.

    Args:
        results: run results (:func:`rl.evalrun.load_result`).
        set_hash: the set's content hash every run must have been made on (None: the first run's).

    Raises:
        ConfigError: fewer than two runs, or runs of different sets (or set versions).

    """
    if len(results) < 2:
        raise ConfigError("compare needs at least two runs")
    want = set_hash or results[0]["set"]["content_hash"]
    for r in results:
        if r["set"]["content_hash"] != want:
            raise ConfigError(f"run {r['policy']!r} was made on eval set {r['set']['content_hash'][:12]} "
                              f"(v{r['set']['version']}), not {want[:12]}; compare runs of one frozen set")
    base = results[0]
    rows, tests = [], []
    for r in results:
        o = r["scores"]["overall"]
        rows.append({"policy": r["policy"], "episodes": o["episodes"], "success_rate": o["success_rate"],
                     "success_ci95": o["success_ci95"], "progress": o["progress"]["mean"],
                     "progress_ci95": o["progress"]["ci95"],
                     "per_tier": {t: {"success_rate": g["success_rate"], "success_ci95": g["success_ci95"]}
                                  for t, g in r["scores"]["per_tier"].items()}})
    b = base["scores"]["overall"]
    for r in results[1:]:
        o = r["scores"]["overall"]
        t2 = two_proportion_test(o["successes"], o["episodes"], b["successes"], b["episodes"])
        paired = {}
        for key in ("success", "progress"):
            x, y = _per_config(r, key), _per_config(base, key)
            common = sorted(set(x) & set(y))
            paired[key] = paired_bootstrap([x[c] for c in common], [y[c] for c in common]) if common else None
        tests.append({"policy": r["policy"], "against": base["policy"], "two_proportion": t2,
                      "paired_bootstrap_success": paired["success"], "paired_bootstrap_progress": paired["progress"]})
    return {"set_hash": want, "runs": rows, "tests": tests}


def compare_markdown(cmp: dict) -> str:
    """The comparison as Markdown tables."""
    lines = [f"# Comparison on eval set `{cmp['set_hash'][:16]}`", "",
             "| policy | episodes | success [95% CI] | progress [95% CI] |", "|---|---|---|---|"]
    for r in cmp["runs"]:
        lines.append(f"| {r['policy']} | {r['episodes']} | {_pct(r['success_rate'])} {_ci(r['success_ci95'])} | "
                     f"{r['progress']:.3f} {_ci(r['progress_ci95'], False)} |")
    lines += ["", "| policy vs baseline | success diff [95% CI] | p (two-proportion) | p (paired, success) | "
              "progress diff [95% CI] | p (paired, progress) |", "|---|---|---|---|---|---|"]
    for t in cmp["tests"]:
        tp, ps, pp = t["two_proportion"], t["paired_bootstrap_success"], t["paired_bootstrap_progress"]
        lines.append(f"| {t['policy']} vs {t['against']} | {100 * tp['diff']:+.1f} pts "
                     f"[{100 * tp['diff_ci95'][0]:+.1f}, {100 * tp['diff_ci95'][1]:+.1f}] | {tp['p_value']:.3g} | "
                     f"{ps['p_value']:.3g} | {pp['diff']:+.3f} [{pp['diff_ci95'][0]:+.3f}, {pp['diff_ci95'][1]:+.3f}]"
                     f" | {pp['p_value']:.3g} |")
    return "\n".join(lines) + "\n"


def compare_chart(cmp: dict, path: str | os.PathLike) -> None:
    """Success per run with 95% intervals (overall and per tier)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = cmp["runs"]
    groups = ["overall", *runs[0]["per_tier"]]
    x = np.arange(len(groups))
    w = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(2 + 1.3 * len(groups), 3.4))
    for i, r in enumerate(runs):
        vals = [r["success_rate"], *(r["per_tier"].get(t, {}).get("success_rate", np.nan) for t in groups[1:])]
        cis = [r["success_ci95"], *(r["per_tier"].get(t, {}).get("success_ci95", [np.nan] * 2) for t in groups[1:])]
        err = [[max(0.0, v - c[0]) for v, c in zip(vals, cis, strict=True)],
               [max(0.0, c[1] - v) for v, c in zip(vals, cis, strict=True)]]
        ax.bar(x + (i - (len(runs) - 1) / 2) * w, vals, w * 0.95, yerr=err, capsize=2, label=r["policy"])
    ax.set_xticks(x, [g if g == "overall" else f"tier {g}" for g in groups])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success (95% CI)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
