"""FlowVLA: a small vision-language-action policy whose action head is a flow-matching model.

Observation tokens: each camera's image encoder gives ``grid^2`` tokens (plus a learned
camera embedding), the instruction encoder one token per word, the proprioceptive state one
token; a small transformer fuses them. The **action expert** is a transformer over the H action
tokens of a noisy chunk ``x_t`` (each: a projection of its action, a position and the flow-time
embedding) with cross-attention to the fused observation; it predicts the velocity
``v(x_t, t | obs)`` of the straight path from noise (t=0) to the normalized action chunk (t=1).
Training regresses ``x1 - x0`` (:mod:`rl.policies.flow_matching`); inference integrates K Euler
steps from Gaussian noise (K = ``num_inference_steps``, so K=10 and K=1 are the same model).

For PPOFlow (issue 15): :meth:`FlowVLA.embed` gives the fused observation embedding and
:meth:`FlowVLA.velocity` the velocity ``v(x, t, embedding)`` over normalized chunks, so a noise
head can be added on the embedding and the stochastic chain of ``flow_matching`` run over it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rl.policies import flow_matching as fm
from rl.policies.base import CAMERA_PREFIX, STATE, ActionQueue, git_commit, read_json
from rl.policies.configuration_flow_vla import FlowVLAConfig
from rl.policies.text import PretrainedTextEncoder, WordEncoder
from rl.policies.vision import build_vision
from scenegen.errors import ConfigError

POLICY_TYPE = "flow_vla"
FORMAT_VERSION = 1
MIN_STD = 1e-2
"""Standard deviations below this (near-constant dimensions) normalize with this instead."""


@dataclass
class ObsEmbedding:
    """The fused observation: tokens the action expert attends to, and their mean (for extra heads)."""

    tokens: torch.Tensor
    """``(B, N, d)``."""
    mask: torch.Tensor
    """``(B, N)``, True for real tokens."""
    pooled: torch.Tensor
    """``(B, d)``: the mean of the real tokens."""


def _randn(shape: Any, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """Standard normal noise drawn on the generator's device (so a CPU generator seeds a GPU policy too)."""
    where = generator.device if generator is not None else device
    return torch.randn(tuple(shape), generator=generator, device=where).to(device)


def _stat(stats: dict, key: str, name: str, shape: tuple[int, ...], default: float) -> torch.Tensor:
    value = (stats.get(key) or {}).get(name)
    t = torch.full(shape, default) if value is None else torch.tensor(value, dtype=torch.float32).reshape(shape)
    return t


class Normalizer(nn.Module):
    """Mean/std normalization of state, actions and images from the dataset's ``stats.json``."""

    def __init__(self, stats: dict, cfg: FlowVLAConfig) -> None:
        super().__init__()
        self.stats = {k: v for k, v in stats.items() if k in (STATE, "action") or k.startswith(CAMERA_PREFIX)}
        for key, dim, name in ((STATE, cfg.state_dim, "state"), ("action", cfg.action_dim, "action")):
            if key not in stats:
                raise ConfigError(f"normalization stats have no {key!r}; the dataset's meta/stats.json is incomplete")
            self.register_buffer(f"{name}_mean", _stat(stats, key, "mean", (dim,), 0.0))
            self.register_buffer(f"{name}_std", _stat(stats, key, "std", (dim,), 1.0).clamp_min(MIN_STD))
        for cam in cfg.cameras or ():
            key = CAMERA_PREFIX + cam
            self.register_buffer(f"img_{cam}_mean", _stat(stats, key, "mean", (1, 3, 1, 1), 0.5))
            self.register_buffer(f"img_{cam}_std", _stat(stats, key, "std", (1, 3, 1, 1), 0.25).clamp_min(MIN_STD))

    def state(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.state_mean) / self.state_std

    def action(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.action_mean) / self.action_std

    def unaction(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.action_std + self.action_mean

    def image(self, cam: str, x: torch.Tensor) -> torch.Tensor:
        return (x - getattr(self, f"img_{cam}_mean")) / getattr(self, f"img_{cam}_std")


def time_embedding(t: torch.Tensor, d: int) -> torch.Tensor:
    """Sinusoidal embedding ``(B, d)`` of flow times in [0, 1]."""
    half = d // 2
    freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    arg = 1000.0 * t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)
    return torch.nn.functional.pad(emb, (0, d - 2 * half))


