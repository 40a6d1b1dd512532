"""Re-check an existing pack: rebuild and settle each scene's world, run the checks, write the reports."""

from __future__ import annotations

import logging
import os
from dataclasses import fields
from typing import Any

from qa.config import QAConfig
from qa.loop import run_checks
from qa.report import build_report, write_report

log = logging.getLogger(__name__)


def _world_config(config: dict) -> Any:
    from scenegen.sim.world import WorldConfig

    data = config.get("world") if isinstance(config.get("world"), dict) else {}
    known = {f.name for f in fields(WorldConfig)}
    return WorldConfig(**{k: v for k, v in data.items() if k in known})


def recheck_pack(pack_dir: str | os.PathLike, qa_cfg: QAConfig | None = None, *, progress: bool = True,
                 write: bool = True) -> dict:
    """Run the checks on every scene of a pack and return (and by default write) the QA report.

    Each scene's world is rebuilt from its layout poses and settled with the pack's physics
    settings (deterministic, so it reaches the stored settled state). The scenes' own files are
    left untouched; ``qa_report.json`` and ``qa_report.md`` are (re)written as pack extras.

    Args:
        pack_dir: the pack folder.
        qa_cfg: checks and thresholds.
        progress: show a progress bar.
        write: write the reports into the pack.

    Returns:
        The report dict; ``report["scenes"]`` maps scene id -> its QA record.

    Raises:
        PackError: not a readable pack.

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
    for i, sid in enumerate(tqdm(pack.scene_ids, desc="qa", unit="scene", disable=not progress)):
        scene = pack.scene(sid)
        with World.build(scene, pack.asset_lookup, config=world_cfg) as world:
            world.settle(max_seconds=settle_s)
            rep = run_checks(scene, world, cfg)
        data = rep.to_dict()
        records[sid] = data
        if not rep.passed:
            preview = pack.preview_path(sid)
            failed.append({"id": sid, "attempt": i, "reason": rep.reason, "qa": data,
                           "preview": None if preview is None else preview.relative_to(pack.root).as_posix()})
    passed = [q for q in records.values() if q["passed"]]
    report = build_report(passed, failed, run={"requested": len(pack), "attempts": len(pack)}, qa_cfg=cfg,
                          mode="recheck", accepted=[{"id": q["scene_id"]} for q in passed], prompt=pack.prompt)
    report["scenes"] = records
    if write:
        write_report(pack.root, report)
    return report
