"""Bottles lying on their side and parts in a tote (issue 19, seed tasks tiers 3-5).

A lying bottle is pinched across its long axis at its equator (its upright hint pinched it above the
equator, or across a vertical axis, and the fingers squeezed it out, flinging it off the table); a bottle whose
pinch is blocked by another bottle still to be put away is taken up after the others
(:class:`~scenegen.tasks.blocked.GoalQueue`); a part pressed into a tote's floor keeps the fingertips at the
floor's height; the hand keeps its yaw on the way down.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from scenegen.assets.sources import resolve_source
from scenegen.graph import SceneGraph
from scenegen.layout.compose import build_scene
from scenegen.relations import z_range
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks.bins import container_floor
from scenegen.tasks.blocked import GoalQueue
from scenegen.tasks.carry import steady
from scenegen.tasks.expert import run_expert
from scenegen.tasks.grasps import FINGERTIP_BELOW, lying_axis
from scenegen.tasks.plan import Grasp, plan_grasp
from tests.helpers.scene_assets import FAST, cache_dir

LYING = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))
"""A quarter turn about x: a bottle's z axis (its length) along -y."""


def _bottle_scene(cache, scale: float = 1.0):
    g = SceneGraph("put the bottle in the bin")
    g.add_object("table", "table", "support")
    g.add_object("bottle_1", "bottle", "target", attributes={"scale": scale})
    g.add_object("bin_1", "bin", "receptacle")
    g.add_relation("bottle_1", "on", "table")
    g.add_relation("bin_1", "on", "table")
    g.add_goal("bottle_1", "in", "bin_1")
    src = resolve_source("procedural", cache_dir=str(cache), collision=FAST)
    assets = {o.id: src(o.category, 0, dict(o.attributes)) for o in g.objects()}
    return build_scene(g, assets, seed=0), {a.id: a for a in assets.values()}


def _laid_down(scene, lookup, xy=(0.42, 0.12)):
    """The scene with its bottle lying on its side at ``xy`` (settled), and the settled world's poses."""
    radius = 0.5 * float(max(lookup[scene.assets["bottle_1"]].extents[:2]))
    poses = dict(scene.poses)
    poses["bottle_1"] = Pose((xy[0], xy[1], scene.table_height + radius + 0.002), LYING)
    scene = replace(scene, poses=poses, settled=None)
    with World.build(scene, lookup) as world:
        world.settle(1.5)
        settled = world.poses()
    return replace(scene, settled=settled)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.0, 1.0])
def test_a_lying_bottle_is_pinched_across_its_axis_at_its_equator(scale, tmp_path_factory):
    scene, lookup = _bottle_scene(cache_dir(tmp_path_factory), scale)
    scene = _laid_down(scene, lookup)
    with World.build(scene, lookup) as world:
        asset, pose = world.assets["bottle_1"], world.pose("bottle_1")
        assert lying_axis(asset, pose) == 2
        g = plan_grasp(world, "bottle_1", world.robot.max_opening, 0.0)
        along = quat_matrix(pose.orientation)[:2, 2]
        closing = np.array([math.sin(g.yaw), -math.cos(g.yaw)])
        assert abs(float(closing @ along)) < 0.1, "the fingers close across the bottle, not along it"
        axis_z = scene.table_height + 0.5 * float(max(asset.extents[:2]))
        # the pads (from the fingertips, 7 mm below the target, up) cover the equator, the fingertips clear the table
        assert g.mode == "top" and axis_z - 0.006 < g.point[2] < axis_z + 0.003, (g.point, axis_z)
        assert g.width < world.robot.max_opening - 0.004


@pytest.mark.slow
def test_the_expert_puts_a_lying_bottle_in_the_bin(tmp_path_factory):
    scene, lookup = _bottle_scene(cache_dir(tmp_path_factory))
    scene = _laid_down(scene, lookup)
    result = run_expert(scene, lookup, max_steps=400)
    assert result.success, (result.failure, result.progress, result.steps)


