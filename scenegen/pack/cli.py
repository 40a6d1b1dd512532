"""CLI commands over packs: ``show`` and ``info`` (``generate`` runs QA, so it lives in :mod:`qa.cli`)."""

from __future__ import annotations

import json

import click

from scenegen.errors import ConfigError


@click.command()
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--scene", "scene_id", default=None, help="Scene id (or a unique prefix of 4+ characters).")
@click.option("--gui", is_flag=True, help="Open the scene in the PyBullet GUI (needs a display).")
def show(pack_dir: str, scene_id: str | None, gui: bool) -> None:
    """Show a pack: its contact sheet, or one scene's preview, graph and settled poses."""
    from scenegen.pack.reader import load_pack

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

        from scenegen.sim.world import World

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
    from scenegen.pack.reader import load_pack

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
