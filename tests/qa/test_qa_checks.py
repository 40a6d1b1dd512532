"""Each QA check rejects a scene built to fail it, with the right reason, and passes a good scene."""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from qa.checks import CHECKS, feasibility
from qa.config import DEFAULT_CHECKS, PhysicsConfig, QAConfig
from qa.loop import run_checks
from scenegen.scene import Pose
from tests.helpers.qa_scenes import GOOD, QUARTER, make_assets, moved, place, settled, stack_graph

CFG = QAConfig()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("qa_assets")


@pytest.fixture(scope="module")
def kit(cache):
    graph = stack_graph()
    return graph, make_assets(graph, cache)


@pytest.fixture(scope="module")
def good(kit):
    graph, assets = kit
    scene = place(graph, assets, GOOD)
    world = settled(scene, assets)
    yield scene, world
    world.close()


def _check(name, scene, world, cfg=CFG):
    res = CHECKS[name](scene, world, cfg)
    assert res.name == name
    return res


def test_good_scene_passes_every_check_and_world_is_unchanged(good):
    scene, world = good
    before, joints = world.poses(), world.joint_positions()
    report = run_checks(scene, world, CFG, names=tuple(n for n in DEFAULT_CHECKS if n != "feasibility"))
    assert [r.name for r in report.results] == ["geometry", "physics", "semantic", "visibility", "reachability"]
    assert report.passed, report.reason
    assert report.score > 0.95 and report.reason == ""
    assert world.poses() == before and world.joint_positions() == joints
    sem = report.result("semantic")
    assert {r["relation"] for r in sem.metrics["relations"]} == {
        "block_1 on table", "block_2 on table", "cereal_box_1 on table", "block_1 left_of block_2"}
    assert all(r["holds"] for r in sem.metrics["relations"])
    vis = report.result("visibility").metrics["objects"]
    assert set(vis) == {"block_1", "block_2"} and all(v["occlusion"] < 0.05 for v in vis.values())
    reach = report.result("reachability").metrics
    assert [p["kind"] for p in reach["poses"]] == ["pre-grasp", "place"]
    assert all(p["error"] < 0.015 for p in reach["poses"])


def test_geometry_rejects_implausible_mass_and_missing_files(good, tmp_path):
    scene, world = good
    real = dict(world.assets)
    try:
        world.assets["block_1"] = dataclasses.replace(real["block_1"], mass=40.0)
        world.assets["block_2"] = dataclasses.replace(real["block_2"], path=tmp_path)
        res = _check("geometry", scene, world)
    finally:
        world.assets.clear()
        world.assets.update(real)
    assert not res.passed
    assert "implausible mass: block_1" in res.reason and "missing files: block_2" in res.reason
    assert res.metrics["objects"]["block_1"]["ok"] is False and res.metrics["objects"]["table"]["ok"] is True
    assert 0 < res.score < 1


def test_geometry_rejects_oversized_asset(good):
    scene, world = good
    real = world.assets["block_1"]
    try:
        world.assets["block_1"] = dataclasses.replace(real, extents=(0.5, 0.5, 0.5))
        res = _check("geometry", scene, world)
    finally:
        world.assets["block_1"] = real
    assert not res.passed and res.reason.startswith("implausible size: block_1")


def test_physics_rejects_floating_object(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, block_1=(0.50, 0.10, 0.0, 0.08)))
    with settled(scene, assets, gravity=0.0) as world:  # nothing pulls it down: it hangs in the air
        res = _check("physics", scene, world)
    assert not res.passed
    assert res.reason.startswith("floating: block_1"), res.reason
    per = res.metrics["objects"]
    assert per["block_1"]["floating"] and not per["block_2"]["floating"]
    assert not per["block_1"]["moved"] and not per["block_1"]["fallen"]


def test_physics_rejects_interpenetrating_pair(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, block_1=(0.50, -0.10, 0.0)))  # 2 cm from block_2's centre
    with settled(scene, assets) as world:
        res = _check("physics", scene, world)
        settled_poses = world.poses()
    assert not res.passed
    assert "penetration at spawn: block_1 and block_2 overlap" in res.reason, res.reason
    assert res.metrics["spawn_penetration"] > 0.005
    assert sorted(res.metrics["spawn_pair"]) == ["block_1", "block_2"]
    assert settled_poses["block_1"].position != scene.poses["block_1"].position


