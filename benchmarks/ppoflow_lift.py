"""PPOFlow over behaviour cloning on the GPU machine: lift, throughput, K=1 vs K=10 (-> ppoflow_lift.json).

Run the same line until it prints ``all stages done`` (each call stops within ``--budget`` seconds
and the next call resumes where it stopped; stages already done are skipped)::

    PYTHONUNBUFFERED=1 python benchmarks/ppoflow_lift.py --work out/ppoflow_lift --device cuda --budget 540

Per prompt (``--prompts``; one single-object and one multi-object by default):

1. ``pack``: a training pool of ``--train-scenes`` scenes (seed 0) and ``--held-scenes`` held-out scenes
   of the same prompt (seed 1); cheap CoACD settings.
2. ``demos``: ``--demos`` successful expert episodes on the pool (few, so BC stays weak), ``scenegen demos``.
3. ``bc``: ``scenegen train bc`` for ``--bc-steps`` steps (K=10 at inference).
4. ``eval_bc``: the BC policy, noise-free, at K=10 and at K=1, on the pool and on the held-out scenes
   (``--eval-episodes`` each; rl.evaluate, the code of ``scenegen eval``).
5. ``ppo_k{K}`` for each K of ``--ks``: ``scenegen train ppoflow`` from the BC run for ``--ppo-minutes``
   of wall-clock in all, or until ``--ppo-steps`` env steps (equal training for every K), resumed across
   calls with the same config; then ``eval_k{K}``: the fine-tuned policy at its K on the pool and on the
   held-out scenes. Throughput and the time split come from its metrics.jsonl.
6. ``latency``: per-chunk inference latency of the BC policy at K=10 and K=1, batch 1 and 64.

With ``--rft-rollouts N``, ``rft`` runs first: ``scenegen train rft`` from the BC run (N rollouts on the pool
under the default DR in ``--workers`` processes, the successes mixed with the demonstrations, ``--rft-steps``
of BC fine-tuning), scored like BC (``eval_rft_k10_*``); ``--ppo-from bc rft`` then fine-tunes both with
PPOFlow under the same budget (``ppo_k{K}`` from BC, ``ppo_rft_k{K}`` from RFT).

Then ``ratio_numerics``: how far rescoring stored chains moves ``|ratio - 1|`` (the guard batch, and a
shuffled minibatch with gradients), with and without ``strict_fp32``.

Nothing is tuned on the held-out scenes: they are only evaluated. Success rates carry 95% Wilson
intervals and episode counts; wall-clock is measured around each stage.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from _bench import Bench, OutOfTime

PROMPTS = ("put the banana in the bowl", "put the apple and the banana in the bowl")
MIN_CHUNK_S = 60.0
"""The shortest PPOFlow call worth starting (seconds): the envs' start-up alone takes ~15 s."""


def slug(prompt: str) -> str:
    return prompt.replace(" ", "_")


def make_pack(b: Bench, prompt: str, which: str, n: int, seed: int) -> dict:
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig, generate

    cfg = PipelineConfig(collision=CollisionConfig.fast(), preview_size=0, workers=b.args.workers,
                         time_budget_s=max(60.0, b.left() - 10))
    pk = generate(prompt, n, b.work / slug(prompt) / which, seed=seed, config=cfg, cache_dir=b.work / "cache",
                  progress=False)
    return {"scenes": len(pk), "path": str(pk.root)}


def evaluate(b: Bench, policy: str, pack: str, k: int, dr: bool = False) -> dict:
    """Score a policy on a pack: nominal scenes, or (``dr``) under the env's default DR, the training condition."""
    from rl.envs import DRConfig
    from rl.evaluate import evaluate as run_eval

    rep = run_eval(policy, pack, b.args.eval_episodes, workers=b.args.workers, device=b.args.device, num_steps=k,
                   seed=b.args.eval_seed, **({"dr": DRConfig()} if dr else {}))
    rep.pop("per_episode", None)
    return {key: rep[key] for key in ("episodes", "successes", "success_rate", "success_ci95", "progress",
                                      "progress_ci95", "seconds", "failures")}


