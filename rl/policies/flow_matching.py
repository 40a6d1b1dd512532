"""Stateless flow-matching math shared by behaviour cloning and PPOFlow.

Convention: time runs from noise to data. ``x0 ~ N(0, I)`` is the noise, ``x1`` the action
chunk, and the straight path between them is ``x_t = (1 - t) x0 + t x1`` with the constant
velocity ``u = x1 - x0``. A policy learns ``v(x_t, t) ~ u``; sampling integrates
``dx/dt = v`` from ``t = 0`` to ``t = 1`` with K Euler steps.

The **stochastic chain** (for RL) turns each Euler step into a Gaussian transition,
``x_{k+1} ~ N(x_k + v(x_k, t_k) dt, diag(sigma_k^2))``, so the whole chain
``(x_0, ..., x_K)`` has a closed-form log-probability: the initial noise's standard normal
density plus each transition's Gaussian density. With K = 1 the policy is a single Gaussian
step from noise. Only the last ``ft_steps`` transitions may carry noise; the earlier ones are
deterministic and contribute nothing to the log-probability (their mean is their value).

Every log-probability is computed in float32, whatever autocast is active, and summed over
the chunk's steps and action dimensions (optionally averaged, see ``normalize``).
Tensors are ``(batch, horizon, action_dim)``; a ``std`` broadcasts against them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

Velocity = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``v(x, t)``: x ``(B, H, A)``, t ``(B,)`` in [0, 1] -> velocity ``(B, H, A)``."""
StdFn = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
"""``std(x, t, k)``: the k-th transition's standard deviation, broadcastable to ``(B, H, A)``."""

LOG_2PI = math.log(2.0 * math.pi)
TIME_DISTRIBUTIONS = ("uniform", "beta")


def sample_time(batch: int, distribution: str = "beta", *, alpha: float = 1.5, beta: float = 1.0,
                t_max: float = 0.999, generator: torch.Generator | None = None,
                device: torch.device | str | None = None) -> torch.Tensor:
    """Training times ``t`` in ``[0, t_max]``, shape ``(batch,)``.

    ``uniform`` draws ``t ~ U(0, t_max)``. ``beta`` draws ``s ~ Beta(alpha, beta)`` and returns
    ``t = t_max * (1 - s)``: with the default ``alpha=1.5, beta=1`` the mass leans towards
    ``t = 0`` (the noisy end), as pi0 and SmolVLA weight their training times.

    Raises:
        ValueError: an unknown distribution or non-positive shape parameters.

    """
    if distribution not in TIME_DISTRIBUTIONS:
        raise ValueError(f"time distribution {distribution!r} must be one of {TIME_DISTRIBUTIONS}")
    if distribution == "uniform":
        u = torch.rand(batch, generator=generator, device=device)
        return u * t_max
    if alpha <= 0 or beta <= 0:
        raise ValueError(f"Beta({alpha}, {beta}) needs positive parameters")
    # Beta via two Gammas keeps the generator usable (torch.distributions ignores generators).
    ga = _gamma(batch, alpha, generator, device)
    gb = _gamma(batch, beta, generator, device)
    s = ga / (ga + gb)
    return t_max * (1.0 - s)


def _gamma(n: int, shape: float, generator: torch.Generator | None, device) -> torch.Tensor:
    """Gamma(shape, 1) samples by Marsaglia-Tsang (with the shape < 1 boost), seeded by ``generator``."""
    boost = shape < 1.0
    d = (shape + 1.0 if boost else shape) - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    out = torch.empty(n, device=device)
    filled = 0
    for _ in range(100):  # acceptance is > 95% per draw: a few rounds at most
        x = torch.randn(n, generator=generator, device=device)
        u = torch.rand(n, generator=generator, device=device)
        v = (1.0 + c * x) ** 3
        ok = (v > 0) & (torch.log(u.clamp_min(1e-30)) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp_min(1e-30)))
        take = (d * v)[ok][: n - filled]
        out[filled: filled + take.numel()] = take
        filled += take.numel()
        if filled >= n:
            break
    if filled < n:
        raise RuntimeError("gamma sampler did not converge")
    if boost:
        u = torch.rand(n, generator=generator, device=device)
        out = out * u.clamp_min(1e-30) ** (1.0 / shape)
    return out


