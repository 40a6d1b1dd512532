import math

import numpy as np
import pytest

from scenegen.geometry import asset_geometry
from scenegen.graph import Goal
from scenegen.layout.place import STATE_QUAT, rolls_lying
from scenegen.relations import state_holds
from scenegen.rotations import axis_angle_quat, quat_matrix, quat_mul
from scenegen.scene import Pose
from scenegen.sim.control import compose_orientation, rotvec_matrix
from scenegen.tasks.flip import closing_yaw, handle_grasp, has_handle, horizontal_swing, lying_grasp
from scenegen.tasks.tracker import flip_progress
from tests.helpers.scene_assets import asset, cache_dir

OPENING = 0.08


@pytest.fixture(scope="module")
def mug(tmp_path_factory):
    return asset("mug", cache_dir(tmp_path_factory), seed=2)


@pytest.fixture(scope="module")
def bottle(tmp_path_factory):
    return asset("bottle", cache_dir(tmp_path_factory), seed=3)


@pytest.mark.parametrize("heading", [0.0, 0.7, 1.6, -2.4, 3.0])
def test_horizontal_swing_points_the_hand_and_closes_across(heading):
    d = np.array([math.cos(heading), math.sin(heading), 0.0])
    swing = horizontal_swing(d)
    axis = np.cross([0.0, 0.0, -1.0], d)
    yaw = closing_yaw(axis, 0.0, 0.0)
    assert abs(yaw) <= 1.9 + 1e-9
    rot = compose_orientation(swing, yaw)
    assert np.allclose(rot[:, 2], d, atol=1e-9)  # approach axis
    assert abs(abs(rot[:, 1] @ axis) - 1.0) < 1e-9  # fingers close along the tangent axis
    assert np.linalg.norm(swing) == pytest.approx(math.pi / 2)
    # swinging from +swing to -swing through straight down turns the hand half a turn about the closing axis
    end = compose_orientation(-swing, yaw)
    turn = end @ rot.T
    assert np.allclose(turn, rotvec_matrix(axis * math.pi), atol=1e-9)
    assert np.allclose(turn @ np.array([0.0, 0.0, -1.0]), [0.0, 0.0, 1.0], atol=1e-9)  # an inverted mug ends upright


def _pose(state_q, yaw, xyz):
    return Pose(tuple(xyz), quat_mul(axis_angle_quat((0.0, 0.0, 1.0), yaw), state_q))


@pytest.mark.parametrize("yaw", [0.0, 1.1, -2.0])
def test_handle_grasp_of_an_inverted_mug(mug, yaw):
    assert has_handle(mug)
    pose = _pose(STATE_QUAT["inverted"], yaw, (0.5, 0.1, float(mug.extents[2])))
    assert state_holds("inverted", pose)
    g = handle_grasp(mug, pose)
    assert g is not None
    assert abs(g.approach[2]) < 1e-9 and abs(g.axis[2]) < 1e-9 and abs(g.approach @ g.axis) < 1e-9
    handle_dir = quat_matrix(pose.orientation)[:, 0]
    assert g.approach[:2] @ handle_dir[:2] < -0.99  # the hand comes from the handle's side, toward the mug's axis
    body_axis = quat_matrix(pose.orientation) @ np.array([mug.grasp["x"], 0.0, 0.0]) + np.asarray(pose.position)
    off = g.point[:2] - body_axis[:2]
    assert np.linalg.norm(off) > mug.extents[1] / 2  # on the handle, outside the body
    assert np.linalg.norm(off) == pytest.approx(g.lever, abs=1e-6)
    assert 0.002 < g.width < OPENING - 0.02
    assert 0.2 * mug.extents[2] < g.point[2] < 0.8 * mug.extents[2]
    assert g.height == pytest.approx(mug.extents[2] - g.point[2], abs=1e-6)
    assert g.reach > g.lever


def test_no_handle_grasp_on_a_mug_lying_or_a_bottle(mug, bottle):
    assert handle_grasp(mug, _pose(STATE_QUAT["lying"], 0.3, (0.5, 0.0, 0.05))) is None
    assert not has_handle(bottle)
    assert handle_grasp(bottle, _pose(STATE_QUAT["inverted"], 0.0, (0.5, 0.0, 0.2))) is None


