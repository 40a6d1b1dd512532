"""Compartments (slots): the sorter's named compartments, goals that name one, and ``in`` restricted to it."""

import numpy as np
import pytest
import trimesh

from scenegen.assets.procedural import build_mesh
from scenegen.assets.procedural.containers import SLOT_MIN
from scenegen.catalog import load_catalog
from scenegen.errors import GraphError
from scenegen.graph import Goal, SceneGraph
from scenegen.graph_schema import COMPARTMENTS, SLOT_NAMES
from scenegen.relations import Body, Contact, judge_relation
from scenegen.scene import Pose
from scenegen.tasks.config import episode_budget

CAT = load_catalog()
IDENT = (0.0, 0.0, 0.0, 1.0)
# a 0.3 x 0.2 x 0.05 sorter of 2 x 2 compartments split by 4 mm walls at x = 0 and y = 0
SLOTS = {"A": [-0.146, -0.096, -0.002, -0.002], "B": [-0.146, 0.002, -0.002, 0.096],
         "C": [0.002, -0.096, 0.146, -0.002], "D": [0.002, 0.002, 0.146, 0.096]}


def _rect(b):
    x0, y0, x1, y1 = b
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


SORTER = Body(Pose((0.5, 0.0, 0.0), IDENT), (0.3, 0.2, 0.05), slots={k: _rect(v) for k, v in SLOTS.items()})


def _nut(x, y, z=0.004):
    return Body(Pose((x, y, z), IDENT), (0.03, 0.03, 0.012))


REST = Contact(parent=True, table=False)


def test_in_a_named_slot_holds_only_in_that_compartment():
    in_a = _nut(0.5 - 0.07, -0.05)
    assert judge_relation("in", in_a, SORTER.slot("A"), contact=REST)[0]
    ok, why = judge_relation("in", in_a, SORTER.slot("C"), contact=REST)
    assert not ok and "cavity" in why
    assert judge_relation("in", in_a, SORTER, contact=REST)[0], "no slot named: any compartment will do"


def test_in_a_slot_is_false_over_a_wall_above_the_rim_or_touching_the_table():
    on_wall = _nut(0.5, -0.05)                    # centre of mass over the inner wall at x = 0
    assert not judge_relation("in", on_wall, SORTER, contact=REST)[0]
    assert not judge_relation("in", on_wall, SORTER.slot("A"), contact=REST)[0]
    high = _nut(0.43, -0.05, z=0.05)              # centre of mass above the rim
    assert not judge_relation("in", high, SORTER.slot("A"), contact=REST)[0]
    beside = _nut(0.43, -0.05)
    ok, why = judge_relation("in", beside, SORTER.slot("A"), contact=Contact(parent=True, table=True))
    assert not ok and "table" in why
    ok, why = judge_relation("in", beside, SORTER.slot("A"), contact=Contact(parent=False, table=False))
    assert not ok and "touch" in why


def test_an_unknown_slot_is_a_graph_error_naming_the_ones_there_are():
    with pytest.raises(GraphError, match="has no compartment 'F'.*A, B, C, D"):
        SORTER.slot("F")
    with pytest.raises(GraphError, match="none"):
        _nut(0, 0).slot("A")


def test_goal_slot_round_trips_and_leaves_slotless_goals_unchanged():
    assert Goal("a", "in", "b").to_dict() == {"subject": "a", "predicate": "in", "object": "b"}
    sg = SceneGraph("sort")
    sg.add_object("table", "table", "support")
    sg.add_object("sorter_1", "sorter", "receptacle")
    sg.add_object("hex_nut_1", "hex_nut", "target")
    sg.add_relation("sorter_1", "on", "table")
    sg.add_relation("hex_nut_1", "on", "table")
    sg.add_goal("hex_nut_1", "in", "sorter_1", "B")
    back = SceneGraph.from_json(sg.to_json())
    assert back.goals == [Goal("hex_nut_1", "in", "sorter_1", "B")] and back.validate() == []
    assert back.content_hash() == sg.content_hash()
    data = sg.to_dict()
    data["goals"][0]["slot"] = "Z"
    with pytest.raises(GraphError, match="schema"):
        SceneGraph.from_dict(data)


@pytest.mark.parametrize(("predicate", "obj", "slot", "why"), [
    ("on", "sorter_1", "A", "only an 'in' goal"),
    ("in", "bin_1", "A", "only an 'in' goal"),
    ("in", "sorter_1", SLOT_NAMES[COMPARTMENTS["sorter"]], "is not one of"),
])
def test_a_slot_needs_an_in_goal_into_a_receptacle_with_that_compartment(predicate, obj, slot, why):
    sg = SceneGraph("sort")
    for n, c, r in (("table", "table", "support"), ("sorter_1", "sorter", "receptacle"), ("bin_1", "bin", "receptacle"),
                    ("washer_1", "washer", "target")):
        sg.add_object(n, c, r)
        if n != "table":
            sg.add_relation(n, "on", "table")
    sg.add_goal("washer_1", predicate, obj, slot)
    probs = [p for p in sg.validate() if p.code == "bad_slot"]
    assert len(probs) == 1 and why in probs[0].message


@pytest.mark.parametrize("seed", range(8))
def test_sorter_has_named_compartments_with_walls_between_them(seed):
    pm = build_mesh(CAT.get("sorter"), np.random.default_rng(seed), {}, 5000)
    slots = pm.params["slots"]
    assert len(slots) >= COMPARTMENTS["sorter"] and list(slots) == list(SLOT_NAMES[:len(slots)])
    lo, hi = pm.mesh.bounds
    floor = pm.params["floor"]
    boxes = list(slots.values())
    for x0, y0, x1, y1 in boxes:
        assert x1 - x0 >= SLOT_MIN[0] - 1e-6 and y1 - y0 >= SLOT_MIN[1] - 1e-6
        assert lo[0] < x0 < x1 < hi[0] and lo[1] < y0 < y1 < hi[1]
        # straight down at the compartment's centre the first surface is its floor
        hit, *_ = pm.mesh.ray.intersects_location([[(x0 + x1) / 2, (y0 + y1) / 2, hi[2] + 0.05]], [[0, 0, -1]])
        assert abs(float(hit[:, 2].max()) - floor) < 1e-3
    walls = 0
    for i, a in enumerate(boxes):               # compartments are disjoint, with a wall up to the rim between
        for b in boxes[i + 1:]:
            assert max(b[0] - a[2], a[0] - b[2], b[1] - a[3], a[1] - b[3]) > 0.003
            if abs(a[1] - b[1]) < 1e-6 and 0 < b[0] - a[2] < 0.01:      # side by side along x
                between = [(a[2] + b[0]) / 2, (a[1] + a[3]) / 2, hi[2] + 0.05]
            elif abs(a[0] - b[0]) < 1e-6 and 0 < b[1] - a[3] < 0.01:    # side by side along y
                between = [(a[0] + a[2]) / 2, (a[3] + b[1]) / 2, hi[2] + 0.05]
            else:
                continue
            hit, *_ = pm.mesh.ray.intersects_location([between], [[0, 0, -1]])
            assert float(hit[:, 2].max()) > hi[2] - 1e-3
            walls += 1
    assert walls >= 4, "a 2 x 2 grid has 4 neighbouring pairs"
    assert isinstance(pm.mesh, trimesh.Trimesh) and pm.mesh.is_watertight


def test_step_budget_grows_with_the_goals():
    assert [episode_budget(400, g) for g in (1, 3, 4, 5, 10, 12, 13)] == [400, 400, 400, 800, 1200, 1200, 1600]
