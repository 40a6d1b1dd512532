"""PPOFlow's diagnostics: gradient agreement tells signal from noise, the KL split names what moved, and watching
does not change training."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from rl import ppoflow
from rl.ppoflow import PPOFlowConfig
from rl.ppoflow_math import episode_ids, grad_agreement, grad_noise_scale, kl_split
from tests.rl.test_ppoflow import bc_policy, envs

D = 50


class LinearGaussian(nn.Module):
    """A policy whose chain is one number: log N(chain; x . w, 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(D))

    def embed(self, obs: dict) -> torch.Tensor:
        return torch.as_tensor(np.asarray(obs["x"]), dtype=torch.float32)

    def log_prob(self, z: torch.Tensor, chain: torch.Tensor):
        return -0.5 * (chain - z @ self.w) ** 2, None


def _batch(n: int, seed: int):
    g = np.random.default_rng(seed)
    x, chain = g.standard_normal((n, D)), g.standard_normal(n)
    return {"x": x.astype(np.float32)}, torch.as_tensor(chain, dtype=torch.float32), x


@pytest.mark.parametrize("frozen", [False, True])
def test_gradient_agreement_tells_a_consistent_signal_from_noise(frozen):
    agent = LinearGaussian()
    obs, chain, x = _batch(4000, 0)
    z = torch.as_tensor(x, dtype=torch.float32) if frozen else None
    # advantages that reward moving the mean along x[0] whenever the sampled chain did: one direction
    signal = torch.as_tensor(chain.numpy() * x[:, 0], dtype=torch.float32)
    s = grad_agreement(agent, obs, z, chain, signal, list(agent.parameters()), np.random.default_rng(1), 64)
    noise = torch.as_tensor(np.random.default_rng(2).standard_normal(4000), dtype=torch.float32)
    r = grad_agreement(agent, obs, z, chain, noise, list(agent.parameters()), np.random.default_rng(1), 64)
    assert s["pg_grad_cos"] > 0.8 and s["pg_grad_snr"] > 5, s
    assert abs(r["pg_grad_cos"]) < 0.4 and r["pg_grad_snr"] < 1, r
    assert s["pg_grad_norm"] > 0 and -1 <= r["pg_grad_cos"] <= 1
    assert agent.w.grad is None  # it reads gradients, it does not leave them on the parameters


def test_the_noise_scale_matches_the_linear_gaussian_s_closed_form():
    # per decision the gradient of -a * log_prob is -a * chain * x (w = 0). With a = chain * x[0] its mean is -e_0
    # (|g|^2 = 1) and its noise energy E[chain^4] E[x_0^2 |x|^2] - 1 = 3 (3 + D - 1) - 1 = 155; an "episode" of 8
    # decisions has |g|^2 = 64 and tr C = 8 * 155, so a batch needs 155 / 8 = 19.4 of them for SNR 1.
    agent = LinearGaussian()
    obs, chain, x = _batch(4000, 0)
    episodes = np.arange(4000) // 8
    signal = torch.as_tensor(chain.numpy() * x[:, 0], dtype=torch.float32)
    s = grad_noise_scale(agent, obs, None, chain, signal, list(agent.parameters()), episodes, 64)
    assert 0.85 * 64 < s["pg_signal_sq"] < 1.15 * 64, s
    assert 0.8 * 8 * 155 < s["pg_noise_tr"] < 1.2 * 8 * 155, s
    assert 0.7 * 155 / 8 < s["pg_noise_scale"] < 1.3 * 155 / 8, s
    assert s["pg_batch_snr"] == pytest.approx(500 * s["pg_signal_sq"] / s["pg_noise_tr"])
    noise = torch.as_tensor(np.random.default_rng(2).standard_normal(4000), dtype=torch.float32)
    r = grad_noise_scale(agent, obs, None, chain, noise, list(agent.parameters()), episodes, 64)
    assert abs(r["pg_batch_snr"]) < 1 and r["pg_noise_scale"] > 20 * s["pg_noise_scale"], r
    assert agent.w.grad is None
    few = grad_noise_scale(agent, obs, None, chain, noise, list(agent.parameters()), np.zeros(4000, int), 64)
    assert all(np.isnan(v) for v in few.values())  # one episode says nothing about the spread between episodes


def test_episode_ids_follow_each_env_s_episode_ends():
    ended = np.array([[0, 1], [1, 0], [0, 0], [0, 1]])  # (T=4, N=2): env 0 ends at t=1; env 1 at t=0 and t=3
    ids = episode_ids(ended).reshape(4, 2)
    assert ids[0, 0] == ids[1, 0] != ids[2, 0] == ids[3, 0]
    assert ids[0, 1] != ids[1, 1] == ids[2, 1] == ids[3, 1]
    assert len(set(ids.reshape(-1))) == 4 and ids.max() == 3