def test_a_deferred_goal_is_taken_up_after_the_last_one():
    queue = GoalQueue()
    ex = SimpleNamespace(goal_index=1, tries=2, phase="plan")
    ex._set = lambda phase: setattr(ex, "phase", phase)
    queue.defer(ex)  # goal 1 of 3 is put off
    assert (ex.goal_index, ex.tries, queue.pending) == (2, 0, [1])
    queue.revisit(ex, 3)
    assert ex.goal_index == 2, "the first pass goes on"
    assert queue.after(2, 3) == 1 and queue.current == 1, "after the last goal: the deferred one"
    ex.goal_index = 1
    queue.revisit(ex, 3)
    assert ex.goal_index == 1, "the deferred goal is being worked on"
    ex.goal_index = 2  # it is done: goal 2 is not taken up again
    queue.revisit(ex, 3)
    assert ex.goal_index == 3 and queue.after(1, 3) == 3, "nothing is left"
    plain = GoalQueue()
    assert plain.after(0, 3) == 1 and plain.after(2, 3) == 3


def test_the_hand_keeps_its_yaw_on_the_way_down():
    old = Grasp(np.array([0.5, 0.0, 0.02]), 0.3, 0.02, "top")
    new = Grasp(np.array([0.51, 0.0, 0.02]), 0.3 - math.pi, 0.02, "top")  # the same closing axis, half a turn round
    down = SimpleNamespace(phase="descend", grasp=old)
    kept = steady(down, new)
    assert kept.yaw == pytest.approx(0.3) and kept.point[0] == pytest.approx(0.51), "the point still follows"
    assert steady(SimpleNamespace(phase="approach", grasp=old), new).yaw == pytest.approx(0.3 - math.pi)
    small = Grasp(new.point, 0.35, 0.02, "top")
    assert steady(down, small).yaw == pytest.approx(0.35), "a small correction is taken"


@pytest.mark.slow
def test_a_part_pressed_into_the_tote_floor_is_pinched_at_the_floor(tote_pack):
    scene = tote_pack.scenes()[0]
    with World.build(scene, tote_pack.asset_lookup) as world:
        nut = next(n for n in world.objects() if n.startswith("hex_nut"))
        pose = world.pose(nut)
        floor = container_floor(world, nut, pose)
        bottom = z_range(pose, tuple(world.assets[nut].extents))[0]
        assert floor is not None and abs(floor - bottom) < 0.002, "the part rests on the tote's floor"
        world.set_pose(nut, Pose((pose.position[0], pose.position[1], pose.position[2] - 0.005), pose.orientation))
        sunk = plan_grasp(world, nut, world.robot.max_opening, 0.0)
        # the fingertips stay above the floor, not 5 mm lower with the part (pushing it through the floor)
        assert sunk.point[2] - FINGERTIP_BELOW > floor, (sunk.point, floor)


@pytest.mark.slow
def test_a_lying_bottle_beside_the_bin_is_pushed_clear_and_put_in(tmp_path_factory):
    from scenegen.tasks.blocked import PushSkill, blocked_lying, maybe_push

    scene, lookup = _bottle_scene(cache_dir(tmp_path_factory), 0.0)
    bin_ext = lookup[scene.assets["bin_1"]].extents
    radius = 0.5 * float(max(lookup[scene.assets["bottle_1"]].extents[:2]))
    wall = 0.62 - 0.5 * float(bin_ext[0])
    poses = dict(scene.poses)
    poses["bin_1"] = Pose((0.62, 0.0, scene.poses["bin_1"].position[2]), (0.0, 0.0, 0.0, 1.0))
    scene = replace(scene, poses=poses)
    # the bottle lies along the bin's near wall, 5.7 cm from it: the hand of a pinch across it lands on the wall,
    # and the closed fingers still fit between them
    scene = _laid_down(scene, lookup, xy=(wall - 0.057 - radius, 0.08))
    with World.build(scene, lookup) as world:
        g = plan_grasp(world, "bottle_1", world.robot.max_opening, 0.0)
        assert blocked_lying(world, "bottle_1", g.point, g.yaw) == "bin_1"
        ex = SimpleNamespace(env=SimpleNamespace(world=world, controller=SimpleNamespace(home_yaw=0.0)),
                             goal_index=0, goals=list(scene.graph.goals), queue=GoalQueue())
        assert isinstance(maybe_push(ex, "bottle_1", g), PushSkill)
        # QA's reachability check plans the same grasp and knows the expert pushes the bottle clear first
        from qa.checks import reachability
        from qa.config import QAConfig

        res = reachability.check(scene, world, QAConfig())
        assert res.passed, res.reason
        assert [r.get("cleared_by") for r in res.metrics["expert_grasp"]] == ["a push"]
    result = run_expert(scene, lookup, max_steps=400)
    assert result.success, (result.failure, result.progress, result.steps)
