"""Results of a diversity ablation: per-arm scores pooled over seeds, the shape test, a Markdown table and a plot.

Per arm, ID and OOD success pool the episodes of every finished training seed (Wilson 95%
intervals over episodes; the per-seed rates are listed beside them, since seeds add variance the
episode interval does not see). The generalisation gap is ID minus OOD success with Newcombe's
95% interval (:func:`rl.stats.two_proportion_test`). The *shape* asks what the seed paper saw:
does OOD success rise from the smallest N to the largest, and does the gap shrink, each with a
95% interval.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rl.stats import two_proportion_test, wilson_interval
from scenegen.errors import ConfigError
from scenegen.fileio import write_atomic

SCHEMA = "scenegen.ablation/1"
"""Schema tag of ``results.json``."""


def _pooled(rows: Sequence[dict], key: str) -> dict | None:
    parts = [r[key] for r in rows if r.get(key)]
    if not parts:
        return None
    s, n = sum(int(p["successes"]) for p in parts), sum(int(p["episodes"]) for p in parts)
    per_seed = [float(p["success_rate"]) for p in parts]
    return {"successes": s, "episodes": n, "success_rate": s / n, "success_ci95": list(wilson_interval(s, n)),
            "per_seed": per_seed, "seed_sd": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else None}


def _split(rows: Sequence[dict], name: str) -> dict | None:
    parts = [r["ood"]["split"][name] for r in rows if r.get("ood") and (r["ood"].get("split") or {}).get(name)]
    return _pooled([{"x": p} for p in parts], "x")


def arm_summary(name: str, knobs: dict, rows: Sequence[dict], seeds: int) -> dict:
    """One arm's row: pooled ID and OOD success, the gap, costs (env steps, GPU-minutes) per seed."""
    done = [r for r in rows if r.get("status") == "done"]
    idp, oodp = _pooled(done, "id"), _pooled(done, "ood")
    gap = None
    if idp and oodp:
        t = two_proportion_test(idp["successes"], idp["episodes"], oodp["successes"], oodp["episodes"])
        gap = {"diff": t["diff"], "diff_ci95": t["diff_ci95"], "p_value": t["p_value"]}
    trains = [r["train"] for r in done]
    return {"arm": name, "knobs": knobs, "seeds": seeds, "seeds_done": len(done),
            "complete": len(done) == seeds,
            "errors": [r["error"] for r in rows if r.get("status") == "failed"],
            "id": idp, "ood": oodp, "gap": gap,
            "ood_novel_category": _split(done, "novel_category"),
            "ood_seen_categories": _split(done, "seen_categories"),
            "budget_env_steps": trains[0]["budget_env_steps"] if trains else None,
            "env_steps": [t["env_steps"] for t in trains], "iterations": [t["iterations"] for t in trains],
            "train_seconds": [t["train_seconds"] for t in trains],
            "gpu_minutes": [t["gpu_minutes"] for t in trains],
            "eval_env_steps": [r["id"]["env_steps"] + r["ood"]["env_steps"] for r in done],
            "eval_seconds": [r["id"]["seconds"] + r["ood"]["seconds"] for r in done]}


def _gap_change(small: dict, large: dict) -> dict:
    """Gap at the smallest N minus gap at the largest, with a MOVER 95% interval from the two gaps' intervals."""
    (g1, (l1, u1)), (g2, (l2, u2)) = ((a["gap"]["diff"], a["gap"]["diff_ci95"]) for a in (small, large))
    d = g1 - g2
    return {"diff": d, "diff_ci95": [d - math.hypot(g1 - l1, u2 - g2), d + math.hypot(u1 - g1, g2 - l2)]}


