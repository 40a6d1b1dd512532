"""Seed-task benchmark: the blog's three tasks, tier by tier, with the scripted expert (issue 19).

For each task family of ``assets/tasks/`` (``flip_mugs``, ``bottles_in_bin``, ``sort_from_tote``)
and each tier, a pack of ``--n`` scenes is generated with QA (every default check but
``feasibility``: that check runs the expert, so leaving it out keeps the expert's results on the
accepted scenes an independent measurement) and the scripted expert runs one episode on every
accepted scene. Per task and tier it records:

- ``accepted / attempts``: scenes that passed QA (without feasibility) over the graphs tried;
- ``progress``: the expert's task progress (``info["progress"]``, the blog's definition), mean and
  bootstrap 95% interval;
- ``success``: episodes with progress 1, rate and Wilson 95% interval (the share of accepted
  scenes the feasibility check would keep, so full-QA acceptance ~= accepted / attempts x success);
- ``steps``: episode length (mean, and mean over successes), under a budget of
  ``max(400, --steps-per-goal x goals)`` steps for the pack's largest task, a flip counting as two goals
  (:data:`scenegen.tasks.config.GOAL_WEIGHTS`), which the env scales once more per four goals begun
  (:func:`~scenegen.tasks.config.episode_budget`: each row's ``limit`` is the episode's own);
- ``failures``: the expert's failure kinds.

Generations and episodes share one process pool of ``--workers`` busy processes: the packs are
generated first (cells side by side, ``--gen-workers`` attempt workers each), and every slot a
generation leaves takes one expert episode of a generated pack, in a worker that keeps its env for
the pack's next episode (an episode's reset seed is ``--seed`` whatever ran before it, so the rows
equal :func:`measure`'s, which runs them in order in one env). Each episode's row is appended to
``WORK/ROBOT/TASK/tier-K.rows.jsonl`` as it ends (the generation's result to ``tier-K.gen.json``),
and a cell is summarised into ``--out`` (``benchmarks/seed_tasks.json``, keyed ``ROBOT/TASK/tier-K``)
once its last scene is measured. A rerun skips cells already in ``--out`` with the same ``--n`` and
``--seed``, packs already generated and rows already measured, and resumes half-generated packs, so
a killed run loses only the episodes in flight. ``--robot`` runs the tiers with another registered
robot (a two-arm one, when registered), recorded beside the single-arm cells.

    .venv/bin/python benchmarks/seed_tasks.py --n 5 --work /tmp/seed_bench
    .venv/bin/python benchmarks/seed_tasks.py --tasks bottles_in_bin --tiers 1-2 --n 5
    python3 benchmarks/seed_tasks.py --n 50 --workers 15 --work /root/gpu/seed   # 16 cores (gpu_session9.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # the qa package, not this folder

from qa.config import DEFAULT_CHECKS, QAConfig  # noqa: E402
from qa.loop import generate_with_qa  # noqa: E402
from rl.evalset_tiers import parse_tiers  # noqa: E402
from rl.stats import bootstrap_ci, wilson_interval  # noqa: E402
from scenegen.design.families import families  # noqa: E402
from scenegen.errors import ScenegenError  # noqa: E402
from scenegen.fileio import write_atomic  # noqa: E402
from scenegen.layout.compose import SceneConfig  # noqa: E402
from scenegen.pack.reader import load_pack  # noqa: E402
from scenegen.pipeline import PipelineConfig  # noqa: E402

QA = QAConfig(checks=tuple(c for c in DEFAULT_CHECKS if c != "feasibility"))
MIN_STEPS = 400
"""Least episode budget (QA's feasibility check runs the expert for 400 steps)."""


def _r(x: float, d: int = 3) -> float:
    return round(float(x), d)


def goal_units_by_scene(pack: Any) -> dict[str, int]:
    """Scene id -> its task's goal units (:func:`scenegen.tasks.config.goal_units`: a flip counts as two)."""
    from scenegen.tasks.config import goal_units

    return {s: goal_units(pack.scene(s).graph.goals) for s in pack.scene_ids}


def step_budget(units: dict[str, int], steps_per_goal: int) -> int:
    """A pack's episode budget from its :func:`goal_units_by_scene`: ``max(MIN_STEPS, steps_per_goal x goals)``
    for its largest task."""
    return max(MIN_STEPS, steps_per_goal * max(units.values()))


def _episode_row(env: Any, pack: Any, sid: str, seed: int) -> dict:
    """One expert episode on scene ``sid`` (reset with ``seed``, whatever ran before in ``env``)."""
    from scenegen.tasks.expert import rollout

    res, _ = rollout(env, seed=seed, options={"scene_id": sid})
    return {"scene": sid[:12], "goals": len(pack.scene(sid).graph.goals), "progress": _r(res.progress),
            "success": bool(res.success), "steps": int(res.steps), "limit": int(env.episode.step_limit),
            "failure": res.failure}


def summarize(rows: list[dict], budget: int, seed: int) -> dict:
    """A cell's measurement from its episode rows (in the pack's scene order): progress, success, steps, failures."""
    prog = [r["progress"] for r in rows]
    wins = sum(r["success"] for r in rows)
    failures: dict[str, int] = {}
    for r in rows:
        if not r["success"]:
            key = re.sub(r"\b[a-z_]+_\d+\b", "X", str(r["failure"]))
            key = re.sub(r"\d+(\.\d+)?", "N", key)[:80]
            failures[key] = failures.get(key, 0) + 1
    lo, hi = bootstrap_ci(prog, seed=seed)
    slo, shi = wilson_interval(wins, len(rows))
    won = [r["steps"] for r in rows if r["success"]]
    return {"scenes": len(rows), "step_budget": budget,
            "progress": {"mean": _r(statistics.fmean(prog)), "ci95": [_r(lo), _r(hi)]},
            "success": {"count": wins, "rate": _r(wins / len(rows)), "ci95": [_r(slo), _r(shi)]},
            "steps": {"mean": _r(statistics.fmean(r["steps"] for r in rows), 1),
                      "mean_success": _r(statistics.fmean(won), 1) if won else None},
            "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1])), "rows": rows}


def measure(pack_dir: Path, steps_per_goal: int, seed: int) -> dict:
    """One expert episode on every scene of a pack, in this process and one env: progress, success, steps, failures.

    The sequential reference of :func:`run_cells`, whose episodes run one per task in a process pool.
    """
    from rl.envs import PickPlaceEnv

    pack = load_pack(pack_dir)
    if not len(pack):
        return {"scenes": 0}
    budget = step_budget(goal_units_by_scene(pack), steps_per_goal)
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=budget)
    try:
        rows = [_episode_row(env, pack, sid, seed) for sid in pack.scene_ids]
    finally:
        env.close()
    return summarize(rows, budget, seed)


_ENV: dict = {}
"""A pool worker's env, kept while its episodes come from one pack: ``{"key": (pack, budget), "pack", "env"}``."""


def episode(pack_dir: str, sid: str, budget: int, seed: int) -> dict:
    """One expert episode in a pool worker (its env is kept for the next episode of the same pack).

    Returns:
        The row of :func:`measure` with the full scene id (``sid``), ``seed``, ``budget`` and ``seconds``.

    """
    from rl.envs import PickPlaceEnv

    t0 = time.perf_counter()
    if _ENV.get("key") != (pack_dir, budget):
        if "env" in _ENV:
            _ENV.pop("env").close()
        _ENV["pack"] = load_pack(pack_dir)
        _ENV["env"] = PickPlaceEnv(_ENV["pack"], image_keys=(), max_episode_steps=budget)
        _ENV["key"] = (pack_dir, budget)
    row = _episode_row(_ENV["env"], _ENV["pack"], sid, seed)
    return {"sid": sid, "seed": seed, "budget": budget, **row, "seconds": _r(time.perf_counter() - t0, 2)}


def generate_cell(task: str, tier: int, args: argparse.Namespace, workers: int = 1) -> dict:
    """Generate one tier's pack (QA without feasibility; a half-generated pack under ``--work`` is resumed).

    Returns:
        ``accepted``, ``attempts``, ``generation_s`` and the top ``rejections``, or ``refused`` and ``seconds``.

    """
    cfg = PipelineConfig(preview_size=0, attempts_per_scene=args.attempts_per_scene, time_budget_s=args.budget,
                         tier=tier, scene=replace(SceneConfig(), robot=args.robot), workers=workers)
    t0 = time.perf_counter()
    try:
        run = generate_with_qa(task, args.n, pack_path(args, task, tier), seed=args.seed, config=cfg, qa_cfg=QA,
                               cache_dir=args.cache_dir, progress=False)
    except ScenegenError as exc:
        return {"refused": f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}",
                "seconds": _r(time.perf_counter() - t0, 1)}
    return {"accepted": run.accepted, "attempts": run.attempts, "generation_s": _r(time.perf_counter() - t0, 1),
            "rejections": dict(sorted(run.reasons.items(), key=lambda kv: -kv[1])[:6])}


