"""PPOFlow: the policy-level chain log-probability, the ratio guard, GAE over macro-actions, and that it learns."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rl import ppoflow
from rl.policies import flow_matching as fm
from rl.policies.noise import NoiseNet, NoisyFlow, time_features
from rl.ppoflow import PPOFlowConfig, PPOFlowError
from rl.ppoflow_math import gae
from rl.rollout import ChunkEnv, chunk_vec
from scenegen.errors import ConfigError

H, A = 4, 1
STEP, TOL, BIAS, MAX_STEPS = 0.25, 0.1, 0.25, 8


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny networks: one intra-op thread is as fast and far less hurt by a loaded machine (10x at load 7)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ---------------------------------------------------------------------- a tiny task and a tiny flow policy
class LineReach(gym.Env):
    """Move a point on a line to a goal: ``pos += 0.25 a``; success (+1, terminal) within 0.1 of the goal."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-3, 3, (2,), np.float32)})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (A,), np.float32)

    def _obs(self) -> dict:
        return {"state": np.array([self.pos, self.goal], dtype=np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.goal, self.t = 0.0, float(self.np_random.uniform(-1, 1)), 0
        return self._obs(), {"success": False, "progress": 0.0}

    def step(self, action):
        self.pos += STEP * float(np.asarray(action).reshape(-1)[0])
        self.t += 1
        ok = abs(self.pos - self.goal) < TOL
        return self._obs(), float(ok), ok, (not ok) and self.t >= MAX_STEPS, {"success": ok, "progress": float(ok)}


def biased_expert_chunk(pos: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """The demonstrator: it aims ``BIAS`` short of the goal, so it (and BC on it) mostly fails."""
    target = goal - BIAS * np.sign(goal)
    out, p = [], pos.copy()
    for _ in range(H):
        a = np.clip((target - p) / STEP, -1, 1)
        out.append(a)
        p = p + STEP * a
    return np.stack(out, 1)[..., None].astype(np.float32)


class TinyFlow(nn.Module):
    """An MLP flow policy over the state: ``embed`` and ``velocity`` as :class:`rl.policies.noise.FlowPolicy`."""

    horizon, action_dim, num_inference_steps = H, A, 4

    def __init__(self, width: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(2, width), nn.SiLU(), nn.Dropout(dropout), nn.Linear(width, width))
        self.vel = nn.Sequential(nn.Linear(H * A + 8 + width, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(),
                                 nn.Linear(width, H * A))
        self.augment = 0.0

    def embed(self, obs):
        s = torch.as_tensor(np.asarray(obs["state"]), dtype=torch.float32)
        if self.augment:
            s = s + self.augment * torch.randn_like(s)  # a deliberately random preprocessing
        return self.enc(s)

    def velocity(self, x, t, z):
        h = torch.cat([x.reshape(len(x), -1), time_features(t), z], 1)
        return self.vel(h).reshape(-1, H, A)


def bc_policy(seed: int = 0, steps: int = 800) -> TinyFlow:
    """Behaviour cloning (flow matching) on the biased demonstrator's chunks."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    goal = rng.uniform(-1, 1, 4096)
    first = biased_expert_chunk(np.zeros_like(goal), goal)
    pos2 = STEP * first[:, :, 0].sum(1)
    states = np.concatenate([np.stack([np.zeros_like(goal), goal], 1), np.stack([pos2, goal], 1)])
    chunks = np.concatenate([first, biased_expert_chunk(pos2, goal)])
    pol = TinyFlow()
    opt = torch.optim.Adam(pol.parameters(), lr=3e-3)
    s_t, c_t = torch.as_tensor(states, dtype=torch.float32), torch.as_tensor(chunks)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        i = torch.randint(0, len(s_t), (256,), generator=g)
        x1 = c_t[i]
        x0 = torch.randn(x1.shape, generator=g)
        t = fm.sample_time(len(i), "uniform", generator=g)
        xt, u = fm.interpolate(x0, x1, t)
        loss = fm.flow_loss(pol.velocity(xt, t, pol.enc(s_t[i])), u)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return pol.eval()


def envs(n: int, cfg: PPOFlowConfig, policy: nn.Module):
    return ppoflow.make_envs(cfg, policy, [LineReach] * n, backend="sync")


def success_rate(agent: NoisyFlow, episodes: int = 200, seed: int = 10_000, width: int = 20) -> float:
    """Noise-free success over fixed evaluation seeds, ``width`` episodes at a time."""
    from rl.rollout import stack_obs

    act, envs, wins = agent.act_fn(seed=seed), [ChunkEnv(LineReach(), H, H, 1.0) for _ in range(width)], 0
    for start in range(0, episodes, width):
        obs = [e.reset(seed=seed + start + i)[0] for i, e in enumerate(envs)]
        live = list(range(width))
        while live:
            chunks = act(stack_obs([obs[i] for i in live]))
            for j, i in enumerate(list(live)):
                obs[i], _, term, trunc, info = envs[i].step(chunks[j])
                if term or trunc:
                    wins += info["success"]
                    live.remove(i)
    return wins / episodes


def agent_for(policy: nn.Module, k: int, ft_steps=None, use_time=False, seed=0) -> NoisyFlow:
    torch.manual_seed(seed)
    noise = NoiseNet(64, H, A, sigma_min=0.05, sigma_max=0.3, hidden=32, use_time=use_time)
    return NoisyFlow(policy, noise, k, ft_steps)


# ---------------------------------------------------------------------- the log-probability, independently
@pytest.mark.parametrize("k,ft", [(1, None), (4, None), (4, 2)])
def test_policy_chain_log_prob_matches_an_independent_computation(k, ft):
    pol = TinyFlow()
    agent = agent_for(pol, k, ft, use_time=True)
    with torch.no_grad():  # a noise net whose std depends on the embedding and the time
        agent.noise.out.weight.normal_(0, 0.5)
    obs = {"state": np.random.default_rng(0).uniform(-1, 1, (5, 2)).astype(np.float32)}
    with torch.no_grad():
        z = agent.embed(obs)
        chain, lp = agent.sample(z, torch.Generator().manual_seed(3))
        again, ent = agent.log_prob(z, chain)
    assert chain.shape == (5, k + 1, H, A)
    ref = torch.distributions.Normal(0.0, 1.0).log_prob(chain[:, 0].double()).sum(dim=(1, 2))
    ref_ent = []
    noisy = list(range(k - (ft or k), k))
    for j in range(k):
        t = torch.full((5,), j / k)
        feat = torch.cat([z, time_features(t)], 1)
        u = torch.tanh(agent.noise.out(agent.noise.body(feat)))
        std = (0.05 + 0.25 * (u + 1) / 2).reshape(5, H, A).double()
        mean = chain[:, j].double() + pol.velocity(chain[:, j], t, z).double() / k
        if j in noisy:
            ref += torch.distributions.Normal(mean, std).log_prob(chain[:, j + 1].double()).sum(dim=(1, 2))
            ref_ent.append(torch.distributions.Normal(mean, std).entropy().mean(dim=(1, 2)))
        else:  # a deterministic transition: the stored next point is its mean
            assert torch.allclose(chain[:, j + 1].double(), mean, atol=1e-6)
    torch.testing.assert_close(lp.double(), ref, atol=1e-4, rtol=1e-6)
    torch.testing.assert_close(again, lp)
    torch.testing.assert_close(ent.double(), torch.stack(ref_ent, 1).mean(1), atol=1e-5, rtol=1e-5)
    stds = agent.noise(z, torch.zeros(5))
    assert stds.min() >= 0.05 and stds.max() <= 0.3


@pytest.mark.parametrize("k,ft", [(1, None), (4, None), (4, 2)])
def test_normalised_log_prob_times_its_terms_is_the_chain_s(k, ft):
    pol = TinyFlow()
    summed, meaned = agent_for(pol, k, ft), agent_for(pol, k, ft)
    meaned.normalize = True
    obs = {"state": np.random.default_rng(1).uniform(-1, 1, (4, 2)).astype(np.float32)}
    with torch.no_grad():
        z = summed.embed(obs)
        chain, lp = summed.sample(z, torch.Generator().manual_seed(5))
        mean_lp = meaned.log_prob(z, chain)[0]
    assert summed.logprob_terms(chain) == 1
    assert meaned.logprob_terms(chain) == ((ft or k) + 1) * H * A
    torch.testing.assert_close(mean_lp * meaned.logprob_terms(chain), lp, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("k,ft", [(1, None), (4, 2)])
def test_scored_actions_count_in_the_terms_and_bound_the_chunk(k, ft):
    pol = TinyFlow()
    summed, meaned = agent_for(pol, k, ft), agent_for(pol, k, ft)
    summed.scored_actions = meaned.scored_actions = 1
    meaned.normalize = True
    obs = {"state": np.random.default_rng(2).uniform(-1, 1, (4, 2)).astype(np.float32)}
    with torch.no_grad():
        z = summed.embed(obs)
        chain, lp = summed.sample(z, torch.Generator().manual_seed(6))
        full = agent_for(pol, k, ft).log_prob(z, chain)[0]
    assert meaned.logprob_terms(chain) == ((ft or k) + 1) * H * A - (H - 1) * A
    torch.testing.assert_close(meaned.log_prob(z, chain)[0] * meaned.logprob_terms(chain), lp, atol=1e-4, rtol=1e-5)
    assert not torch.allclose(lp, full)  # the left-out actions carried density
    with pytest.raises(ConfigError, match="scored_actions"):
        NoisyFlow(pol, summed.noise, k, ft, scored_actions=H + 1)


def test_the_critic_reads_the_episode_s_time_when_asked():
    torch.manual_seed(0)
    timed, plain = ppoflow.Critic(6, 16, use_time=True), ppoflow.Critic(6, 16)
    z = torch.randn(3, 6)
    early, late = timed(z, None, torch.zeros(3)), timed(z, None, torch.ones(3))
    assert early.shape == (3,) and not torch.allclose(early, late)
    assert plain(z).shape == (3,)
    with pytest.raises(ConfigError, match="critic_time_limit"):
        PPOFlowConfig(critic_time_limit=0)


class PrivilegedLineReach(LineReach):
    """LineReach whose observation also holds the distance to the goal, as a privileged critic input."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = gym.spaces.Dict({**self.observation_space.spaces,
                                                  "privileged": gym.spaces.Box(-9, 9, (1,), np.float32)})

    def _obs(self) -> dict:
        return {**super()._obs(), "privileged": np.array([self.goal - self.pos], dtype=np.float32)}


def test_a_privileged_critic_reads_the_env_s_state(tmp_path):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=2, decisions_per_env=3, total_env_steps=10_000, minibatch_size=6,
                        critic_privileged=True)
    vec = ppoflow.make_envs(cfg, pol, [PrivilegedLineReach] * 2, backend="sync")
    out = ppoflow.train(cfg, pol, vec, tmp_path / "run", progress=False, max_iterations=1)
    critic = out["critic"]
    assert critic.privileged_dim == 1
    z = torch.zeros(2, critic.head[0].in_features - 1)
    near, far = ({"privileged": np.array([[d], [d]], np.float32)} for d in (0.0, 2.0))
    assert not torch.allclose(critic(z, near), critic(z, far))  # the value depends on it
    with pytest.raises(ConfigError, match="no 'privileged' observation"):
        ppoflow.train(cfg, pol, envs(2, cfg, pol), tmp_path / "other", progress=False, max_iterations=1)


def test_noise_net_bounds_and_init():
    net = NoiseNet(3, H, A, sigma_min=0.08, sigma_max=0.14, init_std=0.1)
    assert torch.allclose(net(torch.randn(7, 3)), torch.full((7, H, A), 0.1), atol=1e-6)
    with pytest.raises(ConfigError, match="sigma_min"):
        NoiseNet(3, H, A, sigma_min=0.2, sigma_max=0.1)


def test_strict_numerics_switches_tf32_and_the_fast_path_off_and_back():
    b = torch.backends
    before = (b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32, b.mha.get_fastpath_enabled())
    with ppoflow.strict_numerics(True):
        assert not (b.cudnn.allow_tf32 or b.cuda.matmul.allow_tf32 or b.mha.get_fastpath_enabled())
    assert (b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32, b.mha.get_fastpath_enabled()) == before


# ---------------------------------------------------------------------- GAE by hand
def test_gae_over_macro_actions_with_truncation_and_termination():
    g, lam = 0.9, 0.5
    # one env, 4 decisions: [2 steps, reward 1] -> [3 steps, truncated: bootstrap V(final)=4]
    #                        -> [1 step, reward 2, terminated] -> [2 steps, rollout ends: V(next)=3]
    rewards = np.array([[1.0], [0.0], [2.0], [0.5]])
    values = np.array([[2.0], [1.0], [1.5], [1.0]])
    next_v = np.array([[1.0], [4.0], [99.0], [3.0]])  # 99: after termination, must be ignored
    steps = np.array([[2], [3], [1], [2]])
    term = np.array([[0.0], [0.0], [1.0], [0.0]])
    ended = np.array([[0.0], [1.0], [1.0], [0.0]])
    adv, ret = gae(rewards, values, next_v, steps, term, ended, g, lam)
    d3 = 0.5 + 0.81 * 3.0 - 1.0            # 1.93
    d2 = 2.0 - 1.5                          # terminal: no bootstrap -> 0.5
    d1 = 0.0 + 0.729 * 4.0 - 1.0            # truncation: the final observation's value -> 1.916
    d0 = 1.0 + 0.81 * 1.0 - 2.0             # -0.19
    a3, a2, a1 = d3, d2, d1                 # ends cut the trace (a2 does not see a3, a1 not a2)
    a0 = d0 + 0.81 * lam * a1
    np.testing.assert_allclose(adv[:, 0], [a0, a1, a2, a3], rtol=1e-12)
    np.testing.assert_allclose(ret, adv + values)


def test_chunk_env_sums_discounted_rewards_and_stops_at_the_end():
    env = ChunkEnv(LineReach(), H, 3, 0.5)
    env.reset(seed=0)
    env.unwrapped.goal = 0.5
    _, r, term, trunc, info = env.step(np.ones((H, A)))  # 0.25, 0.5 (success at step 2): stops
    assert term and not trunc and info["chunk_steps"] == 2 and r == pytest.approx(0.5) and info["chunk_return"] == 1
    with pytest.raises(ConfigError, match="action_steps"):
        ChunkEnv(LineReach(), H, H + 1, 0.9)


def test_truncated_episode_reports_its_true_final_observation():
    vec = chunk_vec([LineReach] * 2, 2, horizon=H, action_steps=H, gamma=1.0, mode="sync")
    vec.reset(seed=0)
    for e in vec.vec.envs:
        e.unwrapped.goal = 5.0  # unreachable: both episodes run to the time limit
    vec.step(np.zeros((2, H, A)))
    st = vec.step(np.ones((2, H, A)))
    assert st.truncated.all() and not st.terminated.any()
    np.testing.assert_allclose(st.final_obs[0]["state"][0], 1.0)  # the true last position, not the reset one
    np.testing.assert_allclose(st.obs["state"][:, 0], 0.0)
    assert st.steps.tolist() == [4, 4]
    vec.close()


# ---------------------------------------------------------------------- the ratio guard
def test_ratio_guard_fires_on_a_random_recomputation(tmp_path):
    pol = bc_policy(steps=50)
    pol.augment = 0.05  # embed is no longer deterministic: the stored log-probs cannot be reproduced
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=64, k=2, minibatch_size=8)
    with pytest.raises(PPOFlowError, match=r"ratio guard.*random in eval mode"):
        ppoflow.train(cfg, pol, envs(4, cfg, pol), tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_ratio_guard_names_active_dropout(tmp_path):
    pol = TinyFlow(dropout=0.5)
    cfg = PPOFlowConfig(num_envs=2, decisions_per_env=2, total_env_steps=16, minibatch_size=4)
    vec = envs(2, cfg, pol)
    pol.train = lambda mode=True: pol  # a policy that ignores eval(): its dropout stays on
    with pytest.raises(PPOFlowError, match="dropout is active"):
        ppoflow.train(cfg, pol, vec, tmp_path / "run", progress=False)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=10_000, minibatch_size=8, update_epochs=2)
    calls = {"n": 0}
    orig = ppoflow.Critic.forward

    def forward(self, z, obs=None, time=None):  # the critic goes NaN in the second iteration's update
        v = orig(self, z, obs, time)
        if torch.is_grad_enabled():
            calls["n"] += 1
            if calls["n"] > 4:
                return v * float("nan")
        return v

    monkeypatch.setattr(ppoflow.Critic, "forward", forward)
    run = tmp_path / "run"
    with pytest.raises(PPOFlowError, match="iteration 1, epoch 0, minibatch 0: the value loss is nan"):
        ppoflow.train(cfg, pol, envs(4, cfg, pol), run, progress=False)
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    assert state["iteration"] == 1
    assert all(torch.isfinite(v).all() for v in state["critic"].values())


