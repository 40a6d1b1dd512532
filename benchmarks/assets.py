"""Asset benchmark: assets per second cold (CoACD included) and warm (cache hit), CoACD cost.

Every catalog category is generated once (seed 0) into an empty cache, timing each asset
(cold), then requested again from the same cache (warm). CoACD seconds are the time spent
in CoACD per asset that needed a decomposition (primitives and convex hulls need none).
Writes ``benchmarks/assets.json`` and prints a markdown table.

    .venv/bin/python benchmarks/assets.py                 # production collision settings
    .venv/bin/python benchmarks/assets.py --config fast   # CollisionConfig.fast(), as the tests use
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
        rows.append({"category": name, "cold_s": cold, "coacd_s": t.get("coacd", 0.0),
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
        "methods": {m: sum(r["method"] == m for r in rows) for m in ("primitive", "hull", "coacd")},
        "per_category": rows,
    }


def table(results: dict) -> str:
    lines = ["| collision settings | assets | cold (assets/s) | warm (assets/s) | CoACD assets | "
             "CoACD s/asset median | CoACD s/asset worst |",
             "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['assets']} | {r['cold_assets_per_s']:.2f} | {r['warm_assets_per_s']:.0f} | "
                     f"{r['coacd_assets']} | {r['coacd_median_s']:.2f} | "
                     f"{r['coacd_worst_s']:.2f} ({r['coacd_worst_category']}) |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="default", help="comma-separated: default, fast")
    ap.add_argument("--out", default=str(HERE / "assets.json"))
    ap.add_argument("--category", action="append", help="only these categories (repeatable)")
    args = ap.parse_args()
    configs = {"default": CollisionConfig(), "fast": CollisionConfig.fast()}
    names = [n.strip() for n in args.config.split(",") if n.strip()]
    unknown = [n for n in names if n not in configs]
    if unknown:
        ap.error(f"unknown config {unknown}; use default or fast")
    categories = args.category or [c.name for c in load_catalog()]
    info = machine()
    results = {}
    for name in names:
        print(f"{name}: {len(categories)} categories, cold then warm", flush=True)
        with tempfile.TemporaryDirectory(prefix="scenegen-bench-") as tmp:
            results[name] = run(configs[name], Path(tmp), categories)
            results[name]["collision_config"] = dataclasses.asdict(configs[name])
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": info,
           "seed": 0, "results": results}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print()
    print(table(results))
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()