def test_the_diagnostic_is_logged_and_leaves_training_unchanged(tmp_path):
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=10_000, minibatch_size=8, lr_actor=1e-3)
    outs = {}
    for on in (False, True):
        pol = bc_policy(steps=50)
        c = dataclasses.replace(cfg, grad_diag=on)
        outs[on] = ppoflow.train(c, pol, envs(4, c, pol), tmp_path / f"run{on}", progress=False, max_iterations=2)
    a, b = (outs[k]["agent"].state_dict() for k in (False, True))
    assert all(torch.equal(a[k], b[k]) for k in a)  # same updates with and without it
    rows = [json.loads(x) for x in (tmp_path / "runTrue" / "metrics.jsonl").read_text().splitlines()]
    assert all(-1 <= r["pg_grad_cos"] <= 1 and r["pg_grad_snr"] >= 0 and r["pg_grad_norm"] > 0 for r in rows)
    assert all(r["pg_noise_tr"] > 0 and r["pg_noise_scale"] > 0 for r in rows)
    off = json.loads((tmp_path / "runFalse" / "metrics.jsonl").read_text().splitlines()[0])
    assert "pg_grad_cos" not in off


def test_the_critic_trains_on_after_the_policy_s_kl_stop(tmp_path):
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=8, total_env_steps=10_000, minibatch_size=8, lr_actor=1e-3,
                        target_kl=1e-12, update_epochs=3)  # every update stops after its first minibatch
    outs = {}
    for on in (False, True):
        pol = bc_policy(steps=50)
        c = dataclasses.replace(cfg, critic_after_stop=on)
        outs[on] = ppoflow.train(c, pol, envs(4, c, pol), tmp_path / f"run{on}", progress=False, max_iterations=1)
        assert outs[on]["last"]["early_stop"]
    a, b = (outs[k]["agent"].state_dict() for k in (False, True))
    assert all(torch.equal(a[k], b[k]) for k in a)  # the policy took the same single step
    ca, cb = (outs[k]["critic"].state_dict() for k in (False, True))
    assert any(not torch.equal(ca[k], cb[k]) for k in ca)  # the critic took more


def test_the_closed_form_kl_matches_torch_and_splits_into_mean_and_std_parts():
    g = torch.Generator().manual_seed(0)
    mo, mn = torch.randn(6, 2, 4, 3, generator=g), torch.randn(6, 2, 4, 3, generator=g)
    so, sn = 0.05 + 0.1 * torch.rand(6, 2, 4, 3, generator=g), 0.05 + 0.1 * torch.rand(6, 2, 4, 3, generator=g)
    keep = torch.ones(2, 4, 3)
    keep[-1, 2:] = 0.0  # the last transition scores its first 2 actions only
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(mo.double(), so.double()),
                                            torch.distributions.Normal(mn.double(), sn.double()))
    want = (ref * keep.double()).flatten(1).sum(1).mean().item()
    got = kl_split((mo, so, keep), (mn, sn, keep))
    assert got["kl_closed_form"] == pytest.approx(want, rel=1e-9)
    only_mean = kl_split((mo, so, keep), (mn, so, keep))
    only_std = kl_split((mo, so, keep), (mo, sn, keep))
    assert only_mean["kl_std_part"] == pytest.approx(0.0, abs=1e-12) and only_mean["kl_mean_part"] > 0
    assert only_std["kl_mean_part"] == 0.0 and only_std["mean_shift_rms"] == 0.0 and only_std["kl_std_part"] > 0


@pytest.mark.parametrize("frozen", ["actor", "noise"])
def test_the_kl_split_names_the_part_that_trained(tmp_path, frozen):
    lrs = {"lr_actor": 0.0, "lr_noise": 1e-2} if frozen == "actor" else {"lr_actor": 1e-3, "lr_noise": 0.0}
    cfg = PPOFlowConfig(num_envs=4, decisions_per_env=4, total_env_steps=10_000, minibatch_size=8, grad_diag=True,
                        target_kl=None, **lrs)
    pol = bc_policy(steps=50)
    ppoflow.train(cfg, pol, envs(4, cfg, pol), tmp_path / "run", progress=False, max_iterations=1)
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    moved, still = ("kl_std_part", "kl_mean_part") if frozen == "actor" else ("kl_mean_part", "kl_std_part")
    assert row[moved] > 0 and row[still] == 0.0, row
    assert row["kl_closed_form"] == pytest.approx(row["kl_mean_part"] + row["kl_std_part"])
