"""PPOFlow with GRPO-style episode groups: seeds, advantages, the rollout's bookkeeping, and that it learns."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from rl import ppoflow
from rl.ppoflow import PPOFlowConfig, PPOFlowError
from rl.ppoflow_rollout import group_advantages, group_rollout, group_seeds
from scenegen.errors import ConfigError
from tests.rl.test_ppoflow import (  # noqa: F401  (one_thread: the same autouse fixture)
    MAX_STEPS,
    LineReach,
    agent_for,
    bc_policy,
    envs,
    one_thread,
    success_rate,
)


def test_group_advantages_subtract_each_group_s_mean():
    adv = group_advantages(np.array([1.0, 0, 0, 1, 1, 1, 1, 1, 2, -1]), np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2]))
    np.testing.assert_allclose(adv, [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, 1.5, -1.5])


def test_group_seeds_repeat_within_a_group_and_change_with_the_round():
    seeds = group_seeds(0, 3, 1, groups=3, size=4)
    assert len(seeds) == 12 and len(set(seeds)) == 3
    assert all(len(set(seeds[g * 4:(g + 1) * 4])) == 1 for g in range(3))
    assert group_seeds(0, 3, 1, 3, 4) == seeds and group_seeds(0, 3, 2, 3, 4) != seeds
    assert group_seeds(0, 4, 1, 3, 4) != seeds and group_seeds(1, 3, 1, 3, 4) != seeds


def test_config_needs_whole_groups():
    with pytest.raises(ConfigError, match="group_size=3"):
        PPOFlowConfig(num_envs=4, group_size=3)
    with pytest.raises(ConfigError, match="group_size=1"):
        PPOFlowConfig(num_envs=4, group_size=1)
    with pytest.raises(ConfigError, match="group_rounds=0"):
        PPOFlowConfig(num_envs=4, group_size=2, group_rounds=0)


def _rollout(cfg: PPOFlowConfig, max_decisions: int = 50):
    pol = bc_policy(steps=50)
    agent = agent_for(pol, cfg.k)
    critic = ppoflow.Critic(64, 32, use_time=True)
    vec = envs(cfg.num_envs, cfg, pol)

    def clock(n):
        return torch.as_tensor(np.minimum(n / MAX_STEPS, 1.0), dtype=torch.float32)

    try:
        return group_rollout(agent, critic, vec, cfg, torch.Generator().manual_seed(0), clock, 0, max_decisions)
    finally:
        vec.close()


def test_a_group_rollout_starts_each_group_alike_and_scores_whole_episodes():
    cfg = PPOFlowConfig(num_envs=6, group_size=3, group_rounds=2, action_steps=2, gamma=0.9)
    b = _rollout(cfg)
    goals = b.obs["state"][:6, 1]  # the first rows: the first decision of every env, the guard's batch
    assert goals[0] == goals[1] == goals[2] and goals[3] == goals[4] == goals[5] and goals[0] != goals[3]
    np.testing.assert_array_equal(b.obs["state"][:6, 0], 0.0)  # every env at its start
    assert len(b.episodes) == 12 and len(b.logp) == len(b.adv) == len(b.ret) == len(b.chain) == len(b.episode)
    assert sorted(set(b.episode.tolist())) == [0, 1, 2, 3]  # units: groups of 3 episodes, 2 rounds x 2 groups
    returns = np.array([e["return"] for e in b.episodes])
    expect = group_advantages(returns, np.arange(12) // 3)
    lengths = np.array([e["length"] for e in b.episodes])
    decisions = np.ceil(lengths / 2).astype(int)  # each decision runs 2 actions, the last maybe 1
    assert len(b.adv) == decisions.sum()
    for g in range(4):
        mask = b.episode == g
        assert mask.sum() == decisions[g * 3:(g + 1) * 3].sum()
        got, want = (sorted(set(np.round(a, 9))) for a in (b.adv[mask], expect[g * 3:(g + 1) * 3]))
        np.testing.assert_allclose(got, want)  # each decision carries its episode's advantage
    assert b.env_steps >= lengths.sum() and 0 <= b.extra["group_idle_frac"] < 1
    assert b.extra["group_informative"] == np.mean([np.ptp(returns[g:g + 3]) > 0 for g in range(0, 12, 3)])
    first_steps = b.times == 0  # the critic's target at an episode's first decision: its discounted return
    success_first = sorted(np.round(b.ret[first_steps], 9))
    expect_first = sorted(np.round([0.9 ** (e["length"] - 1) if e["success"] else 0.0 for e in b.episodes], 9))
    np.testing.assert_allclose(success_first, expect_first)


def test_a_group_round_that_does_not_end_stops_the_run():
    cfg = PPOFlowConfig(num_envs=2, group_size=2, action_steps=1)
    with pytest.raises(PPOFlowError, match="still running after 2 decisions"):
        _rollout(cfg, max_decisions=2)


def test_a_group_run_keeps_its_guard_and_logs_the_groups(tmp_path):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=8, group_size=2, group_rounds=2, total_env_steps=10_000, minibatch_size=16,
                        action_steps=2, critic_time_limit=MAX_STEPS, grad_diag=True, sigma_min=0.2, sigma_max=0.4)
    out = ppoflow.train(cfg, pol, envs(8, cfg, pol), tmp_path / "run", progress=False, max_iterations=2)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["guard_max_dev"] <= cfg.ratio_guard_tol for r in rows)
    assert all(r["episodes"] == 16 and 0 <= r["group_informative"] <= 1 for r in rows)
    assert all(math.isfinite(r["value_loss"]) for r in rows)
    trained = [r for r in rows if not r["critic_warmup"]]  # an update with an informative group
    assert trained and all(r["group_informative"] > 0 and r["pg_groups"] == 8 for r in trained)
    assert all(math.isfinite(r["pg_noise_tr"]) and math.isfinite(r["pg_noise_tr_critic"]) for r in trained)
    assert rows[1]["decisions"] > rows[0]["decisions"] > 0 and out["iterations"] == 2
    resumed = ppoflow.train(cfg, pol, envs(8, cfg, pol), tmp_path / "run", resume=True, progress=False,
                            max_iterations=1)
    assert resumed["iterations"] == 3


class NeverReach(LineReach):
    """LineReach without success: every group's episodes score alike."""

    def step(self, action):
        obs, _, _, trunc, _ = super().step(action)
        return obs, 0.0, False, self.t >= MAX_STEPS, {"success": False, "progress": 0.0}


