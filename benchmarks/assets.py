"""Asset benchmark: assets per second cold and warm, and each decomposition's cost and fidelity.

Every catalog category is generated once (seed 0) into an empty cache, timing each asset
(cold), then requested again from the same cache (warm). Decomposition seconds are the time
spent making convex parts per asset that needed them (the builder's own parts, or CoACD;
primitives and convex hulls need none).

``--decomposition`` compares, for every category whose builder emits its own convex parts,
those parts against CoACD's (``CollisionConfig(method="coacd")``, the production settings):
seconds, parts, and a drop test (:mod:`scenegen.assets.collision.fidelity`): spheres dropped
into the object, their rest height against the one on the visual mesh.
Writes ``benchmarks/assets.json`` and prints markdown tables.

    .venv/bin/python benchmarks/assets.py                 # production collision settings
    .venv/bin/python benchmarks/assets.py --config fast   # CollisionConfig.fast(), as the tests use
    .venv/bin/python benchmarks/assets.py --config default --decomposition
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

from scenegen.assets.build import generate_asset  # noqa: E402
from scenegen.assets.collision.config import CollisionConfig  # noqa: E402
from scenegen.catalog import load_catalog  # noqa: E402
from scenegen.errors import AssetError  # noqa: E402


def machine() -> dict:
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    from importlib.metadata import PackageNotFoundError, version

    def ver(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_at_start": list(os.getloadavg()),
            "coacd": ver("coacd"), "trimesh": ver("trimesh"), "pybullet": ver("pybullet"),
            "manifold3d": ver("manifold3d")}


def run(config: CollisionConfig, cache: Path, categories: list[str]) -> dict:
    rows = []
    for name in categories:
        t: dict = {}
        t0 = time.perf_counter()
        a = generate_asset(name, 0, cache_dir=cache, collision=config, timings=t)
        cold = time.perf_counter() - t0
        rows.append({"category": name, "cold_s": cold, "coacd_s": t.get("coacd", 0.0), "direct_s": t.get("direct", 0.0),
                     "method": a.collision_method, "hulls": len(a.collision), "faces": a.visual_faces})
        print(f"  {name:14s} {cold:6.2f} s  {a.collision_method:9s} {len(a.collision):2d} hulls", flush=True)
    for row in rows:
        t0 = time.perf_counter()
        generate_asset(row["category"], 0, cache_dir=cache, collision=config)
        row["warm_s"] = time.perf_counter() - t0
    cold_total = sum(r["cold_s"] for r in rows)
    warm_total = sum(r["warm_s"] for r in rows)
    decomposed = [r for r in rows if r["method"] == "coacd"]
    worst = max(decomposed, key=lambda r: r["coacd_s"]) if decomposed else None
    return {
        "assets": len(rows),
        "cold_assets_per_s": len(rows) / cold_total,
        "warm_assets_per_s": len(rows) / warm_total,
        "cold_total_s": cold_total,
        "warm_total_s": warm_total,
        "coacd_assets": len(decomposed),
        "coacd_median_s": statistics.median(r["coacd_s"] for r in decomposed) if decomposed else 0.0,
        "coacd_worst_s": worst["coacd_s"] if worst else 0.0,
        "coacd_worst_category": worst["category"] if worst else None,
        "methods": {m: sum(r["method"] == m for r in rows) for m in ("primitive", "hull", "direct", "coacd")},
        "direct_total_s": sum(r["direct_s"] for r in rows),
        "per_category": rows,
    }


def _parts_of(asset) -> list:
    import trimesh

    return [trimesh.load(asset.file(rel), force="mesh", process=False) for rel in asset.collision]


def _visual_of(asset):
    import trimesh

    m = trimesh.load(asset.file(asset.visual), force="mesh", process=False)
    return trimesh.Trimesh(m.vertices, m.faces, process=True)


def decomposition(cache: Path, categories: list[str]) -> list[dict]:
    """Direct parts against CoACD's for every category whose builder emits its own parts."""
    import numpy as np

    from scenegen.assets.collision.fidelity import cavity_drops, drop_test
    from scenegen.assets.procedural import build_mesh

    cat = load_catalog()
    rows = []
    for name in categories:
        pm = build_mesh(cat.get(name), np.random.default_rng(0), {}, 5000)
        if pm.parts is None or pm.primitive:
            continue
        row: dict = {"category": name, "cavity": pm.cavity}
        assets = {}
        for method in ("direct", "coacd"):
            t: dict = {}
            a = generate_asset(name, 0, cache_dir=cache, collision=CollisionConfig(method=method), timings=t)
            assets[method] = a
            row[f"{method}_s"] = t.get(method, 0.0)
            row[f"{method}_parts"] = len(a.collision)
            row[f"{method}_method"] = a.collision_method
        drops = None
        if pm.cavity:
            visual = _visual_of(assets["direct"])
            try:
                drops = cavity_drops(visual, assets["direct"].params["cavity_point"])
            except AssetError as exc:  # a cavity the rays cannot find walls around (an open side)
                row["drop_skipped"] = str(exc)
        if drops:
            for method, a in assets.items():
                res = drop_test(_parts_of(a), visual, drops)
                errs = [d.error for d in res]
                row[f"{method}_drop_mm"] = [round(1000 * e, 2) for e in errs]
                row[f"{method}_drop_max_mm"] = round(1000 * max(abs(e) for e in errs), 2)
                row[f"{method}_drop_mean_mm"] = round(1000 * float(np.mean(np.abs(errs))), 2)
            row["drop_radii_mm"] = [round(1000 * r, 1) for _, _, r in drops]
            row["margin_mm"] = round(1000 * res[0].margin, 2)
            row["direct_as_faithful"] = row["direct_drop_max_mm"] <= row["coacd_drop_max_mm"]
        rows.append(row)
        print(f"  {name:14s} direct {row['direct_s']:6.3f} s {row['direct_parts']:3d} parts | CoACD "
              f"{row['coacd_s']:6.2f} s {row['coacd_parts']:3d} parts | drop max mm "
              f"{row.get('direct_drop_max_mm', '-')} vs {row.get('coacd_drop_max_mm', '-')}", flush=True)
    return rows