def ppoflow(b: Bench, prompt: str, k: int, bc: str, train_pack: str, tag: str | None = None) -> dict:
    """Resume ``train ppoflow`` for K until its share of ``--ppo-minutes`` is used or it took ``--ppo-steps``.

    The wall-clock accumulates over calls.
    """
    tag = tag or f"ppo_k{k}"
    key = f"{slug(prompt)}/{tag}"
    base = b.work / slug(prompt)
    run = base / tag
    used = b.state["ppo_seconds"].get(key, 0.0)
    total = b.args.ppo_minutes * 60
    steps = getattr(b.args, "ppo_steps", None)
    # under a minute of the share left, or the run's env steps taken: the run is done, not out of time
    while total - used >= MIN_CHUNK_S and not (steps and _steps_done(run) >= steps):
        chunk = min(total - used, b.left() - 60)  # leaves time for the env start-up and the export
        if chunk < MIN_CHUNK_S:
            raise OutOfTime(key)
        t = time.perf_counter()
        b.cli("train", "ppoflow", "--init", bc, "--pack", train_pack, "-o", str(run),
              "--num-envs", str(b.args.num_envs), "--steps", str(steps or 100_000_000), "--k", str(k),
              *(["--ft-steps", "1"] if k > 1 else []), "--device", b.args.device, "--resume",
              "--time-budget", str(int(chunk)), "--eval-episodes", "0", *b.args.ppo_args.split())
        used += time.perf_counter() - t
        b.state["ppo_seconds"][key] = used
        b.save()
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    tail = rows[-5:]

    def mean(name: str) -> float:
        return round(sum(r[name] for r in tail) / len(tail), 4)

    return {"wall_clock_total_s": round(used, 1), "iterations": len(rows), "env_steps": rows[-1]["env_steps"],
            "train_success_curve": [round(r["success_rate"], 3) for r in rows],
            "env_steps_per_s": mean("env_steps_per_s"), "decisions_per_s": mean("decisions_per_s"),
            "time_split_s_per_iteration": {"env": mean("time_env_s"), "policy": mean("time_policy_s"),
                                           "update": mean("time_update_s")},
            "curves": {name: [None if r.get(name) is None else float(f"{float(r[name]):.4g}") for r in rows]
                       for name in ("approx_kl_chain", "clip_frac", "explained_variance", "sigma", "early_stop",
                                    "lr_actor", "episodes", "pg_grad_cos", "pg_grad_snr", "pg_signal_sq",
                                    "pg_noise_tr", "pg_noise_scale", "group_informative", "group_idle_frac",
                                    "pg_signal_sq_critic", "pg_noise_tr_critic")},
            "last": {k_: tail[-1].get(k_) for k_ in ("approx_kl", "approx_kl_chain", "clip_frac", "sigma",
                                                     "value_loss", "ratio_max_dev", "explained_variance")}}


def _steps_done(run: Path) -> int:
    """Env steps the PPOFlow run in ``run`` has taken (0 before its first iteration)."""
    f = run / "metrics.jsonl"
    lines = f.read_text().splitlines() if f.is_file() else []
    return int(json.loads(lines[-1])["env_steps"]) if lines else 0


def latency(b: Bench, policy_dir: str) -> dict:
    """Median per-chunk inference latency (ms) of the BC policy at K=10 and K=1, batch 1 and 64."""
    import numpy as np
    import torch

    from rl.policies.modeling_flow_vla import load_policy

    pol = load_policy(policy_dir, b.args.device)
    cfg, size = pol.config, int((pol.provenance.get("env_config") or {}).get("image_size", 64))
    out = {}
    for batch in (1, 64):
        obs = {"observation.state": torch.zeros(batch, cfg.state_dim, device=pol.device),
               "task": [PROMPTS[0]] * batch,
               **{f"observation.images.{c}": torch.rand(batch, 3, size, size, device=pol.device)
                  for c in cfg.cameras or ()}}
        for k in (10, 1):
            times = []
            for i in range(60):
                if pol.device.type == "cuda":
                    torch.cuda.synchronize()
                t = time.perf_counter()
                pol.predict_action_chunk(obs, num_steps=k)
                if pol.device.type == "cuda":
                    torch.cuda.synchronize()
                if i >= 10:
                    times.append((time.perf_counter() - t) * 1000)
            out[f"batch{batch}_k{k}_ms"] = round(float(np.median(times)), 3)
        out[f"batch{batch}_speedup_k1"] = round(out[f"batch{batch}_k10_ms"] / out[f"batch{batch}_k1_ms"], 2)
    return out


