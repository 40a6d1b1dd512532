"""Benchmark ``scenegen generate``: a user's first scenes from a cold start, a new seed, the warm path.

Sections (each timed in this one run, so its ratios compare like with like):

- ``cold``: for each prompt, an empty asset cache (every asset built: the builders' own convex
  parts, CoACD for the shapes without known structure), 2 workers, QA on, N accepted scenes;
- ``new_seed``: the first prompt again with another seed, on the cache the cold run filled;
- ``warm``: the first prompt, QA off, on the warm cache, per worker count, with each stage's
  mean seconds per accepted scene (precheck, assets, layout, settle, preview, pack writes);
- ``robot_ab``: the warm in-process attempt with the stock robot and with its light render copy
  (``PipelineConfig.light_robot``), alternated twice in this process;
- ``peer``: NVlabs scene_synthesizer making a comparable tabletop scene, in its own virtual
  environment (``--peer-python``; skipped with a message when it is not there), against
  scenegen's warm in-process path, with what each scene contains.

Usage::

    python benchmarks/generate.py                       # N=100, everything (about 10 minutes here)
    python benchmarks/generate.py -n 20 --sections warm   # a quicker look
    python benchmarks/generate.py --sections cold --prompts 0 --update   # rerun one, keep the rest of the JSON
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

from scenegen.pipeline import PipelineConfig, generate  # noqa: E402

PROMPTS = ("put the banana in the bowl", "put the screwdriver in the basket with 3 distractors")
PEER_SCRIPT = HERE / "peer_scene_synthesizer.py"
CONTENTS = {
    "scenegen": "settled by physics, acceptance-checked; collision: the builders' own convex parts (CoACD for "
                "shapes without known structure); QA: {qa}",
    "scene_synthesizer": "not settled (placed by its layout); collision: convex hulls / primitives of its assets, "
                         "no decomposition of concave objects; no QA",
}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _summary(pack_dir: Path) -> dict:
    from scenegen.pack.reader import load_pack

    return dict(load_pack(pack_dir).manifest["summary"]["run"])


def run(prompt: str, n: int, workers: int, cache: Path, out: Path, seed: int, qa: bool) -> dict:
    """One generate run; its wall time, attempts, rejections and stage means."""
    cfg = replace(PipelineConfig(), workers=workers, preview_size=128)
    load0 = _load()
    t0 = time.perf_counter()
    if qa:
        from qa.loop import generate_with_qa

        res = generate_with_qa(prompt, n, out, seed, cfg, cache_dir=cache, progress=False)
        accepted = res.accepted
    else:
        generate(prompt, n, out, seed=seed, config=cfg, cache_dir=cache, progress=False)
        accepted = n
    secs = time.perf_counter() - t0
    s = _summary(out)
    return {"prompt": prompt, "seed": seed, "n": n, "accepted": accepted, "workers": workers, "qa": qa,
            "seconds": round(secs, 2), "seconds_per_scene": round(secs / max(1, accepted), 3),
            "attempts": s.get("attempts"), "rejections": s.get("reasons", {}),
            "stage_seconds_per_scene": s.get("timings", {}), "load_avg_before": load0, "load_avg_after": _load()}


def ours_in_process(prompt: str, n: int, cache: Path) -> dict:
    """scenegen's warm path in this process, per attempt (QA off, no pack): the peer comparison's figure."""
    from scenegen.design import design
    from scenegen.pipeline import attempt_seed, run_attempt

    cfg = replace(PipelineConfig(), preview_size=0)
    graphs = design(prompt, n, 0)
    for i in range(min(3, n)):       # this process's first world and asset reads
        run_attempt(i, graphs[i].to_dict(), attempt_seed(0, i), cfg, str(cache))
    t0 = time.perf_counter()
    ok = sum(run_attempt(i, graphs[i].to_dict(), attempt_seed(0, i), cfg, str(cache)).accepted for i in range(n))
    secs = time.perf_counter() - t0
    return {"tool": "scenegen", "scenes": n, "accepted": ok, "seconds": round(secs, 2),
            "scenes_per_s": round(n / secs, 2), "contents": CONTENTS["scenegen"].format(qa="off")}


def robot_ab(prompt: str, n: int, cache: Path) -> dict:
    """Per-stage means of the warm attempt with the stock robot and its light copy, alternated twice."""
    from collections import Counter

    from scenegen.design import design
    from scenegen.pipeline import attempt_seed, run_attempt

    graphs = design(prompt, n, 0)
    out: dict = {"full": [], "light": [], "n": n}
    for _ in range(2):
        for light in (False, True):
            cfg = replace(PipelineConfig(), preview_size=128, light_robot=light)
            run_attempt(0, graphs[0].to_dict(), attempt_seed(0, 0), cfg, str(cache))
            tot: Counter = Counter()
            t0 = time.perf_counter()
            for i in range(n):
                tot.update(run_attempt(i, graphs[i].to_dict(), attempt_seed(0, i), cfg, str(cache)).seconds)
            out["light" if light else "full"].append({"per_attempt_s": round((time.perf_counter() - t0) / n, 4),
                                                       **{k: round(v / n, 4) for k, v in tot.items()}})
    out["load_avg_after"] = _load()
    return out


def peer(python: str, n: int) -> dict:
    """scene_synthesizer in its own interpreter (skipped with a message when it is missing)."""
    if not Path(python).is_file():
        return {"tool": "scene_synthesizer", "skipped": f"no interpreter at {python}: create the venv and "
                f"`pip install scene-synthesizer==1.15.0` into it, or pass --peer-python"}
    try:
        out = subprocess.run([python, str(PEER_SCRIPT), "-n", str(n)], capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return {"tool": "scene_synthesizer", "skipped": "timed out after 1200 s"}
    if out.returncode != 0:
        return {"tool": "scene_synthesizer", "skipped": f"failed: {(out.stderr or out.stdout).strip()[-400:]}"}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["contents"] = CONTENTS["scene_synthesizer"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Worker counts of the warm QA-off runs.")
    ap.add_argument("--cold-workers", type=int, default=2)
    ap.add_argument("--sections", default="cold,new_seed,warm,robot_ab,peer")
    ap.add_argument("--prompts", default="0,1", help="Indices of PROMPTS the cold section runs.")
    ap.add_argument("--update", action="store_true", help="Keep the other sections of the existing JSON.")
    ap.add_argument("--peer-python", default="/tmp/ssvenv/bin/python")
    ap.add_argument("-o", default=str(HERE / "generate.json"))
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    root = Path(tempfile.mkdtemp(prefix="scenegen-bench-"))
    caches = [root / f"cache{i}" for i in range(len(PROMPTS))]
    doc: dict = {"benchmark": "generate", "date": time.strftime("%Y-%m-%d"), "prompts": list(PROMPTS),
                 "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "platform": platform.platform(), "load_avg_at_start": _load()}}
    if args.update and Path(args.o).is_file():
        doc = {**json.loads(Path(args.o).read_text()), "updated": time.strftime("%Y-%m-%d %H:%M")}
    chosen = [int(i) for i in args.prompts.split(",")]
    try:
        if "cold" in sections:
            cold = {r["prompt"]: r for r in doc.get("cold", [])}
            for i in chosen:
                r = run(PROMPTS[i], args.n, args.cold_workers, caches[i], root / f"cold_{i}", 0, qa=True)
                cold[PROMPTS[i]] = r
                print(json.dumps(r), flush=True)
            doc["cold"] = [cold[p] for p in PROMPTS if p in cold]
        if "new_seed" in sections:
            r = run(PROMPTS[0], args.n, args.cold_workers, caches[0], root / "new_seed", 1, qa=True)
            doc["new_seed"] = r
            print(json.dumps(r), flush=True)
        if "warm" in sections:
            if not caches[0].exists():  # fill it first (not timed)
                generate(PROMPTS[0], args.n, root / "fill", seed=0, cache_dir=caches[0], progress=False,
                         config=replace(PipelineConfig(), workers=args.cold_workers))
            doc["warm"] = []
            for w in args.workers:
                r = run(PROMPTS[0], args.n, w, caches[0], root / f"warm_w{w}", 0, qa=False)
                doc["warm"].append(r)
                print(json.dumps(r), flush=True)
        if "robot_ab" in sections:
            if not caches[0].exists():
                generate(PROMPTS[0], 30, root / "fill", seed=0, cache_dir=caches[0], progress=False)
            doc["robot_ab"] = robot_ab(PROMPTS[0], min(args.n, 30), caches[0])
            print(json.dumps(doc["robot_ab"]), flush=True)
        if "peer" in sections:
            if not caches[0].exists():
                generate(PROMPTS[0], 10, root / "fill", seed=0, cache_dir=caches[0], progress=False)
            ours = ours_in_process(PROMPTS[0], args.n, caches[0])
            theirs = peer(args.peer_python, args.n)
            doc["peer"] = {"scenegen": ours, "scene_synthesizer": theirs, "load_avg_after": _load()}
            if "scenes_per_s" in theirs:
                doc["peer"]["speed_ratio_peer_over_scenegen"] = round(theirs["scenes_per_s"] / ours["scenes_per_s"], 2)
            print(json.dumps(doc["peer"]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    doc["machine"]["load_avg_at_end"] = _load()
    Path(args.o).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written {args.o}")


if __name__ == "__main__":
    main()
