"""Where a warm-cache, QA-on scene's time goes: CPU and wall seconds per stage, in this process.

The run is ``qa.loop.generate_with_qa`` with one worker (everything in this process) on a copy of
a warmed asset cache: ``--warm-seed`` first fills the cache (not timed), then each measured run
starts from a fresh copy of it, so every run sees the same cache. The stages are timed by
wrapping the functions that do them (``time.process_time`` and ``time.perf_counter`` both, in the
same run); ``--cprofile`` adds a separate cProfile run (CPU timer) and its top functions.

The verdicts of the measured run (accepted scene ids, rejected attempts and their reasons) are
written too, so two versions of the code can be compared on the same seed.

Usage::

    python benchmarks/generate_profile.py -n 10 -o /tmp/profile_before.json
    python benchmarks/generate_profile.py -n 10 --cprofile 30 -o /tmp/profile.json
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import pstats
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

PROMPT = "put the banana in the bowl"

# stage -> (module, attribute path) of the function whose calls are that stage's time
STAGES: dict[str, tuple[str, str]] = {
    "design": ("scenegen.design.family_draw", "design_run"),
    "asset load": ("scenegen.assets.sources", "ProceduralSource.__call__"),
    "layout": ("scenegen.layout.compose", "build_scene"),
    "precheck": ("scenegen.tasks.precheck", "precheck"),
    "world build": ("scenegen.sim.world", "World.build"),
    "settle": ("scenegen.sim.world", "World.settle"),
    "acceptance": ("scenegen.pipeline", "acceptance"),
    "preview": ("scenegen.sim.camera", "make_preview"),
    "pack write": ("scenegen.pack.writer", "PackWriter.add_scene"),
    "asset reload (pack)": ("scenegen.assets.base", "Asset.load"),
    "pack finalize": ("scenegen.pack.writer", "PackWriter.finalize"),
    "contact sheet": ("scenegen.pipeline", "_write_contact_sheet"),
    "pack load": ("scenegen.pack.reader", "load_pack"),
    "manifest validation": ("scenegen.pack.format", "validate_manifest"),
    "qa report": ("qa.report", "write_report"),
}
DETAIL: dict[str, tuple[str, str]] = {
    "  asset: mesh": ("scenegen.assets.procedural.registry", "build_mesh"),
    "  asset: physics": ("scenegen.assets.physics", "compute_physics"),
    "  asset: collision": ("scenegen.assets.collision.build", "build_collision"),
    "  asset: collision gap": ("scenegen.assets.collision.hulls", "proxy_gap"),
    "  asset: cavity probes": ("scenegen.assets.collision.hulls", "air_probes"),
    "  asset: convexity": ("scenegen.assets.collision.build", "convexity_ratio"),
    "  asset: visual file": ("scenegen.assets.model_urdf", "write_visual"),
    "  asset: part files": ("scenegen.assets.model_urdf", "write_parts"),
    "  asset: cache lookup": ("scenegen.assets.cache", "lookup"),
    "  obj read": ("scenegen.geometry", "read_obj"),
    "  physics steps": ("scenegen.sim.world", "World.step"),
    "  expert act": ("scenegen.tasks.expert", "ScriptedExpert.act"),
    "  task tracker": ("scenegen.tasks.tracker", "TaskTracker.evaluate"),
    "  arm command": ("scenegen.sim.control", "ArmController.command"),
    "  episode reset": ("scenegen.tasks.episode", "TaskEpisode.reset"),
}
"""Sub-stages (``--detail``): parts of asset building and of the feasibility expert's episode."""
QA_CHECKS = ("geometry", "physics", "semantic", "visibility", "reachability", "feasibility")


class StageClock:
    """CPU and wall seconds and call counts per stage (nested stages are counted in each)."""

    def __init__(self) -> None:
        self.cpu: Counter = Counter()
        self.wall: Counter = Counter()
        self.calls: Counter = Counter()

    def wrap(self, stage: str, fn: Callable) -> Callable:
        """``fn`` timed into ``stage``."""
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[stage] += time.process_time() - c0
                self.wall[stage] += time.perf_counter() - w0
                self.calls[stage] += 1
        return timed


@contextmanager
def instrumented(clock: StageClock, detail: bool = False) -> Iterator[None]:
    """Wrap every stage function (and each QA check) for the duration of the block.

    A module-level function is replaced in every scenegen and qa module that imported it by name.
    """
    import importlib

    from qa.checks import CHECKS

    undo: list[Callable[[], None]] = []
    for stage, (mod_name, path) in {**STAGES, **(DETAIL if detail else {})}.items():
        owner: Any = importlib.import_module(mod_name)
        *heads, attr = path.split(".")
        for h in heads:
            owner = getattr(owner, h)
        raw = owner.__dict__[attr]
        if isinstance(raw, classmethod):
            new: Any = classmethod(clock.wrap(stage, raw.__func__))
        else:
            new = clock.wrap(stage, raw)
        owners = [owner]
        if not heads:
            owners += [m for name, m in list(sys.modules.items()) if name.split(".")[0] in ("scenegen", "qa")
                       and m is not owner and getattr(m, attr, None) is raw]
        for o in owners:
            setattr(o, attr, new)
            undo.append(functools.partial(setattr, o, attr, raw))
    saved = dict(CHECKS)
    for name in QA_CHECKS:
        CHECKS[name] = clock.wrap(f"qa {name}", CHECKS[name])
    try:
        yield
    finally:
        CHECKS.update(saved)
        for u in reversed(undo):
            u()


