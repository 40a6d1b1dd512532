"""PPOFlow's numerics outside its training loop: GAE over macro-actions, and the policy gradient's agreement.

:func:`grad_agreement` answers whether a rollout holds enough episodes for its policy gradient to point
somewhere: the cosine between the gradients of two random halves of the batch. With a true gradient g and
per-decision noise of energy v, a half of n/2 decisions has E[cos] ~ |g|^2 / (|g|^2 + 2v/n), so the whole
batch's signal-to-noise energy ratio is about 2c / (1 - c) (``pg_grad_snr``): below 1 the update is mostly
noise, and a batch k times larger raises it k times. :func:`grad_noise_scale` puts a number on it: the batch,
in episodes, at which the gradient's signal and noise energies are equal. :func:`kl_split` says what an update's KL
came from: the transitions' means moving (the actor) or their stds (the noise network).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from rl.policies.noise import take_embedding
from rl.rollout import take_obs


def gae(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray, steps: np.ndarray,
        terminated: np.ndarray, ended: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE over decisions ``(T, N)``; returns ``(advantages, returns)``.

    ``next_values[t]`` is the value of the observation after decision t: the next decision's
    observation, or, where the episode was truncated, its true final observation. A decision
    of ``steps[t]`` env steps discounts it by ``gamma ** steps[t]``; termination drops it, and
    any episode end (``ended``) stops the advantage from flowing back across the reset.
    """
    adv = np.zeros_like(values, dtype=np.float64)
    last = np.zeros(values.shape[1:])
    for t in reversed(range(len(rewards))):
        g = gamma ** steps[t]
        delta = rewards[t] + g * (1.0 - terminated[t]) * next_values[t] - values[t]
        last = delta + g * lam * (1.0 - ended[t]) * last
        adv[t] = last
    return adv, adv + values