def run_prompt(b: Bench, prompt: str) -> dict:
    """Every stage of one prompt (see the module docstring)."""
    a = b.args
    base, s = b.work / slug(prompt), slug(prompt)
    r: dict = {}
    packs = {"train": str(base / "train"), "held": str(base / "held")}
    bc = str(base / "bc")
    if a.init_bc:  # a BC run made elsewhere (e.g. by bc_scaling.py) with its training pool and held-out pack
        packs, bc = {"train": a.train_pack, "held": a.held_pack}, a.init_bc
        r["init"] = {"bc": bc, **packs}
    else:
        r["pack_train"] = b.stage(f"{s}/pack_train", lambda: make_pack(b, prompt, "train", a.train_scenes, 0), 120)
        r["pack_held"] = b.stage(f"{s}/pack_held", lambda: make_pack(b, prompt, "held", a.held_scenes, 1), 120)
        r["demos"] = b.stage(f"{s}/demos", lambda: b.cli(
            "demos", str(base / "train"), "-n", str(a.demos), "-o", str(base / "demos"), "--image-size",
            str(a.image_size), "--overwrite"), 60)
        r["bc"] = b.stage(f"{s}/bc", lambda: b.cli(
            "train", "bc", str(base / "demos"), "-o", bc, "--device", a.device, "--steps",
            str(a.bc_steps), "--resume", "--no-progress", "--eval-every", "0", "--time-limit-s",
            str(int(b.left() - 30))) or _bc_done(base / "bc", a.bc_steps), 90)
    def score(key: str, stage: str, policy: str, pack: str, k: int) -> None:
        r[key] = b.stage(stage, lambda: evaluate(b, policy, pack, k))
        if a.eval_dr and (pack == packs["train"] or a.eval_dr_held):  # the same seeds under the training DR
            r[f"{key}_dr"] = b.stage(f"{stage}_dr", lambda: evaluate(b, policy, pack, k, dr=True))

    for k in a.bc_ks:
        for where in ("train", "held"):
            score(f"bc_k{k}_{where}", f"{s}/eval_bc_k{k}_{where}", bc, packs[where], k)
    starts = {"bc": bc}
    if a.rft_rollouts:  # rejection fine-tuning of the BC policy, scored like it, and a start for PPOFlow too
        rft_run = base / "rft"

        def rft() -> dict:
            try:
                b.cli("train", "rft", "--init", bc, "--pack", packs["train"], "-o", str(rft_run), "--rollouts",
                      str(a.rft_rollouts), "--workers", str(a.workers), "--steps", str(a.rft_steps), "--device",
                      a.device, "--eval-every", "0", "--resume", "--no-progress", "--time-limit-s",
                      str(int(b.left() - 30)))
            except subprocess.CalledProcessError as exc:  # e.g. no rollout succeeded: a finding, not a crash
                return {"error": f"train rft exited {exc.returncode} (see the log)"}
            return _rft_done(rft_run, a.rft_steps)

        r["rft"] = b.stage(f"{s}/rft", rft, 150)
        if "error" not in r["rft"]:
            for where in ("train", "held"):
                score(f"rft_k10_{where}", f"{s}/eval_rft_k10_{where}", str(rft_run), packs[where], 10)
            starts["rft"] = str(rft_run)
    for start in a.ppo_from:
        if start not in starts:
            print(f"no PPOFlow from {start}: it was not made (--rft-rollouts N, or its error above)", flush=True)
            continue
        for k in a.ks:
            tag = f"ppo_k{k}" if start == "bc" else f"ppo_{start}_k{k}"  # (the first sessions' names for bc)
            r[tag] = b.stage(f"{s}/{tag}", lambda k=k, st=start, tag=tag: ppoflow(
                b, prompt, k, starts[st], packs["train"], tag), 90)
            for where in ("train", "held"):
                score(f"{tag}_{where}", f"{s}/eval_{tag}_{where}", str(base / tag / "policy"), packs[where], k)
            for bk in a.bc_ks:  # against the BC policy at each K it was scored at (K=10: as trained)
                for where in ("train", "held"):
                    r[f"lift_{tag}_{where}_points_vs_bc_k{bk}"] = round(100 * (
                        r[f"{tag}_{where}"]["success_rate"] - r[f"bc_k{bk}_{where}"]["success_rate"]), 1)
    if a.bc_ks:
        r["latency"] = b.stage(f"{s}/latency", lambda: latency(b, str(Path(bc) / "policy")))
    return r


