"""Open-loop chunks with only the last observation rendered vs every one (-> chunk_speed.json).

Usage::

    python benchmarks/chunk_speed.py [--scenes 4] [--chunks 40] [--rounds 3] [--work out/bench_chunk]

PPOFlow's rollouts run a chunk's ``action_steps`` actions open loop (:class:`rl.rollout.ChunkEnv`) and the
policy reads only the observation after the last one. With the env's ``advance`` (a step without its
observation) the inner actions are not rendered. On one pack (the banana prompt, cheap collision settings),
one env in this process with the PPOFlow rollouts' observation (front and wrist cameras at ``--size``, the
default DR), seeded random chunks of 16 actions of which 8 run: wall seconds per chunk both ways,
alternated ``--rounds`` times in one run (the machine is shared), and whether the two give the same
observations, rewards and episode ends (they must).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from rl.envs import DRConfig, PickPlaceEnv
from rl.rollout import ChunkEnv
from scenegen.assets.collision.config import CollisionConfig
from scenegen.pipeline import PipelineConfig, generate

PROMPT = "put the banana in the bowl"


def run(pack: str, blind: bool, chunks: int, size: int) -> tuple[float, list]:
    """Seconds per chunk and a fingerprint of every chunk's result."""
    env = PickPlaceEnv(pack, image_size=size, image_keys=("front", "wrist"), dr=DRConfig())
    if not blind:
        env.advance = None  # hides it: every action's observation is rendered, as a plain env does
    ce = ChunkEnv(env, 16, 8, 0.99)
    rng = np.random.default_rng(0)
    ce.reset(seed=3)
    seconds, prints = 0.0, []
    for i in range(chunks):
        chunk = rng.uniform(-1, 1, (16, env.action_space.shape[0])).astype(np.float32)
        t = time.perf_counter()
        obs, r, term, trunc, info = ce.step(chunk)
        seconds += time.perf_counter() - t
        prints.append([int(obs["front"].sum()), int(obs["wrist"].sum()), float(obs["proprio"].sum()), r,
                       term, trunc, info["chunk_steps"]])
        if term or trunc:
            ce.reset(seed=4 + i)
    env.close()
    return seconds / chunks, prints


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenes", type=int, default=4)
    ap.add_argument("--chunks", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--work", default="out/bench_chunk")
    ap.add_argument("--out", default=str(Path(__file__).with_name("chunk_speed.json")))
    a = ap.parse_args()
    pk = generate(PROMPT, a.scenes, Path(a.work) / "pack", seed=0, progress=False, cache_dir=Path(a.work) / "cache",
                  config=PipelineConfig(collision=CollisionConfig.fast(), preview_size=0, workers=1))
    times: dict[str, list[float]] = {"every": [], "last": []}
    prints: dict[str, list] = {}
    load = [os.getloadavg()[0]]
    for _ in range(a.rounds):
        for mode in ("every", "last"):
            s, p = run(str(pk.root), mode == "last", a.chunks, a.size)
            times[mode].append(round(s * 1000, 2))
            prints.setdefault(mode, p)
    load.append(os.getloadavg()[0])
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"benchmark": "chunk_speed", "date": time.strftime("%Y-%m-%d %H:%M"), "prompt": PROMPT,
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_before_after": load},
           "settings": vars(a), "ms_per_chunk": times, "median_ms_per_chunk": med,
           "speedup": round(med["every"] / med["last"], 2), "identical_results": prints["every"] == prints["last"]}
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("median_ms_per_chunk", "speedup", "identical_results")}))


if __name__ == "__main__":
    main()
