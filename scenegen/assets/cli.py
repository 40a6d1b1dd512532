"""``scenegen asset`` (one asset) and ``scenegen assets build-all`` (every category + a contact sheet)."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import click

from scenegen.errors import AssetError, ScenegenError

SIZES = ("small", "medium", "large")


def _collision(fast: bool):
    from scenegen.assets.collision.config import CollisionConfig

    return CollisionConfig.fast() if fast else CollisionConfig()


def _summary(asset) -> str:
    ex = " x ".join(f"{x * 100:.1f}" for x in asset.extents)
    return (f"{asset.category} seed {asset.seed}  id {asset.id[:12]}\n"
            f"  extents  {ex} cm\n"
            f"  mass     {asset.mass:.3f} kg  (volume {asset.volume * 1e6:.1f} cm^3)\n"
            f"  friction {asset.friction:.2f}  restitution {asset.restitution:.2f}\n"
            f"  faces    {asset.visual_faces}\n"
            f"  hulls    {len(asset.collision)} ({asset.collision_method})\n"
            f"  folder   {asset.path}")


@click.command("asset")
@click.argument("category")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instance parameters.")
@click.option("--size", type=click.Choice(SIZES), default=None, help="Size class within the category's range.")
@click.option("--color", default=None, help="Colour name from the catalog (e.g. red).")
@click.option("--material", default=None, help="Material name from the catalog (e.g. metal).")
@click.option("-o", "--out", "out", type=click.Path(file_okay=False), default=None,
              help="Copy the asset folder here (default: just print where it is in the cache).")
@click.option("--preview", type=click.Path(dir_okay=False), default=None, help="Render a PNG of the asset.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False), default=None,
              help="Cache root (default $SCENEGEN_CACHE or ~/.cache/scenegen/assets).")
@click.option("--max-faces", type=int, default=5000, show_default=True, help="Visual triangle budget.")
@click.option("--fast", is_flag=True, help="Cheaper CoACD settings (quicker, coarser collision parts).")
def asset(category: str, seed: int, size: str | None, color: str | None, material: str | None,
          out: str | None, preview: str | None, cache_dir: str | None, max_faces: int, fast: bool) -> None:
    r"""Generate one asset of CATEGORY and print a summary.

    \b
    Examples:
      scenegen asset mug --seed 3 --color red -o out/mug --preview out/mug.png
      scenegen asset bowl --size large
    """
    from scenegen.assets.base import Asset
    from scenegen.assets.build import generate_asset

    attrs = {k: v for k, v in (("size", size), ("color", color), ("material", material)) if v}
    t0 = time.perf_counter()
    a = generate_asset(category, seed, attrs, cache_dir=cache_dir, collision=_collision(fast),
                       max_faces=max_faces)
    seconds = time.perf_counter() - t0
    if out:
        dest = Path(out)
        if dest.exists() and any(dest.iterdir()):
            if not (dest / "asset.json").is_file():
                raise AssetError(f"{dest} exists and is not an asset folder; choose an empty folder")
            shutil.rmtree(dest)
        shutil.copytree(a.path, dest)
        a = Asset.load(dest)
    click.echo(_summary(a))
    click.echo(f"  took     {seconds:.2f} s")
    if preview:
        from scenegen.assets.preview import render_urdf_thumbnail

        Path(preview).parent.mkdir(parents=True, exist_ok=True)
        render_urdf_thumbnail(a.urdf_path, 384).save(preview)
        click.echo(f"  preview  {preview}")


def _build_one(category: str, seed: int, cache_dir: str | None, fast: bool) -> tuple[str, int, str, float]:
    """Worker: build one asset; return (category, seed, folder or error message, seconds)."""
    from scenegen.assets.build import generate_asset

    t0 = time.perf_counter()
    try:
        a = generate_asset(category, seed, cache_dir=cache_dir, collision=_collision(fast))
        return category, seed, str(a.path), time.perf_counter() - t0
    except ScenegenError as exc:
        return category, seed, f"error: {exc.one_line()}", time.perf_counter() - t0


@click.group("assets")
def assets() -> None:
    """Build many assets at once."""


@assets.command("build-all")
@click.option("--seeds", type=int, default=1, show_default=True, help="Seeds per category (0..N-1).")
@click.option("-o", "--out", "sheet", type=click.Path(dir_okay=False), default="asset_sheet.png",
              show_default=True, help="Contact sheet PNG (one tile per category, seed 0).")
@click.option("--workers", type=int, default=1, show_default=True, help="Parallel worker processes.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False), default=None, help="Cache root.")
@click.option("--tile", type=int, default=160, show_default=True, help="Tile size in pixels.")
@click.option("--fast", is_flag=True, help="Cheaper CoACD settings.")
@click.option("--category", "only", multiple=True, help="Only these categories (repeatable).")
def build_all(seeds: int, sheet: str, workers: int, cache_dir: str | None, tile: int, fast: bool,
              only: tuple[str, ...]) -> None:
    r"""Generate every catalog category (with a progress bar) and write a contact sheet.

    \b
    Example:
      scenegen assets build-all --seeds 3 --workers 2 -o out/assets.png
    """
    from tqdm import tqdm

    from scenegen.assets.preview import contact_sheet, render_urdf_thumbnail
    from scenegen.catalog import load_catalog

    if seeds < 1 or workers < 1:
        raise click.BadParameter("--seeds and --workers must be at least 1")
    catalog = load_catalog()
    names = [catalog.get(n).name for n in only] if only else [c.name for c in catalog]
    jobs = [(n, s) for n in names for s in range(seeds)]
    done: dict[tuple[str, int], str] = {}
    t0 = time.perf_counter()
    bar = tqdm(total=len(jobs), desc="assets", unit="asset")
    if workers == 1:
        for n, s in jobs:
            bar.set_postfix_str(f"{n} #{s}")
            c, sd, res, _ = _build_one(n, s, cache_dir, fast)
            done[(c, sd)] = res
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_build_one, n, s, cache_dir, fast) for n, s in jobs]
            for fut in as_completed(futures):
                c, sd, res, _ = fut.result()
                done[(c, sd)] = res
                bar.set_postfix_str(f"{c} #{sd}")
                bar.update()
    bar.close()
    failures = {k: v for k, v in done.items() if v.startswith("error: ")}
    images, labels = [], []
    for n in names:
        folder = done.get((n, 0), "")
        if folder and not folder.startswith("error: "):
            images.append(render_urdf_thumbnail(Path(folder) / "model.urdf", tile))
            labels.append(n)
    if images:
        Path(sheet).parent.mkdir(parents=True, exist_ok=True)
        contact_sheet(images, labels).save(sheet)
        click.echo(f"contact sheet: {sheet} ({len(images)} categories)")
    click.echo(f"{len(jobs) - len(failures)}/{len(jobs)} assets in {time.perf_counter() - t0:.1f} s")
    for (n, s), msg in sorted(failures.items()):
        click.echo(f"  {n} seed {s}: {msg}", err=True)
    if failures:
        raise AssetError(f"{len(failures)} of {len(jobs)} assets failed; see the lines above")
