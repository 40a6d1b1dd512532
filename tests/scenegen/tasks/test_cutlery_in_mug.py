"""Two pieces of cutlery in one mug (issue 13): the second piece's stand-up tilt, goals knocked undone.

- :func:`scenegen.tasks.carry.level_swing` tilts the hand by a right angle less the sag of the piece in the
  pinch, so the piece ends with its heavy end straight down;
- :func:`scenegen.tasks.recheck.knocked_out` sends the expert back to a finished goal undone since.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from scenegen.graph import Goal
from scenegen.rotations import down_quat, matrix_to_quat, quat_matrix
from scenegen.scene import Pose
from scenegen.tasks import recheck
from scenegen.tasks.carry import level_swing
from scenegen.tasks.grasps import heavy_end


class _Asset:
    extents = (0.16, 0.03, 0.02)
    com = (0.04, 0.0, 0.0)  # nearer the +x end: the heavy end is there


def _turn_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _held(sag: float, hand_tilt: float = 0.0):
    """A piece along world +x from the pinch, its heavy end sagging ``sag`` rad below the horizontal.

    The hand points down, turned by ``hand_tilt`` about world y (the swing's axis).
    """
    pinch = np.array([0.5, 0.0, 0.3])
    rot = _turn_y(sag)  # asset x: (cos sag, 0, -sin sag)
    pose = Pose(tuple(pinch - rot @ np.array([-0.02, 0.0, 0.0])), matrix_to_quat(rot))
    world = SimpleNamespace(assets={"fork_1": _Asset()}, pose=lambda n: pose)
    hand = _turn_y(hand_tilt) @ quat_matrix(down_quat(0.0))
    ctrl = SimpleNamespace(ee_pose=lambda: (pinch, matrix_to_quat(hand)), target_yaw=0.0)
    return world, ctrl


@pytest.mark.parametrize("sag", [0.0, 0.3, 0.5])
def test_level_swing_leaves_the_heavy_end_straight_down(sag):
    world, ctrl = _held(sag)
    swing = np.array([0.0, math.pi / 2, 0.0])  # stand_up's right angle: +x turns to straight down
    out = level_swing(world, ctrl, "fork_1", swing, 0.0, 0.06)
    assert out / np.linalg.norm(out) == pytest.approx([0.0, 1.0, 0.0], abs=1e-9)  # same axis
    assert float(np.linalg.norm(out)) == pytest.approx(math.pi / 2 - sag, abs=1e-6)
    end = heavy_end(world.assets["fork_1"], world.pose("fork_1")) - ctrl.ee_pose()[0]
    turned = _turn_y(float(np.linalg.norm(out))) @ end
    assert turned[:2] == pytest.approx([0.0, 0.0], abs=1e-6) and turned[2] < 0  # straight below the pinch


def test_level_swing_waits_for_the_turn_and_keeps_its_total_while_tilting():
    world, ctrl = _held(0.5)
    swing = np.array([0.0, math.pi / 2, 0.0])
    assert np.allclose(level_swing(world, ctrl, "fork_1", swing, 1.0, 0.06), swing)  # the hand still turns
    # half way through the tilt (the piece turned with the hand), the total is the same
    world2, ctrl2 = _held(0.5 + 0.4, hand_tilt=0.4)
    out = level_swing(world2, ctrl2, "fork_1", swing, 0.0, 0.06)
    assert float(np.linalg.norm(out)) == pytest.approx(math.pi / 2 - 0.5, abs=1e-6)


def test_knocked_out_goal_is_taken_up_again(monkeypatch):
    goals = [Goal("spoon_1", "in", "mug_1"), Goal("fork_1", "in", "mug_1")]
    holding = {"spoon_1": False, "fork_1": True}
    monkeypatch.setattr(recheck, "world_goal_holds", lambda w, g: holding[g.subject])
    ex = SimpleNamespace(goal_index=2, tries=2, failure=None, env=SimpleNamespace(world=None))
    assert recheck.knocked_out(ex, goals) == 0 and ex.tries == 0  # the spoon was knocked out: back to it
    ex.goal_index = 1
    assert recheck.knocked_out(ex, goals) == 1  # not past the last goal yet: go on
    ex.goal_index, ex.failure = 2, "fork_1 is not in mug_1 after release"
    assert recheck.knocked_out(ex, goals) == 2  # a goal was given up: the episode ends as before
    holding["spoon_1"], ex.failure = True, None
    assert recheck.knocked_out(ex, goals) == 2  # every goal holds


@pytest.fixture(scope="module")
def fork_by_mug(tmp_path_factory):
    """A fork lying with its handle by a mug: every pinch 7 cm from its head has a finger come down on the rim."""
    from scenegen.assets.build import generate_asset
    from scenegen.graph import SceneGraph

    g = SceneGraph("put the fork in the mug")
    g.add_object("table", "table", "support", attributes={"color": "wood"})
    for n, role in (("fork_1", "target"), ("mug_1", "receptacle")):
        g.add_object(n, n[:-2], role)
        g.add_relation(n, "on", "table")
    g.add_goal("fork_1", "in", "mug_1")
    cache = tmp_path_factory.mktemp("regrasp-assets")
    seeds = {"table": 11, "fork_1": 41, "mug_1": 61}
    assets = {o.id: generate_asset(o.category, seeds[o.id], dict(o.attributes), cache_dir=cache)
              for o in g.check().objects()}
    return g, assets, {"fork_1": (0.5, 0.0, 0.0), "mug_1": (0.42, 0.07, 0.0)}


def test_blocked_reserved_pinch_is_cleared_by_a_move(fork_by_mug):
    from scenegen.tasks.clearance import blocker
    from scenegen.tasks.plan import INSERT_RESERVE, plan_grasp
    from scenegen.tasks.regrasp import regrasp_shift
    from tests.helpers.qa_scenes import place, settled

    g, assets, layout = fork_by_mug
    with settled(place(g, assets, layout), assets) as w:
        opening = w.robot.max_opening
        reserved = plan_grasp(w, "fork_1", opening, 0.0, INSERT_RESERVE)
        free = plan_grasp(w, "fork_1", opening, 0.0, 0.0)
        assert blocker(w, "fork_1", reserved.point, reserved.yaw, opening) == "mug_1"
        assert blocker(w, "fork_1", free.point, free.yaw, opening) is None  # the pinch QA tests is clear
        shift = regrasp_shift(w, "fork_1", reserved, opening)
        assert shift is not None and 0.02 < float(np.linalg.norm(shift)) <= 0.15
        moved = np.asarray(reserved.point) + np.r_[shift, 0.0]
        assert blocker(w, "fork_1", moved, reserved.yaw, opening) is None
        away = np.asarray(w.pose("fork_1").position[:2]) - np.asarray(w.pose("mug_1").position[:2])
        assert float(shift @ away) > 0  # away from the mug
        assert regrasp_shift(w, "fork_1", free, opening) is None  # nothing to clear


@pytest.mark.slow
def test_expert_regrasps_the_fork_and_puts_it_in_the_mug(fork_by_mug):
    from scenegen.tasks import regrasp
    from scenegen.tasks.expert import run_expert
    from tests.helpers.qa_scenes import place, settled

    g, assets, layout = fork_by_mug
    made = []
    real = regrasp.RegraspSkill

    class Spy(real):
        def __init__(self, *a, **k) -> None:
            made.append(a[1])
            super().__init__(*a, **k)

    with settled(place(g, assets, layout), assets) as w:
        regrasp.RegraspSkill = Spy
        try:
            res = run_expert(w.scene, w, max_steps=400)
        finally:
            regrasp.RegraspSkill = real
    assert made == ["fork_1"]  # moved clear once, then picked again
    assert res.success, res.failure


def test_lowering_stops_when_the_hand_touches_a_piece_already_in_the_mug(monkeypatch):
    touching = {"spoon_1"}
    world = SimpleNamespace(in_contact=lambda a, b: a == "robot" and b in touching)
    monkeypatch.setattr(recheck, "holds", lambda w, s, o: ["spoon_1"] if o == "mug_1" else [])
    ex = SimpleNamespace(env=SimpleNamespace(world=world))
    assert recheck.bumps(ex, Goal("fork_1", "in", "mug_1"))
    touching.clear()
    assert not recheck.bumps(ex, Goal("fork_1", "in", "mug_1"))  # nothing touched: lower on
    touching.add("spoon_1")
    assert not recheck.bumps(ex, Goal("fork_1", "on", "plate_1"))  # only a subject going in a receptacle