def pack_path(args: argparse.Namespace, task: str, tier: int) -> Path:
    """The cell's pack folder under ``--work`` (its rows and generation record lie beside it)."""
    return args.work / args.robot / task / f"tier-{tier}"


@dataclass
class Cell:
    """One task and tier: its pack under ``--work``, its generation record and the episode rows measured so far."""

    task: str
    tier: int
    pack: Path
    gen: dict | None = None
    """:func:`generate_cell`'s result (``PACK.gen.json``), None until generated."""
    budget: int = 0
    sids: list[str] = field(default_factory=list)
    units: dict[str, int] = field(default_factory=dict)
    """Scene id -> goal units (:func:`goal_units_by_scene`), read with the pack."""
    rows: dict[str, dict] = field(default_factory=dict)
    """Scene id -> :func:`episode`'s row (``PACK.rows.jsonl``)."""

    def side(self, suffix: str) -> Path:
        """A file beside the pack (``tier-K.gen.json``, ``tier-K.rows.jsonl``)."""
        return self.pack.with_name(self.pack.name + suffix)

    def load(self, seed: int, steps_per_goal: int) -> None:
        """Read the generated pack's scenes, budget and the rows already measured (with this seed and budget)."""
        if not self.gen or not self.gen.get("accepted"):
            return
        pack = load_pack(self.pack)
        self.units = goal_units_by_scene(pack)
        self.budget, self.sids = step_budget(self.units, steps_per_goal), list(pack.scene_ids)
        rows, sids = read_rows(self.side(".rows.jsonl")), set(self.sids)
        self.rows = {s: r for s, r in rows.items() if s in sids and r["seed"] == seed and r["budget"] == self.budget}

    def todo(self) -> list[str]:
        """Scenes without a row yet."""
        return [s for s in self.sids if s not in self.rows]

    def result(self, seed: int) -> dict:
        """The cell's ``--out`` entry: generation fields, then :func:`summarize` of its rows in scene order."""
        gen = {k: v for k, v in (self.gen or {}).items() if k not in GEN_KEY}
        if "refused" in gen:
            return gen
        if not self.sids:
            return {**gen, "seconds": gen["generation_s"]}
        rows = [{k: v for k, v in self.rows[s].items() if k not in _ROW_EXTRA} for s in self.sids]
        secs = gen["generation_s"] + sum(self.rows[s]["seconds"] for s in self.sids)
        return {**gen, **summarize(rows, self.budget, seed), "seconds": _r(secs, 1)}


