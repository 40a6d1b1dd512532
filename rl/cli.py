"""RL commands of the ``scenegen`` CLI (attached lazily by :mod:`scenegen.cli`).

``scenegen demos PACK -n N -o DIR`` records successful expert episodes as a LeRobot v3.0
dataset; ``scenegen train bc DEMOS -o RUN`` trains the flow-matching VLA by behaviour cloning;
``scenegen eval RUN_OR_CKPT --pack PACK`` rolls a policy out. ``train`` is a group whose
subcommands load lazily from :data:`TRAIN_COMMANDS` (PPOFlow and RFT join it there).
"""

from __future__ import annotations

import importlib
import json

import click

from rl.data.demos import record_demos
from scenegen.options import ConfigCommand, ConfigOptions, opt

__all__ = ["BC_FIELDS", "demos", "evaluate_cmd", "record_demos", "train", "train_bc_cmd"]

ENV_OPTIONS = ConfigOptions("rl.envs.config:EnvConfig", [
    "image_size",
    opt("image_keys", flag="--cameras", help="Comma-separated cameras to record (front, wrist); empty for none."),
    opt("max_episode_steps", flag="--max-steps", default=300),
    "pointcloud",
    "action_mode",
])
"""``demos``' options taken from :class:`~rl.envs.config.EnvConfig` (``--max-steps`` defaults to 300, not 200)."""


@click.command(cls=ConfigCommand)
@click.argument("pack", type=click.Path(exists=True, file_okay=False))
@click.option("-n", "n", type=int, required=True, help="Successful episodes to save.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Dataset folder to create.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first episode (then +1 each).")
@ENV_OPTIONS.only("image_size", "image_keys", "max_episode_steps")
@click.option("--max-attempts", type=int, default=None, help="Episodes to try at most (default 3n + 5).")
@ENV_OPTIONS.only("pointcloud", "action_mode")
@click.option("--randomize/--no-randomize", default=False, help="Domain randomization on.")
@click.option("--dr", "dr_file", type=click.Path(dir_okay=False), default=None,
              help="DR.json of `scenegen dr propose`: record under its randomization (implies --randomize).")
@click.option("--image-format", type=click.Choice(["video", "image"]), default="video", show_default=True,
              help="Cameras as mp4 video (H.264 4:4:4) or as PNG images inside the data parquet (lossless).")
@click.option("--episodes-per-file", type=int, default=50, show_default=True,
              help="Episodes per data/video file (a file is written when it fills).")
@click.option("--workers", type=int, default=1, show_default=True,
              help="Recording processes (episodes are written in attempt order: the same dataset).")
@click.option("--overwrite", is_flag=True, help="Replace a dataset already in the folder.")
def demos(pack: str, n: int, out: str, seed: int, max_attempts: int | None, randomize: bool, dr_file: str | None,
          image_format: str, episodes_per_file: int, workers: int, overwrite: bool, **env_kw: object) -> None:
    """Record N successful scripted-expert episodes of PACK's scenes into OUT (a LeRobot v3.0 dataset)."""
    from rl.guided_dr import dr_from_options

    cfg = ENV_OPTIONS.to_config(env_kw)  # validates the env settings before the pack is opened
    dr = dr_from_options(randomize or bool(dr_file), dr_file)
    s = record_demos(pack, n, out, seed=seed, image_size=cfg.image_size, cameras=cfg.image_keys,
                     max_steps=cfg.max_episode_steps, max_attempts=max_attempts, pointcloud=cfg.pointcloud,
                     randomize=randomize, overwrite=overwrite, image_format=image_format,
                     episodes_per_file=episodes_per_file, action_mode=cfg.action_mode, workers=workers, dr=dr)
    fails = ", ".join(f"{k} x{v}" for k, v in sorted(s["failures"].items())) or "none"
    click.echo(f"saved {s['saved']} episodes ({s['frames']} frames) to {s['out']} after {s['attempts']} attempts; "
               f"failures: {fails}")


TRAIN_COMMANDS: dict[str, str] = {
    "bc": "rl.cli:train_bc_cmd",
    "ppoflow": "rl.ppoflow_cli:ppoflow",
    "rft": "rl.rft_cli:rft",
}
"""``scenegen train NAME`` -> "module:attribute" of its click command (imported when it runs)."""


class _TrainGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(TRAIN_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in TRAIN_COMMANDS:
            return None
        module, attr = TRAIN_COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attr, None)


@click.group(cls=_TrainGroup)
def train() -> None:
    """Train policies: ``bc`` (behaviour cloning), ``ppoflow`` (RL fine-tuning), ``rft`` (rejection fine-tuning)."""


