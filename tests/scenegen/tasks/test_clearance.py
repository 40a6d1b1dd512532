"""Room for the open gripper (``scenegen.tasks.clearance``), the expert's shared reach test, and QA rejecting both.

Hand-placed scenes: a marker lying on the table, a block to put it next to, and a mug placed
where one open finger would come down on it. The expert's grasp planner must move the pinch
clear of the mug when the marker leaves room for it, and QA's reachability check must reject
the scene when it does not, or when the expert's grasp is out of its reach band.
"""

from __future__ import annotations

import numpy as np
import pytest

from qa.checks import reachability
from qa.config import QAConfig
from scenegen.assets.build import generate_asset
from scenegen.graph import SceneGraph
from scenegen.sim.robots import get_robot
from scenegen.tasks.bins import holder, openings
from scenegen.tasks.clearance import blocker, cleared, clearest, gripper_boxes, neighbours
from scenegen.tasks.expert import run_expert
from scenegen.tasks.grasps import TABLE_CLEARANCE, section_grasp
from scenegen.tasks.plan import plan_grasp
from scenegen.tasks.precheck import out_of_reach
from tests.helpers.qa_scenes import place, settled
from tests.helpers.scene_assets import FAST

# node -> (x, y, yaw): the marker lies along x, so the fingers close along y, toward the mug
APART = {"marker_1": (0.55, 0.0, 0.0), "block_1": (0.45, -0.2, 0.0), "mug_1": (0.40, 0.25, 0.0)}
MIDDLE = {**APART, "mug_1": (0.55, 0.075, 0.0)}            # beside the marker's middle: no pinch is clear
END = {**APART, "mug_1": (0.64, 0.065, 0.0)}                # beside one end: the other end is clear
NEAR_BASE = {**APART, "marker_1": (0.15, 0.0, 0.0)}         # inside the expert's least reach (0.8 x 0.3 m)


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    g = SceneGraph("put the marker next to the block")
    g.add_object("table", "table", "support", attributes={"color": "wood"})
    g.add_object("marker_1", "marker", "target")
    g.add_object("block_1", "block", "receptacle")
    g.add_object("mug_1", "mug", "distractor")
    for n in ("marker_1", "block_1", "mug_1"):
        g.add_relation(n, "on", "table")
    g.add_goal("marker_1", "near", "block_1")
    cache = tmp_path_factory.mktemp("clearance-assets")
    seeds = {"table": 11, "marker_1": 31, "block_1": 32, "mug_1": 33}
    assets = {o.id: generate_asset(o.category, seeds[o.id], dict(o.attributes), cache_dir=cache, collision=FAST)
              for o in g.check().objects()}
    return g, assets


def _grasp(world):
    return plan_grasp(world, "marker_1", world.robot.max_opening, 0.0)


def test_out_of_reach_is_the_experts_band():
    panda = get_robot("panda")
    assert out_of_reach(panda, (0.0, 0.0), (0.10, 0.0)) == pytest.approx(0.10)
    assert out_of_reach(panda, (0.0, 0.0), (0.5, 0.2)) is None
    assert out_of_reach(panda, (0.0, 0.0), (0.0, 0.95)) == pytest.approx(0.95)   # beyond 1.1 x 0.8 m
    assert out_of_reach(panda, (0.1, 0.0), (0.4, 0.0)) is None                   # measured from the base


def test_gripper_boxes_straddle_the_point():
    fingers, hand = gripper_boxes(np.array([0.5, 0.0, 0.01]), 0.0, 0.08)   # yaw 0 closes along -y / +y
    ys = sorted(f.centroid.y for f in fingers)
    assert ys[0] < -0.04 and ys[1] > 0.04 and abs(fingers[0].centroid.x - 0.5) < 1e-9
    assert hand.bounds[1] < -0.1 and hand.bounds[3] > 0.1


def test_a_thin_object_is_grasped_clear_of_the_table(kit):
    graph, assets = kit
    with settled(place(graph, assets, APART), assets) as world:
        g = _grasp(world)
        assert g.point[2] >= world.scene.table_height + TABLE_CLEARANCE - 1e-9
        assert blocker(world, "marker_1", g.point, g.yaw, world.robot.max_opening) is None
        assert reachability.check(world.scene, world, QAConfig()).passed