def test_a_run_with_executed_scoring_and_a_timed_critic_keeps_its_guard(tmp_path):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=10_000, minibatch_size=8, action_steps=2,
                        critic_time_limit=MAX_STEPS)
    out = ppoflow.train(cfg, pol, envs(4, cfg, pol), tmp_path / "run", progress=False, max_iterations=2)
    assert out["agent"].scored_actions == 2 and out["critic"].use_time
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["guard_max_dev"] <= cfg.ratio_guard_tol for r in rows)
    assert all(math.isfinite(r["explained_variance"]) and math.isfinite(r["approx_kl_chain"]) for r in rows)
    assert 0 < rows[0]["env_steps"] <= 4 * 4 * 2  # 2 of the chunk's 4 actions run per decision


# ---------------------------------------------------------------------- resume
def test_checkpoint_resume_requires_the_same_config(tmp_path):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=150, minibatch_size=8, lr_actor=1e-3)
    run = tmp_path / "run"
    first = ppoflow.train(cfg, pol, envs(4, cfg, pol), run, progress=False, max_iterations=1)
    assert first["iterations"] == 1 and not first["finished"]
    saved = torch.load(run / "checkpoint.pt", weights_only=False)
    assert saved["iteration"] == 1 and saved["env_steps"] == first["env_steps"]
    assert ppoflow.train(cfg, pol, envs(4, cfg, pol), run, progress=False, time_budget_s=0.0,
                         resume=True)["iterations"] == 1  # no time left: resumes, does nothing
    first = ppoflow.train(cfg, pol, envs(4, cfg, pol), run, resume=True, progress=False)
    assert first["finished"] and first["iterations"] >= 3
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, first["iterations"] + 1))
    assert rows[-1]["kind"] == "ppoflow" and rows[-1]["step"] == rows[-1]["env_steps"]
    assert all(r["guard_max_dev"] == 0.0 for r in rows)  # the guard batch is rescored exactly
    for key in ("success_rate", "success_ci95_lo", "approx_kl", "clip_frac", "sigma", "value_loss", "entropy",
                "env_steps_per_s", "ratio_mean"):
        assert key in rows[-1]
    with pytest.raises(ConfigError, match="already holds"):
        ppoflow.train(cfg, pol, envs(4, cfg, pol), run, progress=False)
    other = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=80, minibatch_size=8, lr_actor=2e-3)
    with pytest.raises(ConfigError, match=r"lr_actor: 0.001 -> 0.002"):
        ppoflow.train(other, pol, envs(4, other, pol), run, resume=True, progress=False)


