"""``benchmarks/seed_tasks.py``: episodes on a process pool give the sequential rows, and a cut run resumes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.scene_assets import cache_dir

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seed_tasks():
    spec = importlib.util.spec_from_file_location("scenegen_seed_tasks", ROOT / "benchmarks" / "seed_tasks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _cli(work: Path, cache: Path, workers: int) -> str:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "seed_tasks.py"), "--n", "3", "--tiers", "1", "--tasks",
           "bottles_in_bin", "--workers", str(workers), "--work", str(work), "--out", str(work / "out.json"),
           "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_a_cut_last_line_is_dropped_and_the_next_row_starts_on_its_own_line(seed_tasks, tmp_path):
    path = tmp_path / "tier-1.rows.jsonl"
    seed_tasks.append_line(path, json.dumps({"sid": "a", "progress": 1.0}))
    with open(path, "a") as f:
        f.write('{"sid": "b", "progr')                      # a kill in the middle of a write
    assert list(seed_tasks.read_rows(path)) == ["a"]
    seed_tasks.append_line(path, json.dumps({"sid": "c", "progress": 0.5}))
    assert list(seed_tasks.read_rows(path)) == ["a", "c"]


@pytest.mark.slow
def test_pool_rows_equal_the_sequential_rows_and_a_cut_run_measures_only_what_is_missing(seed_tasks, tmp_path,
                                                                                         tmp_path_factory):
    work, cache = tmp_path / "work", cache_dir(tmp_path_factory)
    log = _cli(work, cache, workers=2)
    assert "1 to generate" in log and log.count(" episodes, ") == 3
    pool = json.loads((work / "out.json").read_text())["results"]["panda/bottles_in_bin/tier-1"]
    pack = work / "panda" / "bottles_in_bin" / "tier-1"
    seq = seed_tasks.measure(pack, 150, 0)
    assert pool["scenes"] == 3 and pool["rows"] == seq["rows"]
    assert {k: v for k, v in pool.items() if k in seq} == seq

    # a run killed during its last episode: one row missing, the line being written cut off, --out lost
    rows_file = pack.with_name("tier-1.rows.jsonl")
    lines = rows_file.read_text().splitlines()
    rows_file.write_text("\n".join(lines[:2]) + "\n" + lines[2][:25])
    (work / "out.json").unlink()
    log = _cli(work, cache, workers=1)
    assert "0 to generate" in log and "1 episodes queued" in log and "generated" not in log
    again = json.loads((work / "out.json").read_text())["results"]["panda/bottles_in_bin/tier-1"]
    assert again["rows"] == seq["rows"] and again["progress"] == pool["progress"]
    assert len(seed_tasks.read_rows(rows_file)) == 3