def _verdicts(out: Path, qa_run: Any) -> dict:
    from scenegen.pack.reader import load_pack

    pack = load_pack(out)
    rejected = sorted((r["attempt"], r["reason"]) for r in qa_run.report.get("rejected", []))
    checks = {s: [[c["name"], c["passed"], c.get("reason", ""), round(float(c.get("score", 0.0)), 6)]
                  for c in (pack.qa(s) or {}).get("checks", [])] for s in sorted(pack.scene_ids)}
    return {"accepted": sorted(pack.scene_ids), "rejected": [list(r) for r in rejected],
            "attempts": qa_run.attempts, "checks": checks}


def measured_run(n: int, seed: int, cache: Path, root: Path, preview_size: int, detail: bool = False) -> dict:
    """One instrumented in-process run on a copy of ``cache``."""
    import qa.report  # noqa: F401 - imported before instrumenting, so its names are wrapped too
    import scenegen.pack.writer  # noqa: F401
    import scenegen.tasks.expert  # noqa: F401
    from qa.loop import generate_with_qa
    from scenegen.pipeline import PipelineConfig

    work = root / f"cache_s{seed}_{time.perf_counter_ns()}"
    shutil.copytree(cache, work)
    out = root / f"pack_s{seed}_{time.perf_counter_ns()}"
    cfg = replace(PipelineConfig(), workers=1, preview_size=preview_size)
    clock = StageClock()
    c0, w0 = time.process_time(), time.perf_counter()
    with instrumented(clock, detail):
        res = generate_with_qa(PROMPT, n, out, seed, cfg, cache_dir=work, progress=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    acc = max(1, res.accepted)
    stages = {k: {"cpu_s_per_scene": round(clock.cpu[k] / acc, 4), "wall_s_per_scene": round(clock.wall[k] / acc, 4),
                  "calls": clock.calls[k]} for k in clock.cpu}
    stages = dict(sorted(stages.items(), key=lambda kv: -kv[1]["cpu_s_per_scene"]))
    return {"seed": seed, "n": n, "accepted": res.accepted, "attempts": res.attempts,
            "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "cpu_s_per_scene": round(cpu / acc, 3),
            "wall_s_per_scene": round(wall / acc, 3), "stages": stages, "verdicts": _verdicts(out, res)}


def profiled_run(n: int, seed: int, cache: Path, root: Path, preview_size: int, top: int,
                 dump: str = "") -> list[dict]:
    """cProfile (CPU timer) of one run; the ``top`` functions by cumulative time."""
    from qa.loop import generate_with_qa
    from scenegen.pipeline import PipelineConfig

    work = root / f"cache_prof_{time.perf_counter_ns()}"
    shutil.copytree(cache, work)
    # no attempt deadline: the attempts then run on this thread, the one cProfile sees
    cfg = replace(PipelineConfig(), workers=1, preview_size=preview_size, attempt_timeout_s=0)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    generate_with_qa(PROMPT, n, root / f"pack_prof_{time.perf_counter_ns()}", seed, cfg, cache_dir=work,
                     progress=False)
    prof.disable()
    if dump:
        prof.dump_stats(dump)
    stats = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}:{name}", "calls": nc, "tottime": round(tt, 3),
                     "cumtime": round(ct, 3)})
    by_cum = sorted(rows, key=lambda r: -r["cumtime"])[:top]
    by_tot = sorted(rows, key=lambda r: -r["tottime"])[:top]
    return [{"by": "cumtime", "rows": by_cum}, {"by": "tottime", "rows": by_tot}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10, help="Accepted scenes per measured run.")
    ap.add_argument("--seed", type=int, default=1, help="Seed of the measured run (a new seed on the warm cache).")
    ap.add_argument("--warm-seed", type=int, default=0, help="Seed of the untimed run that fills the cache.")
    ap.add_argument("--cache", default="", help="Warmed cache folder to copy (warmed there and kept when missing; "
                    "default: a new one, removed).")
    ap.add_argument("--preview-size", type=int, default=128, help="As benchmarks/generate.py uses.")
    ap.add_argument("--cprofile", type=int, default=0, help="Also profile a run with cProfile; keep this many rows.")
    ap.add_argument("--detail", action="store_true", help="Also time sub-stages (asset building, the expert).")
    ap.add_argument("--pstats", default="", help="Also write the cProfile statistics to this file.")
    ap.add_argument("-o", default=str(HERE / "generate_profile.json"))
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="scenegen-profile-"))
    try:
        cache = Path(args.cache) if args.cache else root / "warm"
        if not cache.exists():
            from qa.loop import generate_with_qa
            from scenegen.pipeline import PipelineConfig

            cfg = replace(PipelineConfig(), workers=1, preview_size=args.preview_size)
            generate_with_qa(PROMPT, args.n, root / "fill", args.warm_seed, cfg, cache_dir=cache, progress=False)
        doc: dict = {"benchmark": "generate_profile", "date": time.strftime("%Y-%m-%d %H:%M"), "prompt": PROMPT,
                     "workers": 1, "qa": True, "preview_size": args.preview_size, "warm_seed": args.warm_seed,
                     "run": measured_run(args.n, args.seed, cache, root, args.preview_size,
                                            args.detail)}
        print(json.dumps({k: v for k, v in doc["run"].items() if k != "verdicts"}, indent=1), flush=True)
        if args.cprofile:
            doc["cprofile"] = profiled_run(args.n, args.seed, cache, root, args.preview_size, args.cprofile,
                                          args.pstats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    Path(args.o).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"written {args.o}")


if __name__ == "__main__":
    main()
