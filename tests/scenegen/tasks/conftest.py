"""Fixtures shared by the expert's task tests."""

from __future__ import annotations

import pytest

from tests.helpers.scene_assets import FAST


@pytest.fixture(scope="session")
def tote_pack(tmp_path_factory):
    """A one-scene sort pack (a hex nut, a bolt and a washer in a tote; seed 2), generated once per session."""
    from scenegen.pipeline import PipelineConfig, generate

    return generate("sort a nut, a bolt and a washer from the tote into the sorter", 1,
                    tmp_path_factory.mktemp("tote") / "pack", seed=2,
                    config=PipelineConfig(collision=FAST, preview_size=0), progress=False)