# ---------------------------------------------------------------------- it learns
@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 4])
def test_ppoflow_lifts_a_biased_bc_policy(tmp_path, k):
    pol = bc_policy()
    before = success_rate(agent_for(pol, k))
    assert before < 0.3, before
    cfg = PPOFlowConfig(seed=1, num_envs=16, decisions_per_env=8, total_env_steps=16 * 8 * 4 * 20, k=k,
                        sigma_min=0.05, sigma_max=0.3, init_std=0.2, noise_hidden=32, gamma=0.99,
                        clip_eps=0.2, lr_actor=1e-3, lr_noise=1e-3, lr_critic=3e-3, minibatch_size=64,
                        update_epochs=4, target_kl=None, critic_hidden=64)
    out = ppoflow.train(cfg, pol, envs(16, cfg, pol), tmp_path / "run", progress=False)
    after = success_rate(out["agent"])
    assert after > 0.8, (before, after)
    assert not math.isnan(out["last"]["success_rate"])


# ---------------------------------------------------------------------- the Ray backend
@pytest.mark.slow
def test_ray_backend_steps_like_the_local_vector():
    pytest.importorskip("ray")
    from rl.rollout import RayChunkVec

    kw = {"horizon": H, "action_steps": 2, "gamma": 0.9}
    local = chunk_vec([LineReach] * 3, 3, mode="sync", **kw)
    remote = RayChunkVec([LineReach] * 3, 3, actors=2, step_timeout_s=120, **kw)
    try:
        a, b = local.reset(seed=5), remote.reset(seed=5)
        np.testing.assert_array_equal(a["state"], b["state"])
        rng = np.random.default_rng(0)
        for _ in range(6):
            chunks = rng.uniform(-1, 1, (3, H, A)).astype(np.float32)
            x, y = local.step(chunks), remote.step(chunks)
            np.testing.assert_array_equal(x.obs["state"], y.obs["state"])
            for f in ("reward", "steps", "terminated", "truncated"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            assert [o is None for o in x.final_obs] == [o is None for o in y.final_obs]
    finally:
        local.close()
        remote.close()


# ---------------------------------------------------------------------- a real pack with a tiny FlowVLA
@pytest.mark.slow
def test_smoke_two_iterations_on_a_pack_with_a_tiny_flowvla(tmp_path, tmp_path_factory):
    from click.testing import CliRunner

    from rl.envs import EnvConfig
    from rl.envs.spaces import observation_space
    from rl.policies.base import STATE
    from rl.policies.configuration_flow_vla import FlowVLAConfig, TextConfig, VisionConfig, resolve
    from rl.policies.modeling_flow_vla import FlowVLA
    from rl.ppoflow_cli import load_policy, ppoflow
    from tests.helpers.rl_packs import pack as make_pack

    pk = make_pack(tmp_path_factory)
    instruction = pk.scene(pk.scene_ids[0]).graph.instruction
    a_dim = EnvConfig().action_dim
    s_dim = observation_space(EnvConfig(), 9)["proprio"].shape[0]  # the Panda's 7 arm + 2 finger joints
    cfg = resolve(FlowVLAConfig(chunk_size=4, n_action_steps=2, num_inference_steps=3, d_model=16, heads=2,
                                obs_layers=1, expert_layers=1, ff_mult=2, vision=VisionConfig(channels=(8, 16), grid=2),
                                text=TextConfig(layers=0, vocab=("<pad>", "<unk>", *sorted(set(instruction.split()))))),
                  action_dim=a_dim, state_dim=s_dim, cameras=("front",), robot_type="panda", tasks=[instruction])
    torch.manual_seed(0)
    stats = {STATE: {"mean": [0.0] * s_dim, "std": [1.0] * s_dim},
             "action": {"mean": [0.0] * a_dim, "std": [0.5] * a_dim}}
    FlowVLA(cfg, stats).save(tmp_path / "bc")
    run = tmp_path / "run"
    args = ["--init", str(tmp_path / "bc"), "--pack", str(pk.root), "-o", str(run), "--num-envs", "2",
            "--steps", "13", "--decisions-per-env", "3", "--k", "1", "--minibatch-size", "3", "--backend", "sync",
            "--image-size", "32", "--max-episode-steps", "8", "--eval-episodes", "2", "--no-randomize"]
    res = CliRunner().invoke(ppoflow, [*args, "--max-iterations", "1", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    first = json.loads(res.output)
    assert first["iterations"] == 1 and not first["finished"] and "eval" not in first
    res = CliRunner().invoke(ppoflow, [*args, "--max-iterations", "1", "--resume", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    second = json.loads(res.output)
    assert second["iterations"] == 2 and second["finished"]  # 2 x 6 decisions of 1-2 steps pass 13 steps
    ev = json.loads((run / "eval.json").read_text())["pool"]
    assert ev["episodes"] == 2 and 0 <= ev["success_ci95"][0] <= ev["success_rate"] <= ev["success_ci95"][1]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2] and all(math.isfinite(r["value_loss"]) for r in rows)
    tuned = load_policy(run / "policy", "cpu")
    assert tuned.num_inference_steps == 1  # deployed at the fine-tuning K
    before = load_policy(tmp_path / "bc", "cpu")
    changed = [k for k, v in tuned.state_dict().items() if not torch.equal(v, before.state_dict()[k])]
    assert changed, "fine-tuning changed no weight"
    res = CliRunner().invoke(ppoflow, [*args, "--resume", "--k", "2"])
    assert res.exit_code != 0 and "k: 1 -> 2" in str(res.exception)


def test_adaptive_lr_follows_the_kl_the_updates_reach(tmp_path):
    pol = bc_policy(steps=50)
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=10_000, minibatch_size=8,
                        lr_actor=0.3, lr_noise=0.3, adaptive_lr=True, target_kl=0.01, update_epochs=2)
    ppoflow.train(cfg, pol, envs(4, cfg, pol), tmp_path / "run", progress=False, max_iterations=3)
    lrs = [json.loads(x)["lr_actor"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lrs[-1] < 0.3 / 1.5 ** 2 and all(b <= a for a, b in zip(lrs, lrs[1:], strict=False))


def test_adaptive_lr_rule_and_bounds():
    cfg = PPOFlowConfig(lr_actor=1e-4, lr_noise=1e-3, adaptive_lr=True, target_kl=0.02)
    w = [nn.Parameter(torch.zeros(1)) for _ in range(3)]
    opt = torch.optim.Adam([{"params": [w[0]], "lr": 1e-4}, {"params": [w[1]], "lr": 1e-3},
                            {"params": [w[2]], "lr": 5e-4}])
    ppoflow._adapt_lr(opt, cfg, 0.05, True)  # past twice the target: down
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-4 / 1.5, 1e-3 / 1.5, 5e-4])
    ppoflow._adapt_lr(opt, cfg, 0.005, True)  # small, but the update stopped early: kept
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-4 / 1.5)
    for _ in range(20):  # small and complete: up, to 10x the configured rates at most; the critic's never moves
        ppoflow._adapt_lr(opt, cfg, 0.001, False)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-3, 1e-2, 5e-4])
    for _ in range(40):
        ppoflow._adapt_lr(opt, cfg, 1.0, True)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-7, 1e-6, 5e-4])
    with pytest.raises(ConfigError, match="adaptive_lr"):
        PPOFlowConfig(adaptive_lr=True, target_kl=None)
