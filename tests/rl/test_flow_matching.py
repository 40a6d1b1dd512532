"""The shared flow-matching math against closed forms and independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from rl.policies import flow_matching as fm


def test_interpolation_endpoints_and_target():
    x0, x1 = torch.randn(4, 3, 2), torch.randn(4, 3, 2)
    xt, u = fm.interpolate(x0, x1, torch.tensor([0.0, 1.0, 0.5, 0.25]))
    assert torch.allclose(xt[0], x0[0]) and torch.allclose(xt[1], x1[1])
    assert torch.allclose(xt[2], 0.5 * (x0[2] + x1[2]))
    assert torch.allclose(u, x1 - x0)


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_integrating_the_true_straight_velocity_reaches_the_data(steps):
    x0, x1 = torch.randn(5, 4, 7), torch.randn(5, 4, 7)
    out = fm.integrate(lambda x, t: x1 - x0, x0, steps)
    assert torch.allclose(out, x1, atol=1e-5)


def test_euler_on_a_linear_ode_matches_the_closed_form():
    a, steps = 0.7, 5
    x0 = torch.randn(3, 2, 2)
    out = fm.integrate(lambda x, t: a * x, x0, steps)
    assert torch.allclose(out, x0 * (1 + a / steps) ** steps, atol=1e-5)


def test_time_grid_and_bad_steps():
    assert torch.allclose(fm.time_grid(4), torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0]))
    with pytest.raises(ValueError, match="num_inference_steps"):
        fm.time_grid(0)


def test_time_sampling_distributions_have_the_right_means():
    g = torch.Generator().manual_seed(0)
    u = fm.sample_time(200_000, "uniform", generator=g)
    assert abs(u.mean().item() - 0.999 / 2) < 0.005 and u.min() >= 0 and u.max() <= 0.999
    b = fm.sample_time(200_000, "beta", alpha=1.5, beta=1.0, generator=g)
    # s ~ Beta(1.5, 1) has mean 0.6, so t = 0.999 (1 - s) has mean 0.3996 and variance 0.999^2 * 0.0686
    assert abs(b.mean().item() - 0.999 * 0.4) < 0.005
    assert abs(b.var().item() - 0.999 ** 2 * (1.5 / (2.5 ** 2 * 3.5))) < 0.003
    b2 = fm.sample_time(50_000, "beta", alpha=0.5, beta=0.5, generator=g)  # the shape < 1 path
    assert abs(b2.mean().item() - 0.999 * 0.5) < 0.01
    with pytest.raises(ValueError):
        fm.sample_time(3, "lognormal")
    again = fm.sample_time(10, "beta", generator=torch.Generator().manual_seed(3))
    assert torch.equal(again, fm.sample_time(10, "beta", generator=torch.Generator().manual_seed(3)))


def test_flow_loss_ignores_padded_steps():
    pred, target = torch.zeros(2, 3, 1), torch.ones(2, 3, 1)
    target[:, 2] = 100.0
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    assert fm.flow_loss(pred, target, mask).item() == pytest.approx(1.0)
    assert fm.flow_loss(pred, target).item() > 1000


def _field():
    w = torch.tensor(0.3)
    return lambda x, t: -w * x + t.reshape(-1, 1, 1)


def test_chain_log_prob_matches_an_independent_computation():
    torch.manual_seed(0)
    steps, velocity = 4, _field()
    std = lambda x, t, k: 0.05 + 0.01 * k + 0.0 * x  # noqa: E731
    x0 = torch.randn(6, 3, 2)
    chain, means, stds = fm.sample_chain(velocity, x0, steps, std, generator=torch.Generator().manual_seed(1))
    assert chain.shape == (6, steps + 1, 3, 2) and torch.equal(chain[:, 0], x0)
    lp = fm.chain_log_prob(chain, velocity, std)
    ref = torch.distributions.Normal(0.0, 1.0).log_prob(x0).sum(dim=(1, 2)).double()
    for k in range(steps):
        t = k / steps
        mean = chain[:, k] + (-0.3 * chain[:, k] + t) / steps
        ref += torch.distributions.Normal(mean, 0.05 + 0.01 * k).log_prob(chain[:, k + 1]).sum(dim=(1, 2)).double()
    assert torch.allclose(lp.double(), ref, atol=1e-3)
    assert torch.allclose(means[:, 0], x0 + (-0.3 * x0) / steps, atol=1e-6)
    norm = fm.chain_log_prob(chain, velocity, std, normalize=True)
    assert torch.allclose(norm, lp / ((steps + 1) * 6), atol=1e-4)


def test_one_step_chain_is_a_gaussian_with_closed_form_log_prob():
    sigma = 0.1
    velocity = _field()
    x0 = torch.randn(8, 2, 3)
    chain, _, _ = fm.sample_chain(velocity, x0, 1, lambda x, t, k: torch.full_like(x, sigma))
    mu = x0 + (-0.3 * x0)
    x1 = chain[:, 1]
    d = x1.numel() // 8
    closed = (-0.5 * ((x1 - mu) / sigma) ** 2).sum(dim=(1, 2)) - d * (math.log(sigma) + 0.5 * math.log(2 * math.pi))
    closed += (-0.5 * x0 ** 2).sum(dim=(1, 2)) - d * 0.5 * math.log(2 * math.pi)
    got = fm.chain_log_prob(chain, velocity, lambda x, t, k: torch.full_like(x, sigma))
    assert torch.allclose(got, closed, atol=1e-4)
    excl = fm.chain_log_prob(chain, velocity, lambda x, t, k: torch.full_like(x, sigma), include_initial=False)
    assert torch.allclose(got - excl, fm.gaussian_log_prob(x0, torch.zeros_like(x0), 1.0).sum(dim=(1, 2)))


def test_only_the_last_ft_steps_are_noisy():
    velocity = _field()
    x0 = torch.randn(4, 2, 2)
    chain, means, stds = fm.sample_chain(velocity, x0, 5, lambda x, t, k: torch.full_like(x, 0.2), ft_steps=2)
    assert torch.equal(chain[:, 1:4], means[:, :3]) and torch.all(stds[:, :3] == 0)
    assert torch.all(stds[:, 3:] == 0.2) and not torch.equal(chain[:, 4:], means[:, 3:])
    lp = fm.chain_log_prob(chain, velocity, lambda x, t, k: torch.full_like(x, 0.2), ft_steps=2,
                           include_initial=False)
    ref = sum(fm.gaussian_log_prob(chain[:, k + 1], means[:, k], 0.2).sum(dim=(1, 2)) for k in (3, 4))
    assert torch.allclose(lp, ref, atol=1e-4)
    assert fm.noisy_steps(3, None) == [True] * 3
    with pytest.raises(ValueError, match="ft_steps"):
        fm.noisy_steps(3, 4)


def test_a_changed_policy_changes_the_log_prob():
    chain, _, _ = fm.sample_chain(_field(), torch.randn(3, 2, 2), 3, lambda x, t, k: torch.full_like(x, 0.1))
    same = fm.chain_log_prob(chain, _field(), lambda x, t, k: torch.full_like(x, 0.1))
    other = fm.chain_log_prob(chain, lambda x, t: 0.0 * x, lambda x, t, k: torch.full_like(x, 0.1))
    assert not torch.allclose(same, other)


def test_entropy_of_a_diagonal_gaussian():
    s = torch.full((2, 3, 4), 0.5)
    ent = fm.gaussian_entropy(s, normalize=False)
    assert torch.allclose(ent, torch.full((2,), 12 * (0.5 * (1 + math.log(2 * math.pi)) + math.log(0.5))))


def test_scored_actions_leave_out_the_unexecuted_end_of_the_last_transition():
    torch.manual_seed(2)
    steps, velocity = 3, _field()
    std = lambda x, t, k: 0.1 + 0.0 * x  # noqa: E731
    x0 = torch.randn(5, 4, 2)
    chain, means, _ = fm.sample_chain(velocity, x0, steps, std, generator=torch.Generator().manual_seed(4))
    got = fm.chain_log_prob(chain, velocity, std, scored_actions=2)
    ref = fm.gaussian_log_prob(x0, torch.zeros_like(x0), 1.0).sum(dim=(1, 2))
    for k in range(steps):  # earlier transitions in full, the last one's first 2 actions only
        rows = slice(0, 2) if k == steps - 1 else slice(None)
        ref = ref + fm.gaussian_log_prob(chain[:, k + 1, rows], means[:, k, rows], 0.1).sum(dim=(1, 2))
    assert torch.allclose(got, ref, atol=1e-4)
    moved = chain.clone()
    moved[:, -1, 2:] += 5.0  # the unexecuted actions of the chunk: nothing depends on them
    assert torch.allclose(fm.chain_log_prob(moved, velocity, std, scored_actions=2), got, atol=1e-5)
    assert not torch.allclose(fm.chain_log_prob(moved, velocity, std), fm.chain_log_prob(chain, velocity, std))
    terms = (steps + 1) * 8 - 2 * 2  # x_0 and 3 transitions of 4 x 2, less the last one's 2 x 2 left out
    assert torch.allclose(fm.chain_log_prob(chain, velocity, std, scored_actions=2, normalize=True),
                          got / terms, atol=1e-5)
    whole = fm.chain_log_prob(chain, velocity, std)
    assert torch.equal(fm.chain_log_prob(chain, velocity, std, scored_actions=4), whole)
    with pytest.raises(ValueError, match="scored_actions"):
        fm.chain_log_prob(chain, velocity, std, scored_actions=5)