def shape(arms: Sequence[dict]) -> list[dict]:
    """Per group of arms that differ only in N: OOD success rise and gap shrink from the smallest to the largest N."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for a in arms:
        if a["id"] and a["ood"]:
            groups[json.dumps({k: v for k, v in a["knobs"].items() if k != "n"}, sort_keys=True)].append(a)
    out = []
    for key, rows in groups.items():
        rows = sorted(rows, key=lambda a: a["knobs"]["n"])
        if len(rows) < 2:
            continue
        lo, hi = rows[0], rows[-1]
        rise = two_proportion_test(hi["ood"]["successes"], hi["ood"]["episodes"], lo["ood"]["successes"],
                                   lo["ood"]["episodes"])
        shrink = _gap_change(lo, hi)
        if rise["diff_ci95"][0] > 0 and shrink["diff_ci95"][0] > 0:
            verdict = "holds: OOD success rises and the gap shrinks, both beyond their 95% intervals"
        elif rise["diff"] > 0 and shrink["diff"] > 0:
            verdict = "same direction as the paper, but not beyond the 95% intervals"
        else:
            verdict = "does not hold here"
        out.append({"knobs": json.loads(key), "n_small": lo["knobs"]["n"], "n_large": hi["knobs"]["n"],
                    "ood_rise": {"diff": rise["diff"], "diff_ci95": rise["diff_ci95"], "p_value": rise["p_value"]},
                    "gap_shrink": shrink, "verdict": verdict,
                    "ood_by_n": {str(a["knobs"]["n"]): a["ood"]["success_rate"] for a in rows},
                    "gap_by_n": {str(a["knobs"]["n"]): a["gap"]["diff"] for a in rows}})
    return out


def knob_effects(arms: Sequence[dict]) -> list[dict]:
    """Per pair of scored arms that differ in exactly one knob other than N: that knob's effect on ID and OOD success.

    Each effect is ``second - first`` (arms in plan order) with a two-proportion test and its Newcombe 95% interval.
    """
    scored = [a for a in arms if a["id"] and a["ood"]]
    out = []
    for i, a in enumerate(scored):
        for b in scored[i + 1:]:
            diff = [k for k in a["knobs"] if a["knobs"][k] != b["knobs"][k]]
            if len(diff) != 1 or diff[0] == "n":
                continue
            row = {"knob": diff[0], "n": a["knobs"]["n"], "from": a["knobs"][diff[0]], "to": b["knobs"][diff[0]],
                   "arms": [a["arm"], b["arm"]]}
            for split in ("id", "ood"):
                t = two_proportion_test(b[split]["successes"], b[split]["episodes"], a[split]["successes"],
                                        a[split]["episodes"])
                row[split] = {"diff": t["diff"], "diff_ci95": t["diff_ci95"], "p_value": t["p_value"]}
            out.append(row)
    return out


def collect(out: Path, outcomes: Sequence[dict] = ()) -> dict:
    """The ablation's results from its plan and every run's ``result.json`` (plus this call's outcomes).

    Raises:
        ConfigError: the folder holds no plan.

    """
    plan_path = out / "plan.json"
    if not plan_path.is_file():
        raise ConfigError(f"{out} holds no ablation (plan.json); run scenegen ablate first")
    plan = json.loads(plan_path.read_text())
    seeds = int(plan["spec"]["ablation"]["seeds"])
    latest = {(o["arm"], o["seed"]): o for o in outcomes}
    arms, runs = [], []
    for name, a in plan["arms"].items():
        rows = []
        for s in range(seeds):
            f = out / "runs" / name / f"seed-{s}" / "result.json"
            rows.append(json.loads(f.read_text()) if f.is_file() else latest.get((name, s), {"status": "missing"}))
        runs += [{"arm": name, "seed": s, "status": r.get("status"), "error": r.get("error")}
                 for s, r in enumerate(rows)]
        knobs = {k: a[k] for k in ("n", "distractors", "instances", "layouts", "dr")}
        arms.append(arm_summary(name, knobs, rows, seeds))
    abl = plan["spec"]["ablation"]
    learner = abl.get("learner", "ppoflow")
    bc = plan["spec"].get("bc") or {}
    return {"schema": SCHEMA, "prompt": plan["spec"]["prompt"], "ood_set": plan["ood_set"], "init": plan["init"],
            "learner": learner, "budget": budget_text(learner, abl, bc),
            "budget_env_steps": abl["budget_env_steps"] if learner == "ppoflow" else None, "seeds": seeds,
            "complete": all(a["complete"] for a in arms), "arms": arms, "runs": runs, "shape": shape(arms),
            "knob_effects": knob_effects(arms)}


def budget_text(learner: str, ablation: dict, bc: dict) -> str:
    """What every run of the ablation was given, in words (the same for each arm and seed)."""
    if learner == "bc":
        return (f"BC from scratch on {ablation['bc_demos']} expert demonstrations of the arm's own scenes, "
                f"{bc.get('steps', '?')} steps (env steps: the demonstrations' frames)")
    return f"PPOFlow budget {ablation['budget_env_steps']} env steps"


# ---------------------------------------------------------------------------------------------- Markdown, plot
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _rate(p: dict | None) -> str:
    if not p:
        return "-"
    lo, hi = p["success_ci95"]
    return f"{_pct(p['success_rate'])} [{100 * lo:.1f}, {100 * hi:.1f}] (n={p['episodes']})"


def _pts(d: dict) -> str:
    """A difference of rates and its 95% interval, in points: ``+3.8 pts [-1.5, +10.5]``."""
    return f"{100 * d['diff']:+.1f} pts [{100 * d['diff_ci95'][0]:+.1f}, {100 * d['diff_ci95'][1]:+.1f}]"


def _budget(results: dict) -> str:
    return results.get("budget") or f"PPOFlow budget {results['budget_env_steps']} env steps"


def _knob_text(k: dict) -> str:
    parts = [f"d={k['distractors']}"] if k["distractors"] is not None else []
    parts += [f"inst<={k['instances']}"] if k["instances"] else []
    parts += [f"layouts<={k['layouts']}"] if k["layouts"] else []
    return ", ".join(parts + [f"DR {'on' if k['dr'] else 'off'}"])


def markdown(results: dict, plot: str | None = "results.png") -> str:
    """The results as Markdown: one row per arm, then the shape verdicts."""
    lines = [f"# Diversity ablation: \"{results['prompt']}\"", "",
             f"OOD set `{results['ood_set']['content_hash'][:16]}`; {_budget(results)} per arm and seed; "
             f"{results['seeds']} training seeds per arm; success pooled over the finished "
             "seeds' episodes (Wilson 95%); gap = ID - OOD (Newcombe 95%).", "",
             "| arm | N | knobs | seeds | ID success [95% CI] | OOD success [95% CI] | gap [95% CI] | "
             "OOD, novel category | env steps / seed | GPU-min |", "|---|---|---|---|---|---|---|---|---|---|"]
    for a in results["arms"]:
        g = a["gap"]
        gap = _pts(g) if g else "-"
        steps = ", ".join(str(s) for s in a["env_steps"]) or "-"
        lines.append(f"| {a['arm']} | {a['knobs']['n']} | {_knob_text(a['knobs'])} | {a['seeds_done']}/{a['seeds']} | "
                     f"{_rate(a['id'])} | {_rate(a['ood'])} | {gap} | {_rate(a['ood_novel_category'])} | {steps} | "
                     f"{sum(a['gpu_minutes']):.2f} |")
    lines.append("")
    for s in results["shape"]:
        r, k = s["ood_rise"], s["gap_shrink"]
        lines.append(f"- {_knob_text({**s['knobs'], 'n': None})}: N={s['n_small']} -> {s['n_large']}: OOD success "
                     f"{_pts(r)}, gap shrinks by {_pts(k)}: **{s['verdict']}**.")
    for e in results.get("knob_effects", []):
        i, o = e["id"], e["ood"]
        lines.append(f"- {e['knob']} {e['from']} -> {e['to']} at N={e['n']}: ID {_pts(i)} (p={i['p_value']:.2f}), "
                     f"OOD {_pts(o)} (p={o['p_value']:.2f}).")
    if not results["complete"]:
        lines += ["", "Not complete: some runs are unfinished, failed or missing; `scenegen ablate ... --resume`."]
    if plot:
        lines += ["", f"![ID and OOD success vs N]({plot})"]
    return "\n".join(lines) + "\n"


def plot_results(results: dict, path: str | os.PathLike) -> bool:
    """ID and OOD success vs N (log x) with 95% bands, and the gap; False when no arm has scores yet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[dict]] = defaultdict(list)
    for a in results["arms"]:
        if a["id"] and a["ood"]:
            groups[_knob_text(a["knobs"])].append(a)
    if not groups:
        return False
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for c, (label, rows) in enumerate(sorted(groups.items())):
        rows = sorted(rows, key=lambda a: a["knobs"]["n"])
        n = [a["knobs"]["n"] for a in rows]
        color = f"C{c}"
        for key, style in (("id", "-"), ("ood", "--")):
            v = [a[key]["success_rate"] for a in rows]
            ax.plot(n, v, style, marker="o", color=color, label=f"{key.upper()} ({label})")
            ax.fill_between(n, [a[key]["success_ci95"][0] for a in rows], [a[key]["success_ci95"][1] for a in rows],
                            color=color, alpha=0.12 if key == "id" else 0.07)
        bx.plot(n, [a["gap"]["diff"] for a in rows], marker="o", color=color, label=label)
        bx.fill_between(n, [a["gap"]["diff_ci95"][0] for a in rows], [a["gap"]["diff_ci95"][1] for a in rows],
                        color=color, alpha=0.12)
    for axis, title in ((ax, "success (95% CI)"), (bx, "generalisation gap: ID - OOD (95% CI)")):
        axis.set_xscale("log")
        axis.set_xlabel("training scenes N")
        axis.set_title(title, fontsize=10)
        axis.legend(fontsize=7)
    ax.set_ylim(-0.02, 1.02)
    bx.axhline(0.0, color="grey", lw=0.8)
    title = f"\"{results['prompt']}\", {_budget(results)} per arm"
    fig.suptitle(textwrap.fill(title, 120), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_results(out: Path, results: dict) -> None:
    """``results.json``, ``results.md`` and ``results.png`` (when any arm has scores)."""
    drawn = plot_results(results, out / "results.png")
    write_atomic(out / "results.json", json.dumps(results, indent=1, default=float), error=ConfigError)
    write_atomic(out / "results.md", markdown(results, "results.png" if drawn else None), error=ConfigError)
