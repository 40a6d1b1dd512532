"""Per-attempt deadlines: a hung attempt fails as ``timeout in STAGE`` and the run goes on (thread and process pool)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from scenegen.attempts import attempt_results, mark_stage
from scenegen.errors import ConfigError


@dataclass(frozen=True)
class _Cfg:
    workers: int = 1
    backend: str = "process"
    ray_address: str | None = None
    attempt_timeout_s: float = 0.0


def toy_attempt(task: tuple) -> tuple:
    """Attempt ``i`` enters stage "layout"; the one named by ``task[1]`` hangs there in a Python loop."""
    i, hang = task
    mark_stage(i, "layout")
    while i == hang:
        time.sleep(0.05)
    return ("ok", i)


def _failed(i: int, why: str) -> tuple:
    return ("failed", i, why)


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_hung_attempt_fails_with_its_stage_and_the_rest_run_in_order(workers):
    import threading

    tasks = ((i, 1) for i in range(4))
    t0 = time.monotonic()
    # process workers start by importing this module (spawn): their deadline leaves room for it
    results, stop = attempt_results(tasks, _Cfg(workers=workers, attempt_timeout_s=1.5 if workers == 1 else 6.0),
                                    toy_attempt, _failed)
    try:
        out = list(results)
    finally:
        stop()
    assert [r[:2] for r in out] == [("ok", 0), ("failed", 1), ("ok", 2), ("ok", 3)]
    assert out[1][2].startswith("timeout in layout: attempt 1 did not finish within its")
    assert time.monotonic() - t0 < 60
    time.sleep(0.5)  # the abandoned attempt thread was stopped at its next Python instruction; one serves on
    assert len([t for t in threading.enumerate() if t.name == "scenegen-attempt" and t.is_alive()]) <= 1


def test_no_deadline_runs_in_this_thread():
    import threading

    seen = []
    results, stop = attempt_results(((i, -1) for i in range(2)), _Cfg(), lambda t: seen.append(
        threading.current_thread()) or toy_attempt(t), _failed)
    assert list(results) == [("ok", 0), ("ok", 1)] and seen == [threading.main_thread()] * 2
    stop()


def test_the_deadline_is_validated():
    from scenegen.pipeline import PipelineConfig

    with pytest.raises(ConfigError, match="attempt_timeout_s"):
        PipelineConfig(attempt_timeout_s=-1)
    assert "attempt_timeout_s" not in PipelineConfig().content_dict()  # not a setting that shapes scenes


@pytest.mark.slow
def test_generate_finishes_when_an_attempt_hangs_in_the_world(tmp_path, tmp_path_factory, monkeypatch):
    from scenegen.pipeline import PipelineConfig, generate
    from scenegen.sim.world import World
    from tests.helpers.scene_assets import FAST, cache_dir

    build = World.build.__func__
    calls = []

    def hang_first(cls, *args, **kw):
        calls.append(1)
        while len(calls) == 1:  # the first attempt's world never gets built (until its thread is stopped)
            time.sleep(0.05)
        return build(cls, *args, **kw)

    monkeypatch.setattr(World, "build", classmethod(hang_first))
    cfg = PipelineConfig(collision=FAST, preview_size=0, attempt_timeout_s=20.0)
    pack = generate("put the banana in the bowl", 1, tmp_path / "p", seed=3, config=cfg,
                    cache_dir=cache_dir(tmp_path_factory), progress=False)
    run = pack.manifest["summary"]["run"]
    assert len(pack) == 1 and run["attempts"] >= 2
    assert run["reasons"].get("timeout in world") == 1, run["reasons"]
