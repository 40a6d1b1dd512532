"""The two-arm expert: each goal by the arm that reaches it best, the other arm parked, the arms apart."""

from __future__ import annotations

import numpy as np
import pytest

from scenegen.scene import Pose
from scenegen.tasks.bimanual import MultiArmExpert, arm_gap, choose_arm
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.episode import TaskEpisode
from scenegen.tasks.expert import make_expert, rollout, run_expert
from tests.helpers.rl_packs import bimanual_pack


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return bimanual_pack(tmp_path_factory)


@pytest.fixture(scope="module")
def env(pack):
    e = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=300))
    yield e
    e.close()


def test_make_expert_picks_the_multi_arm_expert(env):
    assert env.n_arms == 2 and env.action_dim == 14 and env.proprio_dim == 18 + 16
    ex = make_expert(env)
    assert isinstance(ex, MultiArmExpert)
    env.reset(seed=0)
    a = ex.act()
    assert a.shape == (14,) and np.all(np.abs(a) <= 1.0)


@pytest.mark.parametrize(("y", "arm"), [(0.15, 0), (-0.15, 1)])
def test_choose_arm_takes_the_nearer_side(env, y, arm):
    env.reset(seed=0)
    w = env.world
    goal = w.scene.graph.goals[0]
    for node, dy in ((goal.subject, 0.0), (goal.object, -0.03 if y > 0 else 0.03)):
        pose = w.pose(node)
        w.set_pose(node, Pose((pose.position[0], y + dy, pose.position[2]), pose.orientation))
    assert choose_arm(w, goal) == arm


@pytest.mark.slow
def test_two_arm_expert_puts_the_banana_in_the_bowl(env, pack):
    results = []
    for sid in pack.scene_ids:
        expert = make_expert(env)
        gaps, idle_off = [], []

        def watch(obs, action, reward, info, expert=expert, gaps=gaps, idle_off=idle_off):
            gaps.append(arm_gap(env.world))
            if expert.active is not None and expert._homing is None:
                idle = 1 - expert.active
                ee = env.controller.arms[idle].ee_pose()[0]
                idle_off.append(float(np.linalg.norm(ee - expert.park(idle))))

        res, _ = rollout(env, expert, seed=0, options={"scene_id": sid}, on_step=watch)
        results.append(res)
        assert min(gaps) > 0.03, "the arms came within 3 cm of each other"
        assert idle_off and idle_off[-1] < 0.02, "the idle arm did not wait at its parking spot"
        if res.success:
            assert res.progress == 1.0 and expert.arm_log and 20 < res.steps < 300
    assert sum(r.success for r in results) >= 2, [r.failure for r in results]


@pytest.mark.slow
def test_run_expert_uses_both_arms_for_qa(pack):
    scene = pack.scene(pack.scene_ids[0])
    res = run_expert(scene, pack.asset_lookup, max_steps=300)
    assert res.success, res.failure
