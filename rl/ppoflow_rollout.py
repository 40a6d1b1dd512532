"""PPOFlow's two ways of collecting an update's batch, each returning a :class:`Batch`.

* :func:`gae_rollout` (the default): ``decisions_per_env`` chunk decisions in each environment, episodes
  running on across iterations (same-step autoreset); advantages by GAE from the critic, over macro-actions.
* :func:`group_rollout` (``group_size`` G >= 2): GRPO-style episode groups. Each round resets every
  environment at once, G environments with the same reset seed (so the same scene, domain randomization and
  start), and runs until every episode has ended. An episode's advantage is its return minus its group's mean
  return, the same for each of its decisions; a group whose episodes all scored alike adds nothing. The group
  mean is a baseline without a critic's error: what the scene and the start decide cancels, and what remains
  is what the policy's noise changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rl.policies.noise import cat_embeddings, take_embedding
from rl.ppoflow_guards import PPOFlowError
from rl.ppoflow_math import episode_ids, gae
from rl.rollout import concat_obs, stack_obs, take_obs

Clock = Callable[[np.ndarray], torch.Tensor]
"""The critic's time input from the env steps an episode has taken."""


@dataclass
class Batch:
    """One update's decisions, flattened.

    The first ``num_envs`` rows are the rollout's first decision batch, every environment's, as it was scored: the
    ratio guard rescores them.
    """

    obs: dict[str, np.ndarray]
    """Observations the decisions were taken on."""
    z: Any
    """Their embeddings when the encoder is frozen (reused in the update), else None."""
    chain: torch.Tensor
    """The stored noisy chains, one per decision."""
    logp: np.ndarray
    """Their log-probabilities when sampled."""
    adv: np.ndarray
    """Advantages."""
    ret: np.ndarray
    """The critic's targets."""
    values: np.ndarray
    """The critic's values when sampled."""
    times: np.ndarray
    """Env steps the episode had taken before each decision (the critic's time input)."""
    episode: np.ndarray
    """The independent unit each decision belongs to (its episode; with groups, its group): gradient diagnostics."""
    episodes: list[dict] = field(default_factory=list)
    """Per ended episode: success, progress, return, length."""
    env_steps: int = 0
    """Env steps the environments took (with groups, also those of environments waiting for their round's end)."""
    t_env: float = 0.0
    """Seconds in the environments."""
    t_pol: float = 0.0
    """Seconds in the policy and critic."""
    extra: dict[str, float] = field(default_factory=dict)
    """Rollout statistics for the metrics (with groups: ``group_informative``, ``group_idle_frac``)."""


@dataclass
class Carry:
    """What :func:`gae_rollout` carries from one iteration to the next: the running episodes."""

    obs: dict[str, np.ndarray]
    ep_ret: np.ndarray
    ep_len: np.ndarray


def _decide(agent: Any, critic: Any, obs: dict, gen: torch.Generator, clock: Clock,
            ep_len: np.ndarray) -> tuple[Any, torch.Tensor, np.ndarray, np.ndarray, np.ndarray]:
    """Embed, sample a chain, value: ``(z, chain, logp, values, env actions)`` for a batch of observations."""
    with torch.no_grad():
        z = agent.embed(obs)
        chain, lp = agent.sample(z, gen)
        values = critic(z, obs, clock(ep_len)).cpu().numpy()
        action = agent.env_action(chain[:, -1])
    return z, chain, lp.cpu().numpy(), values, action


def _episode(st: Any, i: int, ret: float, length: int) -> dict:
    return {"success": bool(st.info["success"][i]), "progress": float(st.info["progress"][i]),
            "return": float(ret), "length": int(length)}


