"""``scenegen train rft``: rejection fine-tuning of a behaviour-cloned policy.

::

    scenegen train rft --init BC_RUN --pack PACK -o RUN [--demos DEMOS] [--rollouts 50] [--keep episodes]
                       [--demo-fraction 0.5] [--dr DR.json] [--steps 2000] [--resume]

Two stages, one run folder: the policy of ``BC_RUN`` is rolled out on PACK's scenes under domain
randomization and its successful episodes (or lifted-grasp segments) are mixed with the original
demonstrations into ``RUN/data`` (:func:`rl.rft.rft_dataset`, a LeRobot v3.0 dataset); then
behaviour cloning continues from ``BC_RUN``'s weights on that dataset (:func:`rl.bc.train_bc` with
``init``), writing the usual BC run files into ``RUN`` (``run.json``, ``metrics.jsonl``,
``checkpoints/``, ``policy/``). ``RUN/rft.json`` records the command's settings and the collection's
counts; ``--resume`` reuses a finished collection with the same settings and continues the BC stage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from rl.cli import BC_FIELDS
from scenegen.errors import ConfigError
from scenegen.options import ConfigCommand, ConfigOptions, opt

RFT = ConfigOptions("rl.rft:RFTConfig", [
    "rollouts", opt("keep", choices="KEEP"), "demo_fraction", "rollout_seed", "max_episode_steps", "min_segment",
    "randomize", "workers"])
FINETUNE = ConfigOptions("rl.bc:BCConfig", [opt("steps", default=2000), opt("warmup_steps", default=100),
                                            *(f for f in BC_FIELDS if getattr(f, "path", f) not in
                                              ("steps", "warmup_steps"))])
"""The BC stage's options: those of ``train bc``, with a fine-tuning's shorter run and warm-up by default."""


def _dr(cfg: Any, dr_file: str | None) -> Any:
    from rl.envs.config import DRConfig
    from rl.guided_dr import dr_from_options

    return dr_from_options(cfg.randomize, dr_file, off=DRConfig.off())


def _default_demos(init: str | os.PathLike) -> str:
    from rl.policies.modeling_flow_vla import load_policy

    demos = load_policy(init, "cpu").provenance.get("dataset")
    if not demos or not Path(demos).is_dir():
        raise ConfigError(f"--init {init}: its training dataset ({demos}) is not here; pass --demos DEMOS")
    return str(demos)


def run_rft(init: str | os.PathLike, pack: str | os.PathLike, out: str | os.PathLike, cfg: Any, bc_cfg: Any, *,
            demos: str | os.PathLike | None = None, dr_file: str | None = None, resume: bool = False,
            progress: bool = True) -> dict:
    """Collect the rejection-fine-tuning dataset into ``out/data``, then continue BC from ``init`` on it into ``out``.

    Args:
        init: the BC run (or policy checkpoint) to roll out and to continue from.
        pack: the pack whose scenes the rollouts use.
        out: the run folder.
        cfg: an :class:`rl.rft.RFTConfig`.
        bc_cfg: the fine-tuning's :class:`rl.bc.BCConfig`.
        demos: the original demonstrations (default: the dataset ``init`` was trained on).
        dr_file: a ``DR.json`` of ``scenegen dr propose`` whose DR the rollouts use.
        resume: reuse a finished collection of the same settings in ``out`` and resume its BC stage.
        progress: progress bars.

    Returns:
        ``{"collect": rft_dataset's summary, "train": train_bc's summary, "out"}``.

    Raises:
        ConfigError: bad settings, ``out`` holding another run, or no rollout worth keeping.

    """
    from dataclasses import asdict

    from rl.bc import train_bc
    from rl.rft import rft_dataset
    from scenegen.fileio import write_atomic

    run = Path(out)
    demos = str(demos) if demos else _default_demos(init)
    settings = {"init": str(Path(init).resolve()), "pack": str(Path(pack).resolve()),
                "demos": str(Path(demos).resolve()), "dr_file": dr_file and str(Path(dr_file).resolve()),
                "rft": asdict(cfg)}
    record = run / "rft.json"
    saved = json.loads(record.read_text()) if record.is_file() else None
    if saved is not None and not resume:
        raise ConfigError(f"{run} already holds an RFT run; pass --resume to continue it or pick a new folder")
    if saved is not None and saved.get("settings") != settings:
        diff = sorted(k for k in settings if saved.get("settings", {}).get(k) != settings[k])
        raise ConfigError(f"--resume: {run} was started with other settings ({', '.join(diff)}); pick a new folder")
    if saved is not None and saved.get("collect"):
        collect = saved["collect"]
    else:
        collect = rft_dataset(settings["init"], pack, demos, run / "data", dr=_dr(cfg, dr_file), overwrite=resume,
                              progress=progress, **cfg.to_kwargs())
        write_atomic(record, json.dumps({"settings": settings, "collect": collect}, indent=1))
    summary = train_bc(run / "data", run, None, bc_cfg, resume=resume, progress=progress, init=init)
    return {"collect": collect, "train": summary, "out": str(run)}


@click.command(cls=ConfigCommand)
@click.option("--init", "init", required=True, type=click.Path(exists=True, file_okay=False),
              help="BC run (or policy checkpoint folder) to roll out and to continue from.")
@click.option("--pack", required=True, type=click.Path(exists=True, file_okay=False), help="Scene pack to roll out on.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Run folder.")
@click.option("--demos", "demos_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Original demonstrations to mix in (default: the dataset --init was trained on).")
@click.option("--dr", "dr_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="DR.json of `scenegen dr propose`: the rollouts' domain randomization.")
@RFT
@FINETUNE
@click.option("--resume", is_flag=True, help="Continue the run in -o (its settings must be identical).")
@click.option("--progress/--no-progress", default=True, help="Show progress bars.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def rft(init: str, pack: str, out: str, demos_dir: str | None, dr_file: str | None, resume: bool, progress: bool,
        as_json: bool, **kw: Any) -> None:
    """Rejection fine-tuning: roll the policy out under DR, keep the successes, mix them with the demos, fine-tune."""
    cfg = RFT.to_config(kw)
    bc_cfg = FINETUNE.to_config(kw)
    s = run_rft(init, pack, out, cfg, bc_cfg, demos=demos_dir, dr_file=dr_file, resume=resume,
                progress=progress and not as_json)
    if as_json:
        click.echo(json.dumps(s, indent=1, default=str))
        return
    c, t = s["collect"], s["train"]
    state = "done" if t["done"] else "stopped at the time limit (continue with --resume)"
    click.echo(f"kept {c['kept']} of {c['rollouts']} rollouts ({c['successes']} successes, {c['segments']} grasp "
               f"segments) + {c['demo_episodes']} demonstrations -> {c['out']}; fine-tuning {state}: step "
               f"{t['steps']}, loss {t['loss_last']:.4f}; checkpoint {t['checkpoint']}")