@pytest.mark.parametrize(("yaw", "roll"), [(0.0, 0.0), (0.9, 1.3), (-2.2, 4.0)])
def test_lying_grasp_pinches_across_the_bottle_near_its_centre_of_mass(bottle, yaw, roll):
    r = float(bottle.extents[0]) / 2
    state = quat_mul(STATE_QUAT["lying"], axis_angle_quat((0.0, 0.0, 1.0), roll))
    pose = _pose(state, yaw, (0.55, -0.05, r))
    assert state_holds("lying", pose)
    got = lying_grasp(bottle, pose, 0.0, OPENING)
    assert got is not None
    point, axis, width = got
    long_axis = quat_matrix(pose.orientation)[:, 2]
    assert abs(axis @ long_axis) < 1e-9 and abs(axis[2]) < 1e-9  # across the diameter, horizontal
    assert width <= OPENING - 0.006
    along = (point - np.asarray(pose.position)) @ long_axis
    assert abs(along - bottle.com[2]) <= 0.4 * bottle.extents[2] + 1e-9
    assert 0.008 < point[2] < 2 * r
    assert lying_grasp(bottle, _pose(STATE_QUAT["upright"], yaw, (0.5, 0.0, 0.0)), 0.0, OPENING) is None


def test_only_round_tall_objects_roll_when_lying(mug, bottle):
    assert rolls_lying(asset_geometry(bottle))
    assert not rolls_lying(asset_geometry(mug))


@pytest.mark.parametrize(("now", "knocked", "want"), [
    ([True, True], 0, 1.0), ([True, False], 0, 0.5), ([True, True], 1, 0.5), ([True, False], 2, 0.0),
    ([False, False], 0, 0.0), ([], 0, 0.0)])
def test_mug_progress_counts_knocked_over_mugs_against_turned_ones(now, knocked, want):
    up = Pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    down = Pose((0.0, 0.0, 0.0), STATE_QUAT["lying"])
    poses = {f"m{i}": (down if i < knocked else up) for i in range(3)}
    assert flip_progress(now, sorted(poses), poses) == pytest.approx(want)


def test_state_goal_is_a_state():
    assert Goal("mug_1", "upright").is_state


def _swing_touches(env, expert, node):
    """Steps of a flip's swing in which the mug, held, also touches something but the robot (the table)."""
    import pybullet as p

    flip = getattr(expert, "flip", None)
    if flip is None or flip.kind != "mug" or flip.turn is not None or flip.phase != "swing":
        return 0
    w = env.world
    cts = p.getContactPoints(bodyA=w.body_of[node], physicsClientId=w.client)
    held = any(c[2] == w.robot_id for c in cts)
    return int(held and any(c[2] != w.robot_id for c in cts))


def _expert_successes(prompt, n, tmp_path, cache, touches=None):
    from scenegen.pipeline import PipelineConfig, generate
    from scenegen.tasks.config import EpisodeConfig
    from scenegen.tasks.episode import TaskEpisode
    from scenegen.tasks.expert import ScriptedExpert, rollout
    from tests.helpers.scene_assets import FAST

    pack = generate(prompt, n, tmp_path, seed=5, config=PipelineConfig(collision=FAST, preview_size=32),
                    cache_dir=cache, progress=False)
    env = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=400))
    out = []
    try:
        for sid in pack.scene_ids:
            expert = ScriptedExpert(env)
            count = [0]

            def on_step(*_, expert=expert, count=count):
                count[0] += _swing_touches(env, expert, env.world.scene.graph.goals[0].subject)

            res, _ = rollout(env, expert, seed=0, options={"scene_id": sid}, on_step=on_step)
            if touches is not None:
                touches.append(count[0])
            start = env.world.scene.graph.goals[0]
            assert start.predicate == "upright"
            if res.success:
                assert res.progress == 1.0 and not res.info["knocked_off"]
            out.append(res)
    finally:
        env.close()
    return out


@pytest.mark.slow
def test_expert_stands_lying_bottles_up(tmp_path, tmp_path_factory):
    res = _expert_successes("stand the bottle up", 4, tmp_path / "b", cache_dir(tmp_path_factory))
    assert sum(r.success for r in res) >= 3, [r.failure for r in res]


@pytest.mark.slow
def test_expert_flips_inverted_mugs(tmp_path, tmp_path_factory):
    # these 10 raw (un-QA'd) scenes: 5 flip (4 before the swing's clearance guard and its yaw choice, swingcheck.py);
    # the failures left are arm reach (a blocked horizontal descent to the handle, a missed pinch) and one swing
    # whose counter-clockwise yaw lies outside the yaw band (its wrist runs into its limit, the arm whips)
    touches: list[int] = []
    res = _expert_successes("flip the mug upright", 10, tmp_path / "m", cache_dir(tmp_path_factory), touches)
    assert sum(r.success for r in res) >= 5, [r.failure for r in res]
    # a held mug does not meet the table while it swings over (the table would twist it out of the fingers)
    assert len(touches) == 10 and sum(touches) <= 2, touches
