"""``scenegen qa PACK``: re-check an existing pack and write its QA reports."""

from __future__ import annotations

import json
from dataclasses import replace

import click

from scenegen.errors import ScenegenError


@click.command(epilog="""\b
Examples:
  scenegen qa out/demo
  scenegen qa out/demo --checks physics,semantic
  SCENEGEN_VLM_BASE_URL=http://localhost:8000/v1 SCENEGEN_VLM_MODEL=qwen2-vl scenegen qa out/demo --vlm
""")
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--checks", default=None,
              help="Comma-separated checks (geometry, physics, semantic, visibility, reachability, feasibility, "
                   "vlm) or 'all'. Default: all but vlm.")
@click.option("--vlm", is_flag=True, help="Add the VLM judge (endpoint from SCENEGEN_VLM_BASE_URL/MODEL/API_KEY).")
@click.option("--fail-fast", is_flag=True, help="Stop checking a scene at its first failing check.")
@click.option("--no-write", is_flag=True, help="Print the report only; do not write qa_report.* into the pack.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help="Exit with code 2 when any scene fails.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def qa(pack_dir: str, checks: str | None, vlm: bool, fail_fast: bool, no_write: bool, as_json: bool,
       strict: bool, quiet: bool) -> None:
    """Re-run the QA checks on every scene of PACK_DIR and write qa_report.json and qa_report.md."""
    from qa.config import QAConfig, parse_checks
    from qa.recheck import recheck_pack
    from qa.report import REPORT_MD

    cfg = replace(QAConfig(), checks=parse_checks(checks, vlm), fail_fast=fail_fast)
    report = recheck_pack(pack_dir, cfg, progress=not quiet, write=not no_write)
    if as_json:
        click.echo(json.dumps({k: v for k, v in report.items() if k != "scenes"}, indent=2, sort_keys=True))
    else:
        click.echo(f"{report['scenes_passed']}/{report['scenes_checked']} scenes pass "
                   f"({report['cost_per_scene_s']:.2f} s of QA per scene)")
        for name, s in report["checks"].items():
            rate = "-" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
            extra = f", {s['skipped']} skipped" if s["skipped"] else ""
            click.echo(f"  {name:<13} pass {rate:>5}  ({s['passed']} passed, {s['failed']} failed{extra}; "
                       f"{s['seconds_mean']:.3f} s)")
        for kind, count in list(report["qa_failures"].items())[:8]:
            click.echo(f"  failure: {kind} x{count}")
        if not no_write:
            click.echo(f"report: {pack_dir.rstrip('/')}/{REPORT_MD}")
    if strict and report["scenes_passed"] < report["scenes_checked"]:
        raise ScenegenError(f"{report['scenes_checked'] - report['scenes_passed']} of {report['scenes_checked']} "
                            f"scenes fail QA; see {pack_dir}/{REPORT_MD}")