def gae_rollout(agent: Any, critic: Any, envs: Any, cfg: Any, gen: torch.Generator, clock: Clock,
                carry: Carry) -> Batch:
    """``decisions_per_env`` decisions in each environment; advantages by GAE from the critic (``carry`` moves on)."""
    N, T = cfg.num_envs, cfg.decisions_per_env
    obs = carry.obs
    buf_obs, zs, chains = [], [], []
    logp, values, next_values, times = (np.zeros((T, N)) for _ in range(4))
    rewards, steps = np.zeros((T, N)), np.zeros((T, N), dtype=np.int64)
    terminated, ended = np.zeros((T, N)), np.zeros((T, N))
    episodes: list[dict] = []
    t_env = t_pol = 0.0
    for t in range(T):
        t0 = time.perf_counter()
        times[t] = carry.ep_len
        z, chain, logp[t], values[t], action = _decide(agent, critic, obs, gen, clock, carry.ep_len)
        buf_obs.append(obs)
        zs.append(z if cfg.freeze_encoder else None)
        chains.append(chain)
        t1 = time.perf_counter()
        st = envs.step(action)
        t2 = time.perf_counter()
        rewards[t], steps[t] = st.reward, st.steps
        terminated[t], ended[t] = st.terminated, st.done
        carry.ep_ret += st.raw_reward
        carry.ep_len += st.steps
        trunc = np.flatnonzero(st.truncated)
        if trunc.size:  # bootstrap from the true final observation, not the reset one
            fin = stack_obs([st.final_obs[i] for i in trunc])
            with torch.no_grad():
                next_values[t, trunc] = critic(agent.embed(fin), fin, clock(carry.ep_len[trunc])).cpu().numpy()
        for i in np.flatnonzero(st.done):
            episodes.append(_episode(st, i, carry.ep_ret[i], carry.ep_len[i]))
            carry.ep_ret[i], carry.ep_len[i] = 0.0, 0
        obs = st.obs
        t_pol += (t1 - t0) + (time.perf_counter() - t2)
        t_env += t2 - t1
    with torch.no_grad():
        last_v = critic(agent.embed(obs), obs, clock(carry.ep_len)).cpu().numpy()
    for t in range(T):  # a decision whose episode went on is followed by the next decision's value
        nxt = values[t + 1] if t + 1 < T else last_v
        keep = ended[t] == 0
        next_values[t, keep] = nxt[keep]
    carry.obs = obs
    adv, ret = gae(rewards, values, next_values, steps, terminated, ended, cfg.gamma, cfg.gae_lambda)
    return Batch(concat_obs(buf_obs), cat_embeddings(zs) if cfg.freeze_encoder else None, torch.cat(chains),
                 logp.reshape(-1), adv.reshape(-1), ret.reshape(-1), values.reshape(-1), times.reshape(-1),
                 episode_ids(ended), episodes, int(steps.sum()), t_env, t_pol)


def group_seeds(seed: int, iteration: int, rnd: int, groups: int, size: int) -> list[int]:
    """Reset seeds of one round: ``groups`` seeds, each repeated ``size`` times (environment i gets item i)."""
    drawn = np.random.default_rng([seed, iteration, rnd, 104729]).integers(0, 2**31 - 1, groups)
    return [int(s) for s in np.repeat(drawn, size)]


