import math

import numpy as np
import pytest

from scenegen.graph import Goal
from scenegen.layout.place import STATE_QUAT
from scenegen.relations import state_holds
from scenegen.rotations import axis_angle_quat, quat_matrix, quat_mul
from scenegen.scene import Pose
from scenegen.tasks.mugstand import (
    AROUNDS,
    DEPTH,
    DIPS,
    first_rim_grasp,
    rim_frame,
    rim_grasp,
    rim_path,
    turn_rotation,
)
from tests.helpers.scene_assets import asset, cache_dir

OPENING = 0.08


@pytest.fixture(scope="module")
def mug(tmp_path_factory):
    return asset("mug", cache_dir(tmp_path_factory), seed=2)


def _lying(yaw, roll, xyz):
    """A lying pose: ``roll`` about the mug's own axis (where its handle points), then ``yaw`` about the vertical."""
    return Pose(tuple(xyz), quat_mul(axis_angle_quat((0.0, 0.0, 1.0), yaw),
                                     quat_mul(STATE_QUAT["lying"], axis_angle_quat((0.0, 0.0, 1.0), roll))))


@pytest.mark.parametrize("yaw", [0.0, 1.2, -2.5, 3.0])
def test_rim_grasp_pinches_the_top_wall_of_a_lying_mug(mug, yaw):
    r = float(mug.extents[1]) / 2
    pose = _lying(yaw, 0.0, (0.5, 0.0, r))
    assert state_holds("lying", pose)
    g = rim_grasp(mug, pose, OPENING)
    assert g is not None
    rot = quat_matrix(pose.orientation)
    u = rot[:, 2]
    assert np.allclose(g.up, u, atol=1e-6)  # the axis is level: base -> opening
    assert 0.0005 < g.width < 0.01  # the thin wall, not the 8-9 cm body
    assert 2 * r - g.width - 0.004 < g.point[2] < 2 * r + 0.001  # at the top of the lying mug
    rim_x = float(rot[:, 2] @ (g.point - np.asarray(pose.position)))  # along the axis, from the base
    assert rim_x == pytest.approx(float(mug.extents[2]) - DEPTH, abs=0.003)
    assert g.approach @ u == pytest.approx(-math.cos(DIPS[0]), abs=1e-6)  # into the opening
    assert g.approach[2] == pytest.approx(-math.sin(DIPS[0]), abs=1e-6)  # dipped below horizontal
    assert abs(g.approach @ g.closing) < 1e-9 and abs(np.linalg.norm(g.closing) - 1) < 1e-9
    assert g.reach > float(mug.extents[2]) - DEPTH
    frame = rim_frame(g, -1.0)
    assert np.allclose(frame.T @ frame, np.eye(3), atol=1e-9) and np.linalg.det(frame) == pytest.approx(1.0)
    assert np.allclose(frame[:, 2], g.approach)


def test_no_rim_grasp_unless_lying_and_not_at_the_handle(mug):
    h = float(mug.extents[2])
    assert rim_grasp(mug, Pose((0.5, 0.0, 0.0), STATE_QUAT["upright"]), OPENING) is None
    assert rim_grasp(mug, Pose((0.5, 0.0, h), STATE_QUAT["inverted"]), OPENING) is None
    r = float(mug.extents[1]) / 2
    up = _lying(0.4, math.pi / 2, (0.5, 0.0, r))  # the handle (asset +x) points straight up, at the rim's top
    assert quat_matrix(up.orientation)[2, 0] > 0.99
    assert rim_grasp(mug, up, OPENING) is None
    g = first_rim_grasp(mug, up, OPENING)  # the wall is pinched round the rim, away from the handle
    assert g is not None and g.point[2] < 2 * r - 0.01
    assert rim_grasp(mug, up, 0.012) is None  # a wall no thinner than the opening less 2 cm: no pinch
    assert len(AROUNDS) >= 3 and AROUNDS[0] == 0.0


