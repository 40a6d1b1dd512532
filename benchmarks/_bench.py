"""The resumable-benchmark machinery shared by ``ablation.py``, ``bc_scaling.py`` and ``ppoflow_lift.py``.

A benchmark runs as a series of calls, each within ``--budget`` seconds: :class:`Bench` keeps
the finished stages' results in ``WORK/state.json`` (``{"done": {stage: result}, ...}``), so the
next call skips them and resumes where the last one ran out of time (:class:`OutOfTime`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class OutOfTime(Exception):
    """This call's budget is spent; the next call resumes."""


class Bench:
    """The stages' state (``state.json`` in the work folder) and this call's clock.

    Args:
        args: the benchmark's arguments (``work`` and ``budget`` are read here).
        initial: the state of a first call besides ``done`` (e.g. ``{"calls": []}``).
        timing_key: the key of a stage's wall-clock seconds in its stored result.
        none_unfinished: a stage returning None is unfinished (resumable): :class:`OutOfTime`, nothing
            stored; otherwise None is stored as an empty result.
        echo: print each finished stage's result.

    """

    def __init__(self, args: argparse.Namespace, initial: dict | None = None, *, timing_key: str = "wall_clock_s",
                 none_unfinished: bool = False, echo: bool = True) -> None:
        self.args, self.t0 = args, time.monotonic()
        self.timing_key, self.none_unfinished, self.echo = timing_key, none_unfinished, echo
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.path = self.work / "state.json"
        self.state = json.loads(self.path.read_text()) if self.path.is_file() else {"done": {}, **(initial or {})}

    def left(self) -> float:
        """Seconds left of this call's budget."""
        return self.args.budget - (time.monotonic() - self.t0)

    def save(self) -> None:
        """Write ``state.json`` atomically."""
        from scenegen.fileio import write_atomic

        write_atomic(self.path, json.dumps(self.state, indent=1, default=float))

    def stage(self, name: str, fn: Callable[[], Any], need: float = 30.0) -> Any:
        """Run ``fn()`` once (its result is kept), unless fewer than ``need`` seconds are left.

        Raises:
            OutOfTime: too little time left, or (with ``none_unfinished``) ``fn`` returned None.

        """
        if name in self.state["done"]:
            return self.state["done"][name]
        if self.left() < need:
            raise OutOfTime(name)
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", flush=True)
        t = time.perf_counter()
        res = fn()
        if res is None and self.none_unfinished:
            raise OutOfTime(name)
        res = {**(res or {}), self.timing_key: round(time.perf_counter() - t, 1)}
        self.state["done"][name] = res
        self.save()
        if self.echo:
            print(f"  {name}: {json.dumps(res, default=float)[:400]}", flush=True)
        return res

    def cli(self, *argv: str) -> None:
        """``scenegen ARGV`` in a subprocess that must end before this call's budget does.

        Raises:
            OutOfTime: too little time left to start it, or it ran past the budget.

        """
        left = self.left() - 5
        if left < 10:
            raise OutOfTime(argv[0])
        cmd = [sys.executable, "-m", "scenegen.cli", *argv]
        print("  $ scenegen " + " ".join(argv), flush=True)
        try:
            subprocess.run(cmd, check=True, cwd=ROOT, timeout=left,
                           env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
        except subprocess.TimeoutExpired:
            raise OutOfTime(argv[0]) from None
