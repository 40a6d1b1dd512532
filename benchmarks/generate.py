"""Benchmark ``scenegen generate``: seconds per scene and scenes per minute.

Runs N accepted scenes for a prompt once with a cold asset cache (a fresh folder, so every
CoACD decomposition runs), then with the warm cache (new pack folders) for each worker
count. QA is off: this measures the generation pipeline itself.

Usage::

    python benchmarks/generate.py                       # N=100, workers 1 and 2
    python benchmarks/generate.py -n 20 --workers 1     # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from scenegen.pipeline import PipelineConfig, generate

HERE = Path(__file__).resolve().parent


def run(prompt: str, n: int, workers: int, cache: Path, out: Path, seed: int) -> dict:
    cfg = replace(PipelineConfig(), workers=workers, preview_size=128)
    t0 = time.perf_counter()
    pack = generate(prompt, n, out, seed=seed, config=cfg, cache_dir=cache, progress=False)
    secs = time.perf_counter() - t0
    summary = pack.manifest["summary"]["run"]
    return {"n": n, "workers": workers, "seconds": round(secs, 2), "seconds_per_scene": round(secs / n, 3),
            "scenes_per_minute": round(60 * n / secs, 1), "attempts": summary["attempts"],
            "rejections": summary["reasons"], "stage_seconds_per_scene": summary["timings"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--prompt", default="put the banana in the bowl")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold-workers", type=int, default=2, help="Workers of the cold-cache run.")
    ap.add_argument("-o", default=str(HERE / "generate.json"))
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="scenegen-bench-"))
    cache = root / "cache"
    results = []
    try:
        # One cold run (empty cache: every CoACD decomposition runs), then warm runs per worker count.
        cold = run(args.prompt, args.n, args.cold_workers, cache, root / "cold", args.seed)
        cold["cache"] = "cold"
        results.append(cold)
        print(json.dumps(cold), flush=True)
        for w in args.workers:
            warm = run(args.prompt, args.n, w, cache, root / f"warm_w{w}", args.seed)
            warm["cache"] = "warm"
            results.append(warm)
            print(json.dumps(warm), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    doc = {"benchmark": "generate", "prompt": args.prompt, "date": time.strftime("%Y-%m-%d"),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "results": results}
    Path(args.o).write_text(json.dumps(doc, indent=2) + "\n")
    print("| cache | workers | N | seconds | s/scene | scenes/min | attempts |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['cache']} | {r['workers']} | {r['n']} | {r['seconds']} | {r['seconds_per_scene']} | "
              f"{r['scenes_per_minute']} | {r['attempts']} |")


if __name__ == "__main__":
    main()