def test_physics_rejects_object_off_the_table_and_large_displacement(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, cereal_box_1=(0.55, 0.80, 0.0)))  # beyond the table's edge
    with settled(scene, assets, seconds=1.5) as world:
        res = _check("physics", scene, world, dataclasses.replace(CFG, physics=PhysicsConfig(max_displacement=0.2)))
    assert not res.passed
    assert res.reason.startswith("fell off the table: cereal_box_1"), res.reason
    assert res.metrics["objects"]["cereal_box_1"]["min_z"] < -0.03
    assert res.metrics["objects"]["cereal_box_1"]["moved"]


def test_semantic_reports_violated_relation(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, block_1=(0.50, -0.30, 0.0)))  # now right of block_2
    with settled(scene, assets) as world:
        res = _check("semantic", scene, world)
    assert not res.passed
    assert res.reason.startswith("relation does not hold: block_1 left_of block_2"), res.reason
    rows = {r["relation"]: r for r in res.metrics["relations"]}
    assert not rows["block_1 left_of block_2"]["holds"]
    assert rows["block_1 left_of block_2"]["measured"]["axial_offset"] < 0
    assert rows["block_2 on table"]["holds"]
    assert res.score == pytest.approx((len(rows) - 1 + len(res.metrics["states"])) / res.metrics["total"])


def test_semantic_reports_state_violation(kit):
    graph, assets = kit
    scene = place(graph, assets, GOOD)
    with settled(scene, assets) as world:
        from scenegen.rotations import axis_angle_quat

        p = world.pose("block_1")
        world.set_pose("block_1", Pose(p.position, axis_angle_quat((1.0, 0.0, 0.0), QUARTER)))
        res = _check("semantic", scene, world)
    assert not res.passed and "state does not hold: block_1 is not upright" in res.reason


def test_semantic_rejects_a_goal_that_holds_at_the_start(kit, cache):
    graph, assets = kit
    # block_1 already stacked on block_2: the task "stack the red block on the blue block" is solved
    top = assets["block_2"].extents[2]
    stacked = moved(GOOD, block_1=(0.50, -0.12, 0.3, top + 0.001))
    g = graph.copy()
    g.remove_relation("block_1", "on", "table")
    g.remove_relation("block_1", "left_of", "block_2")
    g.add_relation("block_1", "on", "block_2")  # the layout this scene records (relations hold)
    g.goals = list(graph.goals)
    scene = place(g, assets, stacked)
    with settled(scene, assets) as world:
        res = _check("semantic", scene, world)
    assert not res.passed and "goal already holds at the start: block_1 on block_2" in res.reason, res.reason
    assert res.metrics["goals_held_at_start"] == 1 and res.metrics["goals"][0]["holds_at_start"]
    assert all(r["holds"] for r in res.metrics["relations"])  # only the solved goal fails it
    good_scene = place(graph, assets, GOOD)
    with settled(good_scene, assets) as world:
        ok = _check("semantic", good_scene, world)
    assert ok.passed and ok.metrics["goals_held_at_start"] == 0


def test_visibility_rejects_target_hidden_behind_cereal_box(kit):
    graph, assets = kit
    # the front camera looks steeply down from +x back at the robot: a cereal box turned broadside just
    # in front of block_1 (larger x) hides it
    scene = place(graph, assets, moved(GOOD, cereal_box_1=(0.55, 0.10, QUARTER)))
    with settled(scene, assets) as world:
        before = world.poses()
        res = _check("visibility", scene, world)
        assert world.poses() == before
    assert not res.passed
    assert res.reason.startswith("occluded: target block_1"), res.reason
    b1 = res.metrics["objects"]["block_1"]
    assert b1["pixels_alone"] > 20 and b1["occlusion"] > 0.7  # the steep view still sees its top edge
    assert res.metrics["objects"]["block_2"]["occlusion"] < 0.05


