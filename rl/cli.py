"""RL commands of the ``scenegen`` CLI (attached lazily by :mod:`scenegen.cli`).

``scenegen demos PACK -n N -o DIR`` records successful expert episodes. The ``train``,
``eval`` and ``ablate`` commands live here too once they exist.
"""

from __future__ import annotations

from collections import Counter

import click

from scenegen.errors import ConfigError
from scenegen.options import ConfigCommand, ConfigOptions, opt


def record_demos(pack: str, n: int, out: str, seed: int = 0, image_size: int = 128,
                 cameras: tuple[str, ...] = ("front",), max_steps: int = 300, max_attempts: int | None = None,
                 pointcloud: bool = False, randomize: bool = False, overwrite: bool = False,
                 progress: bool = True) -> dict:
    """Record ``n`` successful expert episodes of the pack's scenes into ``out`` (see :mod:`rl.data.demos`).

    Episode ``i`` resets with seed ``seed + i`` on scene ``i mod (number of scenes)``; failed
    episodes are counted by reason, not saved.

    Returns:
        A summary: ``saved``, ``frames``, ``attempts``, ``failures`` (reason -> count), ``out``.

    Raises:
        ConfigError: bad counts or sizes, or fewer than ``n`` successes within ``max_attempts``.
        PackError: the pack cannot be read.

    """
    from dataclasses import asdict

    from tqdm import tqdm

    from rl.data.demos import DemoWriter
    from rl.envs import DRConfig, PickPlaceEnv
    from scenegen.tasks.expert import ScriptedExpert, rollout

    if not (isinstance(n, int) and 1 <= n <= 1_000_000):
        raise ConfigError(f"-n {n!r} must be an int in 1..1000000")
    attempts_budget = max_attempts if max_attempts is not None else 3 * n + 5
    if attempts_budget < n:
        raise ConfigError(f"--max-attempts {attempts_budget} must be at least -n {n}")
    env = PickPlaceEnv(pack, image_keys=tuple(cameras), image_size=image_size, max_episode_steps=max_steps,
                       pointcloud=pointcloud, dr=DRConfig() if randomize else None)
    meta = {"pack": getattr(env.source, "root", None) and str(env.source.root),
            "pack_content_hash": getattr(env.source, "content_hash", None), "seed": seed,
            "env_config": {k: v for k, v in asdict(env.cfg).items() if k not in ("world", "dr")},
            "randomized": bool(randomize),
            "action": "dx, dy, dz (x max_delta m), dyaw (x max_yaw_delta rad), gripper (>0 close) in [-1, 1]"}
    meta["env_config"]["image_keys"] = list(env.cfg.image_keys)
    writer = DemoWriter(out, env.cfg.control_hz, meta, overwrite=overwrite)
    expert = ScriptedExpert(env)
    failures: Counter = Counter()
    ids = env.scene_ids
    attempts = 0
    bar = tqdm(total=n, desc="demos", unit="ep", disable=not progress)
    try:
        while len(writer.episodes) < n and attempts < attempts_budget:
            ep_seed = seed + attempts
            result, rec = rollout(env, expert, seed=ep_seed, options={"scene_id": ids[attempts % len(ids)]},
                                  record=True)
            attempts += 1
            if result.success:
                writer.add(rec, seed=ep_seed)
                bar.update(1)
            else:
                reason = (result.failure or "failed").split(":")[0]
                failures[reason] += 1
                writer.count_failure(reason)
                writer.write_meta()
            bar.set_postfix(failed=sum(failures.values()))
    finally:
        bar.close()
        env.close()
    summary = {"saved": len(writer.episodes), "frames": writer.frames, "attempts": attempts,
               "failures": dict(failures), "out": str(writer.root)}
    if len(writer.episodes) < n:
        top = ", ".join(f"{k} x{v}" for k, v in failures.most_common(3))
        raise ConfigError(f"only {len(writer.episodes)}/{n} successful episodes in {attempts} attempts ({top}); "
                          f"the {len(writer.episodes)} saved are in {out}; raise --max-attempts or check the pack")
    return summary


ENV_OPTIONS = ConfigOptions("rl.envs.config:EnvConfig", [
    "image_size",
    opt("image_keys", flag="--cameras", help="Comma-separated cameras to record (front, wrist); empty for none."),
    opt("max_episode_steps", flag="--max-steps", default=300),
    "pointcloud",
])
"""``demos``' options taken from :class:`~rl.envs.config.EnvConfig` (``--max-steps`` defaults to 300, not 200)."""


@click.command(cls=ConfigCommand)
@click.argument("pack", type=click.Path(exists=True, file_okay=False))
@click.option("-n", "n", type=int, required=True, help="Successful episodes to save.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Dataset folder to create.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first episode (then +1 each).")
@ENV_OPTIONS.only("image_size", "image_keys", "max_episode_steps")
@click.option("--max-attempts", type=int, default=None, help="Episodes to try at most (default 3n + 5).")
@ENV_OPTIONS.only("pointcloud")
@click.option("--randomize/--no-randomize", default=False, help="Domain randomization on.")
@click.option("--overwrite", is_flag=True, help="Replace a dataset already in the folder.")
def demos(pack: str, n: int, out: str, seed: int, max_attempts: int | None, randomize: bool, overwrite: bool,
          **env_kw: object) -> None:
    """Record N successful scripted-expert episodes of PACK's scenes into OUT (LeRobot-style npz layout)."""
    cfg = ENV_OPTIONS.to_config(env_kw)  # validates the env settings before the pack is opened
    s = record_demos(pack, n, out, seed=seed, image_size=cfg.image_size, cameras=cfg.image_keys,
                     max_steps=cfg.max_episode_steps, max_attempts=max_attempts, pointcloud=cfg.pointcloud,
                     randomize=randomize, overwrite=overwrite)
    fails = ", ".join(f"{k} x{v}" for k, v in sorted(s["failures"].items())) or "none"
    click.echo(f"saved {s['saved']} episodes ({s['frames']} frames) to {s['out']} after {s['attempts']} attempts; "
               f"failures: {fails}")
