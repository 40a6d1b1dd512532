"""A part by a tote's wall: its pinch turned or shifted clear of the wall; a descent pressing the wall stopped.

See :mod:`scenegen.tasks.wallclear` (sort from the tote, issue 19): a finger landing on the tote's rim lifted the
light tote and the parts in it fell under its floor.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from scenegen.geometry import asset_geometry, transform_points
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks import wallclear
from scenegen.tasks.bins import flat_axes, holder, wall_gap
from scenegen.tasks.blocked import GoalQueue
from scenegen.tasks.carry import descent_target
from scenegen.tasks.clearance import SIDE_GAP
from scenegen.tasks.drag import CLEAR, drag_target
from scenegen.tasks.plan import plan_grasp
from scenegen.tasks.wallclear import _slack, container_of, wall_clear, wall_stop


def _axis(yaw: float) -> np.ndarray:
    return np.array([math.sin(yaw), -math.cos(yaw)])


@pytest.mark.slow
def test_a_nut_by_the_wall_is_pinched_with_its_fingers_inside_the_tote(tote_pack):
    scene = tote_pack.scenes()[0]
    with World.build(scene, tote_pack.asset_lookup) as world:
        nut = next(n for n in world.objects() if n.startswith("hex_nut"))
        opening = world.robot.max_opening
        pose = world.pose(nut)
        assert container_of(world, nut) == "tote_1"
        poly = holder(world, nut, np.asarray(pose.position, dtype=float))[0]
        centre = np.asarray(poly.centroid.coords[0])
        edge = np.asarray(poly.exterior.interpolate(poly.exterior.project(poly.centroid)).coords[0])
        inward = (centre - edge) / np.linalg.norm(centre - edge)
        xy = edge + 0.022 * inward  # the nut's centre 2.2 cm from the middle of the nearest wall
        blocked = 0
        for deg in range(0, 60, 5):  # the nut turned: its flats from along the wall to 30 degrees off it and back
            yaw = math.radians(deg)
            world.set_pose(nut, Pose((float(xy[0]), float(xy[1]), pose.position[2]),
                                     (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))))
            grasp = plan_grasp(world, nut, opening, 0.0)
            held_in = holder(world, nut, grasp.point)
            if wall_gap(held_in, grasp.point, _axis(grasp.yaw), opening) >= CLEAR:
                continue
            blocked += 1
            assert drag_target(world, nut, grasp.point, grasp.yaw, opening) is not None, "the expert would drag it"
            clear = wall_clear(world, nut, grasp, opening, 0.0)
            assert wall_gap(held_in, clear.point, _axis(clear.yaw), opening) >= CLEAR, deg
            assert drag_target(world, nut, clear.point, clear.yaw, opening) is None, deg
            shift = float(np.linalg.norm(clear.point[:2] - grasp.point[:2]))
            # within the slack the open fingers leave around the nut, along the closing axis, at the same height
            assert shift <= opening / 2 - grasp.width / 2 + 1e-6 and clear.point[2] == pytest.approx(grasp.point[2])
            assert abs(float((clear.point[:2] - grasp.point[:2]) @ _axis(clear.yaw))) == pytest.approx(shift, abs=1e-6)
            flats = flat_axes(world.assets[nut], world.pose(nut))
            off = min(abs((clear.yaw - (a + math.pi / 2) + math.pi / 2) % math.pi - math.pi / 2) for a in flats)
            assert off <= math.radians(30) + 1e-6, "as near across two flats as the walls allow"
        assert blocked >= 3, "some turns of the nut leave no clear pinch across flats where it lies"
        world.set_pose(nut, Pose((float(centre[0]), float(centre[1]), pose.position[2]), pose.orientation))
        free = plan_grasp(world, nut, opening, 0.0)
        assert wall_clear(world, nut, free, opening, 0.0) is free, "a pinch clear of the walls is kept as it is"


@pytest.mark.slow
def test_a_washer_s_pinch_keeps_its_open_fingers_off_the_washer(tote_pack):
    scene = tote_pack.scenes()[0]
    with World.build(scene, tote_pack.asset_lookup) as world:
        washer = next(n for n in world.objects() if n.startswith("washer"))
        opening, pose = world.robot.max_opening, world.pose(washer)
        poly = holder(world, washer, np.asarray(pose.position, dtype=float))[0]
        centre, (x0, y0, x1, y1) = np.asarray(poly.centroid.coords[0]), poly.bounds
        for edge in ([(x0 + x1) / 2, y0], [x1, (y0 + y1) / 2], [(x0 + x1) / 2, y1], [x0, (y0 + y1) / 2]):
            inward = (centre - edge) / np.linalg.norm(centre - edge)
            for t in np.arange(0.04, 0.09, 0.003):  # its centre 4-9 cm from the middle of each wall
                xy = np.asarray(edge) + t * inward
                world.set_pose(washer, Pose((float(xy[0]), float(xy[1]), pose.position[2]), pose.orientation))
                grasp = plan_grasp(world, washer, opening, 0.0)
                assert grasp.width < 0.5 * world.assets[washer].extents[0], "its hint's width is its ring's"
                clear = wall_clear(world, washer, grasp, opening, 0.0)
                outline = transform_points(asset_geometry(world.assets[washer]).hull, world.pose(washer))[:, :2]
                along = (outline - clear.point[:2]) @ _axis(clear.yaw)
                # each open finger keeps SIDE_GAP from the washer's 4.4 cm footprint, not from its 1 cm ring
                assert opening / 2 - max(-along.min(), along.max()) >= SIDE_GAP - 1e-9, (edge, t)


def test_the_slack_of_a_pinch_is_what_the_part_s_outline_leaves_the_open_fingers():
    ring = np.array([[0.5 + 0.022 * math.cos(a), 0.1 + 0.022 * math.sin(a)]
                     for a in np.linspace(0.0, 2 * math.pi, 72, endpoint=False)])
    room = 0.04 - SIDE_GAP - 0.022
    assert _slack(ring, np.array([0.5, 0.1, 0.02]), 0.0, 0.08) == pytest.approx((room, room), abs=1e-4)
    # pinched 5 mm off its centre toward -y (yaw 0 closes along -y): 5 mm less room on that way, 5 mm more back
    assert _slack(ring, np.array([0.5, 0.095, 0.02]), 0.0, 0.08) == pytest.approx((room - 0.005, room + 0.005),
                                                                                abs=1e-4)


def test_a_descent_pressing_the_tote_wall_stops_and_puts_the_goal_off_once(monkeypatch):
    forces = iter([2.0, 30.0, 30.0])
    monkeypatch.setattr(wallclear, "wall_force", lambda world, node: next(forces))
    phases = []
    ex = SimpleNamespace(goal_index=0, tries=1, queue=GoalQueue(), env=SimpleNamespace(world=None),
                         _set=phases.append, goals=["nut", "bolt"])
    assert not wall_stop(ex, "hex_nut_1"), "a light touch (the floor's, a graze) goes on down"
    assert wall_stop(ex, "hex_nut_1") and ex.goal_index == 1 and ex.queue.pending == [0]
    # put off, the hand opens and rises before the next goal: a drag from down here swept the tote's parts
    assert phases == ["plan", "reopen"]
    ex.goal_index = 0  # taken up again after the others: stopped, not put off a second time
    assert wall_stop(ex, "hex_nut_1") and ex.goal_index == 0 and ex.queue.pending == [0]
    forces = iter([30.0])
    ex.goal_index, phases[:] = 1, []  # the last goal put off: the hand rises before the first one put off
    assert wall_stop(ex, "bolt_1") and ex.goal_index == 0 and ex.queue.pending == [1] and phases == ["plan", "reopen"]
    pos, point = np.array([0.5, 0.1, 0.06]), np.array([0.5, 0.1, 0.02])
    assert np.allclose(descent_target(pos, point, stop=True), [0.5, 0.1, 0.065]), "it backs up"
    assert np.allclose(descent_target(pos, point), point)
