"""``benchmarks/generate_profile.py`` times stages by wrapping functions: it must count them and put them back."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prof():
    spec = importlib.util.spec_from_file_location("scenegen_generate_profile", ROOT / "benchmarks" /
                                                  "generate_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stages_are_timed_where_they_are_imported_and_restored_after(prof, tmp_path):
    import scenegen.pack.format as fmt
    import scenegen.pack.reader as reader
    from qa.checks import CHECKS
    from scenegen.sim.world import World

    raw_validate, raw_build, raw_check = fmt.validate_manifest, World.__dict__["build"], CHECKS["geometry"]
    clock = prof.StageClock()
    with prof.instrumented(clock, detail=True):
        assert reader.validate_manifest is not raw_validate       # the name reader imported is wrapped too
        with pytest.raises(Exception, match="not a scenegen pack manifest"):
            reader.validate_manifest(tmp_path, {})
        assert isinstance(World.__dict__["build"], classmethod)
    assert clock.calls["manifest validation"] == 1 and clock.cpu["manifest validation"] >= 0
    assert fmt.validate_manifest is raw_validate and reader.validate_manifest is raw_validate
    assert World.__dict__["build"] is raw_build and CHECKS["geometry"] is raw_check


def test_every_stage_names_a_function_that_exists(prof):
    import importlib

    for stage, (module, path) in {**prof.STAGES, **prof.DETAIL}.items():
        owner = importlib.import_module(module)
        for part in path.split("."):
            owner = getattr(owner, part)
        assert callable(owner), stage