def test_visibility_rejects_target_out_of_view(good):
    scene, world = good
    with_state = world.poses()
    try:
        world.set_pose("block_1", Pose((3.0, 3.0, 0.5)))
        res = _check("visibility", scene, world)
    finally:
        world.set_pose("block_1", with_state["block_1"])
    assert not res.passed and res.reason.startswith("out of view: target block_1"), res.reason


def test_reachability_rejects_out_of_reach_target(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, block_1=(1.00, 0.25, 0.0), block_2=(0.98, -0.12, 0.0)))
    with settled(scene, assets) as world:
        joints = world.joint_positions()
        res = _check("reachability", scene, world)
        assert world.joint_positions() == joints
    assert not res.passed
    assert res.reason.startswith("out of reach: pre-grasp above block_1"), res.reason
    assert res.metrics["poses"][0]["error"] > 0.05


def test_reachability_rejects_target_too_wide_for_gripper(cache):
    graph = stack_graph(with_book=True)
    graph.g.nodes["book_1"]["role"] = "target"
    graph.goals = [g for g in graph.goals] + []
    graph.add_goal("book_1", "near", "block_2")
    assets = make_assets(graph, cache)
    scene = place(graph, assets, {**GOOD, "book_1": (0.45, 0.32, 0.0)})
    with settled(scene, assets) as world:
        res = _check("reachability", scene, world)
    assert not res.passed
    assert "too wide to grasp: book_1" in res.reason, res.reason
    grasp = {g["object"]: g for g in res.metrics["grasp"]}
    assert grasp["book_1"]["width"] > 0.08 and grasp["block_1"]["fits"]


def test_feasibility_is_skipped_without_expert(good, monkeypatch):
    scene, world = good
    monkeypatch.setattr(feasibility, "_load_expert", lambda: (None, "ModuleNotFoundError: No module named 'x'"))
    report = run_checks(scene, world, CFG, names=("feasibility",))
    res = report.results[0]
    assert res.passed and res.skipped and res.reason == "skipped: expert not available"
    assert report.skipped == ["feasibility"] and report.failed == []


def test_feasibility_runs_expert_and_rejects_its_failure(good, monkeypatch):
    scene, world = good
    seen = {}

    def run_expert(sc, lookup, max_steps, seed, **env_options):
        seen.update(scene=sc, lookup=lookup, max_steps=max_steps, env_options=env_options)
        ok = sc.graph.goals[0].subject == "block_1" and seed == 0
        return types.SimpleNamespace(success=not ok, progress=0.0, steps=max_steps, failure="grasp_failed")

    monkeypatch.setitem(sys.modules, "scenegen.tasks.expert", types.SimpleNamespace(run_expert=run_expert))
    res = _check("feasibility", scene, world)
    assert not res.passed and res.reason.startswith("expert failed: grasp_failed"), res.reason
    assert seen["scene"] is not scene and seen["scene"].id == scene.id
    assert set(seen["lookup"]) == set(scene.assets.values()) and seen["max_steps"] == CFG.feasibility.max_steps
    assert seen["env_options"] == {"render_max_faces": 0}  # nothing is rendered: no render-light asset copies
    monkeypatch.setitem(sys.modules, "scenegen.tasks.expert", types.SimpleNamespace(
        run_expert=lambda *a, **k: types.SimpleNamespace(success=True, progress=1.0, steps=80, failure=None)))
    res = _check("feasibility", scene, world)
    assert res.passed and not res.skipped and res.metrics["steps"] == 80


def test_crashing_check_rejects_instead_of_passing(good, monkeypatch):
    scene, world = good

    def boom(*a):
        raise RuntimeError("bug")

    monkeypatch.setitem(CHECKS, "semantic", boom)
    report = run_checks(scene, world, CFG, names=("semantic",))
    assert not report.passed and report.reason.startswith("semantic: internal error: RuntimeError")


def test_fail_fast_stops_at_first_failure(kit):
    graph, assets = kit
    scene = place(graph, assets, moved(GOOD, block_1=(0.50, -0.30, 0.0)))
    with settled(scene, assets) as world:
        report = run_checks(scene, world, dataclasses.replace(CFG, fail_fast=True))
    assert [r.name for r in report.results] == ["geometry", "physics", "semantic"]
    assert report.failed == ["semantic"]