def test_without_an_informative_group_only_the_critic_trains(tmp_path):
    pol = bc_policy(steps=50)
    before = {k: v.clone() for k, v in pol.state_dict().items()}
    cfg = PPOFlowConfig(num_envs=4, group_size=2, total_env_steps=10_000, minibatch_size=8, lr_actor=1e-2)
    vec = ppoflow.make_envs(cfg, pol, [NeverReach] * 4, backend="sync")
    out = ppoflow.train(cfg, pol, vec, tmp_path / "run", progress=False, max_iterations=2)
    assert out["last"]["critic_warmup"] and out["last"]["group_informative"] == 0.0
    assert all(torch.equal(v, before[k]) for k, v in pol.state_dict().items())


@pytest.mark.slow
def test_a_real_env_group_starts_alike_and_stays_alike_under_the_same_actions(tmp_path_factory):
    """The groups' premise on a pack: one seed gives the same scene, DR and start, even after other episodes."""
    from rl.envs.config import EnvConfig
    from rl.guided_dr import dr_from_options
    from rl.rollout import chunk_vec
    from tests.helpers.rl_packs import pack

    pk = pack(tmp_path_factory)
    cfg = EnvConfig(image_size=32, privileged=True, dr=dr_from_options(True, None))
    vec = chunk_vec(pk.root, 2, horizon=4, action_steps=4, gamma=0.99, mode="sync", env_config=cfg)
    rng = np.random.default_rng(0)
    try:
        vec.reset(seed=[1, 2])  # different first episodes: the group below follows different histories
        vec.step(rng.uniform(-1, 1, (2, 4, vec.vec.single_action_space.shape[-1])).astype(np.float32))
        obs = vec.reset(seed=[7, 7])
        for _ in range(6):
            for k in ("front", "proprio", "privileged"):
                np.testing.assert_array_equal(obs[k][0], obs[k][1])
            assert obs["instruction"][0] == obs["instruction"][1]
            chunk = rng.uniform(-1, 1, (1, 4, vec.vec.single_action_space.shape[-1])).astype(np.float32)
            obs = vec.step(np.repeat(chunk, 2, 0)).obs
    finally:
        vec.close()


@pytest.mark.slow
def test_ppoflow_with_groups_lifts_a_biased_bc_policy(tmp_path):
    pol = bc_policy()
    before = success_rate(agent_for(pol, 1))
    assert before < 0.3, before
    cfg = PPOFlowConfig(seed=1, num_envs=16, group_size=4, group_rounds=2, total_env_steps=16 * 8 * 4 * 20, k=1,
                        sigma_min=0.05, sigma_max=0.3, init_std=0.2, noise_hidden=32, gamma=0.99,
                        clip_eps=0.2, lr_actor=1e-3, lr_noise=1e-3, lr_critic=3e-3, minibatch_size=64,
                        update_epochs=4, target_kl=None, critic_hidden=64, critic_time_limit=MAX_STEPS)
    out = ppoflow.train(cfg, pol, envs(16, cfg, pol), tmp_path / "run", progress=False)
    after = success_rate(out["agent"])
    assert after > 0.8, (before, after)
