"""The variation sampler and the public design() entry point."""

import json
import os
import subprocess
import sys

import pytest

from scenegen.design import design, parse, register_designer, variants, variation
from scenegen.design import registry as var
from scenegen.errors import ConfigError, GraphError, PromptError

PROMPTS = [
    "put the banana in the bowl",
    "stack the red block on the blue block",
    "sort the fruit into the bowl and the tools into the bin",
    "take the apple out of the bowl and put it on the plate",
    "flip the mug and put it on the tray",
    "put two small blocks in the tray with 4 distractors",
]


def _task(g):
    """What must not change: named objects with roles, placements, states, goals and instruction."""
    named = sorted((o.id, o.category, o.role, o.state) for o in g.objects() if o.role != "distractor")
    rels = sorted((r.subject, r.relation, r.object) for r in g.relations()
                  if g.object(r.subject).role != "distractor")
    return g.instruction, named, rels, [gl.to_dict() for gl in g.goals]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_variants_are_valid_distinct_and_keep_the_task(prompt, catalog):
    base = parse(prompt, catalog)
    graphs = variants(base, 12, seed=3, catalog=catalog)
    assert len(graphs) == 12
    assert len({g.content_hash() for g in graphs}) == 12
    named = {o.category for o in base.objects() if o.role in ("target", "receptacle", "background")}
    reserved = named | set(base.meta.get("reserved_categories", []))
    for i, g in enumerate(graphs):
        assert g.validate(catalog) == []
        assert _task(g) == _task(base)
        assert sorted(o.category for o in g.objects("target")) == sorted(o.category for o in base.objects("target"))
        assert g.meta["variant"] == i and g.meta["seed"] == 3
        for d in g.objects("distractor"):
            assert d.category not in reserved, f"{d.id} makes '{prompt}' ambiguous"
            assert g.parent(d.id) == ("on", "table")
        for o in g.objects():
            a = o.attributes
            assert {"color", "size", "scale", "instance_seed"} <= set(a)
            lo, hi = catalog.size_classes[a["size"]]
            assert lo <= a["scale"] <= hi


def test_same_seed_same_graphs_and_other_seed_differs(catalog):
    base = parse("put the banana in the bowl", catalog)
    a = [g.content_hash() for g in variants(base, 10, seed=5, catalog=catalog)]
    b = [g.content_hash() for g in variants(base, 10, seed=5, catalog=catalog)]
    c = [g.content_hash() for g in variants(base, 10, seed=6, catalog=catalog)]
    assert a == b
    assert not set(a) & set(c)


def test_hashes_are_stable_across_processes():
    code = ("from scenegen.design import design;"
            "print(','.join(g.content_hash() for g in design('stack the blocks with 3 distractors', 5, seed=2)))")
    outs = set()
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        outs.add(res.stdout.strip())
    assert len(outs) == 1
    here = ",".join(g.content_hash() for g in design("stack the blocks with 3 distractors", 5, seed=2))
    assert outs == {here}


def test_prompt_fixed_attributes_are_kept_and_siblings_differ(catalog):
    base = parse("stack the red block on a block", catalog)
    for g in variants(base, 30, seed=0, catalog=catalog):
        assert g.object("block_1").attributes["color"] == "red"
        assert g.object("block_2").attributes["color"] != "red"  # "the red block" stays unique


def test_free_attributes_vary_within_the_category(catalog):
    graphs = variants(parse("put the banana in the bowl", catalog), 30, seed=1, catalog=catalog)
    banana_colors = {g.object("banana_1").attributes["color"] for g in graphs}
    assert banana_colors <= set(catalog.get("banana").colors) and len(banana_colors) > 1
    assert len({g.object("table").attributes["color"] for g in graphs}) > 1
    assert len({g.object("banana_1").attributes["size"] for g in graphs}) == 3
    assert all(g.object("bowl_1").attributes["size"] != "small" for g in graphs)  # receptacles hold things
    counts = {len(g.objects("distractor")) for g in graphs}
    assert counts <= {1, 2, 3} and len(counts) > 1
    cats = {d.category for g in graphs for d in g.objects("distractor")}
    assert len(cats) > 5


def test_clutter_from_prompt_and_override(catalog):
    base = parse("put the apple in the bowl with 5 distractors", catalog)
    assert all(len(g.objects("distractor")) == 5 for g in variants(base, 6, 0, catalog))
    assert all(len(g.objects("distractor")) == 0 for g in variants(base, 6, 0, catalog, clutter=0))
    assert all(len(g.objects("distractor")) == 9 for g in variants(base, 6, 0, catalog, clutter=9))


def test_group_words_reserve_their_whole_group(catalog):
    base = parse("sort the fruit into the basket with 8 distractors", catalog)
    fruit = {c.name for c in catalog if c.group == "fruit"}
    for g in variants(base, 10, 0, catalog):
        assert not {d.category for d in g.objects("distractor")} & fruit


def test_graph_without_fixed_meta_keeps_its_attributes(banana_bowl, catalog):
    graphs = variants(banana_bowl, 5, 0, catalog)
    assert all(g.object("bowl_1").attributes["color"] == "blue" for g in graphs)
    assert all(g.object("banana_1").attributes["color"] == "yellow" for g in graphs)
    seeds = {g.object("banana_1").attributes["instance_seed"] for g in graphs}
    assert len(seeds) > 1 and seeds <= set(range(variation.INSTANCE_POOL))


def test_bad_arguments(catalog, banana_bowl):
    for n in (0, -1, 10_001, 2.5, True):
        with pytest.raises(ConfigError):
            variants(banana_bowl, n, 0, catalog)
    with pytest.raises(ConfigError):
        variants(banana_bowl, 2, 0, catalog, clutter=-1)
    with pytest.raises(ConfigError):
        variants(banana_bowl, 2, "x", catalog)
    banana_bowl.goals = []
    with pytest.raises(GraphError):
        variants(banana_bowl, 2, 0, catalog)


def test_design_entry_point_and_registry(catalog):
    graphs = design("put the banana in the bowl", 3, seed=0)
    assert [g.meta["designer"] for g in graphs] == ["rules"] * 3
    with pytest.raises(ConfigError, match="unknown designer 'nope'"):
        design("put the banana in the bowl", 1, designer="nope")
    with pytest.raises(PromptError):
        design("put the spork in the bowl", 1)

    class Fixed:
        name = "fixed"

        def design(self, prompt, n, seed=0):
            return variants(parse(prompt), n, seed + 100)

    register_designer("fixed", Fixed)
    try:
        got = [g.content_hash() for g in design("put the banana in the bowl", 2, seed=1, designer="fixed")]
        want = [g.content_hash() for g in variants(parse("put the banana in the bowl"), 2, 101)]
        assert got == want
    finally:
        var.DESIGNERS.pop("fixed")
    assert "llm" in var.designer_names() and "rules" in var.designer_names()


def test_twenty_variants_serialise_to_valid_json(catalog):
    from scenegen.graph import SceneGraph

    graphs = design("put the banana in the bowl", 20)
    text = json.dumps([g.to_dict() for g in graphs])
    back = [SceneGraph.from_dict(d) for d in json.loads(text)]
    assert [g.content_hash() for g in back] == [g.content_hash() for g in graphs]
