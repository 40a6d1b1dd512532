"""``scenegen ablate``: a diversity ablation over N training scenes, in and out of distribution.

::

    scenegen ablate PROMPT --n 1,5,10,25,50 -o ABL [--ood-set SET] [--budget-env-steps S] [--seeds 3]
                    [--backend sequential|process|ray] [--ray-address A] [--concurrent K] [--resume]
                    [--distractors 0,2,4] [--instances 0,1] [--layouts 0,1] [--dr on,off] [--time-budget S]

See :mod:`rl.ablate` for what is compared and the folder it writes.
"""

from __future__ import annotations

from typing import Any

import click

from rl.cli import POLICY_OPTIONS
from scenegen.options import ConfigCommand, ConfigOptions, opt

ABLATION = ConfigOptions("rl.ablate:AblationConfig", [
    opt("ns", flag="--n"), "seeds", "budget_env_steps", "pool_size", "pool_seed", "distractors", "instances",
    "layouts", "dr", "ood_configs", "ood_seed", "ood_tiers", "id_configs", "id_seed", "eval_repeats", "eval_dr",
    opt("max_episode_steps", flag="--max-steps"), "image_size", "qa", "bc_scenes", "bc_demos", "bc_seed",
    "cameras", opt("learner", choices="LEARNERS")])
RUNNER = ConfigOptions("rl.ablate:RunnerConfig", [
    opt("backend", choices="BACKENDS"), "concurrent", "gpu_fraction", "cpus_per_arm", "ray_address",
    opt("env_backend", choices=("async", "sync")), "eval_workers", "eval_device", "workers",
    opt("time_budget_s", flag="--time-budget")])
PPO = ConfigOptions("rl.ppoflow:PPOFlowConfig", [
    "num_envs", "decisions_per_env", "k", "action_steps", "device", "gamma", "clip_eps", "lr_actor", "lr_noise",
    "lr_critic", "sigma_min", "sigma_max", "update_epochs", "minibatch_size", "target_kl", "progress_reward",
    "critic_warmup_iters", "critic_after_stop", "freeze_encoder", "adaptive_lr", "critic_privileged", "amp"])
BC = ConfigOptions("rl.bc:BCConfig", [opt("steps", flag="--bc-steps", name="bc_steps", default=2000),
                                      opt("batch_size", flag="--bc-batch-size", name="bc_batch_size"),
                                      opt("lr", flag="--bc-lr", name="bc_lr")])


@click.command(cls=ConfigCommand)
@click.argument("prompt")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="The ablation's folder.")
@click.option("--ood-set", type=click.Path(exists=True), default=None,
              help="A frozen eval set (scenegen evalset make) as the OOD set, instead of generating one.")
@click.option("--pool", type=click.Path(exists=True, file_okay=False), default=None,
              help="An existing pack as the training pool, instead of generating one.")
@click.option("--init", type=click.Path(exists=True, file_okay=False), default=None,
              help="A BC run (or policy checkpoint) as the shared initialisation, instead of training one.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Asset cache folder.")
@click.option("--resume", is_flag=True, help="Continue the ablation in -o (its settings must be the same).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@ABLATION
@RUNNER
@PPO
@BC
@POLICY_OPTIONS.only("chunk_size", "n_action_steps", "num_inference_steps", "d_model")
def ablate(prompt: str, out: str, ood_set: str | None, pool: str | None, init: str | None, cache_dir: str | None,
           resume: bool, as_json: bool, **kw: Any) -> None:
    """Diversity ablation over N nested training scenes: PPOFlow per arm, ID and OOD success with 95% intervals."""
    import json

    from rl.ablate import run_ablation
    from rl.ablate_report import markdown

    res = run_ablation(prompt, out, ABLATION.to_config(kw), runner=RUNNER.to_config(kw), ppo=PPO.to_config(kw),
                       bc=BC.to_config(kw), policy=POLICY_OPTIONS.to_config(kw), pool=pool, ood_set=ood_set,
                       init=init, cache_dir=cache_dir, resume=resume, progress=not as_json)
    if as_json:
        click.echo(json.dumps(res, indent=1, default=float))
    elif "arms" not in res:
        click.echo(f"{res['note']}; rerun with --resume")
    else:
        click.echo(markdown(res, plot=None), nl=False)
        click.echo(f"results: {out}/results.json, {out}/results.md, {out}/results.png")
