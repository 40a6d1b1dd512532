"""Noise injection for RL fine-tuning of a flow policy: a bounded-std noise network and the noisy chain.

A flow policy maps an observation to an embedding ``z`` and predicts the velocity
``v(x, t, z)`` of its action chunk. For reinforcement learning each Euler step is made a
Gaussian transition whose standard deviation comes from a small network on ``z`` (optionally
also on the flow time ``t``), squashed by a tanh into ``[sigma_min, sigma_max]``. The chain of
one decision then has an exact log-probability (:func:`rl.policies.flow_matching.chain_log_prob`),
which is what PPO's ratio needs. :class:`NoisyFlow` bundles the policy, the noise network and
those computations; the trainer (:mod:`rl.ppoflow`) adds the critic and the updates.

The policy side is a protocol (:class:`FlowPolicy`), so a tiny MLP flow in a test and the
FlowVLA both plug in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from rl.policies import flow_matching as fm
from scenegen.errors import ConfigError


@runtime_checkable
class FlowPolicy(Protocol):
    """What PPOFlow needs of a flow-matching policy (an ``nn.Module``).

    ``embed`` must be deterministic in eval mode (no augmentation, no dropout): the trainer
    recomputes it on stored observations and checks the log-probabilities match.
    """

    horizon: int
    """Actions per chunk, H."""
    action_dim: int
    """Action dimensions, A."""
    num_inference_steps: int
    """K of the policy's own sampler (PPOFlow may use another K)."""

    def embed(self, obs: Mapping[str, Any]) -> Any:
        """Observation batch (numpy arrays / strings as the env gives them) -> an embedding.

        A ``(B, D)`` or ``(B, T, D)`` tensor, or a dataclass of batch-first tensors with a ``pooled``
        ``(B, D)`` field (what the noise network and the critic read).
        """

    def velocity(self, x: torch.Tensor, t: torch.Tensor, z: Any) -> torch.Tensor:
        """Velocity ``(B, H, A)`` of chunks ``x`` ``(B, H, A)`` at times ``t`` ``(B,)`` given embeddings ``z``."""


def pooled(z: Any) -> torch.Tensor:
    """A ``(B, D)`` summary of an embedding: its ``pooled`` field, itself, or the mean over tokens of ``(B, T, D)``."""
    if hasattr(z, "pooled"):
        return z.pooled
    return z.mean(dim=1) if z.dim() == 3 else z.reshape(z.shape[0], -1)


def take_embedding(z: Any, idx: torch.Tensor) -> Any:
    """Rows ``idx`` of an embedding: a tensor, or a dataclass of batch-first tensors (e.g. tokens, mask, pooled)."""
    if isinstance(z, torch.Tensor):
        return z[idx]
    return dataclasses.replace(z, **{f.name: getattr(z, f.name)[idx] for f in dataclasses.fields(z)})


def cat_embeddings(zs: list) -> Any:
    """Embeddings of several batches as one; a dataclass's fields are zero-padded along dim 1 (token counts vary)."""
    if isinstance(zs[0], torch.Tensor):
        return torch.cat(zs)

    def cat(parts: list[torch.Tensor]) -> torch.Tensor:
        if parts[0].dim() >= 2:
            n = max(p.shape[1] for p in parts)
            parts = [torch.nn.functional.pad(p, (0, 0) * (p.dim() - 2) + (0, n - p.shape[1])) for p in parts]
        return torch.cat(parts)

    return type(zs[0])(**{f.name: cat([getattr(z, f.name) for z in zs]) for f in dataclasses.fields(zs[0])})


