"""Run checks on a scene, and the generate -> check -> retry loop over :func:`scenegen.pipeline.generate`.

:func:`run_checks` runs the configured checks on one built (settled) world.
:func:`generate_with_qa` plugs a :class:`QAChecker` into the pipeline's per-scene
``checker`` hook (its workers, ordering, resume and pack writing are reused as they are):
the pipeline keeps drawing designed variants until ``n`` scenes pass or its attempt or
time budget is spent. Rejected attempts arrive through the pipeline's ``on_reject`` hook
and can be kept in ``<pack>/rejected/<id>/`` (scene.json, preview.png, qa.json). The run
ends with ``qa_report.json`` and ``qa_report.md`` in the pack and a :class:`QARun` that
says how many passed and why the rest failed.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from qa.checks import CHECKS
from qa.config import CHECK_ORDER, QAConfig
from qa.result import CheckResult, QAReport
from scenegen.errors import BudgetError, ConfigError, PackError, ScenegenError
from scenegen.fileio import publish_dir
from scenegen.scene import Scene

log = logging.getLogger(__name__)
REJECTED_DIR = "rejected"
"""Folder of a pack holding the rejected attempts kept for inspection."""


def run_checks(scene: Scene, world: Any, cfg: QAConfig | None = None, names: tuple[str, ...] | None = None) -> QAReport:
    """Run checks on a built world and return the scene's :class:`QAReport`.

    A check that raises is reported as failed (``error: ...``), never as passed. Every check
    leaves the world as it found it.

    Args:
        scene: the scene the world was built from.
        world: its :class:`~scenegen.sim.world.World`, settled.
        cfg: thresholds (default :class:`QAConfig`).
        names: checks to run (default ``cfg.checks``); they run in :data:`~qa.config.CHECK_ORDER`.

    Raises:
        ConfigError: an unknown check name.

    """
    cfg = cfg or QAConfig()
    names = cfg.checks if names is None else tuple(names)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ConfigError(f"unknown check(s) {unknown}; use some of {', '.join(CHECK_ORDER)}")
    report = QAReport(scene.id)
    for name in (n for n in CHECK_ORDER if n in names):
        t0 = time.perf_counter()
        try:
            res = CHECKS[name](scene, world, cfg)
        except ScenegenError as exc:
            res = CheckResult(name, False, 0.0, f"error: {exc.one_line()[:300]}", {"error": True})
        except Exception as exc:  # a broken check must reject, not crash the run or pass silently
            log.exception("QA check %s crashed on scene %s", name, scene.id[:12])
            res = CheckResult(name, False, 0.0, f"internal error: {type(exc).__name__}: {str(exc)[:200]}",
                              {"error": True})
        res.seconds = time.perf_counter() - t0
        report.results.append(res)
        if cfg.fail_fast and not res.passed:
            break
    return report


@dataclass(frozen=True)
class QAChecker:
    """The pipeline's per-scene ``checker``: ``(scene, world) -> qa dict`` (picklable for worker processes).

    With ``config.enforce`` False (audit mode) every scene is accepted: ``passed`` is then True,
    the real verdict is in ``qa_passed`` and each check keeps its own ``passed``. Enforcing, it stops
    at the first failed check (the scene is rejected anyway; the costly checks run last).
    """

    config: QAConfig = field(default_factory=QAConfig)

    def __call__(self, scene: Scene, world: Any) -> dict:
        cfg = self.config if self.config.fail_fast or not self.config.enforce else replace(self.config, fail_fast=True)
        data = run_checks(scene, world, cfg).to_dict()
        data["enforced"] = self.config.enforce
        if not self.config.enforce:
            data["qa_passed"] = data["passed"]
            data["passed"] = True
        return data


def failure_kinds(qa: dict) -> list[str]:
    """``"<check>: <kind>"`` of every failed check in a qa dict."""
    out = []
    for c in qa.get("checks", []):
        if not c.get("passed", True):
            out.append(f"{c['name']}: {CheckResult.from_dict(c).kind}")
    return out


class RejectKeeper:
    """The pipeline's ``on_reject`` hook: records each rejected attempt and optionally keeps its files."""

    def __init__(self, root: str | os.PathLike, keep: bool) -> None:
        self.root = Path(root)
        self.keep = keep
        self.records: list[dict] = []

    def __call__(self, attempt: Any) -> None:
        scene_id = (attempt.scene or {}).get("id") or f"attempt-{attempt.index:05d}"
        rec = {"id": scene_id, "attempt": attempt.index, "reason": attempt.reason,
               "qa": attempt.qa, "preview": None}
        if self.keep and attempt.scene is not None:
            rec["preview"] = self._write(scene_id, attempt)
        self.records.append(rec)

    def _write(self, scene_id: str, attempt: Any) -> str | None:
        final = self.root / REJECTED_DIR / scene_id
        rel = f"{REJECTED_DIR}/{scene_id}/preview.png" if attempt.preview else None
        if final.exists():
            return rel
        qa = dict(attempt.qa or {"passed": False, "checks": []})
        qa.update({"rejected_because": attempt.reason, "attempt": attempt.index})
        files: dict[str, bytes | str] = {"scene.json": json.dumps(attempt.scene, indent=1, sort_keys=True),
                                         "qa.json": json.dumps(qa, indent=1, sort_keys=True, default=str)}
        if attempt.preview:
            files["preview.png"] = attempt.preview
        publish_dir(final, files, keep_existing=lambda _: True, error=PackError)  # a copy already there is kept
        return rel


