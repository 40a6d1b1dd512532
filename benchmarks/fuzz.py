"""Fuzz and fault campaign: bad input for the CLI, the library and the env, in bounded time (issue 12).

Categories (cases at ``--scale 1``): prompts, graph JSON, scene JSON, asset JSON, user meshes,
damaged and tampered packs x commands, misbehaving endpoints (stall, trickle, garbage, 500, echo
of the key) for the LLM designer and the VLM judge, gymnasium env inputs, and whole CLI runs.
Per category it counts: tried, clean error (a typed one-line error), success, traceback (any
other exception, a crashed QA check, a designed graph that does not reload...), hang (a case
past its deadline, or an endpoint call past its own deadline), and findings: files changed
outside the command's own output, files read from outside a pack, user files deleted, canary
keys found in any output.

Each category runs in its own worker process whose every case has a wall-clock deadline: a case
that passes it is counted as a hang, the worker is killed and restarted at the next case. Run::

    python benchmarks/fuzz.py                      # the full campaign -> benchmarks/fuzz.json
    python benchmarks/fuzz.py --scale 0.02 --out /tmp/fuzz.json   # a quick slice
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the project first (benchmarks/qa.py must not shadow the qa package), then this folder for fuzz_*.py
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() not in (HERE, ROOT)), str(HERE)]

CATEGORIES: dict[str, tuple[int, str, float]] = {
    "prompts": (3000, "fuzz_cases:case_prompts", 60.0),
    "graph_json": (2800, "fuzz_cases:case_graph_json", 30.0),
    "scene_json": (1500, "fuzz_cases:case_scene_json", 60.0),
    "asset_json": (1200, "fuzz_cases:case_asset_json", 30.0),
    "meshes": (320, "fuzz_cases:case_meshes", 60.0),
    "packs": (800, "fuzz_packs:case_packs", 120.0),
    "endpoints": (154, "fuzz_cases:case_endpoints", 30.0),
    "env": (700, "fuzz_cases:case_env", 30.0),
    "cli": (30, "fuzz_packs:case_cli", 180.0),
}
"""Category -> (cases at scale 1, ``module:function`` of one case, seconds one case may take)."""
NEEDS_PACK = {"scene_json", "asset_json", "packs", "endpoints", "env", "cli"}
"""Categories that work on the base pack (the others need none, so a quick slice skips generating it)."""
COUNTERS = ("tried", "clean_error", "success", "traceback", "hang", "changed_outside", "read_outside",
            "user_files_deleted", "key_leaks")


# --------------------------------------------------------------------------- set-up
def make_context(work: Path, with_pack: bool = True, cache_dir: Path | None = None) -> dict:
    """The campaign's files: a base pack, a canary home folder, a secret outside any pack, canary credentials."""
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig, generate

    work.mkdir(parents=True, exist_ok=True)
    base = work / "base_pack"
    if with_pack and not (base / "manifest.json").is_file():
        generate("put the banana in the bowl", 1, base, seed=2, cache_dir=cache_dir or work / "cache", progress=False,
                 config=PipelineConfig(collision=CollisionConfig.fast(), preview_size=64))
    token = "canary-token-" + secrets.token_hex(12)
    outside = work / "outside"
    (outside / "etc").mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_text(token + "\n")
    (outside / "etc" / "passwd").write_text(f"root:x:0:0:{token}:/root:/bin/sh\n")
    home = work / "home"
    (home / "docs").mkdir(parents=True, exist_ok=True)
    for name, text in (("notes.txt", "my notes"), ("docs/plan.md", "# plan"), ("data.bin", "\x00\x01")):
        (home / name).write_text(text)
    return {"work": str(work), "base_pack": str(base), "home": str(home), "token": token,
            "secret_file": str(outside / "secret.txt"), "outside_dir": str(outside / "etc"),
            "key": "sk-canary-" + secrets.token_hex(16), "password": "pw-canary-" + secrets.token_hex(6)}


def _tree(root: Path) -> dict[str, str]:
    import hashlib

    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# --------------------------------------------------------------------------- worker (one category)
