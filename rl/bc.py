"""Behaviour cloning of the flow-matching VLA on a demonstration dataset (``scenegen train bc``).

AdamW, a cosine learning-rate schedule after a linear warm-up, an exponential moving average
of the weights (the EMA weights are what checkpoints and evaluation use), bf16 autocast on
CUDA, gradient-norm clipping. A run folder holds::

    RUN/run.json             configs, dataset, its content hash, git commit
    RUN/metrics.jsonl        one line per log step (loss, lr, grad norm, samples/s) and per evaluation
    RUN/tb/                  TensorBoard scalars (when tensorboard is installed)
    RUN/checkpoints/step-N/  policy/ (EMA weights, loadable by ``FlowVLA.load``) + training_state.pt
    RUN/checkpoints/last.txt the latest checkpoint's folder name (``--resume`` starts there)
    RUN/policy/              the final policy

A periodic rollout evaluation in the env (success rate with a 95% Wilson interval) goes to
metrics.jsonl. ``time_limit_s`` stops a run cleanly (checkpoint written) so a long training
can go on across runs of a fixed wall-clock budget with ``--resume``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rl.data.batches import AugmentConfig
from rl.policies.configuration_flow_vla import FlowVLAConfig
from scenegen.errors import ConfigError
from scenegen.validate import finite, int_in

DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class BCConfig:
    """Behaviour-cloning settings."""

    steps: int = 20_000
    """Optimizer steps in all (a resumed run continues to this total)."""
    batch_size: int = 64
    """Frames per batch."""
    lr: float = 3e-4
    """Peak learning rate."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    warmup_steps: int = 500
    """Linear warm-up steps before the cosine decay."""
    min_lr_ratio: float = 0.05
    """The cosine decays to this fraction of the peak learning rate."""
    ema_decay: float = 0.999
    """Decay of the exponential moving average of the weights (0 disables it)."""
    grad_clip: float = 1.0
    """Largest gradient norm (0: no clipping)."""
    device: str = "auto"
    """``cuda``, ``cpu`` or ``auto`` (cuda when available)."""
    bf16: bool = True
    """bf16 autocast on CUDA (ignored on CPU)."""
    seed: int = 0
    """Seeds weights, batches, noise and augmentation."""
    episodes: int = 0
    """Train on the first this many episodes of the dataset (0: all)."""
    log_every: int = 50
    """Steps between metric lines."""
    checkpoint_every: int = 1000
    """Steps between checkpoints."""
    eval_every: int = 0
    """Steps between rollout evaluations in the env (0: none)."""
    eval_episodes: int = 20
    """Episodes of each rollout evaluation."""
    eval_workers: int = 1
    """Env processes of each rollout evaluation."""
    eval_pack: str | None = None
    """Pack of the rollout evaluations (None: the pack the dataset was recorded from)."""
    eval_dr: str | None = None
    """DR.json (of ``scenegen dr propose``) of the rollout evaluations (None: nominal scenes)."""
    time_limit_s: float = 0.0
    """Stop (with a checkpoint) after this many seconds of this run (0: no limit); resume with ``--resume``."""
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    """Image augmentation."""

    def __post_init__(self) -> None:
        int_in("BCConfig.steps", self.steps, 1, 100_000_000)
        int_in("BCConfig.batch_size", self.batch_size, 1, 65_536)
        finite("BCConfig.lr", self.lr, 1e-8, 1.0)
        finite("BCConfig.weight_decay", self.weight_decay, 0.0, 10.0)
        int_in("BCConfig.warmup_steps", self.warmup_steps, 0, 100_000_000)
        finite("BCConfig.min_lr_ratio", self.min_lr_ratio, 0.0, 1.0)
        finite("BCConfig.ema_decay", self.ema_decay, 0.0, 0.99999)
        finite("BCConfig.grad_clip", self.grad_clip, 0.0, 1e6)
        if self.device not in DEVICES:
            raise ConfigError(f"BCConfig.device = {self.device!r} must be one of {DEVICES}")
        int_in("BCConfig.seed", self.seed, 0, 2**31 - 1)
        int_in("BCConfig.episodes", self.episodes, 0, 100_000_000)
        for name in ("log_every", "checkpoint_every"):
            int_in(f"BCConfig.{name}", getattr(self, name), 1, 100_000_000)
        int_in("BCConfig.eval_every", self.eval_every, 0, 100_000_000)
        int_in("BCConfig.eval_episodes", self.eval_episodes, 1, 100_000)
        int_in("BCConfig.eval_workers", self.eval_workers, 1, 256)
        finite("BCConfig.time_limit_s", self.time_limit_s, 0.0, 1e9)