class ActionExpert(nn.Module):
    """Transformer over the H action tokens with cross-attention to the observation: the velocity field."""

    def __init__(self, cfg: FlowVLAConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.d = d
        self.inp = nn.Linear(cfg.action_dim, d)
        self.time = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.pos = nn.Parameter(torch.randn(cfg.chunk_size, d) * 0.02)
        layer = nn.TransformerDecoderLayer(d, cfg.heads, cfg.ff_mult * d, cfg.dropout, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.layers = nn.TransformerDecoder(layer, cfg.expert_layers)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, cfg.action_dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor, emb: ObsEmbedding) -> torch.Tensor:
        te = self.time(time_embedding(t, self.d).to(x.dtype))
        h = self.inp(x) + self.pos[: x.shape[1]] + te[:, None]
        h = self.layers(h, emb.tokens, memory_key_padding_mask=~emb.mask)
        return self.out(self.norm(h))


class FlowVLA(nn.Module):
    """The flow-matching VLA policy (see the module docstring); follows :class:`rl.policies.base.Policy`.

    Args:
        config: a resolved config (:func:`rl.policies.configuration_flow_vla.resolve`).
        stats: the dataset's ``stats.json`` (normalization).
        arch_dir: a checkpoint folder whose saved backbone architectures replace the pretrained
            weights' download (used by :meth:`load`).

    Raises:
        ConfigError: an unresolved config, missing stats, or pretrained weights that cannot be found.

    """

    def __init__(self, config: FlowVLAConfig, stats: dict, arch_dir: str | os.PathLike | None = None) -> None:
        super().__init__()
        if not config.resolved:
            raise ConfigError("FlowVLA needs a config resolved against a dataset (action_dim, state_dim, cameras, "
                              "vocabulary); call configuration_flow_vla.resolve() first")
        self.config = cfg = config
        d = cfg.d_model
        arch = Path(arch_dir) if arch_dir is not None else None
        self.cameras = tuple(cfg.cameras or ())
        self.vision = nn.ModuleDict({c: build_vision(cfg.vision, d, str(arch / f"vision_{c}") if arch else None)
                                     for c in self.cameras})
        self.camera_embed = nn.Parameter(torch.randn(max(1, len(self.cameras)), d) * 0.02)
        ff = cfg.ff_mult * d
        if cfg.text.encoder == "words":
            self.text = WordEncoder(cfg.text.vocab, cfg.text.max_tokens, d, cfg.heads, cfg.text.layers, ff,
                                    cfg.dropout)
        else:
            self.text = PretrainedTextEncoder(str(cfg.text.pretrained), d, cfg.text.max_tokens, cfg.text.freeze,
                                              str(arch / "text_encoder") if arch else None)
        self.state = nn.Sequential(nn.Linear(cfg.state_dim, d), nn.GELU(), nn.Linear(d, d))
        self.type_embed = nn.Parameter(torch.randn(3, d) * 0.02)  # image, text, state
        layer = nn.TransformerEncoderLayer(d, cfg.heads, ff, cfg.dropout, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.fuse = nn.TransformerEncoder(layer, cfg.obs_layers, enable_nested_tensor=False) if cfg.obs_layers \
            else None
        self.expert = ActionExpert(cfg)
        self.normalizer = Normalizer(stats, cfg)
        self.n_action_steps = cfg.n_action_steps
        self._queue = ActionQueue(cfg.n_action_steps)

    @property
    def device(self) -> torch.device:
        """Where the weights are."""
        return next(self.parameters()).device

    # ------------------------------------------------------------------ observation
    def embed(self, batch: dict) -> ObsEmbedding:
        """The fused observation embedding of a batch (images, instruction, state)."""
        state = batch[STATE].to(self.device).float()
        b = state.shape[0]
        parts, masks = [], []
        for i, cam in enumerate(self.cameras):
            img = batch[CAMERA_PREFIX + cam].to(self.device)
            enc = self.vision[cam]
            if not enc.normalizes:
                img = self.normalizer.image(cam, img)
            tok = enc(img) + self.camera_embed[i] + self.type_embed[0]
            parts.append(tok)
            masks.append(torch.ones(b, tok.shape[1], dtype=torch.bool, device=state.device))
        tasks = list(batch["task"])
        if len(tasks) != b:
            raise ConfigError(f"a batch of {b} observations has {len(tasks)} instructions")
        txt, tmask = self.text(tasks, state.device)
        parts.append(txt + self.type_embed[1])
        masks.append(tmask)
        parts.append((self.state(self.normalizer.state(state)) + self.type_embed[2])[:, None])
        masks.append(torch.ones(b, 1, dtype=torch.bool, device=state.device))
        tokens, mask = torch.cat(parts, 1), torch.cat(masks, 1)
        if self.fuse is not None:
            tokens = self.fuse(tokens, src_key_padding_mask=~mask)
        m = mask.unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * m).sum(1) / m.sum(1).clamp_min(1.0)
        return ObsEmbedding(tokens, mask, pooled)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, emb: ObsEmbedding) -> torch.Tensor:
        """The flow's velocity ``(B, H, A)`` at normalized chunks ``x`` and times ``t`` ``(B,)``."""
        return self.expert(x, t, emb)

    def sample_noise(self, batch: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Initial noise ``x_0`` ``(B, H, A)``."""
        return _randn((batch, self.config.chunk_size, self.config.action_dim), generator, self.device)

    def unnormalize_chunk(self, x: torch.Tensor) -> torch.Tensor:
        """Normalized chunks to env actions, clipped to the action bounds."""
        return self.normalizer.unaction(x.float()).clamp(self.config.action_low, self.config.action_high)

    # ------------------------------------------------------------------ the policy contract
    def forward(self, batch: dict, generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
        """Flow-matching loss on a batch with ``action`` ``(B, H, A)`` and ``action_is_pad`` ``(B, H)``."""
        actions = batch["action"].to(self.device).float()
        b = actions.shape[0]
        x1 = self.normalizer.action(actions)
        x0 = _randn(x1.shape, generator, x1.device)
        t = fm.sample_time(b, self.config.time_distribution, alpha=self.config.time_alpha, beta=self.config.time_beta,
                           generator=generator, device=x1.device)
        xt, target = fm.interpolate(x0, x1, t)
        v = self.velocity(xt, t, self.embed(batch))
        pad = batch.get("action_is_pad")
        mask = None if pad is None else ~pad.to(self.device)
        loss = fm.flow_loss(v, target, mask)
        return loss, {"loss": float(loss.detach())}

    @torch.no_grad()
    def predict_action_chunk(self, obs: dict, *, generator: torch.Generator | None = None,
                             noise: torch.Tensor | None = None, num_steps: int | None = None) -> torch.Tensor:
        """An action chunk ``(B, H, A)`` in env units: K Euler steps from noise (``num_steps`` overrides K)."""
        emb = self.embed(obs)
        b = emb.tokens.shape[0]
        x0 = noise.to(self.device) if noise is not None else self.sample_noise(b, generator)
        x = fm.integrate(lambda x, t: self.velocity(x, t, emb), x0.to(emb.tokens.dtype),
                         num_steps or self.config.num_inference_steps)
        return self.unnormalize_chunk(x)

    def reset(self) -> None:
        """Forget queued actions (call at every env reset)."""
        self._queue.clear()

    @torch.no_grad()
    def select_action(self, obs: dict, generator: torch.Generator | None = None) -> torch.Tensor:
        """The next action ``(B, A)``: drains the queue, predicting a new chunk when it is empty."""
        if len(self._queue) == 0:
            self._queue.push(self.predict_action_chunk(obs, generator=generator))
        return self._queue.pop()

    # ------------------------------------------------------------------ checkpoints
    def save(self, directory: str | os.PathLike, provenance: dict | None = None) -> Path:
        """Write ``model.safetensors``, ``config.json``, ``stats.json``, ``provenance.json`` (+ backbone architectures).

        ``provenance`` (dataset hash, env settings, training step...) is stored with the git commit.
        """
        from safetensors.torch import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        weights = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(weights, str(out / "model.safetensors"), metadata={"type": POLICY_TYPE})
        (out / "config.json").write_text(json.dumps({"type": POLICY_TYPE, "format_version": FORMAT_VERSION,
                                                     "config": self.config.to_dict()}, indent=1))
        (out / "stats.json").write_text(json.dumps(self.normalizer.stats))
        prov = {"git_commit": git_commit(), **(provenance or {})}
        (out / "provenance.json").write_text(json.dumps(prov, indent=1, sort_keys=True, default=str))
        for cam, enc in self.vision.items():
            if hasattr(enc, "save_architecture"):
                enc.save_architecture(out / f"vision_{cam}")
        if hasattr(self.text, "save_architecture"):
            self.text.save_architecture(out / "text_encoder")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike, device: str | torch.device = "cpu") -> FlowVLA:
        """A policy saved by :meth:`save`.

        Raises:
            ConfigError: not a FlowVLA checkpoint, or its weights do not match its config.

        """
        from safetensors.torch import load_file

        d = Path(directory)
        head = read_json(d / "config.json", "policy config")
        if head.get("type") != POLICY_TYPE or head.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{d}: a {head.get('type')!r} v{head.get('format_version')} checkpoint, not "
                              f"{POLICY_TYPE} v{FORMAT_VERSION}")
        cfg = FlowVLAConfig.from_dict(head["config"])
        stats = read_json(d / "stats.json", "normalization stats")
        if not (d / "model.safetensors").is_file():
            raise ConfigError(f"{d}: model.safetensors is missing; the checkpoint is incomplete")
        policy = cls(cfg, stats, arch_dir=d)
        try:
            policy.load_state_dict(load_file(str(d / "model.safetensors")), strict=True)
        except RuntimeError as exc:
            raise ConfigError(f"{d}: weights do not match the config ({str(exc).splitlines()[0][:200]})") from None
        policy.provenance = read_json(d / "provenance.json", "provenance") if (d / "provenance.json").is_file() \
            else {}
        return policy.to(device).eval()

    def num_parameters(self, trainable: bool = False) -> int:
        """Parameter count (all, or only trainable ones)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable)


def load_policy(path: str | os.PathLike, device: str | torch.device = "cpu") -> FlowVLA:
    """A policy from a checkpoint folder or a training run (its ``checkpoints/last`` then ``policy``).

    Raises:
        ConfigError: nothing loadable there.

    """
    p = Path(path)
    for cand in (p, p / "policy"):
        if (cand / "config.json").is_file() and (cand / "model.safetensors").is_file():
            return FlowVLA.load(cand, device)
    last = p / "checkpoints" / "last.txt"
    if last.is_file():
        return FlowVLA.load(p / "checkpoints" / last.read_text().strip() / "policy", device)
    raise ConfigError(f"{path}: no policy checkpoint (config.json + model.safetensors) here or under "
                      "policy/ or checkpoints/; give a run folder of `scenegen train bc` or a checkpoint")
