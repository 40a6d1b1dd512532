"""``scenegen generate`` (the pipeline with its QA loop) and ``scenegen qa PACK`` (re-check a pack)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from scenegen.errors import PackError, ScenegenError
from scenegen.options import ConfigCommand, ConfigOptions, opt

PIPELINE_OPTIONS = ConfigOptions("scenegen.pipeline:PipelineConfig", [
    "workers", opt("scene.robot"), "designer", "assets", "shap_e_model", "texture_model", "device",
    opt("backend", choices="BACKENDS"), "ray_address", "attempts_per_scene",
    opt("time_budget_s", flag="--time-budget"), opt("attempt_timeout_s", flag="--attempt-timeout"), "tier",
    opt("scene.layout.distractors"),
])
"""``generate``'s options taken from :class:`~scenegen.pipeline.PipelineConfig` (help = the field docstrings)."""
QA_OPTIONS = ConfigOptions("qa.config:QAConfig", [opt("fail_fast", negatable=False)])
"""``qa``'s options taken from :class:`~qa.config.QAConfig`."""


@click.command(cls=ConfigCommand, epilog="""\b
Examples:
  scenegen generate "put the banana in the bowl" -n 8 -o out/demo
  scenegen generate "stack the red block on the blue block" -n 100 -o out/stack --workers 2
  scenegen generate "put the apple on the plate" -n 4 -o out/lib --assets library:my_meshes/
  scenegen generate bottles_in_bin --tier 3 -n 8 -o out/bottles-t3
""")
@click.argument("prompt")
@click.option("-n", "n", type=int, default=8, show_default=True, help="Accepted scenes wanted.")
@click.option("-o", "--out", type=click.Path(file_okay=False), required=True, help="Pack folder to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="Run seed (same seed, same hashes).")
@PIPELINE_OPTIONS
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Asset cache folder.")
@click.option("--fast-collision", is_flag=True,
              help="Cheaper CoACD settings (coarser collision proxies, much faster cold assets).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--qa/--no-qa", "run_qa", default=True, show_default=True,
              help="Run the QA checks on every scene and keep only those that pass.")
@click.option("--checks", default=None, help="QA checks, comma-separated, or 'all' (default: all but vlm).")
@click.option("--vlm", is_flag=True, help="Add the VLM judge to QA (SCENEGEN_VLM_BASE_URL/MODEL/API_KEY).")
@click.option("--keep-rejected", is_flag=True, help="Keep QA-rejected scenes in OUT/rejected/ for inspection.")
@click.option("--dr", "dr_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="DR.json of `scenegen dr propose`: apply its layout knobs (margin scale, extra distractors).")
def generate(prompt: str, n: int, out: str, seed: int, cache_dir: str | None, fast_collision: bool, quiet: bool,
             run_qa: bool, checks: str | None, vlm: bool, keep_rejected: bool, dr_file: str | None,
             **config_kw: object) -> None:
    """Generate N physically settled scenes for PROMPT into a pack folder.

    With --tier K, PROMPT names a task family of assets/tasks/ (its name, e.g. bottles_in_bin, or its prompt)
    and the scenes are drawn from the family's tier K.
    """
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig
    from scenegen.pipeline import generate as run

    collision = CollisionConfig.fast() if fast_collision else CollisionConfig()
    cfg = PIPELINE_OPTIONS.to_config(config_kw, base=PipelineConfig(collision=collision))
    if dr_file:
        cfg = _with_dr_layout(cfg, dr_file)
    if run_qa or vlm or checks or keep_rejected:
        from qa.config import QAConfig, parse_checks
        from qa.loop import generate_with_qa

        qa_run = generate_with_qa(prompt, n, out, seed, cfg, QAConfig(checks=parse_checks(checks, vlm)),
                                  keep_rejected=keep_rejected, cache_dir=cache_dir, progress=not quiet)
        if not qa_run.complete:
            raise ScenegenError(qa_run.message)
        click.echo(qa_run.message + f" QA report: {Path(out) / 'qa_report.md'}")
        from scenegen.pack.reader import load_pack

        pack = load_pack(out)
    else:
        pack = run(prompt, n, out, seed, cfg, cache_dir=cache_dir, progress=not quiet)
    run_info = pack.manifest.get("summary", {}).get("run", {})
    click.echo(f"{len(pack)} scenes in {out} ({run_info.get('attempts', '?')} attempts, "
               f"{run_info.get('seconds', 0):.1f}s); contact sheet: {Path(out) / 'contact_sheet.png'}")


def _with_dr_layout(cfg: object, dr_file: str) -> object:
    """``cfg`` with a DR.json's layout knobs applied; the knobs it leaves alone are named on stderr."""
    from dataclasses import replace

    from scenegen.layout.density import apply_layout_knobs, read_layout_knobs

    layout, skipped = apply_layout_knobs(cfg.scene.layout, read_layout_knobs(dr_file))
    for line in skipped:
        click.echo(f"note: {dr_file}: {line}", err=True)
    return replace(cfg, scene=replace(cfg.scene, layout=layout))


@click.command(cls=ConfigCommand, epilog="""\b
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
@QA_OPTIONS
@click.option("--no-write", is_flag=True, help="Print the report only; do not write qa_report.* into the pack.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help="Exit with code 2 when any scene fails.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def qa(pack_dir: str, checks: str | None, vlm: bool, no_write: bool, as_json: bool, strict: bool, quiet: bool,
       **config_kw: object) -> None:
    """Re-run the QA checks on every scene of PACK_DIR and write qa_report.json and qa_report.md."""
    from qa.config import QAConfig, parse_checks
    from qa.recheck import recheck_pack
    from qa.report import REPORT_MD

    cfg = QA_OPTIONS.to_config(config_kw, base=QAConfig(checks=parse_checks(checks, vlm)))
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
    if report.get("integrity"):
        bad = report["integrity"]
        raise PackError(f"{len(bad)} scene(s) of {pack_dir} fail QA because they were changed or damaged after the "
                        f"pack was written (first: {bad[0]['id'][:12]}: {bad[0]['reason']}); run `scenegen info "
                        f"{pack_dir} --verify`, then regenerate those scenes")
    if strict and report["scenes_passed"] < report["scenes_checked"]:
        raise ScenegenError(f"{report['scenes_checked'] - report['scenes_passed']} of {report['scenes_checked']} "
                            f"scenes fail QA; see {pack_dir}/{REPORT_MD}")