def numerics(b: Bench, policy_dir: str) -> dict:
    """Largest ``|ratio - 1|`` when stored chains are rescored: the guard batch vs a shuffled minibatch with gradients.

    With and without ``strict_fp32`` (TF32 and the transformer fast path off), for K=1, K=10 and K=10 with
    ``ft_steps=1``, float32 and bf16 embeddings; observations are random images and states.
    """
    import numpy as np
    import torch

    from rl.policies.modeling_flow_vla import load_policy
    from rl.policies.noise import FlowVLAAdapter, NoiseNet, NoisyFlow
    from rl.ppoflow_guards import strict_numerics
    from rl.rollout import concat_obs, take_obs

    model = load_policy(policy_dir, b.args.device)
    pol, c, rng, n, out = FlowVLAAdapter(model), model.config, np.random.default_rng(0), 16, {}
    size = int((model.provenance.get("env_config") or {}).get("image_size", 64))

    def obs() -> dict:
        ins = np.empty(n, dtype=object)
        ins[:] = [PROMPTS[i % 2] for i in range(n)]
        return {**{cam: rng.integers(0, 255, (n, size, size, 3), dtype=np.uint8) for cam in c.cameras or ()},
                "proprio": rng.normal(size=(n, c.state_dim)).astype(np.float32), "instruction": ins}

    for strict in (False, True):
        for k, ft in ((1, None), (10, None), (10, 1)):
            for amp in (False, True):
                with strict_numerics(strict):
                    noise = NoiseNet(c.d_model, c.chunk_size, c.action_dim, sigma_min=0.08, sigma_max=0.14)
                    agent = NoisyFlow(pol, noise.to(model.device), k, ft, False, amp).eval()
                    gen = torch.Generator(device=model.device).manual_seed(0)
                    batches, chains, lps = [obs() for _ in range(8)], [], []
                    with torch.no_grad():
                        for o in batches:
                            ch, lp = agent.sample(agent.embed(o), gen)
                            chains.append(ch)
                            lps.append(lp)
                    flat, chain, old = concat_obs(batches), torch.cat(chains), torch.cat(lps)
                    guard_ix, shuf_ix = np.arange(n), rng.permutation(len(old))[:32]
                    with torch.no_grad():
                        g = agent.log_prob(agent.embed(take_obs(flat, guard_ix)), chain[:n])[0]
                    t = torch.as_tensor(shuf_ix, device=model.device)
                    m = agent.log_prob(agent.embed(take_obs(flat, shuf_ix)), chain[t])[0].detach()
                out[f"strict{strict}_k{k}_ft{ft}_amp{amp}"] = {
                    "guard_batch": float(((g - old[:n]).exp() - 1).abs().max()),
                    "shuffled_minibatch_with_grad": float(((m - old[t]).exp() - 1).abs().max())}
    return out