def time_features(t: torch.Tensor, n: int = 8) -> torch.Tensor:
    """Sinusoidal features ``(B, n)`` of flow times ``t`` ``(B,)`` in [0, 1]."""
    freqs = torch.arange(1, n // 2 + 1, device=t.device, dtype=torch.float32) * math.pi
    arg = t.float().reshape(-1, 1) * freqs
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


class NoiseNet(nn.Module):
    """Per-dimension std ``(B, H, A)`` in ``[sigma_min, sigma_max]`` from a pooled embedding (and the time).

    The std is ``sigma_min + (sigma_max - sigma_min) * (1 + tanh(h)) / 2``; the output layer
    starts at zero weights with a bias that gives ``init_std`` everywhere.

    Raises:
        ConfigError: bounds not ``0 < sigma_min <= init_std <= sigma_max``.

    """

    def __init__(self, embed_dim: int, horizon: int, action_dim: int, *, sigma_min: float, sigma_max: float,
                 init_std: float | None = None, hidden: int = 128, use_time: bool = False) -> None:
        super().__init__()
        init = 0.5 * (sigma_min + sigma_max) if init_std is None else init_std
        if not 0 < sigma_min <= init <= sigma_max:
            raise ConfigError(f"noise std bounds need 0 < sigma_min ({sigma_min}) <= init_std ({init}) "
                              f"<= sigma_max ({sigma_max})")
        self.horizon, self.action_dim = horizon, action_dim
        self.sigma_min, self.sigma_max, self.use_time = float(sigma_min), float(sigma_max), use_time
        self.body = nn.Sequential(nn.Linear(embed_dim + (8 if use_time else 0), hidden), nn.SiLU(),
                                  nn.Linear(hidden, hidden), nn.SiLU())
        self.out = nn.Linear(hidden, horizon * action_dim)
        nn.init.zeros_(self.out.weight)
        span = self.sigma_max - self.sigma_min
        frac = 0.5 if span == 0 else min(max((init - self.sigma_min) / span, 1e-4), 1 - 1e-4)
        nn.init.constant_(self.out.bias, math.atanh(2 * frac - 1))

    def forward(self, zp: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
        """Std ``(B, H, A)`` (float32) for pooled embeddings ``zp`` ``(B, D)`` at flow times ``t`` ``(B,)``."""
        h = zp.float()
        if self.use_time:
            h = torch.cat([h, time_features(t if t is not None else torch.zeros(len(h), device=h.device))], 1)
        u = torch.tanh(self.out(self.body(h)))
        s = self.sigma_min + (self.sigma_max - self.sigma_min) * 0.5 * (1.0 + u)
        return s.reshape(-1, self.horizon, self.action_dim)


class NoisyFlow(nn.Module):
    """A flow policy with learned transition noise: sample chains, score stored chains.

    Args:
        policy: the flow policy (:class:`FlowPolicy`).
        noise: its :class:`NoiseNet`.
        steps: K, the Euler transitions of a chain (1: a single Gaussian step from noise).
        ft_steps: only the last ``ft_steps`` transitions are noisy (None: all).
        normalize: average the log-probability over transitions and dimensions instead of summing.
        amp: bf16 autocast for the embedding on CUDA.
        scored_actions: score only the first ``n`` actions of the last transition, the ones the env
            executes (:func:`rl.policies.flow_matching.chain_log_prob`; None: the whole chunk).

    """

    def __init__(self, policy: nn.Module, noise: NoiseNet, steps: int, ft_steps: int | None = None,
                 normalize: bool = False, amp: bool = False, scored_actions: int | None = None) -> None:
        super().__init__()
        fm.noisy_steps(steps, ft_steps)  # validates
        if scored_actions is not None and not 1 <= scored_actions <= policy.horizon:
            raise ConfigError(f"scored_actions = {scored_actions} must be in 1..{policy.horizon} (the chunk length)")
        self.policy, self.noise = policy, noise
        self.steps, self.ft_steps, self.normalize, self.amp = steps, ft_steps, normalize, amp
        self.scored_actions = scored_actions

    def embed(self, obs: Mapping[str, Any]) -> torch.Tensor:
        """The policy's embedding of an observation batch (bf16 autocast on CUDA with ``amp``)."""
        dev = next(self.noise.parameters()).device
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=self.amp and dev.type == "cuda"):
            return self.policy.embed(obs)

    def env_action(self, x: torch.Tensor) -> np.ndarray:
        """A chunk in env units (the policy's ``to_env_action`` when it has one), float32 numpy."""
        f = getattr(self.policy, "to_env_action", None)
        return (f(x) if f is not None else x).detach().float().cpu().numpy()

    def act_fn(self, noise: bool = False, seed: int = 0) -> Callable[[Mapping[str, Any]], np.ndarray]:
        """An ``obs batch -> env chunks`` function (noise-free by default), e.g. for :func:`rl.rollout.run_episodes`."""
        gen = torch.Generator(device=next(self.noise.parameters()).device).manual_seed(seed)

        def act(obs: Mapping[str, Any]) -> np.ndarray:
            with torch.no_grad():
                z = self.embed(obs)
                return self.env_action(self.sample(z, gen)[0][:, -1] if noise else self.mean_action(z, gen))

        return act

    def _fields(self, z: Any) -> tuple[fm.Velocity, fm.StdFn]:
        zp = pooled(z).detach()  # the noise never trains the encoder

        def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return self.policy.velocity(x, t, z)

        def std(x: torch.Tensor, t: torch.Tensor, k: int) -> torch.Tensor:
            return self.noise(zp, t)

        return velocity, std

    def sample(self, z: Any, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Chains ``(B, K + 1, H, A)`` drawn for embeddings ``z`` and their log-probabilities ``(B,)``.

        The log-probabilities come from :meth:`log_prob` on the drawn chains, the computation the
        update repeats, so a mismatch found later is a change of model or input, not of formula.
        """
        velocity, std = self._fields(z)
        x0 = self._noise(z, generator)
        with torch.autocast(device_type=x0.device.type, enabled=False):
            chain, _, _ = fm.sample_chain(velocity, x0, self.steps, std, ft_steps=self.ft_steps, generator=generator)
        return chain, self.log_prob(z, chain)[0]

    def log_prob(self, z: Any, chain: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities ``(B,)`` of stored chains and the mean entropy ``(B,)`` of their noisy transitions."""
        velocity, std = self._fields(z)
        lp = fm.chain_log_prob(chain, velocity, std, ft_steps=self.ft_steps, normalize=self.normalize,
                               scored_actions=self.scored_actions)
        noisy = [k for k, on in enumerate(fm.noisy_steps(self.steps, self.ft_steps)) if on]
        grid = fm.time_grid(self.steps, chain.device)
        stds = torch.stack([std(chain[:, k], grid[k].expand(chain.shape[0]), k) for k in noisy], 1)
        return lp, fm.gaussian_entropy(stds)

    def moments(self, z: Any, chain: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mean and std ``(B, T, H, A)`` of stored chains' noisy transitions, and the scored entries ``(T, H, A)``."""
        velocity, std = self._fields(z)
        return fm.transition_moments(chain, velocity, std, ft_steps=self.ft_steps, scored_actions=self.scored_actions)

    def logprob_terms(self, chain: torch.Tensor) -> int:
        """How many log-density terms :meth:`log_prob` averages over (``normalize``), else 1 (it sums them).

        A normalised log-ratio times this is the whole chain's (PPOFlow reports that chain's KL beside the
        per-dimension one).
        """
        if not self.normalize:
            return 1
        noisy = sum(fm.noisy_steps(self.steps, self.ft_steps))
        horizon, dims = int(chain.shape[2]), int(chain.shape[3])
        last = (self.scored_actions or horizon) * dims  # the last transition's scored dims
        return noisy * horizon * dims + last  # x_0 and the earlier transitions count in full

    def mean_action(self, z: Any, generator: torch.Generator | None = None) -> torch.Tensor:
        """The noise-free chunk ``(B, H, A)``: K Euler steps from fresh initial noise (the deployed policy)."""
        velocity, _ = self._fields(z)
        x0 = self._noise(z, generator)
        with torch.autocast(device_type=x0.device.type, enabled=False):
            return fm.integrate(velocity, x0, self.steps)

    def mean_std(self, z: Any) -> torch.Tensor:
        """Mean noise std ``(B,)`` at the last transition (a logging summary)."""
        zp = pooled(z).detach()
        t = torch.full((zp.shape[0],), (self.steps - 1) / self.steps, device=zp.device)
        return self.noise(zp, t).mean(dim=(1, 2))

    def _noise(self, z: Any, generator: torch.Generator | None) -> torch.Tensor:
        """Initial noise ``x_0`` ``(B, H, A)`` (float32) on the embedding's device."""
        zp = pooled(z)
        shape = (zp.shape[0], self.policy.horizon, self.policy.action_dim)
        return torch.randn(shape, generator=generator, device=zp.device)


class FlowVLAAdapter(nn.Module):
    """:class:`~rl.policies.modeling_flow_vla.FlowVLA` as a :class:`FlowPolicy`.

    ``embed`` takes env observations (:func:`rl.policies.base.env_to_batch`: images to [0, 1], the
    state, the instruction) and returns the FlowVLA's fused embedding; ``velocity`` is its action
    expert over *normalized* chunks, run in float32 (embeddings made under bf16 autocast are cast);
    ``to_env_action`` unnormalizes and clips to the action bounds.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model, c = model, model.config
        self.horizon, self.action_dim = c.chunk_size, c.action_dim
        self.num_inference_steps, self.n_action_steps = c.num_inference_steps, c.n_action_steps
        self.cameras = tuple(c.cameras or ())
        self.provenance = getattr(model, "provenance", None) or {}

    def embed(self, obs: Mapping[str, Any]) -> Any:
        """The fused observation embedding of env observations."""
        from rl.policies.base import env_to_batch

        return self.model.embed(env_to_batch(obs, self.cameras, self.model.device))

    def velocity(self, x: torch.Tensor, t: torch.Tensor, z: Any) -> torch.Tensor:
        """The action expert's velocity over normalized chunks, in ``x``'s dtype."""
        z = dataclasses.replace(z, tokens=z.tokens.to(x.dtype), pooled=z.pooled.to(x.dtype))
        return self.model.velocity(x, t, z)

    def to_env_action(self, x: torch.Tensor) -> torch.Tensor:
        """Normalized chunks to env actions (clipped)."""
        return self.model.unnormalize_chunk(x)

    def save_finetuned(self, directory: Any, k: int, provenance: Mapping[str, Any]) -> Any:
        """Save the fine-tuned FlowVLA (its own checkpoint format), deployed with ``k`` inference steps."""
        cfg = self.model.config
        self.model.config = dataclasses.replace(cfg, num_inference_steps=k)
        try:
            return self.model.save(directory, provenance={**self.provenance, **provenance})
        finally:
            self.model.config = cfg