BC_FIELDS = (
    "steps", "batch_size", "lr", "weight_decay", "warmup_steps", "ema_decay", "grad_clip",
    opt("device", choices="DEVICES"), "bf16", "seed",
    "episodes", "log_every", "checkpoint_every", "eval_every", "eval_episodes", "eval_workers", "eval_pack",
    "eval_dr", "time_limit_s", opt("augment.enabled", flag="--augment/--no-augment", name="augment_enabled"),
    opt("augment.shift", flag="--aug-shift"), opt("augment.brightness", flag="--aug-brightness"),
    opt("augment.contrast", flag="--aug-contrast"), opt("augment.saturation", flag="--aug-saturation"),
)
"""The :class:`~rl.bc.BCConfig` fields that ``train bc`` exposes (``train rft`` reuses them for its fine-tuning)."""
BC_OPTIONS = ConfigOptions("rl.bc:BCConfig", list(BC_FIELDS))
POLICY_OPTIONS = ConfigOptions("rl.policies.configuration_flow_vla:FlowVLAConfig", [
    "cameras", "chunk_size", "n_action_steps", "num_inference_steps", "d_model", "heads", "obs_layers",
    "expert_layers", "dropout", "time_distribution",
    opt("vision.backbone", flag="--vision-backbone", choices="VISION_BACKBONES"),
    opt("vision.pretrained", flag="--vision-pretrained"), opt("vision.grid", flag="--vision-grid"),
    opt("vision.freeze", flag="--vision-freeze/--no-vision-freeze"),
    opt("text.encoder", flag="--text-encoder", choices="TEXT_ENCODERS"),
    opt("text.pretrained", flag="--text-pretrained"),
])


@click.command(cls=ConfigCommand)
@click.argument("demos_dir", metavar="DEMOS", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Run folder.")
@click.option("--resume", is_flag=True, help="Continue the run in OUT from its last checkpoint.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar.")
@BC_OPTIONS
@POLICY_OPTIONS
def train_bc_cmd(demos_dir: str, out: str, resume: bool, progress: bool, **kw: object) -> None:
    """Train the flow-matching VLA on DEMOS (a `scenegen demos` dataset) by behaviour cloning into OUT."""
    from rl.bc import train_bc

    cfg = BC_OPTIONS.to_config(kw)
    pcfg = POLICY_OPTIONS.to_config(kw)
    s = train_bc(demos_dir, out, pcfg, cfg, resume=resume, progress=progress)
    if s["note"]:
        click.echo(s["note"], err=True)
    ev = s["eval"]
    tail = f"; eval success {ev['success_rate']:.2f} {ev['success_ci95']}" if ev else ""
    state = "done" if s["done"] else "stopped at the time limit (continue with --resume)"
    click.echo(f"{state}: step {s['steps']}, loss {s['loss_last']:.4f}, {s['samples_per_s']:.0f} samples/s on "
               f"{s['device']}; checkpoint {s['checkpoint']}{tail}")


train_bc_cmd.name = "bc"


@click.command(name="eval")
@click.argument("checkpoint", metavar="RUN_OR_CKPT", type=click.Path(exists=True, file_okay=False))
@click.option("--pack", required=True, type=click.Path(exists=True, file_okay=False), help="Pack to roll out on.")
@click.option("-n", "n", type=int, default=100, show_default=True, help="Episodes (scenes in turn).")
@click.option("--workers", type=int, default=1, show_default=True, help="Env processes.")
@click.option("--video", "video_dir", type=click.Path(file_okay=False), default=None,
              help="Write mp4s of the first --videos episodes here.")
@click.option("--videos", type=int, default=4, show_default=True, help="Episodes to film with --video.")
@click.option("--seed", type=int, default=1_000_000, show_default=True, help="Reset seed of episode 0 (then +1).")
@click.option("--device", default="cpu", show_default=True, help="Where the policy runs (cpu, cuda).")
@click.option("--steps", "num_steps", type=int, default=None, help="Inference steps K (default: the policy's).")
@click.option("--max-steps", type=int, default=None, help="Episode step budget (default: as trained).")
@click.option("--deterministic", is_flag=True, help="Integrate every chunk from zero noise (no sampling).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def evaluate_cmd(checkpoint: str, pack: str, n: int, workers: int, video_dir: str | None, videos: int, seed: int,
                 device: str, num_steps: int | None, max_steps: int | None, deterministic: bool,
                 as_json: bool) -> None:
    """Roll a trained policy (a run folder or checkpoint) out on PACK's scenes: success, progress, failures."""
    from rl.evaluate import evaluate

    over = {"max_episode_steps": max_steps} if max_steps else {}
    rep = evaluate(checkpoint, pack, n, workers=workers, video_dir=video_dir, videos=videos, seed=seed,
                   device=device, num_steps=num_steps, deterministic=deterministic, progress=not as_json, **over)
    if as_json:
        rep = {k: v for k, v in rep.items() if k != "per_episode"} | {"per_episode": rep["per_episode"]}
        click.echo(json.dumps(rep, indent=1, default=float))
        return
    lo, hi = rep["success_ci95"]
    fails = ", ".join(f"{k} x{v}" for k, v in rep["failures"].items() if v) or "none"
    click.echo(f"success {rep['success_rate']:.3f} [{lo:.3f}, {hi:.3f}] over {rep['episodes']} episodes; "
               f"progress {rep['progress']:.3f}; failure flags: {fails}")