GEN_KEY = ("n", "seed", "attempts_per_scene")
"""The settings a ``tier-K.gen.json`` was made with: it stands for the pack's generation when they match."""


def gen_key(args: argparse.Namespace) -> dict:
    """The :data:`GEN_KEY` settings of this run."""
    return {k: getattr(args, k) for k in GEN_KEY}


_ROW_EXTRA = ("sid", "seed", "budget", "seconds")
"""Fields of a ``rows.jsonl`` line that the ``--out`` rows leave out."""


def read_rows(path: Path) -> dict[str, dict]:
    """The rows of a ``rows.jsonl`` by full scene id; a line cut off by a kill is dropped (and its end mended)."""
    if not path.is_file():
        return {}
    text = path.read_text()
    rows = {}
    for line in text.splitlines():
        try:
            row = json.loads(line)
            rows[row["sid"]] = row
        except (ValueError, KeyError, TypeError):
            continue
    if text and not text.endswith("\n"):
        append_line(path, "")
    return rows


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline in one write (``O_APPEND``), so a kill leaves whole lines or a cut last one."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def run_cells(cells: list[Cell], args: argparse.Namespace, record: Callable[[Cell], None]) -> None:
    """Generate the cells' packs and run their episodes on one pool of ``args.workers`` busy processes.

    Generations go first, costliest (highest tier) first, ``args.gen_workers`` attempt workers each (a
    generation holds that many of the pool's slots); every slot left takes an episode, those of the
    scenes with the most goal units first. Each episode's row is appended to its cell's ``rows.jsonl``
    as it finishes and each cell is recorded once its last scene is measured, so a killed run loses
    only the episodes (and generation attempts) in flight.
    """
    import heapq
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from scenegen.attempts import _worker_init
    t0, slots = time.perf_counter(), args.workers
    gens = sorted((c for c in cells if c.gen is None), key=lambda c: -c.tier)
    per_gen = min(slots, args.gen_workers or max(1, slots // max(1, len(gens))))
    queue: list = []
    counts = {"done": 0, "queued": 0}

    def enqueue(cell: Cell) -> None:
        cell.load(args.seed, args.steps_per_goal)
        todo = cell.todo()
        if not todo:
            record(cell)
            return
        for sid in todo:
            heapq.heappush(queue, (-cell.units[sid], counts["queued"], cell, sid))
            counts["queued"] += 1

    for cell in cells:
        if cell.gen is not None:
            enqueue(cell)
    print(f"{len(cells)} cells: {len(gens)} to generate"
          f"{f' ({per_gen} attempt workers each)' if gens else ''}, {counts['queued']} episodes queued, "
          f"{slots} workers", flush=True)
    running: dict = {}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(slots, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)) as ex:
        while True:
            while gens and slots >= per_gen:
                cell = gens.pop(0)
                running[ex.submit(generate_cell, cell.task, cell.tier, args, per_gen)] = (cell, None, per_gen)
                slots -= per_gen
            while not gens and queue and slots:
                *_, cell, sid = heapq.heappop(queue)
                running[ex.submit(episode, str(cell.pack), sid, cell.budget, args.seed)] = (cell, sid, 1)
                slots -= 1
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                cell, sid, cost = running.pop(fut)
                slots += cost
                el = time.perf_counter() - t0
                if sid is None:
                    cell.gen = {**gen_key(args), **fut.result()}
                    write_atomic(cell.side(".gen.json"), json.dumps(cell.gen) + "\n")
                    print(f"[{el:5.0f}s] {cell.pack.relative_to(args.work)}: generated "
                          f"{json.dumps({k: v for k, v in cell.gen.items() if k not in GEN_KEY})}", flush=True)
                    enqueue(cell)
                    continue
                row = fut.result()
                append_line(cell.side(".rows.jsonl"), json.dumps(row))
                cell.rows[sid] = row
                counts["done"] += 1
                print(f"[{el:5.0f}s] {cell.pack.relative_to(args.work)} {sid[:8]}: progress {row['progress']:.2f} "
                      f"{'ok' if row['success'] else str(row['failure'])[:60]}, {row['steps']} steps in "
                      f"{row['seconds']:.0f}s; {counts['done']}/{counts['queued']} episodes, {len(running)} running",
                      flush=True)
                if not cell.todo():
                    record(cell)


def table(results: dict) -> str:
    """The results as a markdown table."""
    lines = ["| robot / task / tier | accepted / attempts | progress (95% CI) | success (95% CI) | steps |",
             "|---|---|---|---|---|"]
    for key, r in results.items():
        if "refused" in r:
            lines.append(f"| {key} | refused: {r['refused'][:90]} | - | - | - |")
        elif not r.get("scenes"):
            lines.append(f"| {key} | {r['accepted']} / {r['attempts']} | - | - | - |")
        else:
            p, s = r["progress"], r["success"]
            lines.append(f"| {key} | {r['accepted']} / {r['attempts']} | {p['mean']:.2f} [{p['ci95'][0]:.2f}, "
                         f"{p['ci95'][1]:.2f}] | {s['count']}/{r['scenes']} = {s['rate']:.2f} [{s['ci95'][0]:.2f}, "
                         f"{s['ci95'][1]:.2f}] | {r['steps']['mean']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50, help="scenes per task and tier")
    ap.add_argument("--tasks", default="", help="comma-separated task families (default: every family)")
    ap.add_argument("--tiers", default="1-5", help="tiers, e.g. 1-5 or 1,3")
    ap.add_argument("--robot", default="panda", help="registered robot (e.g. a two-arm one)")
    ap.add_argument("--seed", type=int, default=0, help="generation and episode seed")
    ap.add_argument("--work", type=Path, default=Path("/tmp/seed_tasks_bench"), help="packs (resumed)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="asset cache (default: the user cache)")
    ap.add_argument("--budget", type=float, default=1800.0, help="generation seconds per task and tier")
    ap.add_argument("--attempts-per-scene", type=float, default=3.0, help="graph budget per wanted scene")
    ap.add_argument("--steps-per-goal", type=int, default=150, help="expert step budget per goal (at least 400)")
    ap.add_argument("--out", type=Path, default=HERE / "seed_tasks.json")
    ap.add_argument("--workers", type=int, default=None,
                    help="busy processes: generations and episodes of every cell share them (e.g. 15 on 16 cores)")
    ap.add_argument("--gen-workers", type=int, default=0,
                    help="attempt workers per generation (default: --workers over the packs to generate, at least 1)")
    ap.add_argument("--cell-workers", type=int, default=1, help="--workers' old name (used when --workers is not)")
    args = ap.parse_args(argv)
    args.workers = max(1, args.workers or args.cell_workers)
    fams = families()
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] or sorted(fams)
    unknown = [t for t in tasks if t not in fams]
    if unknown:
        sys.exit(f"unknown task family {unknown[0]!r}; use {', '.join(sorted(fams))}")
    tiers = parse_tiers(args.tiers)
    args.work.mkdir(parents=True, exist_ok=True)
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results: dict = data.get("results", {})
    t0 = time.time()
    todo = []
    for task in tasks:
        for tier in tiers:
            key = f"{args.robot}/{task}/tier-{tier}"
            old = results.get(key)
            if old and old.get("n") == args.n and old.get("seed") == args.seed and "refused" not in old:
                print(f"{key}: measured already, skipped", flush=True)
                continue
            todo.append((task, tier))

    def record(cell: Cell) -> None:
        task, tier, row = cell.task, cell.tier, cell.result(args.seed)
        key = f"{args.robot}/{task}/tier-{tier}"
        results[key] = {"n": args.n, "seed": args.seed, "task": task, "tier": tier, "robot": args.robot,
                        "recipe": fams[task].tier(tier).to_dict(), **row}
        print(f"{key}: {json.dumps({k: v for k, v in row.items() if k != 'rows'})}", flush=True)
        doc = {**data, "qa_checks": list(QA.checks), "steps_per_goal": args.steps_per_goal,
               "min_steps": MIN_STEPS, "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                   "platform": platform.platform()},
               "date": time.strftime("%Y-%m-%d"), "seconds_last_run": _r(time.time() - t0, 1),
               "results": dict(sorted(results.items()))}
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n")

    cells = []
    for task, tier in todo:
        cell = Cell(task, tier, pack_path(args, task, tier))
        old = json.loads(cell.side(".gen.json").read_text()) if cell.side(".gen.json").is_file() else {}
        if {k: old.get(k) for k in GEN_KEY} == gen_key(args) and "refused" not in old:
            cell.gen = old
        cells.append(cell)
    run_cells(cells, args, record)
    print(table({k: v for k, v in sorted(results.items()) if v.get("robot") == args.robot}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
