import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenegen.errors import GraphError
from scenegen.graph import JSON_SCHEMA, SceneGraph, content_hash

DOCS = Path(__file__).resolve().parents[2] / "docs"


def codes(g: SceneGraph) -> set[str]:
    return {p.code for p in g.validate()}


def test_valid_graph_has_no_problems(banana_bowl):
    assert banana_bowl.validate() == []
    assert banana_bowl.check() is banana_bowl


def test_unknown_category(banana_bowl):
    banana_bowl.add_object("bananna_1", "bananna", "distractor")
    banana_bowl.add_relation("bananna_1", "on", "table")
    probs = banana_bowl.validate()
    assert [p.code for p in probs] == ["unknown_category"]
    assert probs[0].nodes == ("bananna_1",)
    assert "banana" in probs[0].message  # closest suggestion


def test_no_support_path(banana_bowl):
    banana_bowl.add_object("apple_1", "apple", "distractor")
    probs = [p for p in banana_bowl.validate() if p.code == "no_support_path"]
    assert probs and probs[0].nodes == ("apple_1",)


def test_cycle_in_on_relations(banana_bowl):
    banana_bowl.add_object("block_1", "block", "distractor")
    banana_bowl.add_object("block_2", "block", "distractor")
    banana_bowl.add_relation("block_1", "on", "block_2")
    banana_bowl.add_relation("block_2", "on", "block_1")
    c = codes(banana_bowl)
    assert "cycle" in c and "no_support_path" in c


def test_in_non_container(banana_bowl):
    banana_bowl.goals = []
    banana_bowl.add_goal("bowl_1", "in", "banana_1")
    probs = [p for p in banana_bowl.validate() if p.code == "not_container"]
    assert probs and set(probs[0].nodes) == {"bowl_1", "banana_1"}
    assert "not a container" in probs[0].message


def test_on_non_support(banana_bowl):
    banana_bowl.goals = []
    banana_bowl.add_goal("bowl_1", "on", "banana_1")
    assert "not_support" in codes(banana_bowl)


@pytest.mark.parametrize("a,b", [("left_of", "left_of"), ("in_front_of", "in_front_of"), ("left_of", "right_of")])
def test_directional_contradictions(banana_bowl, a, b):
    banana_bowl.add_relation("banana_1", a, "bowl_1")
    if a == b:
        banana_bowl.add_relation("bowl_1", b, "banana_1")
    else:
        banana_bowl.add_relation("banana_1", b, "bowl_1")
    probs = [p for p in banana_bowl.validate() if p.code == "contradiction"]
    assert len(probs) == 1 and set(probs[0].nodes) == {"banana_1", "bowl_1"}


def test_consistent_inverse_is_not_a_contradiction(banana_bowl):
    banana_bowl.add_relation("banana_1", "left_of", "bowl_1")
    banana_bowl.add_relation("bowl_1", "right_of", "banana_1")
    assert banana_bowl.validate() == []


def test_near_and_far(banana_bowl):
    banana_bowl.add_relation("banana_1", "near", "bowl_1")
    banana_bowl.add_relation("bowl_1", "far_from", "banana_1")
    assert "contradiction" in codes(banana_bowl)


def test_mutual_in(banana_bowl):
    banana_bowl.add_object("cup_1", "cup", "distractor")
    banana_bowl.add_object("mug_1", "mug", "distractor")
    banana_bowl.add_relation("cup_1", "in", "mug_1")
    banana_bowl.add_relation("mug_1", "in", "cup_1")
    c = codes(banana_bowl)
    assert {"contradiction", "cycle"} <= c


def test_self_relation(banana_bowl):
    banana_bowl.add_relation("banana_1", "near", "banana_1")
    assert "self_relation" in codes(banana_bowl)


def test_goal_names_absent_node(banana_bowl):
    banana_bowl.add_goal("apple_9", "in", "bowl_1")
    probs = [p for p in banana_bowl.validate() if p.code == "goal_absent"]
    assert probs and probs[0].nodes == ("apple_9",)


def test_goal_already_true(banana_bowl):
    banana_bowl.remove_relation("banana_1", "on", "table")
    banana_bowl.add_relation("banana_1", "in", "bowl_1")
    assert "goal_already_true" in codes(banana_bowl)