def test_the_pinch_moves_clear_of_a_mug_beside_one_end(kit):
    graph, assets = kit
    with settled(place(graph, assets, END), assets) as world:
        opening = world.robot.max_opening
        nearest, _, _ = section_grasp(world.assets["marker_1"], world.pose("marker_1"), 0.0, opening)
        g = _grasp(world)
        axis = np.array([np.sin(g.yaw), -np.cos(g.yaw)])
        assert blocker(world, "marker_1", nearest, g.yaw, opening) == "mug_1", "the nearest pinch lands on the mug"
        assert blocker(world, "marker_1", g.point, g.yaw, opening) is None
        assert float((g.point[:2] - nearest[:2]) @ np.array([-axis[1], axis[0]])) != pytest.approx(0.0, abs=0.01)
        assert g.point[0] < nearest[0], "moved along the marker, away from the mug"
        assert reachability.check(world.scene, world, QAConfig()).passed


def _clearest_by_definition(world, node, options, opening):
    """:func:`clearest` as its docstring defines it: each option as it is, then cleared(), hand clear, then grazing."""
    for hand in (True, False):
        for shift in (False, True):
            for point, yaw, width in options:
                moved = cleared(world, node, point, yaw, width, opening, hand=hand) if shift else point
                if blocker(world, node, moved, yaw, opening, hand=hand) is None:
                    return np.asarray(moved, dtype=float), yaw, width
    return None


@pytest.mark.parametrize("layout", [END, MIDDLE])
def test_tests_sharing_one_state_answer_as_the_world_does(kit, layout):
    """The planner builds the neighbours and container openings once per state (clearest, cleared): same answers."""
    graph, assets = kit
    rng = np.random.default_rng(3)
    with settled(place(graph, assets, layout), assets) as world:
        opening, node = world.robot.max_opening, "marker_1"
        around, within = neighbours(world, node), openings(world, node)
        assert [r for _, r in within] and all(shapes for shapes, _ in within), "the mug's opening is listed"
        mug = np.asarray(world.pose("mug_1").position, dtype=float)
        centre = np.asarray(world.pose(node).position, dtype=float)
        inside = shifted = 0
        for _ in range(40):
            at = (mug if rng.random() < 0.5 else centre) + rng.normal(size=3) * (0.03, 0.03, 0.02)
            yaw, width = float(rng.uniform(-np.pi, np.pi)), float(rng.uniform(0.0, 0.03))
            held = holder(world, node, at)
            shared = holder(world, node, at, within)
            assert (held is None) == (shared is None)
            inside += held is not None
            if held is not None:
                assert held[0].equals_exact(shared[0], 0.0) and held[1] == shared[1]
            for hand in (True, False):
                assert blocker(world, node, at, yaw, opening, hand=hand) == \
                    blocker(world, node, at, yaw, opening, around, hand, within)
            # pinches along the marker, closing about across it: some clear, some clear only shifted, some never
            options = [(centre + rng.normal(size=3) * (0.03, 0.01, 0.0), float(rng.normal(0.0, 0.2)), width)
                       for _ in range(3)]
            got, want = clearest(world, node, options, opening), _clearest_by_definition(world, node, options, opening)
            assert (got is None) == (want is None)
            if got is not None:
                assert got[0].tobytes() == want[0].tobytes() and got[1:] == want[1:]
                shifted += not any(got[0].tobytes() == np.asarray(p, dtype=float).tobytes() for p, _, _ in options)
        assert inside, "some points lie in the mug's cavity"
        assert shifted, "some answers are shifted options"


def test_qa_rejects_a_target_whose_grasp_stays_blocked(kit):
    graph, assets = kit
    with settled(place(graph, assets, MIDDLE), assets) as world:
        res = reachability.check(world.scene, world, QAConfig())
        assert not res.passed
        assert "grasp blocked: the open gripper on marker_1 would come down on mug_1" in res.reason
        assert res.metrics["expert_grasp"][0]["ok"] is False


def test_qa_rejects_a_target_inside_the_experts_least_reach(kit):
    graph, assets = kit
    with settled(place(graph, assets, NEAR_BASE), assets) as world:
        res = reachability.check(world.scene, world, QAConfig())
        assert not res.passed and "out of reach: the expert's grasp of marker_1 is 0.1" in res.reason, res.reason
        # the expert gives up on it with the same test
        out = run_expert(world.scene, world, max_steps=60)
        assert not out.success and out.failure.startswith("marker_1 is out of reach (0.1"), out.failure


@pytest.mark.slow
@pytest.mark.parametrize("layout", [APART, END], ids=["apart", "mug-beside-an-end"])
def test_the_expert_picks_a_thin_object_and_puts_it_down(kit, layout):
    graph, assets = kit
    with settled(place(graph, assets, layout), assets) as world:
        res = run_expert(world.scene, world, max_steps=400)
        assert res.success, f"{res.failure} after {res.steps} steps"