@pytest.mark.parametrize(("heading", "spin"), [(0.0, 0.0), (1.0, 0.8), (-2.0, -1.5), (2.8, 1.57)])
def test_turn_and_path_stand_the_mug_up_on_the_table(mug, heading, spin):
    up = np.array([math.cos(heading), math.sin(heading), 0.0])
    rot = turn_rotation(up, spin)
    assert np.allclose(rot @ up, [0.0, 0.0, 1.0], atol=1e-9)
    assert np.allclose(turn_rotation(up, spin, 0.0), np.eye(3), atol=1e-12)
    r = float(mug.extents[1]) / 2
    pose = _lying(heading + math.pi / 2, 0.0, (0.5, 0.0, r))  # lying yaw y puts the axis along (sin y, -cos y)
    g = rim_grasp(mug, pose, OPENING)
    assert np.allclose(g.up, up, atol=1e-6)
    rot0 = rim_frame(g, 1.0)
    path = rim_path(g, rot0, 0.08, 0.25, 0.0, 0.16, spin)
    assert np.allclose(path[2][0], g.point) and np.allclose(path[1][0], g.point - 0.08 * g.approach)
    last_pos, last_rot = path[-1]
    hand_turn = last_rot @ rot0.T  # the mug turns with the hand
    assert np.allclose(hand_turn @ up, [0.0, 0.0, 1.0], atol=1e-9)
    base = last_pos + hand_turn @ (g.base - g.point)
    assert base[2] == pytest.approx(0.0, abs=1e-9)  # set down on the table, upright
    assert all(np.allclose(p[0], path[3][0]) for p in path[3:-1])  # it turns in place, lifted


def _lying_mug_episodes(tmp_path, cache, yaws, where=None):
    """Run the expert on one flip_mugs scene with its mug laid on its side at each heading; (upright, failure) each."""
    from rl.envs import PickPlaceEnv
    from scenegen.pipeline import PipelineConfig, generate
    from scenegen.tasks.expert import ScriptedExpert
    from scenegen.tasks.flip import flip_kind
    from tests.helpers.scene_assets import FAST

    pack = generate("flip the mug upright", 1, tmp_path, seed=5, config=PipelineConfig(collision=FAST, preview_size=32),
                    cache_dir=cache, progress=False)
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=400)
    out = []
    try:
        for yaw in yaws:
            obs, _ = env.reset(seed=0, options={"scene_id": pack.scene_ids[0]})
            w = env.world
            goal = w.scene.graph.goals[0]
            node = goal.subject
            xy = w.pose(node).position[:2] if where is None else where
            w.set_pose(node, _lying(yaw, 0.0, (*xy, float(w.assets[node].extents[1]) / 2 + w.scene.table_height
                                               + 0.005)))
            for _ in range(60):
                w.step(1)
            assert state_holds("lying", w.pose(node)) and flip_kind(w, node, Goal(node, "upright")) == "rim"
            expert = ScriptedExpert(env)
            expert.reset()
            for _ in range(400):
                obs, _, term, trunc, _ = env.step(expert.act(obs))
                if term or trunc or expert.phase in ("failed", "done"):
                    break
            out.append((state_holds("upright", w.pose(node)), expert.failure))
    finally:
        env.close()
    return out


@pytest.mark.slow
def test_expert_stands_a_lying_mug_up(tmp_path, tmp_path_factory):
    yaws = [k * math.pi / 4 for k in range(8)]
    got = _lying_mug_episodes(tmp_path / "m", cache_dir(tmp_path_factory), yaws)
    assert sum(up for up, _ in got) >= 6, got
    for up, failure in got:  # every miss says why (a refusal, a missed pinch), never a crash or a silent stop
        assert up or failure, got


@pytest.mark.slow
def test_stand_up_refuses_a_rim_out_of_reach(tmp_path, tmp_path_factory):
    # on the table, beyond the arm's reach
    got = _lying_mug_episodes(tmp_path / "far", cache_dir(tmp_path_factory), [0.3], where=(1.1, 0.3))
    assert len(got) == 1 and not got[0][0] and got[0][1].startswith("could not reach the rim of"), got
