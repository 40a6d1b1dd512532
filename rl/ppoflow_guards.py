"""PPOFlow's numerics guards: strict float32 while training, and the ratio guard at every update's start.

:func:`strict_numerics` keeps rollout scoring and update rescoring on the same kernels;
:func:`ratio_guard` rescores rollout step 0's decisions as the update does and stops the run,
naming the likely cause, when the stored log-probabilities are not reproduced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from rl.policies.noise import NoisyFlow, take_embedding
from scenegen.errors import ScenegenError


class PPOFlowError(ScenegenError):
    """Training stopped: a failed correctness guard or a non-finite loss."""


@contextlib.contextmanager
def strict_numerics(on: bool) -> Iterator[None]:
    """Float32 convolutions and matmuls without TF32, and no ``nn.Transformer*`` fast path (restored after)."""
    b = torch.backends
    saved = (b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32, b.mha.get_fastpath_enabled())
    if on:
        b.cudnn.allow_tf32 = b.cuda.matmul.allow_tf32 = False
        b.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32 = saved[:2]
        b.mha.set_fastpath_enabled(saved[2])


def ratio_guard(agent: NoisyFlow, tol: float, obs: dict, b_z: Any, chain: torch.Tensor, old: torch.Tensor,
                iteration: int) -> float:
    """Rescore rollout step 0's decisions as the update does; return ``max |ratio - 1|`` or stop naming the cause.

    The batch is the one the rollout scored (same observations, batch composition and grad mode), so a
    deterministic policy reproduces its log-probabilities exactly; a shuffled minibatch with gradients
    differs by float32 effects of batch composition and of PyTorch's inference fast path (up to ~1e-4
    on a summed 16 x 5 x 10 chain), far below ``clip_eps``: that one is logged as ``ratio_max_dev``.
    """
    n = len(old)
    with torch.no_grad():  # as the rollout scored them (no_grad also picks the same transformer kernels)
        z = take_embedding(b_z, torch.arange(n, device=old.device)) if b_z is not None else agent.embed(obs)
        new = agent.log_prob(z, chain)[0]
    dev = ((new - old).exp() - 1).abs()
    if dev.max().item() <= tol:
        return dev.max().item()
    i = int(dev.argmax())
    with torch.no_grad():
        again = [agent.log_prob(z if b_z is not None else agent.embed(obs), chain)[0] for _ in range(2)]
    dropout = [n for n, m in agent.named_modules() if isinstance(m, nn.modules.dropout._DropoutNd) and m.training]
    if dropout:
        cause = f"dropout is active in {dropout[:3]}; keep the policy in eval mode"
    elif not torch.equal(again[0], again[1]):
        cause = ("two recomputations on the same observations disagree: the policy's embed or velocity is "
                 "random in eval mode (augmentation or noise in preprocessing)")
    else:
        cause = ("the update scores chains differently from the rollout: different observation preprocessing, "
                 "parameters changed between rollout and update, or a different k / ft_steps / time grid")
    raise PPOFlowError(f"ratio guard, iteration {iteration}: recomputed log-probs differ from the stored ones "
                       f"before any update (max |ratio - 1| = {dev.max().item():.3g} > {tol:g}; "
                       f"decision {i}: stored {old[i].item():.6f}, recomputed {new[i].item():.6f}); "
                       f"likely cause: {cause}")