def run(b: Bench) -> dict:
    a = b.args
    result: dict = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                "python": sys.version.split()[0]},
                    "command": " ".join(["python", *sys.argv]), "settings": {k: v for k, v in vars(a).items()},
                    "prompts": {}}
    try:
        import torch

        result["machine"]["torch"] = torch.__version__
        result["machine"]["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    except ImportError:
        pass
    for prompt in a.prompts:
        result["prompts"][prompt] = run_prompt(b, prompt)
    first = Path(a.init_bc or b.work / slug(a.prompts[0]) / "bc") / "policy"
    if not a.no_numerics:
        result["ratio_numerics"] = b.stage("ratio_numerics", lambda: numerics(b, str(first)))
    return result


def _rft_done(run: Path, steps: int) -> dict:
    """The RFT stage is done once its fine-tuning reached ``steps``: its collection summary and the steps."""
    out = _bc_done(run, steps)
    return {**json.loads((run / "rft.json").read_text())["collect"], **out}


def _bc_done(run: Path, steps: int) -> dict:
    """``train bc`` stops at its time limit too: the stage is done only once the last checkpoint reached ``steps``."""
    name = (run / "checkpoints" / "last.txt").read_text().strip()
    reached = int(name.split("-")[-1])
    if reached < steps:
        raise OutOfTime(f"bc at step {reached} of {steps}")
    return {"steps": reached}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="out/ppoflow_lift", help="work folder (packs, demos, runs, state.json)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=540.0, help="seconds this call may run")
    ap.add_argument("--prompts", nargs="+", default=list(PROMPTS))
    ap.add_argument("--train-scenes", type=int, default=16)
    ap.add_argument("--held-scenes", type=int, default=16)
    ap.add_argument("--demos", type=int, default=20, help="expert episodes for BC (few, so BC is weak)")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--bc-steps", type=int, default=3000)
    ap.add_argument("--ks", type=int, nargs="+", default=[1], help="PPOFlow K values (e.g. 1 10)")
    ap.add_argument("--rft-rollouts", type=int, default=0,
                    help="rejection fine-tuning of the BC run first (train rft): rollouts on the pool (0: none)")
    ap.add_argument("--rft-steps", type=int, default=2000, help="BC steps of the RFT fine-tuning")
    ap.add_argument("--ppo-from", nargs="+", default=["bc"], choices=["bc", "rft"],
                    help="PPOFlow start(s): the BC run and/or the RFT run")
    ap.add_argument("--bc-ks", type=int, nargs="*", default=[10, 1],
                    help="K values the BC policy is scored at (none: not scored here, e.g. by a parallel call)")
    ap.add_argument("--ppo-minutes", type=float, default=20.0, help="PPOFlow wall-clock per prompt and K")
    ap.add_argument("--ppo-steps", type=int, default=None,
                    help="PPOFlow env steps per prompt and K (equal training across K; --ppo-minutes still caps it)")
    ap.add_argument("--ppo-args", default="--decisions-per-env 32 --minibatch-size 128 --clip-eps 0.01",
                    help="extra `train ppoflow` options (the same every call: --resume checks)")
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--workers", type=int, default=16, help="env processes for packs and evaluation")
    ap.add_argument("--eval-episodes", type=int, default=100)
    ap.add_argument("--no-numerics", action="store_true", help="skip the ratio_numerics stage")
    ap.add_argument("--eval-dr", action="store_true",
                    help="score every policy under the default DR too (keys ..._dr), the condition it trains in")
    ap.add_argument("--eval-dr-held", action="store_true",
                    help="with --eval-dr: the held-out scenes under DR too (else the training pool only)")
    ap.add_argument("--eval-seed", type=int, default=1_000_000)
    ap.add_argument("--out", default=str(Path(__file__).with_name("ppoflow_lift.json")))
    ap.add_argument("--init-bc", default=None, help="start from this BC run (skips pack, demos and bc; one prompt)")
    ap.add_argument("--train-pack", default=None, help="with --init-bc: the pack it was trained on")
    ap.add_argument("--held-pack", default=None, help="with --init-bc: held-out scenes of the same prompt")
    args = ap.parse_args()
    if args.init_bc and not (args.train_pack and args.held_pack and len(args.prompts) == 1):
        ap.error("--init-bc needs --train-pack, --held-pack and exactly one --prompts")
    b = Bench(args, {"ppo_seconds": {}})
    try:
        result = run(b)
    except OutOfTime as exc:
        print(f"budget spent before {exc}; run the same command again to resume", flush=True)
        return
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"all stages done; wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