def test_state_goal_already_true(banana_bowl):
    banana_bowl.add_object("mug_1", "mug", "target")
    banana_bowl.add_relation("mug_1", "on", "table")
    banana_bowl.add_goal("mug_1", "upright")
    assert "goal_already_true" in codes(banana_bowl)
    banana_bowl.g.nodes["mug_1"]["state"] = "inverted"
    assert banana_bowl.validate() == []


def test_no_goal_and_support_count(banana_bowl):
    banana_bowl.goals = []
    banana_bowl.add_object("table_2", "table", "support")
    c = codes(banana_bowl)
    assert {"no_goal", "support_count"} <= c


def test_all_problems_reported_at_once(banana_bowl):
    banana_bowl.add_object("x_1", "spaceship", "distractor")
    banana_bowl.add_relation("banana_1", "near", "banana_1")
    banana_bowl.add_goal("ghost_1", "on", "table")
    with pytest.raises(GraphError) as ei:
        banana_bowl.check()
    got = {p.code for p in ei.value.problems}
    assert {"unknown_category", "self_relation", "goal_absent", "no_support_path"} <= got


def test_json_round_trip(banana_bowl):
    banana_bowl.meta["designer"] = "test"
    g2 = SceneGraph.from_json(banana_bowl.to_json())
    assert g2 == banana_bowl
    assert g2.content_hash() == banana_bowl.content_hash()
    assert g2.meta == {"designer": "test"}


def test_hash_independent_of_insertion_order(banana_bowl):
    objs = banana_bowl.objects()
    rels = banana_bowl.relations()
    for seed in range(5):
        random.Random(seed).shuffle(objs)
        random.Random(seed + 1).shuffle(rels)
        g = SceneGraph(banana_bowl.instruction, banana_bowl.goals)
        for o in objs:
            g.add_object(o.id, o.category, o.role, o.state, dict(reversed(list(o.attributes.items()))))
        for r in rels:
            g.add_relation(r.subject, r.relation, r.object)
        assert g.content_hash() == banana_bowl.content_hash()


def test_hash_is_stable_across_runs(banana_bowl):
    # A fixed literal: the canonical hash must never change silently between versions or machines.
    assert content_hash({"b": [1, 2.5], "a": "x"}) == content_hash({"a": "x", "b": [1, 2.5]})
    assert banana_bowl.content_hash() == "6ed0b5a0ffcde9ba4b47f0aa86eba32650aa1cabc26a66d8affd637be93f1a5d"


def test_hash_ignores_meta_but_not_content(banana_bowl):
    h = banana_bowl.content_hash()
    banana_bowl.meta["anything"] = 1
    assert banana_bowl.content_hash() == h
    banana_bowl.set_attribute("banana_1", "color", "green")
    assert banana_bowl.content_hash() != h


def test_schema_version_mismatch(banana_bowl):
    d = banana_bowl.to_dict()
    d["schema_version"] = 99
    with pytest.raises(GraphError, match="schema_version"):
        SceneGraph.from_dict(d)


def test_published_schema_matches_code():
    published = json.loads((DOCS / "scene_graph.schema.json").read_text())
    assert published == JSON_SCHEMA


def test_support_order_parents_first(banana_bowl):
    banana_bowl.add_object("apple_1", "apple", "distractor")
    banana_bowl.add_relation("apple_1", "in", "bowl_1")
    order = banana_bowl.support_order()
    assert order.index("table") < order.index("bowl_1") < order.index("apple_1")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_fuzz_loader_only_typed_errors(value):
    try:
        SceneGraph.from_dict(value)
    except GraphError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_fuzz_json_text(text):
    try:
        SceneGraph.from_json(text)
    except GraphError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_mutated_valid_graph(data):
    d = json.loads(SceneGraph.from_json(
        '{"schema_version":1,"instruction":"x","objects":[{"id":"table","category":"table","role":"support"},'
        '{"id":"a_1","category":"apple","role":"target"}],"relations":[{"subject":"a_1","relation":"on",'
        '"object":"table"}],"goals":[{"subject":"a_1","predicate":"upright","object":null}]}').to_json())
    key = data.draw(st.sampled_from(["objects", "relations", "goals", "instruction"]))
    d[key] = data.draw(json_values)
    try:
        g = SceneGraph.from_dict(d)
        g.validate()
    except GraphError:
        pass