class CaseRunner:
    """Runs cases of one category in this process: classifies each outcome and adds the findings."""

    def __init__(self, data: dict, category: str) -> None:
        import importlib

        from fuzz_cases import Ctx

        self.ctx, self.category = Ctx(data), category
        self.home, self.base = Path(data["home"]), Path(data["base_pack"])
        self.home_before = _tree(self.home)
        self.base_before = _tree(self.base) if self.base.is_dir() else {}
        module, name = CATEGORIES[category][1].split(":")
        self.case = getattr(importlib.import_module(module), name)

    def run(self, i: int) -> dict:
        """Case ``i``: its outcome (``success``, ``error``, ``traceback``), seconds and findings."""
        import io
        from contextlib import redirect_stderr, redirect_stdout

        from fuzz_cases import classify

        rng = random.Random(f"{self.category}:{i}")
        t0 = time.perf_counter()
        sink = io.StringIO()
        try:
            with redirect_stdout(sink), redirect_stderr(sink):
                res = dict(self.case(self.ctx, i, rng))
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none stops the campaign
            outcome, error = classify(exc)
            res = {"outcome": outcome, "error": error}
        res.update(i=i, seconds=round(time.perf_counter() - t0, 4))
        res["leak"] = sorted(set(res.get("leak") or []) | set(self.ctx.leaks(sink.getvalue(), res.get("error", ""))))
        base_changed = i % 50 == 0 and self.base_before and _tree(self.base) != self.base_before
        if _tree(self.home) != self.home_before or base_changed:
            res["changed"] = res.get("changed") or ["files outside the case's own output"]
            self.home_before, self.base_before = _tree(self.home), _tree(self.base)
        return res


