"""PPOFlow: PPO fine-tuning of a flow-matching policy with learned noise injection (ReinFlow-style), one file.

Read top to bottom: the config (:class:`PPOFlowConfig`, one docstring per field), the critic,
checkpoints, then :func:`train`: rollout and advantages (:mod:`rl.ppoflow_rollout`: GAE over chunk
macro-actions, or GRPO-style groups of episodes with one start) -> update.

* **Noise injection** (:mod:`rl.policies.noise`): each Euler step of the flow becomes a Gaussian
  transition with a learned, bounded std; only the last ``ft_steps`` are noisy. ``k=1`` is a
  single Gaussian step from noise (a closed-form policy, and the fastest at inference).
* **Macro-actions**: one decision samples a chunk; its first ``action_steps`` actions run in the
  env (:class:`rl.rollout.ChunkEnv`). The decision's reward is the discounted sum over its env
  steps and the next value is discounted by ``gamma ** steps``.
* **Guards**: the first minibatch of every update (rollout step 0's decisions, rescored before any
  step) must reproduce the stored log-probabilities (``|ratio - 1| <= ratio_guard_tol``) or the run
  stops naming the likely cause;
  GAE bootstraps a truncated episode from its true final observation and cuts at termination;
  a non-finite loss stops the run before the checkpoint is overwritten, so the last good one stays.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from rl.policies.noise import NoiseNet, NoisyFlow, pooled, take_embedding
from rl.ppoflow_guards import PPOFlowError, ratio_guard, strict_numerics
from rl.ppoflow_math import batch_moments, grad_diagnostics, grad_noise_scale, kl_split
from rl.ppoflow_rollout import Carry, gae_rollout, group_rollout
from rl.rollout import ChunkVec, RayChunkVec, make_rollout_vec, take_obs
from scenegen.errors import ConfigError
from scenegen.fileio import write_atomic


@dataclass(frozen=True)
class PPOFlowConfig:
    """PPOFlow hyper-parameters. A resumed run must have exactly the same values."""

    seed: int = 0
    """Seeds the environments' first reset, the chain noise and the minibatch order."""
    num_envs: int = 8
    """Environments stepped in parallel."""
    decisions_per_env: int = 32
    """Chunk decisions per environment per iteration (the rollout length)."""
    total_env_steps: int = 200_000
    """Stop once this many env steps (not decisions) have been taken."""
    k: int = 1
    """Euler steps of the noisy chain, at fine-tuning and in the exported policy (1: single-step Gaussian)."""
    ft_steps: int | None = None
    """Only the last ``ft_steps`` transitions are noisy and scored (None: all ``k``)."""
    action_steps: int | None = None
    """Actions of a chunk executed per decision (None: the policy's ``n_action_steps``, else its horizon)."""
    gamma: float = 0.99
    """Discount per env step."""
    gae_lambda: float = 0.95
    """GAE lambda (applied per decision, together with ``gamma ** steps``)."""
    progress_reward: float = 0.0
    """Weight of a dense bonus on the change of task progress (0: the env's sparse reward only)."""
    sigma_min: float = 0.08
    """Lower bound of the injected noise std (in the policy's action units)."""
    sigma_max: float = 0.14
    """Upper bound of the injected noise std."""
    init_std: float | None = None
    """Initial noise std (None: the middle of the bounds)."""
    noise_hidden: int = 128
    """Hidden width of the noise network."""
    noise_uses_time: bool = False
    """Feed the flow time to the noise network as well as the embedding."""
    normalize_logprob: bool = False
    """Average the chain log-probability over transitions and dims instead of summing (then a larger ``clip_eps``)."""
    score_executed: bool = True
    """Score only the executed ``action_steps`` of the last transition: the rest of the chunk never reaches the
    env, and its noise would only add variance to the ratio (their exact marginalisation)."""
    clip_eps: float = 0.01
    """PPO ratio clip (ReinFlow: ~0.01 for state inputs, 0.001-0.01 for images, with summed log-probs)."""
    ratio_power: float = 1.0
    """Use the power-scaled ratio ``(pi / pi_old) ** ratio_power`` in the surrogate (1: plain PPO)."""
    value_clip: float | None = None
    """Clip the value change to this around the rollout value (None: plain squared error)."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    ent_coef: float = 0.0
    """Weight of the entropy bonus on the injected noise."""
    lr_actor: float = 3e-5
    """Adam learning rate of the flow policy."""
    lr_noise: float = 3e-4
    """Adam learning rate of the noise network."""
    lr_critic: float = 3e-4
    """Adam learning rate of the critic."""
    update_epochs: int = 4
    """Passes over each rollout."""
    minibatch_size: int = 64
    """Decisions per gradient step."""
    max_grad_norm: float = 1.0
    """Gradient clipping of the global norm."""
    target_kl: float | None = 0.05
    """Stop an update early once the approximate KL of the whole chain (the metrics' ``approx_kl_chain``, nats)
    exceeds this (None: never). With ``normalize_logprob`` too, the chain's, not the per-dimension one."""
    adaptive_lr: bool = False
    """Steer the actor's and the noise's learning rates by the KL each update reached (``target_kl`` needed): /1.5
    past twice the target, x1.5 under half of it when the update ran all its epochs, within 1e-3..10x the
    configured rates. One Adam step of a fixed rate can move a large policy's chain by far more than a trust
    region allows; the adapted rates are in the checkpoint (a resume continues them)."""
    ratio_stop: float | None = None
    """Stop an update early once ``max |ratio - 1|`` exceeds this (None: never)."""
    norm_adv: bool = True
    """Normalise advantages per minibatch (GAE; with groups, over the whole batch: a minibatch's own mean would
    give the decisions of uninformative groups an advantage)."""
    group_size: int = 0
    """0: advantages by GAE from the critic over ``decisions_per_env`` decisions per env. G >= 2: GRPO-style
    groups (:func:`rl.ppoflow_rollout.group_rollout`): each round resets the envs at once, every G of them with the
    same seed (same scene, randomization and start), runs every episode to its end, and gives each decision its
    episode's return minus its group's mean; ``num_envs`` must be a multiple of G."""
    group_rounds: int = 1
    """With groups: rounds (one episode per env each) per iteration."""
    critic: Literal["shared", "separate"] = "shared"
    """``shared``: a value head on the detached policy embedding; ``separate``: on a copy of the policy's encoder."""
    critic_hidden: int = 256
    """Hidden width of the value head."""
    critic_privileged: bool = False
    """The critic also reads the env's ``privileged`` observation (objects relative to the hand and their targets,
    goals holding: an asymmetric actor-critic; the policy still sees only its own inputs). The env must give it
    (``train ppoflow --critic-privileged`` turns it on there)."""
    critic_time_limit: int | None = None
    """The env's episode time limit: the critic also reads the fraction of it an episode has used (a value without
    it cannot tell a fresh start from one about to be cut off; ``train ppoflow`` sets it). None: no time input."""
    critic_warmup_iters: int = 0
    """First iterations that train only the critic (the policy is kept as initialised)."""
    critic_after_stop: bool = True
    """When the KL stop ends the policy's update, the critic trains on through the remaining minibatches and
    epochs (value loss only): the stop is the policy's trust region, not the critic's."""
    freeze_encoder: bool = False
    """Keep the observation encoder fixed and reuse the rollout's embeddings in the update (faster)."""
    ratio_guard_tol: float = 1e-5
    """Largest ``|ratio - 1|`` allowed on the guard batch (rollout step 0's decisions, rescored before any step)."""
    device: str = "cpu"
    """Torch device of the policy (``cuda`` on a GPU machine)."""
    amp: bool = False
    """bf16 autocast for the embedding on CUDA (the flow and its log-probabilities stay float32)."""
    strict_fp32: bool = True
    """No TF32 and no transformer inference fast path while training, so updates rescore chains as rollouts
    scored them (on an H200 both moved first-minibatch ratios of a float32 FlowVLA by up to 4%)."""
    grad_diag: bool = False
    """Log how well each rollout's policy gradient agrees with itself (``pg_grad_cos`` of two random halves,
    ``pg_grad_snr`` of the whole batch, ``pg_noise_scale`` in episodes; :func:`rl.ppoflow_math.grad_diagnostics`)
    and what each update's KL came from (``kl_mean_part``, ``kl_std_part``; :func:`rl.ppoflow_math.kl_split`)."""

    def __post_init__(self) -> None:
        checks = {"num_envs": self.num_envs >= 1, "decisions_per_env": self.decisions_per_env >= 1,
                  "total_env_steps": self.total_env_steps >= 1, "k": self.k >= 1,
                  "gamma": 0 < self.gamma <= 1, "gae_lambda": 0 <= self.gae_lambda <= 1,
                  "clip_eps": 0 < self.clip_eps < 1, "ratio_power": self.ratio_power > 0,
                  "update_epochs": self.update_epochs >= 1, "minibatch_size": self.minibatch_size >= 1,
                  "max_grad_norm": self.max_grad_norm > 0, "ratio_guard_tol": self.ratio_guard_tol > 0,
                  "sigma_min": 0 < self.sigma_min <= self.sigma_max,
                  "ft_steps": self.ft_steps is None or 1 <= self.ft_steps <= self.k,
                  "critic": self.critic in ("shared", "separate"),
                  "critic_time_limit": self.critic_time_limit is None or self.critic_time_limit >= 1,
                  "adaptive_lr": not self.adaptive_lr or self.target_kl is not None,
                  "group_size": self.group_size == 0 or (self.group_size >= 2 and self.num_envs % self.group_size == 0),
                  "group_rounds": self.group_rounds >= 1}
        for name in ("lr_actor", "lr_noise", "lr_critic", "vf_coef", "ent_coef", "progress_reward"):
            checks[name] = math.isfinite(getattr(self, name)) and getattr(self, name) >= 0
        bad = [n for n, ok in checks.items() if not ok]
        if bad:
            raise ConfigError("PPOFlowConfig: bad value(s) " + ", ".join(f"{n}={getattr(self, n)!r}" for n in bad))


# ---------------------------------------------------------------------- critic
class Critic(nn.Module):
    """V(obs): an MLP on the detached shared embedding, or on its own copy of the policy's encoder (and the time)."""

    def __init__(self, embed_dim: int, hidden: int, encoder: nn.Module | None = None, use_time: bool = False,
                 privileged_dim: int = 0) -> None:
        super().__init__()
        self.encoder, self.use_time, self.privileged_dim = encoder, use_time, privileged_dim
        self.head = nn.Sequential(nn.Linear(embed_dim + int(use_time) + privileged_dim, hidden), nn.SiLU(),
                                  nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, z: torch.Tensor, obs: dict | None = None, time: torch.Tensor | None = None) -> torch.Tensor:
        """Values ``(B,)`` from the shared embedding ``z`` (or, with an own encoder, from ``obs``) and ``time``.

        ``time`` ``(B,)`` is the fraction of the episode's time limit used (needed when the critic uses time).
        """
        feat = (pooled(self.encoder.embed(obs)) if self.encoder is not None else pooled(z).detach()).float()
        if self.use_time:
            feat = torch.cat([feat, torch.as_tensor(time, dtype=torch.float32, device=feat.device).reshape(-1, 1)], 1)
        if self.privileged_dim:
            priv = torch.as_tensor(np.asarray(obs["privileged"]), dtype=torch.float32, device=feat.device)
            feat = torch.cat([feat, priv.reshape(len(feat), -1)], 1)
        return self.head(feat).squeeze(-1)


# ---------------------------------------------------------------------- checkpoints and logs
def _save(path: Path, state: dict) -> None:
    buf = io.BytesIO()
    torch.save(state, buf)
    write_atomic(path, buf.getvalue(), error=PPOFlowError)


def _adapt_lr(optim: torch.optim.Optimizer, cfg: PPOFlowConfig, kl: float, stopped_early: bool) -> None:
    """Scale the actor's and the noise's learning rates (param groups 0 and 1) by the KL the update reached."""
    factor = 1 / 1.5 if kl > 2 * cfg.target_kl else 1.5 if kl < cfg.target_kl / 2 and not stopped_early else 1.0
    for group, base in zip(optim.param_groups[:2], (cfg.lr_actor, cfg.lr_noise), strict=True):
        group["lr"] = float(min(max(group["lr"] * factor, base * 1e-3), base * 10))


def timed(cfg: PPOFlowConfig, max_episode_steps: int) -> PPOFlowConfig:
    """The config with the critic reading the episode's time against the env's limit (kept if already set)."""
    return cfg if cfg.critic_time_limit is not None else dataclasses.replace(cfg, critic_time_limit=max_episode_steps)


def _check_resume(saved: dict, cfg: PPOFlowConfig, path: Path) -> None:
    now = dataclasses.asdict(cfg)
    diff = sorted(k for k in set(now) | set(saved) if now.get(k) != saved.get(k))
    if diff:
        raise ConfigError(f"--resume: the config differs from the run's ({path}) in "
                          + ", ".join(f"{k}: {saved.get(k)!r} -> {now.get(k)!r}" for k in diff))


def action_steps(cfg: PPOFlowConfig, policy: nn.Module) -> int:
    """Actions executed per decision: the config's, else the policy's ``n_action_steps``, else its horizon."""
    n = cfg.action_steps or getattr(policy, "n_action_steps", None) or policy.horizon
    if not 1 <= n <= policy.horizon:
        raise ConfigError(f"action_steps = {n} must be in 1..{policy.horizon} (the policy's chunk length)")
    return int(n)


def make_envs(cfg: PPOFlowConfig, policy: nn.Module, envs: Any, backend: str = "async", *,
              env_config: Any = None, ray_address: str | None = None) -> ChunkVec | RayChunkVec:
    """The chunk environments :func:`train` expects: a pack folder or env factories, the config's chunking and gamma."""
    return make_rollout_vec(envs, cfg.num_envs, backend, ray_address=ray_address, horizon=policy.horizon,
                            action_steps=action_steps(cfg, policy), gamma=cfg.gamma,
                            progress_reward=cfg.progress_reward,
                            **({"env_config": env_config} if env_config is not None else {}))


# ---------------------------------------------------------------------- the algorithm
def train(cfg: PPOFlowConfig, policy: nn.Module, envs: ChunkVec | RayChunkVec, out: str | Path, *,
          resume: bool = False, time_budget_s: float | None = None, max_iterations: int | None = None,
          progress: bool = True) -> dict:
    """Fine-tune ``policy`` with PPOFlow on ``envs`` (built with the config's chunk length and gamma).

    Args:
        cfg: the hyper-parameters.
        policy: a :class:`~rl.policies.noise.FlowPolicy` on ``cfg.device``, e.g. loaded from a BC run.
        envs: chunk environments (:func:`rl.rollout.make_rollout_vec`), ``cfg.num_envs`` of them.
        out: the run folder: ``checkpoint.pt`` (every iteration), ``metrics.jsonl``, ``tb/``, ``config.json``.
        resume: continue from ``out/checkpoint.pt`` (the config must be identical); fresh if there is none.
        time_budget_s: stop (after a checkpoint) before an iteration that would end past this wall-clock.
        max_iterations: stop after this many iterations in this call (a smoke run).
        progress: show a progress bar.

    Returns:
        ``iterations``, ``env_steps``, ``finished`` (the step budget was reached), ``checkpoint``,
        ``last`` (the last metrics row), ``agent`` and ``critic``.

    Raises:
        PPOFlowError: a failed guard or a non-finite loss (the last good checkpoint is kept).
        ConfigError: a config mismatch on resume, or a run folder that already holds a checkpoint without ``resume``.

    """
    with strict_numerics(cfg.strict_fp32):
        return _train(cfg, policy, envs, Path(out), resume, time_budget_s, max_iterations, progress)


def _train(cfg: PPOFlowConfig, policy: nn.Module, envs: ChunkVec | RayChunkVec, out: Path, resume: bool,
           time_budget_s: float | None, max_iterations: int | None, progress: bool) -> dict:
    from tqdm import tqdm

    from rl.bc import MetricsLog  # metrics.jsonl and TensorBoard scalars, as BC writes them
    from rl.stats import wilson_interval

    t_start = time.perf_counter()
    dev = torch.device(cfg.device)
    ckpt_path = out / "checkpoint.pt"
    if ckpt_path.exists() and not resume:
        raise ConfigError(f"{out} already holds a PPOFlow run; pass --resume to continue it or pick another -o")
    if envs.num_envs != cfg.num_envs:
        raise ConfigError(f"envs has {envs.num_envs} environments, the config num_envs = {cfg.num_envs}")
    torch.manual_seed(cfg.seed)
    gen = torch.Generator(device=dev).manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    N, T = cfg.num_envs, cfg.decisions_per_env

    # --- agent: the policy with learned noise, and a critic; dropout off for good (the guard checks it)
    obs = envs.reset(seed=cfg.seed)
    policy.eval()
    with torch.no_grad():
        embed_dim = pooled(policy.embed(take_obs(obs, slice(0, 1)))).shape[1]
    noise = NoiseNet(embed_dim, policy.horizon, policy.action_dim, sigma_min=cfg.sigma_min, sigma_max=cfg.sigma_max,
                     init_std=cfg.init_std, hidden=cfg.noise_hidden, use_time=cfg.noise_uses_time).to(dev)
    agent = NoisyFlow(policy, noise, cfg.k, cfg.ft_steps, cfg.normalize_logprob, cfg.amp,
                      scored_actions=action_steps(cfg, policy) if cfg.score_executed else None)
    if cfg.critic_privileged and "privileged" not in obs:
        raise ConfigError("critic_privileged: the envs give no 'privileged' observation; make them with "
                          "privileged=True (train ppoflow --critic-privileged does)")
    critic = Critic(embed_dim, cfg.critic_hidden, copy.deepcopy(policy) if cfg.critic == "separate" else None,
                    use_time=cfg.critic_time_limit is not None,
                    privileged_dim=int(np.asarray(obs["privileged"]).shape[-1]) if cfg.critic_privileged else 0).to(dev)
    limit = float(cfg.critic_time_limit or 1)

    def clock(n: np.ndarray) -> torch.Tensor:  # the critic's time input: the share of the time limit used
        return torch.as_tensor(np.minimum(n / limit, 1.0), dtype=torch.float32, device=dev)
    agent.eval()
    critic.eval()
    optim = torch.optim.Adam([{"params": list(policy.parameters()), "lr": cfg.lr_actor},
                              {"params": list(noise.parameters()), "lr": cfg.lr_noise},
                              {"params": list(critic.parameters()), "lr": cfg.lr_critic}], eps=1e-5)
    iteration, env_steps, decisions = 0, 0, 0
    if resume and ckpt_path.exists():
        state = torch.load(ckpt_path, map_location=dev, weights_only=False)
        _check_resume(state["config"], cfg, ckpt_path)
        agent.load_state_dict(state["agent"])
        critic.load_state_dict(state["critic"])
        optim.load_state_dict(state["optim"])
        gen.set_state(state["gen"].cpu())
        rng = np.random.default_rng([cfg.seed, state["iteration"]])
        iteration, env_steps = state["iteration"], state["env_steps"]
        decisions = state.get("decisions", iteration * N * T)
        obs = envs.reset(seed=cfg.seed + 7919 * iteration)  # a fresh episode set for the resumed run
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "config.json", json.dumps(dataclasses.asdict(cfg), indent=2), error=PPOFlowError)
    log = MetricsLog(out)
    bar = tqdm(total=cfg.total_env_steps, initial=min(env_steps, cfg.total_env_steps), unit="step",
               disable=not progress, desc="ppoflow")
    carry = Carry(obs, np.zeros(N), np.zeros(N, dtype=np.int64))  # the GAE rollout's running episodes
    max_round = (math.ceil(cfg.critic_time_limit / action_steps(cfg, policy)) + 1) if cfg.critic_time_limit else 100_000
    last_row: dict = {}
    iter_time, first_iteration = 0.0, iteration

    while env_steps < cfg.total_env_steps:
        if time_budget_s is not None and time.perf_counter() - t_start + iter_time > time_budget_s:
            break
        if max_iterations is not None and iteration - first_iteration >= max_iterations:
            break
        t_iter = time.perf_counter()
        # --- 1. rollout and 2. advantages: T decisions per env with GAE, or whole episodes in groups
        if cfg.group_size:
            roll = group_rollout(agent, critic, envs, cfg, gen, clock, iteration, max_round)
        else:
            roll = gae_rollout(agent, critic, envs, cfg, gen, clock, carry)
        env_steps += roll.env_steps
        if not (np.isfinite(roll.adv).all() and np.isfinite(roll.ret).all()):
            raise PPOFlowError(f"iteration {iteration}: non-finite advantages or returns (rewards or values "
                               f"went NaN/inf); last good checkpoint: {ckpt_path}")
        flat_obs, b_chain, b_z, episodes = roll.obs, roll.chain, roll.z, roll.episodes
        adv = roll.adv
        if cfg.group_size and cfg.norm_adv and adv.std() > 0:
            adv = adv / adv.std()  # a scale only: zero stays zero
        b_logp, b_adv, b_ret, b_val = (torch.as_tensor(a, dtype=torch.float32, device=dev)
                                       for a in (roll.logp, adv, roll.ret, roll.values))
        b_time = clock(roll.times)

        # --- 3. update
        t_up = time.perf_counter()
        # only the critic trains in its warm-up, and when no group's episodes differed (no signal for the policy)
        warmup = iteration < cfg.critic_warmup_iters or (cfg.group_size > 0 and not roll.adv.any())
        stats: dict[str, list[float]] = {k: [] for k in ("pg_loss", "value_loss", "entropy", "approx_kl",
                                                         "approx_kl_chain", "clip_frac", "ratio_mean", "ratio_max_dev")}
        terms = agent.logprob_terms(b_chain)  # 1 unless normalised: the chain's log-ratio is this times the mean
        stopped_early, n_batch = False, len(b_logp)  # stopped_early and critic_after_stop: only the critic trains on
        decisions += n_batch
        guard = ratio_guard(agent, cfg.ratio_guard_tol, take_obs(flat_obs, slice(0, N)), b_z, b_chain[:N],
                            b_logp[:N], iteration)
        diag = grad_diagnostics(agent, flat_obs, b_z, b_chain, b_adv, optim.param_groups[0]["params"],
                                np.random.default_rng([cfg.seed, iteration]), roll.episode, cfg.minibatch_size) \
            if cfg.grad_diag and not warmup else {}
        if diag and cfg.group_size:  # the same rollout's noise scale had a critic been the baseline (return - V)
            crit = torch.as_tensor(roll.ret - roll.values, dtype=torch.float32, device=dev)
            diag.update({f"{k}_critic": v for k, v in grad_noise_scale(
                agent, flat_obs, b_z, b_chain, crit, optim.param_groups[0]["params"], roll.episode,
                cfg.minibatch_size).items() if k != "pg_groups"})
        before = batch_moments(agent, flat_obs, b_z, b_chain, cfg.minibatch_size) if diag else None
        for epoch in range(cfg.update_epochs):
            order = rng.permutation(n_batch)
            for b, start in enumerate(range(0, n_batch, cfg.minibatch_size)):
                idx = order[start:start + cfg.minibatch_size]
                tidx = torch.as_tensor(idx, device=dev)
                mb_obs = take_obs(flat_obs, idx)
                z = take_embedding(b_z, tidx) if b_z is not None else agent.embed(mb_obs)
                v = critic(z, mb_obs, b_time[tidx])
                v_err = (v - b_ret[tidx]) ** 2
                if cfg.value_clip is not None:
                    v_clipped = b_val[tidx] + (v - b_val[tidx]).clamp(-cfg.value_clip, cfg.value_clip)
                    v_err = torch.max(v_err, (v_clipped - b_ret[tidx]) ** 2)
                v_loss = 0.5 * v_err.mean()
                losses = [("value", v_loss)]
                if not stopped_early:  # after the KL stop only the critic trains: the policy is not rescored
                    new_lp, ent = agent.log_prob(z, b_chain[tidx])
                    logratio = new_lp - b_logp[tidx]
                    ratio = logratio.exp()
                    mb_adv = b_adv[tidx]
                    if cfg.norm_adv and not cfg.group_size and len(idx) > 1:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    r = (cfg.ratio_power * logratio).exp() if cfg.ratio_power != 1.0 else ratio
                    pg_loss = torch.max(-mb_adv * r, -mb_adv * r.clamp(1 - cfg.clip_eps, 1 + cfg.clip_eps)).mean()
                    ent_mean = ent.mean()
                    losses += [("policy", pg_loss), ("entropy", ent_mean)]
                for name, val in losses:
                    if not torch.isfinite(val):
                        raise PPOFlowError(f"iteration {iteration}, epoch {epoch}, minibatch {b}: the {name} loss is "
                                           f"{val.item()}; stopped, last good checkpoint kept: {ckpt_path}")
                value_only = warmup or stopped_early
                loss = cfg.vf_coef * v_loss if value_only else pg_loss + cfg.vf_coef * v_loss - cfg.ent_coef * ent_mean
                optim.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_([p for g in optim.param_groups for p in g["params"]], cfg.max_grad_norm)
                optim.step()
                if stopped_early:  # the policy is frozen for this update: its statistics stay those it stopped at
                    stats["value_loss"].append(v_loss.item())
                    continue
                with torch.no_grad():
                    kl = ((ratio - 1) - logratio).mean().item()
                    lr_chain = (logratio * terms).clamp(-30.0, 30.0)
                    kl_chain = ((lr_chain.exp() - 1) - lr_chain).mean().item()
                    dev_max = (ratio - 1).abs().max().item()
                    for k_, v_ in (("pg_loss", pg_loss.item()), ("value_loss", v_loss.item()),
                                   ("entropy", ent_mean.item()), ("approx_kl", kl), ("approx_kl_chain", kl_chain),
                                   ("clip_frac", ((ratio - 1).abs() > cfg.clip_eps).float().mean().item()),
                                   ("ratio_mean", ratio.mean().item()), ("ratio_max_dev", dev_max)):
                        stats[k_].append(v_)
                if not warmup and ((cfg.target_kl is not None and kl_chain > cfg.target_kl)
                                   or (cfg.ratio_stop is not None and dev_max > cfg.ratio_stop)):
                    stopped_early = True
                    if not cfg.critic_after_stop:
                        break
            if stopped_early and not cfg.critic_after_stop:
                break
        if before is not None:  # what the update's KL came from: the means or the noise's stds
            diag.update(kl_split(before, batch_moments(agent, flat_obs, b_z, b_chain, cfg.minibatch_size)))
        t_update = time.perf_counter() - t_up
        if cfg.adaptive_lr and not warmup and stats["approx_kl_chain"]:
            _adapt_lr(optim, cfg, stats["approx_kl_chain"][-1], stopped_early)
        iteration += 1

        # --- 4. log and checkpoint
        with torch.no_grad():
            sigma = agent.mean_std(agent.embed(take_obs(flat_obs, slice(0, min(n_batch, 256))))).mean().item()
        n_ep = len(episodes)
        succ = sum(e["success"] for e in episodes)
        lo, hi = wilson_interval(succ, n_ep) if n_ep else (float("nan"), float("nan"))
        var_ret = float(np.var(roll.ret))
        row = {"iteration": iteration, "env_steps": env_steps, "decisions": decisions,
               "episodes": n_ep, "success_rate": succ / n_ep if n_ep else float("nan"),
               "success_ci95_lo": lo, "success_ci95_hi": hi,
               "return": float(np.mean([e["return"] for e in episodes])) if n_ep else float("nan"),
               "progress": float(np.mean([e["progress"] for e in episodes])) if n_ep else float("nan"),
               "episode_length": float(np.mean([e["length"] for e in episodes])) if n_ep else float("nan"),
               **{k: float(np.mean(v)) if v else float("nan") for k, v in stats.items()},
               "ratio_max_dev": float(np.max(stats["ratio_max_dev"])) if stats["ratio_max_dev"] else float("nan"),
               "sigma": sigma,
               "explained_variance": 1 - float(np.var(roll.ret - roll.values)) / var_ret if var_ret > 0 else 0.0,
               "guard_max_dev": guard, "first_minibatch_ratio_dev": stats["ratio_max_dev"][0],
               "early_stop": stopped_early, "critic_warmup": warmup, "lr_actor": optim.param_groups[0]["lr"],
               "env_steps_per_s": roll.env_steps / max(roll.t_env + roll.t_pol, 1e-9),
               "decisions_per_s": n_batch / max(roll.t_env + roll.t_pol, 1e-9),
               "time_env_s": roll.t_env, "time_policy_s": roll.t_pol, "time_update_s": t_update, **roll.extra, **diag}
        _save(ckpt_path, {"config": dataclasses.asdict(cfg), "iteration": iteration, "env_steps": env_steps,
                          "agent": agent.state_dict(), "critic": critic.state_dict(), "optim": optim.state_dict(),
                          "gen": gen.get_state(), "row": row, "decisions": decisions})
        log.write(env_steps, row, kind="ppoflow")
        last_row = row
        bar.update(min(roll.env_steps, max(0, cfg.total_env_steps - bar.n)))
        bar.set_postfix(success=f"{row['success_rate']:.2f}", kl=f"{row['approx_kl']:.4f}", sigma=f"{sigma:.3f}")
        iter_time = time.perf_counter() - t_iter
    bar.close()
    log.close()
    return {"iterations": iteration, "env_steps": env_steps, "finished": env_steps >= cfg.total_env_steps,
            "checkpoint": str(ckpt_path), "last": last_row, "agent": agent, "critic": critic}