@dataclass
class QARun:
    """What :func:`generate_with_qa` did."""

    requested: int
    """Scenes asked for."""
    accepted: int
    """Scenes in the pack that passed QA."""
    attempts: int
    """Designed graphs tried (the resumed run's included)."""
    complete: bool
    """``accepted >= requested``."""
    stopped_by: str
    """What ended an incomplete run (``attempt budget ...``, ``time budget ...``), else empty."""
    reasons: dict[str, int]
    """Rejections by first cause (``LayoutError``, ``not at rest``, ``qa: physics``...)."""
    qa_failures: dict[str, int]
    """Failed checks by kind over every checked attempt (``physics: floating``...)."""
    message: str
    """One paragraph saying how many passed and why the rest failed."""
    report: dict = field(default_factory=dict)
    """The qa_report.json content."""
    pack_dir: Path | None = None
    """The pack folder."""


def generate_with_qa(prompt: str, n: int, out: str | os.PathLike, seed: int = 0, config: Any = None,
                     qa_cfg: QAConfig | None = None, *, keep_rejected: bool = False,
                     cache_dir: str | os.PathLike | None = None, progress: bool = True) -> QARun:
    """Generate scenes until ``n`` pass QA or the pipeline's budget (attempts, seconds) is spent.

    The budget is the pipeline's: ``config.attempts_per_scene`` (at most ``ceil(n * a) + 4`` designed
    graphs) and ``config.time_budget_s``.

    Args:
        prompt: the task in English.
        n: scenes wanted.
        out: pack folder (resumed when it holds the same prompt, seed and pipeline config).
        seed: run seed.
        config: a :class:`~scenegen.pipeline.PipelineConfig`.
        qa_cfg: checks and thresholds.
        keep_rejected: keep rejected attempts in ``out/rejected/<id>/`` (scene.json, preview.png, qa.json).
        cache_dir: asset cache folder.
        progress: show a progress bar.

    Returns:
        A :class:`QARun`; ``complete`` False (with the reasons in ``message``) when the budget ran out.

    Raises:
        PromptError: the prompt cannot be designed.
        PackError: ``out`` holds something else.

    """
    from qa.report import build_report, run_message, write_report
    from scenegen.pack.reader import load_pack
    from scenegen.pipeline import PipelineConfig, generate

    cfg = config or PipelineConfig()
    qa_cfg = qa_cfg or QAConfig()
    keeper = RejectKeeper(out, keep_rejected)
    try:
        generate(prompt, n, out, seed, cfg, cache_dir=cache_dir, progress=progress, checker=QAChecker(qa_cfg),
                 on_reject=keeper)
    except BudgetError:
        pass  # the pack keeps what was accepted; the report below says how many and why
    pack = load_pack(out)
    run = dict(pack.manifest.get("summary", {}).get("run", {}))
    records = [q for q in (pack.qa(s) for s in pack.scene_ids) if q]
    rejected = [r for r in keeper.records]
    report = build_report(records, rejected, run=run, qa_cfg=qa_cfg, mode="generate",
                          accepted=[{"id": s, "preview": _rel(pack.preview_path(s), pack.root)}
                                    for s in pack.scene_ids])
    write_report(pack.root, report)
    accepted = len(pack)
    qa_fail = Counter()
    for q in [*records, *(r["qa"] for r in rejected if r.get("qa"))]:
        qa_fail.update(failure_kinds(q))
    return QARun(requested=n, accepted=accepted, attempts=int(run.get("attempts", 0)), complete=accepted >= n,
                 stopped_by=str(run.get("stopped_by", "")), reasons=dict(run.get("reasons", {})),
                 qa_failures=dict(qa_fail.most_common()), message=run_message(report, n), report=report,
                 pack_dir=pack.root)


def _rel(path: Path | None, root: Path) -> str | None:
    return None if path is None else path.relative_to(root).as_posix()
