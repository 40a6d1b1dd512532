"""The seed task families plug into the eval sets' tiers (``rl.evalset_tiers``)."""

from __future__ import annotations

import pytest

from rl.evalset_tiers import TIER_FAMILIES, register_seed_families, tier_pipeline, tier_prompt
from scenegen.design.families import families
from scenegen.errors import FamilyError
from scenegen.pipeline import PipelineConfig


def test_every_family_file_is_registered_by_name():
    assert set(families()) <= set(TIER_FAMILIES)
    assert set(register_seed_families()) == set(families())


@pytest.mark.parametrize("source", ["bottles_in_bin", "put all the bottles in the bin"])
def test_a_family_tier_is_its_prompt_and_its_recipe(source):
    prompt, knobs = tier_prompt(source, 5)
    assert prompt == "put all the bottles in the bin"
    assert knobs["family"] == "bottles_in_bin" and knobs["tier"] == 5
    assert knobs["count"] == [4, 5] and set(knobs["states"]) == {"upright", "lying"}
    cfg = tier_pipeline(PipelineConfig(), knobs)
    assert cfg.scene.layout.margin == knobs["margin"]
    assert cfg.scene.layout.distractors is None  # the family draws its own distractor count per scene


def test_a_family_tier_without_a_recipe_is_refused():
    with pytest.raises(FamilyError, match="no tier 6"):
        tier_prompt("flip_mugs", 6)
