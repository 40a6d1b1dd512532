"""Paraphrased instructions: several per scene, the prompt among them, each naming the right objects."""

from __future__ import annotations

import numpy as np
import pytest

from scenegen.design import design
from scenegen.design.paraphrase import paraphrases, referring_phrases
from scenegen.design.variation import variants
from scenegen.errors import ConfigError
from scenegen.graph import SceneGraph


def _two_blocks() -> SceneGraph:
    g = SceneGraph("put the red block to the left of the blue block")
    g.add_object("table", "table", "support")
    g.add_object("block_1", "block", "target", attributes={"color": "red", "size": "small"})
    g.add_object("block_2", "block", "receptacle", attributes={"color": "blue", "size": "small"})
    g.add_relation("block_1", "on", "table")
    g.add_relation("block_2", "on", "table")
    g.add_goal("block_1", "left_of", "block_2")
    return g


def test_phrases_pick_the_object_out():
    g = _two_blocks()
    phrases = referring_phrases(g, "block_1")
    # both blocks are small: only the colour tells them apart, so every phrase names it
    assert phrases and all("red" in ph for ph in phrases)
    assert not any("blue" in ph for ph in phrases)
    assert {"the red block", "the red cube"} <= set(phrases)


def test_paraphrases_keep_the_prompt_first_and_are_distinct_and_seeded():
    g = _two_blocks()
    a = paraphrases(g, np.random.default_rng(3), 6)
    b = paraphrases(g, np.random.default_rng(3), 6)
    assert a == b and len(a) == 6 and a[0] == g.instruction and len(set(a)) == 6
    for text in a[1:]:
        assert "red" in text and "blue" in text  # the two blocks stay told apart
        assert text.index("red") < text.index("blue") or text.startswith(("to the left", "left of", "on the left"))
    assert paraphrases(g, np.random.default_rng(4), 6) != a


def test_multi_goal_and_state_prompts():
    g = design("put the spoon and the fork in the mug", 1, seed=0)[0]
    assert g.instructions[0] == "put the spoon and the fork in the mug" and len(g.instructions) >= 4
    for text in g.instructions[1:]:
        assert " and " in text and any(w in text for w in ("mug",)), text
    flip = design("flip the mug upright", 1, seed=0)[0]
    assert all("mug" in t for t in flip.instructions) and len(flip.instructions) >= 3


def test_variants_store_instructions_in_the_graph_and_json():
    out = design("put the small green cup next to the big yellow bowl", 3, seed=1)
    for g in out:
        assert g.instructions[0] == g.instruction and len(set(g.instructions)) == len(g.instructions) >= 4
        again = SceneGraph.from_json(g.to_json())
        assert again.instructions == g.instructions and again.content_hash() == g.content_hash()
        for text in g.instructions[1:]:
            assert "cup" in text and ("bowl" in text or "dish" in text)
    base = design("put the banana in the bowl", 1, seed=0)[0]
    base.instructions = []
    one = variants(base, 2, seed=0, instructions=1)
    assert all(v.instructions == [v.instruction] for v in one)
    with pytest.raises(ConfigError, match="instructions"):
        variants(base, 1, seed=0, instructions=0)


def test_graph_without_instructions_round_trips_unchanged(banana_bowl):
    d = banana_bowl.to_dict()
    assert "instructions" not in d
    assert SceneGraph.from_dict(d).instructions == []