def grad_agreement(agent: Any, obs: dict, z: Any, chain: torch.Tensor, adv: torch.Tensor,
                   params: Sequence[torch.Tensor], rng: np.random.Generator, chunk: int) -> dict[str, float]:
    """Cosine between the vanilla policy gradients of two random halves of a rollout batch.

    Args:
        agent: the :class:`~rl.policies.noise.NoisyFlow` whose stored chains are rescored.
        obs: the batch's observations (flattened over decisions).
        z: the rollout's embeddings when the encoder is frozen (reused), else None (re-embedded).
        chain: the stored chains, one per decision.
        adv: the batch's advantages, one per decision (each half normalised on its own, as minibatches are).
        params: the parameters whose gradient is compared (the actor's).
        rng: draws the split.
        chunk: decisions per forward pass.

    Returns:
        ``pg_grad_cos`` (the cosine), ``pg_grad_snr`` (the whole batch's implied signal-to-noise energy ratio,
        0 when the cosine is not positive) and ``pg_grad_norm`` (the norm of the two halves' mean gradient).

    """
    params = [p for p in params if p.requires_grad]
    order = rng.permutation(len(adv))
    flat = []
    for half in (order[: len(order) // 2], order[len(order) // 2:]):
        idx = torch.as_tensor(half, device=adv.device)
        a = adv[idx]
        flat.append(_pg_grad(agent, obs, z, chain, (a - a.mean()) / (a.std() + 1e-8), idx, params, chunk) / len(idx))
    ga, gb = flat
    cos = float(ga @ gb / (ga.norm() * gb.norm()).clamp_min(1e-30))
    snr = 0.0 if cos <= 0 else 2 * cos / (1 - cos) if cos < 1 else float("inf")
    return {"pg_grad_cos": cos, "pg_grad_snr": snr, "pg_grad_norm": float(((ga + gb) / 2).norm())}


def _pg_grad(agent: Any, obs: dict, z: Any, chain: torch.Tensor, a: torch.Tensor, idx: torch.Tensor,
             params: Sequence[torch.Tensor], chunk: int) -> torch.Tensor:
    """The flat float64 gradient of ``-sum(a * log_prob)`` over the decisions ``idx`` (``a`` aligned with them)."""
    acc = [torch.zeros_like(p) for p in params]
    for s in range(0, len(idx), chunk):
        part = idx[s:s + chunk]
        emb = take_embedding(z, part) if z is not None else agent.embed(take_obs(obs, part.cpu().numpy()))
        loss = -(a[s:s + chunk] * agent.log_prob(emb, chain[part])[0]).sum()
        for g, x in zip(acc, torch.autograd.grad(loss, params, allow_unused=True), strict=True):
            if x is not None:
                g += x
    return torch.cat([g.reshape(-1) for g in acc]).double()


def episode_ids(ended: np.ndarray) -> np.ndarray:
    """The episode each decision of a ``(T, N)`` rollout belongs to, flattened as ``reshape(-1)`` (0, 1, ...).

    An episode cut by the rollout's start or end counts as one: its decisions are still independent of the
    other episodes'. ``ended[t, i]`` is 1 where decision t of env i ended its episode.
    """
    ended = np.asarray(ended) > 0
    count = np.vstack([np.zeros((1, ended.shape[1]), dtype=np.int64), np.cumsum(ended, axis=0)[:-1]])
    raw = count * ended.shape[1] + np.arange(ended.shape[1])
    return np.unique(raw.reshape(-1), return_inverse=True)[1].reshape(-1)


def grad_noise_scale(agent: Any, obs: dict, z: Any, chain: torch.Tensor, adv: torch.Tensor,
                     params: Sequence[torch.Tensor], episodes: np.ndarray, chunk: int) -> dict[str, float]:
    """How many episodes an update needs for its policy gradient to be more signal than noise.

    Each episode j gives a gradient G_j (of ``-sum(a * log_prob)`` over its decisions, advantages normalised over
    the batch); they are independent draws of mean g and covariance C. From M of them,
    ``(|sum G|^2 - sum |G|^2) / (M (M - 1))`` is an unbiased estimate of |g|^2 and
    ``(sum |G|^2 - |sum G|^2 / M) / (M - 1)`` one of tr C (McCandlish et al.'s "simple noise scale", per episode).
    Their ratio is the batch, in episodes, at which noise and signal energy are equal: an update of B episodes
    has a signal-to-noise energy ratio B |g|^2 / tr C.

    Args:
        agent: the :class:`~rl.policies.noise.NoisyFlow` whose stored chains are rescored.
        obs: the batch's observations (flattened over decisions).
        z: the rollout's embeddings when the encoder is frozen (reused), else None (re-embedded).
        chain: the stored chains, one per decision.
        adv: the batch's advantages, one per decision.
        params: the parameters whose gradient is measured (the actor's).
        episodes: per decision, its episode (:func:`episode_ids`).
        chunk: decisions per forward pass.

    Returns:
        ``pg_signal_sq`` (|g|^2 estimate, may be negative when the signal is buried), ``pg_noise_tr`` (tr C),
        ``pg_batch_snr`` (M |g|^2 / tr C for this batch's M episodes), ``pg_noise_scale`` (tr C / |g|^2 in
        episodes; inf when the signal estimate is not positive) and ``pg_groups`` (M, episodes cut by the
        rollout's ends included). Averages of the first two over updates give a run's noise scale without the
        bias of averaging ratios. NaN values when there are fewer than 3 episodes.
    """
    params = [p for p in params if p.requires_grad]
    episodes = np.asarray(episodes)
    m = int(episodes.max()) + 1 if episodes.size else 0
    if m < 3:
        return {k: float("nan") for k in ("pg_signal_sq", "pg_noise_tr", "pg_batch_snr", "pg_noise_scale", "pg_groups")}
    a = (adv - adv.mean()) / (adv.std() + 1e-8)
    total, sq = None, 0.0
    for j in range(m):
        idx = torch.as_tensor(np.flatnonzero(episodes == j), device=adv.device)
        g = _pg_grad(agent, obs, z, chain, a[idx], idx, params, chunk)
        total = g if total is None else total + g
        sq += float(g @ g)
    tot_sq = float(total @ total)
    signal = (tot_sq - sq) / (m * (m - 1))
    noise = (sq - tot_sq / m) / (m - 1)
    return {"pg_signal_sq": signal, "pg_noise_tr": noise, "pg_batch_snr": m * signal / noise if noise > 0 else 0.0,
            "pg_noise_scale": noise / signal if signal > 0 else float("inf"), "pg_groups": float(m)}


def grad_diagnostics(agent: Any, obs: dict, z: Any, chain: torch.Tensor, adv: torch.Tensor,
                     params: Sequence[torch.Tensor], rng: np.random.Generator, episodes: np.ndarray,
                     chunk: int) -> dict[str, float]:
    """:func:`grad_agreement` and :func:`grad_noise_scale` of one rollout batch, in one dict."""
    return {**grad_agreement(agent, obs, z, chain, adv, params, rng, chunk),
            **grad_noise_scale(agent, obs, z, chain, adv, params, episodes, chunk)}


def batch_moments(agent: Any, obs: dict, z: Any, chain: torch.Tensor, chunk: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:meth:`~rl.policies.noise.NoisyFlow.moments` of a whole batch of stored chains, ``chunk`` at a time, no grad."""
    means, stds, keep = [], [], None
    with torch.no_grad():
        for s in range(0, chain.shape[0], chunk):
            part = torch.arange(s, min(s + chunk, chain.shape[0]), device=chain.device)
            emb = take_embedding(z, part) if z is not None else agent.embed(take_obs(obs, part.cpu().numpy()))
            m, sd, keep = agent.moments(emb, chain[part])
            means.append(m)
            stds.append(sd)
    return torch.cat(means), torch.cat(stds), keep


def kl_split(old: tuple[torch.Tensor, ...], new: tuple[torch.Tensor, ...]) -> dict[str, float]:
    """The whole chain's KL(old || new) in closed form, split into what the means and the stds contributed.

    Per scored entry, KL = (mu_o - mu_n)^2 / (2 s_n^2) + [log(s_n / s_o) + s_o^2 / (2 s_n^2) - 1/2]; both
    parts are >= 0. Summed over the chain's noisy transitions and scored entries (the chain rule: the stored
    ``x_k`` were drawn from the old policy), averaged over the batch.

    Args:
        old: :func:`batch_moments` before the update.
        new: :func:`batch_moments` of the same chains after it.

    Returns:
        ``kl_mean_part``, ``kl_std_part`` and their sum ``kl_closed_form`` (nats per decision), and
        ``mean_shift_rms``: the root-mean-square change of a transition's mean in units of its old std.

    """
    (mo, so, keep), (mn, sn, _) = old, new
    mo, so, mn, sn = (t.double() for t in (mo, so, mn, sn))
    w = keep.double().expand_as(mo)
    mean_part = ((mo - mn) ** 2 / (2 * sn ** 2) * w).flatten(1).sum(1).mean()
    std_part = ((torch.log(sn / so) + so ** 2 / (2 * sn ** 2) - 0.5) * w).flatten(1).sum(1).mean()
    shift = (((mo - mn) / so) ** 2 * w).sum() / w.sum().clamp_min(1.0)
    return {"kl_mean_part": float(mean_part), "kl_std_part": float(std_part),
            "kl_closed_form": float(mean_part + std_part), "mean_shift_rms": float(shift.sqrt())}