def decomposition_table(rows: list[dict]) -> str:
    lines = ["| category | direct s | direct parts | CoACD s | CoACD parts | speed-up | drop error max mm, direct | "
             "CoACD | direct as faithful |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        speed = r["coacd_s"] / r["direct_s"] if r["direct_s"] > 0 else float("inf")
        lines.append(f"| {r['category']} | {r['direct_s']:.3f} | {r['direct_parts']} | {r['coacd_s']:.2f} | "
                     f"{r['coacd_parts']} | {speed:.0f}x | {r.get('direct_drop_max_mm', '-')} | "
                     f"{r.get('coacd_drop_max_mm', '-')} | {r.get('direct_as_faithful', '-')} |")
    return "\n".join(lines)


def table(results: dict) -> str:
    lines = ["| collision settings | assets | cold (assets/s) | warm (assets/s) | direct assets (s in all) | "
             "CoACD assets | CoACD s/asset median | CoACD s/asset worst |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['assets']} | {r['cold_assets_per_s']:.2f} | {r['warm_assets_per_s']:.0f} | "
                     f"{r['methods']['direct']} ({r['direct_total_s']:.2f}) | "
                     f"{r['coacd_assets']} | {r['coacd_median_s']:.2f} | "
                     f"{r['coacd_worst_s']:.2f} ({r['coacd_worst_category']}) |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="default", help="comma-separated: default, fast")
    ap.add_argument("--out", default=str(HERE / "assets.json"))
    ap.add_argument("--category", action="append", help="only these categories (repeatable)")
    ap.add_argument("--decomposition", action="store_true",
                    help="also compare the builders' own parts with CoACD's (time, parts, drop test)")
    ap.add_argument("--no-speed", action="store_true", help="skip the cold/warm runs")
    args = ap.parse_args()
    configs = {"default": CollisionConfig(), "fast": CollisionConfig.fast()}
    names = [n.strip() for n in args.config.split(",") if n.strip()]
    unknown = [n for n in names if n not in configs]
    if unknown:
        ap.error(f"unknown config {unknown}; use default or fast")
    categories = args.category or [c.name for c in load_catalog()]
    info = machine()
    results = {}
    for name in names if not args.no_speed else []:
        print(f"{name}: {len(categories)} categories, cold then warm", flush=True)
        with tempfile.TemporaryDirectory(prefix="scenegen-bench-") as tmp:
            results[name] = run(configs[name], Path(tmp), categories)
            results[name]["collision_config"] = dataclasses.asdict(configs[name])
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": info,
           "seed": 0, "results": results}
    if args.decomposition:
        print("decomposition: the builders' own parts against CoACD's", flush=True)
        with tempfile.TemporaryDirectory(prefix="scenegen-bench-") as tmp:
            out["decomposition"] = decomposition(Path(tmp), categories)
    out["machine"]["load_avg_at_end"] = list(os.getloadavg())
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print()
    if results:
        print(table(results))
    if args.decomposition:
        print(decomposition_table(out["decomposition"]))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
