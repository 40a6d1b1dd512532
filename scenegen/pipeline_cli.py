"""CLI commands over packs: ``generate``, ``show`` and ``info``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from scenegen.errors import ConfigError, ScenegenError


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
        from scenegen.pack import load_pack

        pack = load_pack(out)
    else:
        pack = run(prompt, n, out, seed, cfg, cache_dir=cache_dir, progress=not quiet)
    run_info = pack.manifest.get("summary", {}).get("run", {})
    click.echo(f"{len(pack)} scenes in {out} ({run_info.get('attempts', '?')} attempts, "
               f"{run_info.get('seconds', 0):.1f}s); contact sheet: {Path(out) / 'contact_sheet.png'}")


@click.command()
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--scene", "scene_id", default=None, help="Scene id (or a unique prefix of 4+ characters).")
@click.option("--gui", is_flag=True, help="Open the scene in the PyBullet GUI (needs a display).")
def show(pack_dir: str, scene_id: str | None, gui: bool) -> None:
    """Show a pack: its contact sheet, or one scene's preview, graph and settled poses."""
    from scenegen.pack import load_pack

    pack = load_pack(pack_dir)
    if scene_id is None:
        sheet = pack.extra_path("contact_sheet.png")
        click.echo(f"{pack.prompt!r}: {len(pack)} scenes")
        click.echo(f"contact sheet: {sheet if sheet else '(none: no previews were written)'}")
        for sid in pack.scene_ids:
            click.echo(f"  {sid[:12]}  {pack.preview_path(sid) or ''}")
        return
    scene = pack.scene(scene_id)
    click.echo(f"scene {scene.id}\n  instruction: {scene.graph.instruction}")
    for obj in scene.graph.objects():
        pose = (scene.settled or scene.poses)[obj.id]
        xyz = ", ".join(f"{v:+.3f}" for v in pose.position)
        click.echo(f"  {obj.id:<16} {obj.role:<11} ({xyz})")
    for rel in scene.graph.relations():
        click.echo(f"  relation: {rel.subject} {rel.relation} {rel.object}")
    for goal in scene.graph.goals:
        click.echo(f"  goal: {goal.subject} {goal.predicate} {goal.object or ''}".rstrip())
    click.echo(f"  preview: {pack.preview_path(scene.id)}")
    if gui:
        import time

        from scenegen.world import World

        with World.build(scene, pack.asset_lookup, gui=True):
            click.echo("close the window or press Ctrl-C to quit")
            try:
                while True:
                    time.sleep(0.1)
            except KeyboardInterrupt:
                pass


@click.command()
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--verify", is_flag=True, help="Re-hash every file and report mismatches.")
def info(pack_dir: str, as_json: bool, verify: bool) -> None:
    """Summarise a pack: prompt, scenes, assets, categories, QA, size."""
    from scenegen.pack import load_pack

    pack = load_pack(pack_dir)
    data = pack.info()
    if verify:
        data["mismatches"] = [str(m) for m in pack.verify()]
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        for k, v in data.items():
            click.echo(f"{k}: {v}")
    if verify and data["mismatches"]:
        raise ConfigError(f"pack {pack_dir} failed verification: {len(data['mismatches'])} mismatch(es)")
