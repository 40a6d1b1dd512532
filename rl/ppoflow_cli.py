"""``scenegen train ppoflow``: fine-tune a behaviour-cloned flow policy with PPOFlow over a pack's scenes.

::

    scenegen train ppoflow --init BC_RUN --pack PACK -o RUN [--num-envs 8] [--steps 200000] [--k 1]
                           [--device cuda] [--backend async|sync|ray] [--resume] [--time-budget S]

The run folder gets ``checkpoint.pt`` (every iteration), ``metrics.jsonl``, ``tb/`` (TensorBoard,
when installed), ``config.json``, ``run.json`` (the command's own settings), the fine-tuned policy
under ``policy/`` (deployed with ``k`` inference steps) and, unless ``--eval-episodes 0``,
``eval.json``: success on the training pool (and ``--held-out PACK``) with 95% intervals.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from scenegen.errors import ConfigError
from scenegen.options import ConfigCommand, ConfigOptions, opt

PPO = ConfigOptions("rl.ppoflow:PPOFlowConfig", [
    "num_envs", opt("total_env_steps", flag="--steps"), "k", "ft_steps", "action_steps", "decisions_per_env",
    "device", "seed", "gamma", "clip_eps", "ratio_power", "lr_actor", "lr_noise", "lr_critic", "sigma_min",
    "sigma_max", "ent_coef", "update_epochs", "minibatch_size", "target_kl", "progress_reward", "critic",
    "critic_warmup_iters", "critic_after_stop", "freeze_encoder", "normalize_logprob", "score_executed", "adaptive_lr",
    "critic_privileged", "amp", "grad_diag", "group_size", "group_rounds"])


def load_policy(init: str | os.PathLike, device: str) -> Any:
    """The flow policy of a BC run (or checkpoint folder) as a :class:`~rl.policies.noise.FlowPolicy` on ``device``.

    Raises:
        ConfigError: the folder holds no FlowVLA checkpoint.

    """
    from rl.policies.modeling_flow_vla import load_policy as load_vla
    from rl.policies.noise import FlowVLAAdapter

    return FlowVLAAdapter(load_vla(init, device))


def run_ppoflow(init: str, pack: str, out: str, cfg: Any, *, backend: str = "async", ray_address: str | None = None,
                resume: bool = False, time_budget_s: float | None = None, max_iterations: int | None = None,
                randomize: bool = True, image_size: int | None = None, max_episode_steps: int | None = None,
                eval_episodes: int = 50, held_out: str | None = None, progress: bool = True,
                dr_file: str | None = None, critic_time: bool = True) -> dict:
    """Load the BC policy, fine-tune it with PPOFlow, export it and (optionally) evaluate it.

    ``dr_file`` (a ``DR.json`` of ``scenegen dr propose``) replaces the default DR weights of the training
    rollouts; the run records the DR it trained under. ``critic_time`` gives the critic the episode's share of
    the env's time limit (``cfg.critic_time_limit``, unless the config sets it already).

    Raises:
        ConfigError: bad settings, or ``--resume`` with settings that differ from the run's.
        PPOFlowError: a failed guard or a non-finite loss.

    """
    from rl import ppoflow
    from rl.evaluate import env_config_from, evaluate
    from rl.guided_dr import dr_from_options, dr_summary
    from scenegen.fileio import write_atomic

    dr = dr_from_options(randomize, dr_file)  # a bad DR file fails before the policy loads
    policy = load_policy(init, cfg.device)
    overrides = {k: v for k, v in (("image_size", image_size), ("max_episode_steps", max_episode_steps),
                                   ("privileged", cfg.critic_privileged)) if v}
    env_cfg = env_config_from(policy.provenance, **overrides, dr=dr)
    cfg = ppoflow.timed(cfg, env_cfg.max_episode_steps) if critic_time else cfg
    run = {"init": str(Path(init).resolve()), "pack": str(Path(pack).resolve()), "randomize": randomize,
           **({"dr": dr_summary(dr)} if dr_file else {}),
           "image_size": env_cfg.image_size, "image_keys": list(env_cfg.image_keys),
           "max_episode_steps": env_cfg.max_episode_steps}
    out_p = Path(out)
    if resume and (out_p / "run.json").is_file():
        saved = json.loads((out_p / "run.json").read_text())
        diff = sorted(k for k in set(run) | set(saved) if saved.get(k) != run.get(k))
        if diff:
            raise ConfigError(f"--resume: {out} was started with other settings: "
                              + ", ".join(f"{k}: {saved.get(k)!r} -> {run.get(k)!r}" for k in diff))
    envs = ppoflow.make_envs(cfg, policy, pack, backend, env_config=env_cfg, ray_address=ray_address)
    try:
        summary = ppoflow.train(cfg, policy, envs, out_p, resume=resume, time_budget_s=time_budget_s,
                                max_iterations=max_iterations, progress=progress)
    finally:
        envs.close()
    write_atomic(out_p / "run.json", json.dumps(run, indent=2))
    summary.pop("agent")  # it wraps `policy`, trained in place
    summary.pop("critic")
    tuned = policy.save_finetuned(out_p / "policy", k=cfg.k, provenance={"ppoflow_run": str(out_p.resolve()),
                                                                         "init": run["init"]})
    summary["policy"] = str(tuned)
    if summary["finished"] and eval_episodes > 0:  # the exported policy, noise-free, as `scenegen eval` runs it
        workers = 1 if backend == "sync" else cfg.num_envs
        evals = {}
        for name, where in (("pool", pack), ("held_out", held_out)):
            if where:
                rep = evaluate(tuned, where, eval_episodes, workers=workers, device=cfg.device,
                               max_episode_steps=env_cfg.max_episode_steps, image_size=env_cfg.image_size)
                rep.pop("per_episode", None)
                evals[name] = rep
        write_atomic(out_p / "eval.json", json.dumps(evals, indent=2))
        summary["eval"] = evals
    return summary


@click.command(cls=ConfigCommand)
@click.option("--init", "init", required=True, type=click.Path(exists=True, file_okay=False),
              help="BC run (or policy checkpoint folder) to start from.")
@click.option("--pack", required=True, type=click.Path(exists=True, file_okay=False), help="Scene pack to train on.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Run folder.")
@PPO
@click.option("--backend", type=click.Choice(["async", "sync", "ray"]), default="async", show_default=True,
              help="Rollouts: one process per env (async), in this process (sync), or Ray actors (ray).")
@click.option("--ray-address", default=None, help="Ray cluster to join with --backend ray (default: a local one).")
@click.option("--resume", is_flag=True, help="Continue the run in -o (its settings must be identical).")
@click.option("--time-budget", "time_budget_s", type=float, default=None,
              help="Stop before an iteration that would end after this many seconds (resume later).")
@click.option("--max-iterations", type=int, default=None, help="Stop after this many iterations in this call.")
@click.option("--randomize/--no-randomize", default=True, show_default=True, help="Domain randomization.")
@click.option("--critic-time/--no-critic-time", default=True, show_default=True,
              help="The critic also reads how much of the episode's time limit is used.")
@click.option("--dr", "dr_file", type=click.Path(dir_okay=False), default=None,
              help="DR.json of `scenegen dr propose`: the training rollouts' DR (default weights otherwise).")
@click.option("--image-size", type=int, default=None, help="Camera image side (default: the policy's).")
@click.option("--max-episode-steps", type=int, default=None, help="Episode time limit (default: the policy's / env's).")
@click.option("--eval-episodes", type=int, default=50, show_default=True,
              help="Episodes of the final noise-free evaluation on the pack (and --held-out); 0 skips it.")
@click.option("--held-out", type=click.Path(exists=True, file_okay=False), default=None,
              help="A pack of held-out scenes of the same prompt, evaluated at the end.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def ppoflow(init: str, pack: str, out: str, backend: str, ray_address: str | None, resume: bool,
            time_budget_s: float | None, max_iterations: int | None, randomize: bool, image_size: int | None,
            max_episode_steps: int | None, eval_episodes: int, held_out: str | None, as_json: bool,
            dr_file: str | None, critic_time: bool, **config_kw: Any) -> None:
    """Fine-tune a BC flow policy with PPOFlow (learned noise injection, K-step or single-step chains)."""
    cfg = PPO.to_config(config_kw)
    s = run_ppoflow(init, pack, out, cfg, backend=backend, ray_address=ray_address, resume=resume,
                    time_budget_s=time_budget_s, max_iterations=max_iterations, randomize=randomize,
                    image_size=image_size, max_episode_steps=max_episode_steps, eval_episodes=eval_episodes,
                    held_out=held_out, progress=not as_json, dr_file=dr_file, critic_time=critic_time)
    if as_json:
        click.echo(json.dumps(s, indent=2, default=str))
        return
    last = s.get("last") or {}
    click.echo(f"{s['iterations']} iterations, {s['env_steps']} env steps"
               f"{'' if s['finished'] else ' (not finished: --resume to continue)'}; "
               f"last training success {last.get('success_rate', float('nan')):.2f}; checkpoint {s['checkpoint']}")
    for name, e in (s.get("eval") or {}).items():
        lo, hi = e["success_ci95"]
        click.echo(f"eval {name}: success {e['success_rate']:.2f} [{lo:.2f}, {hi:.2f}] over {e['episodes']} episodes")
