"""Slices of the fuzz campaign (``benchmarks/fuzz.py``, issue 12): no traceback, hang, leak or stray write.

The quick slice (prompts and graph JSON, in this process) runs on the fast path; the slow one
runs a sample of every category in isolated workers with per-case deadlines, as the benchmark does.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.scene_assets import cache_dir

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ("traceback", "hang", "changed_outside", "read_outside", "user_files_deleted", "key_leaks")


def _fuzz():
    if "scenegen_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("scenegen_fuzz", ROOT / "benchmarks" / "fuzz.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["scenegen_fuzz"] = module
        spec.loader.exec_module(module)
    return sys.modules["scenegen_fuzz"]


def _check(results: dict, minimum: int) -> None:
    totals = results["totals"]
    examples = {n: r["examples"] for n, r in results["categories"].items() if r["examples"]}
    assert totals["tried"] >= minimum
    assert {k: totals[k] for k in FINDINGS} == dict.fromkeys(FINDINGS, 0), json.dumps(examples, indent=1)[:4000]
    assert all(r["counts"]["complete"] for r in results["categories"].values())


def test_quick_slice_of_prompts_and_graph_json(tmp_path):
    results = _fuzz().run_campaign(tmp_path, scale=0.02, only=["prompts", "graph_json"], isolate=False)
    _check(results, 100)
    assert results["categories"]["prompts"]["counts"]["success"] > 0  # sensible prompts still design


@pytest.mark.slow
def test_slice_of_every_category_in_isolated_workers(tmp_path, tmp_path_factory):
    results = _fuzz().run_campaign(tmp_path, scale=0.02, cache_dir=cache_dir(tmp_path_factory))
    _check(results, 200)
    assert set(results["categories"]) == set(_fuzz().CATEGORIES)