def pick_device(name: str) -> str:
    """``auto`` -> cuda when available, else cpu.

    Raises:
        ConfigError: cuda asked for but not available.

    """
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda but this torch sees no CUDA device; use --device cpu")
    return name


def lr_factor(step: int, cfg: BCConfig) -> float:
    """The learning-rate multiplier at ``step``: linear warm-up, then cosine to ``min_lr_ratio``."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    p = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p))


class MetricsLog:
    """metrics.jsonl lines and TensorBoard scalars."""

    def __init__(self, run: Path) -> None:
        self.path = run / "metrics.jsonl"
        self.tb = None
        self.note = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(run / "tb"))
        except ImportError:
            self.note = "tensorboard is not installed: scalars go to metrics.jsonl only (pip install tensorboard)"

    def write(self, step: int, scalars: dict, kind: str = "train") -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"step": step, "kind": kind, **scalars}, default=float) + "\n")
        if self.tb is not None:
            for k, v in scalars.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.tb.add_scalar(f"{kind}/{k}", v, step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def _update_ema(ema: Any, model: Any, decay: float) -> None:
    import torch

    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters(), strict=True):
            e.lerp_(p.detach(), 1.0 - decay)
        for e, b in zip(ema.buffers(), model.buffers(), strict=True):
            e.copy_(b)


def _run_meta(run: Path, ds: Any, policy_cfg: FlowVLAConfig, cfg: BCConfig, resume: bool,
              init: dict | None = None) -> dict:
    from rl.policies.base import git_commit

    meta = {"dataset": str(ds.root), "dataset_hash": ds.content_hash(),
            "policy": json.loads(json.dumps(policy_cfg.to_dict())), "bc": asdict(cfg),
            "robot_type": ds.robot_type, "action_dim": ds.action_dim, "state_dim": ds.state_dim}
    if init is not None:
        meta["init"] = init
    path = run / "run.json"
    if resume and path.is_file():
        old = json.loads(path.read_text())
        for key, what in (("action_dim", "action space"), ("state_dim", "state size"), ("robot_type", "robot")):
            if old.get(key) != meta[key]:
                raise ConfigError(f"--resume: the run was trained with {what} {old.get(key)!r}, this dataset has "
                                  f"{meta[key]!r}; start a new run folder")
        if old.get("dataset_hash") != meta["dataset_hash"]:
            raise ConfigError(f"--resume: {run} was trained on another dataset ({old.get('dataset')}); start a new "
                              "run folder or resume with the same dataset")
        if old.get("init") != meta.get("init"):
            was, now = ((d.get("init") or {}).get("path") for d in (old, meta))
            raise ConfigError(f"--resume: the run started from another checkpoint ({was}, not {now}); resume with "
                              "the same --init")
        if old.get("policy") != meta["policy"]:
            raise ConfigError("--resume: the policy settings differ from the run's; start a new run folder")
    elif path.is_file() and (run / "checkpoints").is_dir():
        raise ConfigError(f"{run} already holds a training run; pass --resume to continue it or pick a new folder")
    meta["git_commit"] = git_commit()
    run.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=1, default=str))
    return meta


def _init_policy(init: str | os.PathLike, ds: Any, policy_cfg: FlowVLAConfig | None) -> Any:
    """The policy of a run or checkpoint to continue from, checked against the dataset it will train on.

    Raises:
        ConfigError: policy settings given as well, or a policy whose robot, sizes or cameras the dataset lacks.

    """
    from rl.policies.modeling_flow_vla import load_policy

    if policy_cfg is not None:
        raise ConfigError("a run continued from --init keeps the init policy's settings; drop the policy options")
    policy = load_policy(init, "cpu")
    pc = policy.config
    for what, want, have in (("robot", pc.robot_type, ds.robot_type), ("action size", pc.action_dim, ds.action_dim),
                             ("state size", pc.state_dim, ds.state_dim)):
        if want != have:
            raise ConfigError(f"--init {init}: the policy's {what} is {want!r}, the dataset's {have!r}; "
                              "continue it on data recorded like its own")
    missing = [c for c in pc.cameras or () if c not in ds.cameras]
    if missing:
        raise ConfigError(f"--init {init}: the policy sees cameras {missing} the dataset lacks (it has {ds.cameras})")
    return policy


def train_bc(demos: str | os.PathLike, out: str | os.PathLike, policy_cfg: FlowVLAConfig | None = None,
             cfg: BCConfig | None = None, *, resume: bool = False, progress: bool = True,
             init: str | os.PathLike | None = None) -> dict:
    """Train a FlowVLA by behaviour cloning; return a summary (final loss, samples/s, last evaluation, paths).

    With ``init`` (a run folder or checkpoint of an earlier training), training starts from that policy's
    weights, config and normalization instead of a fresh model (the fine-tuning step of ``train rft``);
    the optimizer, schedule and step count start afresh.

    Raises:
        PackError: the dataset cannot be read (or is empty).
        ConfigError: bad settings, a dataset the policy does not fit, or a resume of a different run.

    """
    import torch
    from tqdm import tqdm

    from rl.data.batches import ChunkBatcher, FrameStore
    from rl.data.reader import DemoDataset
    from rl.policies.configuration_flow_vla import resolve
    from rl.policies.modeling_flow_vla import FlowVLA

    cfg = cfg or BCConfig()
    if cfg.eval_dr:  # a bad DR file fails now, not at the first evaluation
        from rl.guided_dr import load_dr

        load_dr(cfg.eval_dr)
    run = Path(out)
    ds = DemoDataset(demos)
    from scenegen.sim.robots import robot_names

    if ds.robot_type not in robot_names():
        raise ConfigError(f"{demos}: a dataset of robot {ds.robot_type!r}; policies here drive scenegen's robots "
                          f"({', '.join(robot_names())}) in its env; record demonstrations with `scenegen demos`")
    space = ds.scenegen.get("action_space") or {}
    start = _init_policy(init, ds, policy_cfg) if init is not None else None
    pcfg = start.config if start is not None else resolve(
        policy_cfg or FlowVLAConfig(), action_dim=ds.action_dim, state_dim=ds.state_dim, cameras=tuple(ds.cameras),
        robot_type=ds.robot_type, tasks=list(ds.tasks), action_bounds=(space.get("low", -1.0), space.get("high", 1.0)))
    init_meta = None if start is None else {"path": str(Path(init).resolve()),
                                            "step": start.provenance.get("step"),
                                            "dataset_hash": start.provenance.get("dataset_hash")}
    meta = _run_meta(run, ds, pcfg, cfg, resume, init_meta)
    device = pick_device(cfg.device)
    torch.manual_seed(cfg.seed)
    episodes = list(range(min(cfg.episodes, len(ds)))) if cfg.episodes else None
    if cfg.episodes and cfg.episodes > len(ds):
        raise ConfigError(f"--episodes {cfg.episodes} but the dataset holds {len(ds)}")
    store = FrameStore(ds, pcfg.cameras or (), episodes)
    batcher = ChunkBatcher(store, pcfg.chunk_size, device, cfg.augment)
    model = (start if start is not None else FlowVLA(pcfg, ds.stats)).to(device)
    ema = copy.deepcopy(model).requires_grad_(False) if cfg.ema_decay > 0 else model
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() > 1]
    no_decay = [p for p in params if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg))
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    step = 0
    ckpts = run / "checkpoints"
    if resume and (ckpts / "last.txt").is_file():
        state = torch.load(ckpts / (ckpts / "last.txt").read_text().strip() / "training_state.pt",
                           map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        if ema is not model:
            ema.load_state_dict(state["ema"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        gen.set_state(state["generator"].cpu())
        step = int(state["step"])
    log = MetricsLog(run)
    provenance = {"dataset": str(ds.root), "dataset_hash": meta["dataset_hash"], "robot_type": ds.robot_type,
                  "env_config": ds.scenegen.get("env_config"), "pack": ds.scenegen.get("pack"),
                  "episodes_trained": len(store.episodes), "frames_trained": len(store)}
    if init_meta is not None:
        provenance["init"] = init_meta

    def checkpoint(final: bool = False) -> Path:
        name = f"step-{step:07d}"
        folder = ckpts / name
        ema.save(folder / "policy", {**provenance, "step": step})
        torch.save({"model": model.state_dict(), "ema": ema.state_dict() if ema is not model else None,
                    "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "generator": gen.get_state(),
                    "step": step}, folder / "training_state.pt")
        (ckpts / "last.txt").write_text(name)
        if final:
            ema.save(run / "policy", {**provenance, "step": step})
        return folder

    def evaluate_now() -> dict:
        from rl.evaluate import evaluate
        from rl.guided_dr import load_dr

        pack = cfg.eval_pack or ds.scenegen.get("pack")
        if not pack or not Path(pack).is_dir():
            raise ConfigError(f"rollout evaluation needs a pack: the dataset's ({pack}) is not here; pass --eval-pack")
        ema.eval()
        ema.provenance = provenance
        extra = {"dr": load_dr(cfg.eval_dr)} if cfg.eval_dr else {}
        rep = evaluate(ema, pack, cfg.eval_episodes, workers=cfg.eval_workers, device=device, **extra)
        return {k: rep[k] for k in ("success_rate", "success_ci95", "progress", "progress_ci95", "episodes")}

    use_amp = device == "cuda" and cfg.bf16
    t_start = time.monotonic()
    t_train, samples, last_eval = 0.0, 0, None
    losses: list[float] = []
    bar = tqdm(total=cfg.steps, initial=step, desc="bc", unit="step", disable=not progress)
    if log.note and progress:
        bar.write(log.note)
    stopped = False
    try:
        while step < cfg.steps:
            t0 = time.perf_counter()
            model.train()
            batch = batcher.sample(cfg.batch_size, gen)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
                loss, _ = model(batch, generator=gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else float("inf"))
            opt.step()
            sched.step()
            if ema is not model:
                _update_ema(ema, model, min(cfg.ema_decay, (1 + step) / (10 + step)))
            step += 1
            losses.append(float(loss.detach()))
            if device == "cuda":
                torch.cuda.synchronize()
            t_train += time.perf_counter() - t0
            samples += cfg.batch_size
            bar.update(1)
            if step % cfg.log_every == 0 or step == cfg.steps:
                scalars = {"loss": sum(losses[-cfg.log_every:]) / len(losses[-cfg.log_every:]),
                           "lr": sched.get_last_lr()[0], "grad_norm": float(gnorm),
                           "samples_per_s": samples / max(t_train, 1e-9)}
                log.write(step, scalars)
                bar.set_postfix(loss=f"{scalars['loss']:.4f}")
            if cfg.eval_every and (step % cfg.eval_every == 0 or step == cfg.steps):
                last_eval = evaluate_now()
                log.write(step, last_eval, kind="eval")
            if step % cfg.checkpoint_every == 0 and step < cfg.steps:
                checkpoint()
            if cfg.time_limit_s and time.monotonic() - t_start > cfg.time_limit_s and step < cfg.steps:
                stopped = True
                break
        folder = checkpoint(final=not stopped)
    finally:
        bar.close()
        log.close()
    return {"steps": step, "done": step >= cfg.steps, "loss_first": losses[0] if losses else None,
            "loss_last": sum(losses[-cfg.log_every:]) / max(1, len(losses[-cfg.log_every:])) if losses else None,
            "samples_per_s": samples / t_train if t_train else None, "train_seconds": round(t_train, 2),
            "device": device, "checkpoint": str(folder), "policy": str(run / "policy") if not stopped else None,
            "eval": last_eval, "parameters": model.num_parameters(), "frames": len(store),
            "episodes": len(store.episodes), "note": log.note}
