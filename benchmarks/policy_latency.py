"""FlowVLA inference latency per action chunk: K=10 and K=1, batch 1 and 64, CPU and CUDA (-> policy_latency.json).

Run (on the GPU machine it measures both devices; here only the CPU)::

    python benchmarks/policy_latency.py --threads 1 --out benchmarks/policy_latency.json
    python benchmarks/policy_latency.py --checkpoint out/bc_scaling/put_the_banana_in_the_bowl/bc_400

Without ``--checkpoint`` the policy is the BC benchmark's architecture (d_model 128, front + wrist at 96x96,
H=16) with random weights: latency does not depend on the weights. One "chunk" is ``predict_action_chunk``:
the observation encoders once, then K Euler steps of the action expert. CUDA times are synchronized;
on the CPU the process's CPU time is kept too (with ``--threads 1`` it is the latency an idle core would
show, whatever else runs on the machine). Each figure is the median (and 90th percentile) over ``--repeats``
calls after ``--warmup`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path


def build(args: argparse.Namespace):
    from rl.policies.configuration_flow_vla import FlowVLAConfig, resolve
    from rl.policies.modeling_flow_vla import FlowVLA, load_policy

    if args.checkpoint:
        return load_policy(args.checkpoint)
    cams = ("front", "wrist")
    cfg = resolve(FlowVLAConfig(d_model=args.d_model), action_dim=args.action_dim, state_dim=17, cameras=cams,
                  robot_type="panda", tasks=["put the banana in the bowl"])
    stats = {"observation.state": {"mean": [0.0] * 17, "std": [1.0] * 17},
             "action": {"mean": [0.0] * args.action_dim, "std": [1.0] * args.action_dim}}
    return FlowVLA(cfg, stats)


def measure(policy, device: str, batch: int, k: int, size: int, warmup: int, repeats: int) -> dict:
    import torch

    policy = policy.to(device).eval()
    obs = {"observation.state": torch.zeros(batch, policy.config.state_dim, device=device),
           "task": ["put the banana in the bowl"] * batch}
    for c in policy.cameras:
        obs[f"observation.images.{c}"] = torch.rand(batch, 3, size, size, device=device)
    times, cpu = [], []
    for i in range(warmup + repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        t, c = time.perf_counter(), time.process_time()
        policy.predict_action_chunk(obs, num_steps=k)
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
    times.sort()
    row = {"device": device, "batch": batch, "K": k, "median_ms": round(statistics.median(times), 3),
           "p90_ms": round(times[int(0.9 * (len(times) - 1))], 3), "repeats": repeats,
           "chunks_per_s": round(1000 * batch / statistics.median(times), 1)}
    if device == "cpu":  # process CPU time: robust to other load on a shared machine (one thread: = latency)
        row["cpu_time_median_ms"] = round(statistics.median(cpu), 3)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(Path(__file__).with_name("policy_latency.json")))
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--action-dim", type=int, default=7)
    p.add_argument("--image-size", type=int, default=96)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default).")
    a = p.parse_args()
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    policy = build(a)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for dev in devices:
        for batch in (1, 64):
            for k in (10, 1):
                r = measure(policy, dev, batch, k, a.image_size, a.warmup, a.repeats)
                print(json.dumps(r), flush=True)
                rows.append(r)
    report = {"benchmark": "policy_latency", "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
              "load_average": list(os.getloadavg()),
              "cpu_threads": torch.get_num_threads(), "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
              "policy": {"checkpoint": a.checkpoint, "parameters": policy.num_parameters(),
                         "d_model": policy.config.d_model, "chunk_size": policy.config.chunk_size,
                         "cameras": list(policy.cameras), "image_size": a.image_size}, "rows": rows}
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(f"-> {a.out}")


if __name__ == "__main__":
    main()
