"""``scenegen generate`` (the pipeline with its QA loop) and ``scenegen qa PACK`` (re-check a pack)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from scenegen.errors import ScenegenError


@click.command(epilog="""\b
Examples:
  scenegen generate "put the banana in the bowl" -n 8 -o out/demo
  scenegen generate "stack the red block on the blue block" -n 100 -o out/stack --workers 2
  scenegen generate "put the apple on the plate" -n 4 -o out/lib --assets library:my_meshes/
""")
@click.argument("prompt")
@click.option("-n", "n", type=int, default=8, show_default=True, help="Accepted scenes wanted.")
@click.option("-o", "--out", type=click.Path(file_okay=False), required=True, help="Pack folder to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="Run seed (same seed, same hashes).")
@click.option("--workers", type=int, default=1, show_default=True, help="Parallel worker processes.")
@click.option("--robot", default="panda", show_default=True, help="Registered robot name.")
@click.option("--designer", default="rules", show_default=True, help="Scene designer: rules (offline) or llm.")
@click.option("--assets", "asset_source", default="procedural", show_default=True,
              help="Asset source: procedural, textured, shap-e or library:DIR.")
@click.option("--shap-e-model", default=None, help="Shap-E weights: a local folder or hub id (--assets shap-e).")
@click.option("--texture-model", default=None, help="Text-to-image weights for --assets textured.")
@click.option("--device", default=None, help="Torch device of the diffusers backends (cpu, cuda).")
@click.option("--backend", type=click.Choice(["process", "ray"]), default="process", show_default=True,
              help="Where attempts run: local processes or a Ray cluster.")
@click.option("--ray-address", default=None, help="Ray cluster address (with --backend ray).")
@click.option("--attempts-per-scene", type=float, default=3.0, show_default=True,
              help="Attempt budget per requested scene.")
@click.option("--time-budget", type=float, default=3600.0, show_default=True, help="Wall-clock budget (s).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Asset cache folder.")
@click.option("--fast-collision", is_flag=True,
              help="Cheaper CoACD settings (coarser collision proxies, much faster cold assets).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--qa/--no-qa", "run_qa", default=True, show_default=True,
              help="Run the QA checks on every scene and keep only those that pass.")
@click.option("--checks", default=None, help="QA checks, comma-separated, or 'all' (default: all but vlm).")
@click.option("--vlm", is_flag=True, help="Add the VLM judge to QA (SCENEGEN_VLM_BASE_URL/MODEL/API_KEY).")
@click.option("--keep-rejected", is_flag=True, help="Keep QA-rejected scenes in OUT/rejected/ for inspection.")
def generate(prompt: str, n: int, out: str, seed: int, workers: int, robot: str, designer: str,
             asset_source: str, shap_e_model: str | None, texture_model: str | None, device: str | None,
             backend: str, ray_address: str | None, attempts_per_scene: float,
             time_budget: float, cache_dir: str | None, fast_collision: bool, quiet: bool, run_qa: bool,
             checks: str | None, vlm: bool, keep_rejected: bool) -> None:
    """Generate N physically settled scenes for PROMPT into a pack folder."""
    from scenegen.assets.collision import CollisionConfig
    from scenegen.pipeline import PipelineConfig
    from scenegen.pipeline import generate as run

    base = PipelineConfig()
    cfg = PipelineConfig(designer=designer, assets=asset_source, shap_e_model=shap_e_model,
                         texture_model=texture_model, device=device, workers=workers, backend=backend,
                         ray_address=ray_address, attempts_per_scene=attempts_per_scene,
                         time_budget_s=time_budget, scene=replace(base.scene, robot=robot),
                         collision=CollisionConfig.fast() if fast_collision else CollisionConfig())
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
