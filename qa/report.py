"""QA reports: ``qa_report.json`` and a readable ``qa_report.md``.

``qa_report.json`` holds the pass rate and cost per check and the reasons histograms;
``qa_report.md`` adds thumbnails of the rejected scenes and their reasons.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

from qa.config import CHECK_ORDER, QAConfig

log = logging.getLogger(__name__)
REPORT_JSON = "qa_report.json"
REPORT_MD = "qa_report.md"
MAX_LISTED = 200
"""Most rejected scenes listed in a report."""


def _kind(check: dict) -> str:
    reason = str(check.get("reason") or "")
    return reason.split(":")[0].split(";")[0].strip() or "failed"


def check_stats(records: list[dict]) -> dict[str, dict]:
    """Per check: how often it ran, passed, failed, was skipped; pass rate; seconds (mean, total)."""
    stats: dict[str, dict] = {}
    for q in records:
        for c in q.get("checks", []):
            s = stats.setdefault(c["name"], {"run": 0, "passed": 0, "failed": 0, "skipped": 0, "seconds_total": 0.0})
            s["run"] += 1
            s["seconds_total"] += float(c.get("seconds") or 0.0)
            if c.get("skipped"):
                s["skipped"] += 1
            elif c.get("passed"):
                s["passed"] += 1
            else:
                s["failed"] += 1
    out = {}
    for name in [n for n in CHECK_ORDER if n in stats] + sorted(set(stats) - set(CHECK_ORDER)):
        s = stats[name]
        judged = s["passed"] + s["failed"]
        s["pass_rate"] = round(s["passed"] / judged, 4) if judged else None
        s["seconds_mean"] = round(s["seconds_total"] / s["run"], 5) if s["run"] else 0.0
        s["seconds_total"] = round(s["seconds_total"], 4)
        out[name] = s
    return out


def build_report(records: list[dict], rejected: list[dict], *, run: dict | None = None,
                 qa_cfg: QAConfig | None = None, mode: str = "generate", accepted: list[dict] | None = None,
                 prompt: str = "") -> dict:
    """Aggregate QA records into the ``qa_report.json`` content.

    Args:
        records: qa dicts of the scenes in the pack (``QAReport.to_dict()`` form).
        rejected: rejected attempts: ``{id, attempt, reason, qa, preview}``.
        run: the pipeline's run summary (requested, accepted, attempts, reasons...).
        qa_cfg: the settings used.
        mode: ``generate`` (inline QA) or ``recheck`` (``scenegen qa`` on an existing pack).
        accepted: ``{id, preview}`` of the scenes in the pack.
        prompt: the pack's prompt.

    """
    run = dict(run or {})
    checked = [*records, *(r["qa"] for r in rejected if r.get("qa"))]
    fails: Counter = Counter()
    for q in checked:
        for c in q.get("checks", []):
            if not c.get("passed", True):
                fails[f"{c['name']}: {_kind(c)}"] += 1
    verdicts = [q.get("qa_passed", q.get("passed")) for q in checked]
    costs = [float(q.get("seconds") or 0.0) for q in checked]
    reasons = dict(run.get("reasons") or {})
    if mode == "recheck":
        reasons = dict(Counter(f"qa: {q['failed'][0]}" for q in checked if q.get("failed")).most_common())
    listed = sorted(rejected, key=lambda r: (r.get("attempt") is None, r.get("attempt") or 0, r["id"]))
    return {
        "mode": mode, "prompt": prompt or run.get("prompt", ""),
        "requested": run.get("requested"), "accepted": len(accepted or []), "attempts": run.get("attempts"),
        "stopped_by": run.get("stopped_by", ""), "seconds": run.get("seconds"),
        "scenes_checked": len(checked), "scenes_passed": sum(v is True for v in verdicts),
        "pass_rate": round(sum(v is True for v in verdicts) / len(checked), 4) if checked else None,
        "cost_per_scene_s": round(sum(costs) / len(costs), 5) if costs else 0.0,
        "checks": check_stats(checked),
        "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "qa_failures": dict(sorted(fails.items(), key=lambda kv: (-kv[1], kv[0]))),
        "rejected": [{"id": r["id"], "attempt": r.get("attempt"), "reason": r.get("reason", ""),
                      "preview": r.get("preview")} for r in listed[:MAX_LISTED]],
        "rejected_total": len(rejected),
        "config": qa_cfg.to_dict() if qa_cfg is not None else None,
    }


def run_message(report: dict, requested: int) -> str:
    """One paragraph: how many passed, and why the rest failed."""
    acc = report.get("accepted", 0)
    attempts = report.get("attempts")
    tried = f" in {attempts} attempts" if attempts is not None else ""
    head = ", ".join(f"{k} x{v}" for k, v in list(report.get("reasons", {}).items())[:6]) or "none"
    qa = ", ".join(f"{k} x{v}" for k, v in list(report.get("qa_failures", {}).items())[:6]) or "none"
    if acc >= requested:
        return f"{acc}/{requested} scenes passed QA{tried}; rejections: {head}; failed checks: {qa}."
    return (f"only {acc}/{requested} scenes passed QA{tried} ({report.get('stopped_by') or 'budget spent'}); "
            f"rejections: {head}; failed checks: {qa}. The pack keeps the accepted scenes: rerun to resume, raise "
            "--attempts-per-scene / --time-budget, or loosen the failing check's thresholds")


def render_markdown(report: dict) -> str:
    """The readable report (GitHub-flavoured markdown with HTML thumbnails)."""
    lines = [f"# QA report: {report.get('prompt')!r}", ""]
    if report["mode"] == "generate":
        lines.append(f"Inline QA: {report['accepted']} accepted of {report.get('requested')} requested, "
                     f"{report.get('attempts')} attempts" + (f", stopped: {report['stopped_by']}"
                                                             if report.get("stopped_by") else "") + ".")
    else:
        lines.append(f"Re-check of an existing pack: {report['scenes_passed']} of {report['scenes_checked']} "
                     "scenes pass.")
    lines += ["", f"Scenes checked: {report['scenes_checked']}, passed: {report['scenes_passed']}, "
              f"QA cost per scene: {report['cost_per_scene_s']:.3f} s.", "",
              "| check | run | passed | failed | skipped | pass rate | mean s |", "|---|---|---|---|---|---|---|"]
    for name, s in report["checks"].items():
        rate = "-" if s["pass_rate"] is None else f"{s['pass_rate']:.1%}"
        lines.append(f"| {name} | {s['run']} | {s['passed']} | {s['failed']} | {s['skipped']} | {rate} | "
                     f"{s['seconds_mean']:.3f} |")
    for title, key in (("Rejections by first cause", "reasons"), ("Failed checks by kind", "qa_failures")):
        lines += ["", f"## {title}", ""]
        items = report.get(key) or {}
        lines += ["| cause | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in items.items()] if items \
            else ["none"]
    lines += ["", f"## Rejected scenes ({report.get('rejected_total', 0)})", ""]
    if report["rejected"]:
        lines += ["| preview | scene | reason |", "|---|---|---|"]
        for r in report["rejected"]:
            img = f'<img src="{r["preview"]}" width="128">' if r.get("preview") else "(no preview)"
            reason = str(r.get("reason", "")).replace("|", "/")
            lines.append(f"| {img} | `{r['id'][:12]}` (attempt {r.get('attempt')}) | {reason} |")
    else:
        lines.append("none")
    return "\n".join(lines) + "\n"


def write_report(root: str | os.PathLike, report: dict,
                 scene_qa: dict[str, dict] | None = None) -> tuple[Path, Path]:
    """Write ``qa_report.json``, ``qa_report.md`` and the scenes' ``qa.json`` into a pack; record a QA summary.

    The pack is opened with :meth:`~scenegen.pack.writer.PackWriter.update`: nothing else in it
    is written, moved or deleted, and its ``finalized`` flag keeps its value.

    Args:
        root: the pack folder.
        report: the report (:func:`build_report`).
        scene_qa: scene id -> QA record to store as that scene's ``qa.json`` (a scene whose folder
            is not a plain folder of the pack keeps its record in the report only).

    Returns:
        The two report paths.

    Raises:
        PackError: the folder is not a pack or is locked by another writer.

    """
    from scenegen.errors import PackError
    from scenegen.pack.writer import PackWriter

    with PackWriter.update(root) as writer:
        for sid, qa in sorted((scene_qa or {}).items()):
            try:
                writer.write_scene_qa(sid, qa)
            except PackError as exc:
                log.warning("qa.json of scene %s not written: %s", sid[:12], exc.one_line())
        report = {**report, "prompt": report.get("prompt") or writer.prompt}
        pj = writer.write_extra(REPORT_JSON, report)
        pm = writer.write_extra(REPORT_MD, render_markdown(report))
        brief: dict[str, Any] = {k: report[k] for k in ("mode", "scenes_checked", "scenes_passed", "pass_rate",
                                                        "cost_per_scene_s")}
        brief["pass_rate_by_check"] = {k: v["pass_rate"] for k, v in report["checks"].items()}
        writer.set_summary({**writer.summary, "qa": brief})
    return pj, pm
