"""``scenegen export``: write a pack's scenes in another simulator's or viewer's format."""

from __future__ import annotations

import json
from pathlib import Path

import click

from scenegen.errors import ExportError
from scenegen.export import EXPORTERS, get_exporter

EPILOG = """\b
Examples:
  scenegen export out/demo --format mjcf -o out/demo_mjcf
  scenegen export out/demo --format usd --scene 3fa2 --with-robot -o out/usd
"""


def export_pack(pack_path: str | Path, fmt: str, out: str | Path, scene_ids: tuple[str, ...] = (),
                with_robot: bool = False, progress: bool = True) -> dict[str, Path]:
    """Export scenes of a pack, one sub-folder per scene, and write ``exports.json``.

    Args:
        pack_path: the pack folder.
        fmt: format name (see :data:`scenegen.export.EXPORTERS`).
        out: output folder; ``out/<scene_id>/`` per scene.
        scene_ids: scene ids or unique prefixes (empty: every scene).
        with_robot: carry the robot where the format can.
        progress: show a progress bar.

    Returns:
        Scene id -> main file written.

    Raises:
        ExportError: unknown format or a failed export.
        PackError: the pack cannot be read or a scene id is unknown.

    """
    from tqdm import tqdm

    from scenegen.pack.reader import load_pack

    exporter = get_exporter(fmt)  # fail on a bad format before touching the pack
    pack = load_pack(pack_path)
    ids = [pack.scene_entry(s)["id"] for s in scene_ids] if scene_ids else list(pack.scene_ids)
    if not ids:
        raise ExportError(f"pack {pack.root} has no scenes; generate some first")
    out = Path(out)
    written: dict[str, Path] = {}
    lookup = pack.asset_lookup
    for sid in tqdm(ids, desc=f"export {fmt}", unit="scene", disable=not progress or len(ids) < 2):
        written[sid] = exporter(pack.scene(sid), lookup, out / sid, with_robot=with_robot)
    index = {"format": fmt, "pack_content_hash": pack.content_hash, "prompt": pack.prompt, "with_robot": with_robot,
             "scenes": {sid: p.relative_to(out).as_posix() for sid, p in written.items()}}
    (out / "exports.json").write_text(json.dumps(index, indent=2) + "\n")
    return written


@click.command("export", epilog=EPILOG)
@click.argument("pack", type=click.Path(file_okay=False, path_type=Path))
@click.option("--format", "-f", "fmt", required=True, metavar="FORMAT",
              help=f"Output format: {', '.join(EXPORTERS)}.")
@click.option("--scene", "scene_ids", multiple=True, metavar="ID",
              help="Scene id or unique prefix (repeatable); default: every scene.")
@click.option("--with-robot", is_flag=True, help="Include the robot where the format can carry it.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Output folder (one sub-folder per scene).")
def export(pack: Path, fmt: str, scene_ids: tuple[str, ...], with_robot: bool, out: Path) -> None:
    """Export scenes of PACK to URDF, MJCF, SDF, USD or glTF (self-contained folders)."""
    written = export_pack(pack, fmt, out, scene_ids, with_robot)
    for sid, path in written.items():
        click.echo(f"{sid[:12]}  {path}")
    click.echo(f"exported {len(written)} scene(s) as {fmt} to {out}")
