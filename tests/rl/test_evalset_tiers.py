"""Plain-prompt tiers reach the generated scenes as layout knobs, not as words in the instruction."""

from __future__ import annotations

import pytest

PROMPT = "put the banana in the bowl"


def test_tier_pipeline_sets_a_plain_tier_and_leaves_a_family_tier_to_its_draws():
    from rl.evalset_tiers import DEFAULT_TIERS, tier_pipeline
    from scenegen.pipeline import PipelineConfig

    base = PipelineConfig()
    t3 = tier_pipeline(base, {"tier": 3, "distractors": 4, "margin": 0.02})
    assert (t3.scene.layout.distractors, t3.scene.layout.margin) == (4, 0.02)
    fam = tier_pipeline(base, {"family": "bottles_in_bin", "tier": 2, "distractors": [1, 2], "margin": 0.02})
    assert fam.scene.layout.distractors is None and fam.scene.layout.margin == 0.02
    assert tier_pipeline(base, {"note": "x"}) is base
    assert DEFAULT_TIERS[1].distractors == 0


@pytest.mark.slow
def test_a_tiered_set_has_the_tiers_clutter_and_the_plain_instruction(tmp_path, tmp_path_factory):
    from rl.evalset import make_evalset
    from scenegen.pack.reader import load_pack
    from tests.helpers.rl_packs import CONFIG
    from tests.helpers.scene_assets import cache_dir

    es = make_evalset(PROMPT, tmp_path / "set", 1, tiers="2", qa=False, pipeline=CONFIG,
                      cache_dir=cache_dir(tmp_path_factory), progress=False)
    tier = es.doc["source"]["tiers"]["2"]
    assert tier["prompt"] == PROMPT and tier["distractors"] == 2
    pack = load_pack(tmp_path / "set" / "packs" / "tier-2")
    assert pack.prompt == PROMPT
    for sid in pack.scene_ids:
        graph = pack.scene(sid).graph
        assert len(graph.objects("distractor")) == 2
        assert graph.instruction == PROMPT and not any("distractor" in i for i in graph.instructions)
