"""PPOFlow's gradient-agreement diagnostic: it tells signal from noise, and watching does not change training."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from rl import ppoflow
from rl.ppoflow import PPOFlowConfig
from rl.ppoflow_math import grad_agreement
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
