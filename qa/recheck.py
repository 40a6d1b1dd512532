"""Re-check an existing pack: rebuild and settle each scene's world, run the checks, write the reports."""

from __future__ import annotations

import logging
import os
from dataclasses import fields
from typing import Any

from qa.config import QAConfig
from qa.loop import run_checks
from qa.report import build_report, write_report
from qa.result import CheckResult, QAReport
from scenegen.errors import ScenegenError

log = logging.getLogger(__name__)
INTEGRITY = "integrity"
"""Name of the pseudo-check a modified or damaged scene fails in a re-check."""


def _world_config(config: dict) -> Any:
    from scenegen.sim.world import WorldConfig

    data = config.get("world") if isinstance(config.get("world"), dict) else {}
    known = {f.name for f in fields(WorldConfig)}
    return WorldConfig(**{k: v for k, v in data.items() if k in known})


def recheck_pack(pack_dir: str | os.PathLike, qa_cfg: QAConfig | None = None, *, progress: bool = True,
                 write: bool = True) -> dict:
    """Run the checks on every scene of a pack and return (and by default write) the QA report.

    Each scene's world is rebuilt from its layout poses and settled with the pack's physics
    settings (deterministic, so it reaches the stored settled state). A scene whose files no
    longer match the manifest fails with ``modified since the pack was written``, one that cannot
    be read or built fails with ``damaged: ...`` (both as the ``integrity`` check); neither is
    checked further. QA writes ``qa_report.json``, ``qa_report.md`` and each scene's ``qa.json``
    (and their hashes in the manifest), nothing else: no folder is moved or deleted and the
    pack's ``finalized`` flag is left as it is.

    Args:
        pack_dir: the pack folder.
        qa_cfg: checks and thresholds.
        progress: show a progress bar.
        write: write the reports and the scenes' ``qa.json`` into the pack.

    Returns:
        The report dict; ``report["scenes"]`` maps scene id -> its QA record and
        ``report["integrity"]`` lists ``{id, reason}`` of the modified or damaged scenes.

    Raises:
        PackError: not a readable pack, or another writer holds it.

    """
    from tqdm import tqdm

    from scenegen.pack.reader import load_pack
    from scenegen.sim.world import World

    cfg = qa_cfg or QAConfig()
    pack = load_pack(pack_dir)
    world_cfg = _world_config(pack.config)
    settle_s = float(pack.config.get("settle_seconds", 2.0))
    records: dict[str, dict] = {}
    failed: list[dict] = []
    integrity: list[dict] = []
    for i, sid in enumerate(tqdm(pack.scene_ids, desc="qa", unit="scene", disable=not progress)):
        changed = pack.scene_problems(sid)
        rep = None
        if changed:
            why = f"modified since the pack was written: {'; '.join(str(m) for m in changed[:3])}"
        else:
            try:
                scene = pack.scene(sid)
                with World.build(scene, pack.asset_lookup, config=world_cfg) as world:
                    world.settle(max_seconds=settle_s)
                    rep = run_checks(scene, world, cfg)
            except ScenegenError as exc:
                why = f"damaged: {exc.one_line()[:400]}"
        if rep is None:
            rep = QAReport(sid, [CheckResult(INTEGRITY, False, 0.0, why, {"error": True})])
            integrity.append({"id": sid, "reason": why})
            log.warning("scene %s fails QA: %s", sid[:12], why)
        data = rep.to_dict()
        records[sid] = data
        if not rep.passed:
            preview = None if changed else _preview(pack, sid)
            failed.append({"id": sid, "attempt": i, "reason": rep.reason, "qa": data, "preview": preview})
    passed = [q for q in records.values() if q["passed"]]
    report = build_report(passed, failed, run={"requested": len(pack), "attempts": len(pack)}, qa_cfg=cfg,
                          mode="recheck", accepted=[{"id": q["scene_id"]} for q in passed], prompt=pack.prompt)
    report["integrity"] = integrity
    report["scenes"] = records
    if write:
        write_report(pack.root, report, scene_qa=records)
    return report


def _preview(pack: Any, sid: str) -> str | None:
    try:
        path = pack.preview_path(sid)
    except ScenegenError:
        return None
    return None if path is None else path.relative_to(pack.root).as_posix()