def interpolate(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The point ``x_t = (1 - t) x0 + t x1`` on the straight path and its velocity target ``x1 - x0``."""
    tt = t.reshape(-1, *([1] * (x0.dim() - 1))).to(x0.dtype)
    return (1.0 - tt) * x0 + tt * x1, x1 - x0


def flow_loss(v_pred: torch.Tensor, v_target: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean squared velocity error; ``mask`` ``(B, H)`` (1 = real step) drops padded steps of a chunk."""
    err = (v_pred.float() - v_target.float()) ** 2
    if mask is None:
        return err.mean()
    m = mask.float().unsqueeze(-1).expand_as(err)
    return (err * m).sum() / m.sum().clamp_min(1.0)


def time_grid(steps: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The K + 1 times ``0, 1/K, ..., 1`` of K Euler steps.

    Raises:
        ValueError: ``steps < 1``.

    """
    if steps < 1:
        raise ValueError(f"num_inference_steps = {steps} must be >= 1")
    return torch.linspace(0.0, 1.0, steps + 1, device=device)


def integrate(velocity: Velocity, x0: torch.Tensor, steps: int) -> torch.Tensor:
    """Deterministic K-step Euler integration from noise ``x0`` at t=0 to an action chunk at t=1."""
    grid = time_grid(steps, x0.device)
    x = x0
    for k in range(steps):
        t = grid[k].expand(x.shape[0])
        x = x + velocity(x, t) * (grid[k + 1] - grid[k])
    return x


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor | float) -> torch.Tensor:
    """Elementwise log-density of ``N(mean, std^2)`` at ``x``, in float32."""
    x, mean = x.float(), mean.float()
    std = torch.as_tensor(std, dtype=torch.float32, device=x.device)
    z = (x - mean) / std
    return -0.5 * z * z - torch.log(std) - 0.5 * LOG_2PI


def _reduce(lp: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Sum (or average, with ``normalize``) a ``(B, ...)`` log-density over everything but the batch."""
    flat = lp.reshape(lp.shape[0], -1)
    return flat.mean(dim=1) if normalize else flat.sum(dim=1)


def noisy_steps(steps: int, ft_steps: int | None) -> list[bool]:
    """Which of the K transitions carry noise: the last ``ft_steps`` (all when None).

    Raises:
        ValueError: ``ft_steps`` outside ``1..steps``.

    """
    if ft_steps is None:
        return [True] * steps
    if not 1 <= ft_steps <= steps:
        raise ValueError(f"ft_steps = {ft_steps} must be in 1..{steps} (the number of inference steps)")
    return [k >= steps - ft_steps for k in range(steps)]


def sample_chain(velocity: Velocity, x0: torch.Tensor, steps: int, std: StdFn, *,
                 ft_steps: int | None = None, generator: torch.Generator | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the stochastic chain from ``x0``.

    Args:
        velocity: the flow's velocity field.
        x0: initial noise ``(B, H, A)``.
        steps: K, the number of Euler transitions.
        std: the transition standard deviation ``std(x_k, t_k, k)``.
        ft_steps: only the last ``ft_steps`` transitions are noisy (None: all).
        generator: seeds the transition noise.

    Returns:
        ``chain`` ``(B, K + 1, H, A)`` (x_0 ... x_K; x_K is the action chunk), ``means``
        ``(B, K, H, A)`` (each transition's mean) and ``stds`` ``(B, K, H, A)`` (0 for a
        deterministic transition).

    """
    grid = time_grid(steps, x0.device)
    noisy = noisy_steps(steps, ft_steps)
    xs, means, stds = [x0], [], []
    x = x0
    for k in range(steps):
        t = grid[k].expand(x.shape[0])
        mean = x + velocity(x, t) * (grid[k + 1] - grid[k])
        if noisy[k]:
            s = torch.broadcast_to(std(x, t, k), mean.shape)
            eps = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
            x = mean + s * eps
        else:
            s = torch.zeros_like(mean)
            x = mean
        xs.append(x)
        means.append(mean)
        stds.append(s)
    return torch.stack(xs, 1), torch.stack(means, 1), torch.stack(stds, 1)


def transition_moments(chain: torch.Tensor, velocity: Velocity, std: StdFn, *, ft_steps: int | None = None,
                       scored_actions: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean and std of each noisy transition of stored chains, and which of their entries are scored.

    Args:
        chain: ``(B, K + 1, H, A)`` from :func:`sample_chain`.
        velocity: the policy's velocity field.
        std: the policy's transition std.
        ft_steps: as in :func:`sample_chain`.
        scored_actions: as in :func:`chain_log_prob`.

    Returns:
        ``mean`` and ``std`` ``(B, T, H, A)`` over the T noisy transitions (float32; T may be 0) and ``keep``
        ``(T, H, A)``: 1 where an entry counts (the last transition's first ``scored_actions`` rows, every
        row of the others).

    """
    steps, horizon = chain.shape[1] - 1, chain.shape[2]
    if scored_actions is not None and not 1 <= scored_actions <= horizon:
        raise ValueError(f"scored_actions = {scored_actions} must be in 1..{horizon} (the chunk length)")
    grid = time_grid(steps, chain.device)
    means, stds = [], []
    with torch.autocast(device_type=chain.device.type, enabled=False):
        for k, on in enumerate(noisy_steps(steps, ft_steps)):
            if not on:
                continue
            x = chain[:, k]
            t = grid[k].expand(x.shape[0])
            mean = x.float() + velocity(x, t).float() * (grid[k + 1] - grid[k])
            means.append(mean)
            stds.append(torch.broadcast_to(std(x, t, k).float(), mean.shape))
    shape = (chain.shape[0], 0, *chain.shape[2:])
    mean = torch.stack(means, 1) if means else chain.new_zeros(shape, dtype=torch.float32)
    sd = torch.stack(stds, 1) if stds else chain.new_ones(shape, dtype=torch.float32)
    keep = torch.ones_like(mean[0])
    if len(means) and scored_actions is not None:
        keep[-1, scored_actions:] = 0.0
    return mean, sd, keep


def chain_log_prob(chain: torch.Tensor, velocity: Velocity, std: StdFn, *, ft_steps: int | None = None,
                   normalize: bool = False, include_initial: bool = True,
                   scored_actions: int | None = None) -> torch.Tensor:
    """Log-probability ``(B,)`` of stored chains under a (possibly updated) policy.

    Recomputes each transition's mean and std from the stored ``x_k`` (:func:`transition_moments`) and
    sums the Gaussian log-densities of the noisy transitions, plus (``include_initial``) the standard
    normal density of ``x_0``. Deterministic transitions contribute nothing. Float32 throughout.

    Args:
        chain: ``(B, K + 1, H, A)`` from :func:`sample_chain`.
        velocity: the policy's velocity field.
        std: the policy's transition std.
        ft_steps: as in :func:`sample_chain`.
        normalize: average over the scored terms and dimensions instead of summing.
        include_initial: add ``log N(x_0; 0, I)``.
        scored_actions: score only the first ``n`` actions of the chunk in the *last* transition (the
            ones an environment executes). Nothing in the chain depends on the last transition's other
            actions, so leaving them out is their exact marginalisation; earlier transitions feed the
            velocity of later ones and always count in full. None: all ``H``.

    """
    mean, sd, keep = transition_moments(chain, velocity, std, ft_steps=ft_steps, scored_actions=scored_actions)
    noisy = [k for k, on in enumerate(noisy_steps(chain.shape[1] - 1, ft_steps)) if on]
    terms = []
    if include_initial:
        terms.append(gaussian_log_prob(chain[:, 0], torch.zeros_like(chain[:, 0]), 1.0))
    terms += [gaussian_log_prob(chain[:, k + 1], mean[:, j], sd[:, j]) for j, k in enumerate(noisy)]
    if not terms:
        return torch.zeros(chain.shape[0], device=chain.device)
    lp = torch.stack(terms, 1)
    if scored_actions is None or scored_actions == chain.shape[2]:  # (the last transition is always noisy)
        return _reduce(lp, normalize)
    full = torch.ones_like(lp[0])  # (terms, H, A): the last transition keeps its first `scored_actions` rows
    full[-1] = keep[-1]
    flat = (lp * full).reshape(lp.shape[0], -1).sum(dim=1)
    return flat / full.sum() if normalize else flat


def gaussian_entropy(std: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """Entropy ``(B,)`` of diagonal Gaussians with ``std`` ``(B, ...)`` (mean over dims, or the sum)."""
    ent = 0.5 * (1.0 + LOG_2PI) + torch.log(std.float())
    return _reduce(ent, normalize)