def worker(ctx_path: str, category: str, start: int, stop: int) -> None:
    """Run cases ``start..stop-1`` of ``category``; report ``S <i>`` and ``R <json>`` lines on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # PyBullet and friends print to fd 1: keep it off the protocol
    runner = CaseRunner(json.loads(Path(ctx_path).read_text()), category)
    for i in range(start, stop):
        print(f"S {i}", file=proto)
        print("R " + json.dumps(runner.run(i), default=str), file=proto)


# --------------------------------------------------------------------------- parent
def run_category(ctx_path: Path, category: str, count: int, budget_s: float, log_dir: Path,
                 isolate: bool = True) -> dict:
    """Run one category in worker processes (restarted after a hang); return its counters and examples.

    With ``isolate`` False the cases run in this process, without per-case deadlines (the quick CI slice).
    """
    timeout = CATEGORIES[category][2]
    stats = dict.fromkeys(COUNTERS, 0)
    examples: list[dict] = []
    t0, nxt = time.monotonic(), 0
    if not isolate:
        runner = CaseRunner(json.loads(ctx_path.read_text()), category)
        for i in range(count):
            _count(stats, examples, runner.run(i))
        nxt = count
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    while nxt < count and time.monotonic() - t0 < budget_s:
        with open(log_dir / f"{category}.log", "a") as log:
            proc = subprocess.Popen([sys.executable, str(Path(__file__)), "--worker", str(ctx_path), category,
                                     str(nxt), str(count)], stdout=subprocess.PIPE, stderr=log, text=True,
                                    env=env, start_new_session=True)
        current, last, buf, why = None, time.monotonic(), "", "exited"
        while why == "exited":
            if not select.select([proc.stdout], [], [], 1.0)[0]:
                if current is not None and time.monotonic() - last > timeout:
                    _count(stats, examples, {"i": current, "outcome": "hang",
                                             "error": f"no result after {timeout:.0f} s"})
                    nxt, why = current + 1, "hang"
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16).decode()
            if not chunk:
                break  # the worker ended: done, or died inside case `current`
            buf += chunk
            while "\n" in buf and why == "exited":
                line, buf = buf.split("\n", 1)
                if line.startswith("S "):
                    current, last = int(line[2:]), time.monotonic()
                elif line.startswith("R "):
                    res = json.loads(line[2:])
                    _count(stats, examples, res)
                    nxt, current = res["i"] + 1, None
                    if time.monotonic() - t0 > budget_s:
                        why = "budget"
        _end(proc)
        if why == "exited" and current is not None:  # the worker died inside a case (a crash)
            _count(stats, examples, {"i": current, "outcome": "traceback", "error": "the worker process died"})
            nxt = current + 1
    stats["seconds"] = round(time.monotonic() - t0, 1)
    stats["complete"] = nxt >= count
    return {"counts": stats, "examples": examples}


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker's own session: it and what it started
        except OSError:
            pass
    proc.wait()
    proc.stdout.close()


def _count(stats: dict, examples: list, res: dict) -> None:
    stats["tried"] += 1
    outcome = res["outcome"]
    if res.get("overrun"):
        outcome, res["error"] = "hang", res["overrun"]
    stats[{"error": "clean_error", "success": "success", "traceback": "traceback", "hang": "hang"}[outcome]] += 1
    for key, counter in (("changed", "changed_outside"), ("outside_read", "read_outside"),
                         ("deleted", "user_files_deleted"), ("leak", "key_leaks")):
        if res.get(key):
            stats[counter] += 1
            outcome = outcome if outcome in ("traceback", "hang") else counter
    if outcome not in ("error", "success") and len(examples) < 8:
        examples.append({k: res.get(k) for k in ("i", "outcome", "error", "detail", "changed", "outside_read",
                                                  "deleted", "leak") if res.get(k)} | {"finding": outcome})


def run_campaign(work: Path, scale: float = 1.0, only: list[str] | None = None, budget_s: float = 900.0, *,
                 isolate: bool = True, cache_dir: Path | None = None) -> dict:
    """Set up, run every category (or ``only``), and return the results (counts, examples, totals).

    Args:
        work: work folder (the base pack, canaries and per-case copies live there).
        scale: fraction of each category's cases.
        only: categories to run (default: all).
        budget_s: most seconds one category may take (it stops starting cases after that).
        isolate: run each category in worker processes with per-case deadlines.
        cache_dir: asset cache of the base pack (default ``work/cache``).

    """
    names = [n for n in CATEGORIES if not only or n in only]
    ctx = make_context(work, with_pack=bool(set(names) & NEEDS_PACK), cache_dir=cache_dir)
    ctx_path = work / "context.json"
    ctx_path.write_text(json.dumps(ctx))
    (work / "logs").mkdir(exist_ok=True)
    results = {}
    for name in names:
        count = max(1, round(CATEGORIES[name][0] * scale))
        results[name] = run_category(ctx_path, name, count, budget_s, work / "logs", isolate=isolate)
        c = results[name]["counts"]
        print(f"{name:<11} {c['tried']:>5} tried in {c['seconds']:>6.1f} s: {c['clean_error']} clean errors, "
              f"{c['success']} successes, {c['traceback']} tracebacks, {c['hang']} hangs", flush=True)
    totals = {k: sum(r["counts"][k] for r in results.values()) for k in COUNTERS}
    totals["seconds"] = round(sum(r["counts"]["seconds"] for r in results.values()), 1)
    return {"categories": results, "totals": totals}


def table(results: dict) -> str:
    """The per-category markdown table."""
    head = ["category", "tried", "clean error", "success", "traceback", "hang", "changed outside", "read outside",
            "user files deleted", "key leaks", "seconds"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = [(n, r["counts"]) for n, r in results["categories"].items()] + [("**all**", results["totals"])]
    for name, c in rows:
        lines.append(f"| {name} | " + " | ".join(str(c[k]) for k in COUNTERS + ("seconds",)) + " |")
    return "\n".join(lines)


def main() -> None:
    """Command line: run the campaign and write its JSON results."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="Fraction of each category's cases to run.")
    ap.add_argument("--only", default="", help="Comma-separated categories (default: all).")
    ap.add_argument("--work", default=None, help="Work folder (default: a new temporary folder).")
    ap.add_argument("--budget", type=float, default=900.0, help="Most seconds one category may take.")
    ap.add_argument("--out", default=str(HERE / "fuzz.json"), help="Results JSON.")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="scenegen-fuzz-"))
    t0 = time.monotonic()
    results = run_campaign(work, args.scale, [c for c in args.only.split(",") if c], args.budget)
    results.update(command="python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                   date=datetime.now(timezone.utc).isoformat(timespec="seconds"), machine=platform.platform(),
                   cpus=os.cpu_count(), python=platform.python_version(), seconds=round(time.monotonic() - t0, 1))
    Path(args.out).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(table(results))
    print(f"results: {args.out} (work folder {work})")


if __name__ == "__main__":
    main()