def group_advantages(returns: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each episode's return minus its group's mean return (GRPO's baseline, without dividing by the group's std).

    Args:
        returns: one return per episode.
        groups: the group of each episode.

    Returns:
        The advantages, one per episode; 0 throughout a group whose returns are all equal.
    """
    returns, groups = np.asarray(returns, dtype=np.float64), np.asarray(groups)
    out = np.zeros_like(returns)
    for g in np.unique(groups):
        m = groups == g
        out[m] = returns[m] - returns[m].mean()
    return out


def group_rollout(agent: Any, critic: Any, envs: Any, cfg: Any, gen: torch.Generator, clock: Clock,
                  iteration: int, max_decisions: int) -> Batch:
    """``group_rounds`` rounds of one episode per environment, in groups of ``group_size`` sharing a reset seed.

    Environment i of round r runs episode ``r * num_envs + i`` of group ``(r * num_envs + i) // group_size``. An
    environment whose episode has ended waits (its steps count, its decisions are dropped) until the round ends.
    The critic still trains, on each decision's discounted return to its episode's end (the episode is the unit
    here; a time-aware critic can predict it), for the metrics and to compare its advantages with the groups'.

    Raises:
        PPOFlowError: a round whose episodes did not all end within ``max_decisions`` decisions.
    """
    N, G = cfg.num_envs, cfg.group_size
    obs_rows, z_rows, chain_rows = [], [], []
    cols: dict[str, list] = {k: [] for k in ("logp", "value", "time", "reward", "steps", "unit")}
    episodes: dict[int, dict] = {}
    t_env = t_pol = 0.0
    env_steps = idle = 0
    for rnd in range(cfg.group_rounds):
        obs = envs.reset(seed=group_seeds(cfg.seed, iteration, rnd, N // G, G))
        active = np.ones(N, dtype=bool)
        ep_ret, ep_len = np.zeros(N), np.zeros(N, dtype=np.int64)
        for _ in range(max_decisions):
            t0 = time.perf_counter()
            z, chain, lp, values, action = _decide(agent, critic, obs, gen, clock, ep_len)
            idx = np.flatnonzero(active)
            tidx = torch.as_tensor(idx, device=chain.device)
            obs_rows.append(take_obs(obs, idx))
            z_rows.append(take_embedding(z, tidx) if cfg.freeze_encoder else None)
            chain_rows.append(chain[tidx])
            t1 = time.perf_counter()
            st = envs.step(action)
            t2 = time.perf_counter()
            env_steps += int(st.steps.sum())
            idle += N - len(idx)
            for k, v in (("logp", lp[idx]), ("value", values[idx]), ("time", ep_len[idx].astype(float)),
                         ("reward", st.reward[idx]), ("steps", st.steps[idx]), ("unit", rnd * N + idx)):
                cols[k].append(v)
            ep_ret[idx] += st.raw_reward[idx]
            ep_len[idx] += st.steps[idx]
            for i in idx[st.done[idx]]:
                episodes[rnd * N + int(i)] = _episode(st, i, ep_ret[i], ep_len[i])
                active[i] = False
            obs = st.obs
            t_pol += (t1 - t0) + (time.perf_counter() - t2)
            t_env += t2 - t1
            if not active.any():
                break
        else:
            raise PPOFlowError(f"iteration {iteration}, group round {rnd}: {int(active.sum())} episode(s) still "
                               f"running after {max_decisions} decisions; give the environments a time limit")
    c = {k: np.concatenate(v) for k, v in cols.items()}
    unit, n_ep = c["unit"].astype(np.int64), cfg.group_rounds * N
    ep_return = np.array([episodes[u]["return"] + cfg.progress_reward * episodes[u]["progress"] for u in range(n_ep)])
    ep_adv = group_advantages(ep_return, np.arange(n_ep) // G)
    ret, nxt = np.zeros(len(unit)), np.zeros(n_ep)
    for j in reversed(range(len(unit))):  # the critic's target: discounted return to the episode's end
        ret[j] = c["reward"][j] + cfg.gamma ** c["steps"][j] * nxt[unit[j]]
        nxt[unit[j]] = ret[j]
    informative = float(np.mean([np.ptp(ep_return[g:g + G]) > 0 for g in range(0, n_ep, G)]))
    return Batch(concat_obs(obs_rows), cat_embeddings(z_rows) if cfg.freeze_encoder else None, torch.cat(chain_rows),
                 c["logp"], ep_adv[unit], ret, c["value"], c["time"], unit // G,
                 [episodes[u] for u in range(n_ep)], env_steps, t_env, t_pol,
                 {"group_informative": informative, "group_idle_frac": idle / max(len(unit) + idle, 1)})
