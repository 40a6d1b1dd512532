"""Environment speed and scripted-expert success, written to benchmarks/env_speed.json.

Usage::

    python benchmarks/env_speed.py [--scenes 8] [--steps 1500] [--work out/bench_env]

1. Generates (or resumes) one pack per prompt with :func:`scenegen.pipeline.generate`.
2. Steps one env (one process, one core) with seeded random actions: without images, and
   with the front camera at 64x64 and 128x128. Steps per second per core are steps over the
   process's CPU seconds (robust to other load on the machine); wall-clock rates are kept too.
3. Runs the scripted expert once on every scene of every pack and reports its success rate.

The machine this was written on is shared and loaded: the DESIGN.md reference loop runs
interleaved with the env (``reference_control_step_ms``) as a load indicator, next to the
idle-machine figure DESIGN.md gives for it (scenes differ, so it is no exact scale).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from rl.envs import PickPlaceEnv
from scenegen.assets.collision.config import CollisionConfig
from scenegen.pipeline import PipelineConfig, generate
from scenegen.sim.camera import render_camera
from scenegen.tasks.expert import rollout

PROMPTS = ("put the banana in the bowl", "put the apple on the plate", "put the red block in the bin",
           "put the apple and the banana in the bowl")
MODES = {"no_images": {"image_keys": ()},
         "front_64": {"image_keys": ("front",), "image_size": 64},
         "front_128": {"image_keys": ("front",), "image_size": 128}}


class Reference:
    """The DESIGN.md reference loops, timed on this machine now (CPU milliseconds).

    A raw PyBullet control step (IK + 12 physics steps at 240 Hz, 50 solver iterations, stock
    Panda) and a 64x64 TinyRenderer frame with the stock meshes; DESIGN.md measured 1.65 ms and
    14 ms for similar (lighter) scenes on an idle machine.
    """

    DESIGN_STEP_MS = 1.65
    DESIGN_RENDER_MS = 14.0

    def __init__(self, pack: object) -> None:
        from scenegen.sim.world import World

        scene = pack.scene(pack.scene_ids[0])
        self.world = World.build(scene, pack.asset_lookup)
        self.cpu = 0.0
        self.n = 0

    def steps(self, k: int) -> None:
        """Time ``k`` raw control steps."""
        import pybullet as p

        w = self.world
        c0 = time.process_time()
        for i in range(k):
            q = p.calculateInverseKinematics(w.robot_id, w.ee_link, [0.5, 0.1 * (i % 3), 0.3], [1, 0, 0, 0],
                                             physicsClientId=w.client)
            p.setJointMotorControlArray(w.robot_id, w.arm_joints, p.POSITION_CONTROL, targetPositions=q[:7],
                                        physicsClientId=w.client)
            w.step(12)
        self.cpu += time.process_time() - c0
        self.n += k

    def render_ms(self, k: int = 10) -> float:
        """CPU ms of a 64x64 front frame with the stock meshes."""
        c0 = time.process_time()
        for _ in range(k):
            render_camera(self.world, "front", 64, 64)
        return (time.process_time() - c0) / k * 1000

    def take(self) -> float:
        """Mean CPU ms of the reference steps since the last call."""
        ms = self.cpu / max(1, self.n) * 1000
        self.cpu, self.n = 0.0, 0
        return ms


def speed(pack: object, steps: int, seed: int, ref: Reference, **opts: object) -> dict:
    """Steps per second of one env with seeded random actions (resets included), reference interleaved."""
    env = PickPlaceEnv(pack, **opts)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for sid in env.scene_ids:  # build every world first: building is not stepping
        env.reset(seed=seed, options={"scene_id": sid})
    actions = rng.uniform(-1, 1, (steps, 5)).astype(np.float32)
    resets, cpu, wall = 0, 0.0, 0.0
    ref.take()
    for chunk in range(0, steps, 50):
        c0, t0 = time.process_time(), time.perf_counter()
        for a in actions[chunk:chunk + 50]:
            *_, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
                resets += 1
        cpu += time.process_time() - c0
        wall += time.perf_counter() - t0
        ref.steps(4)
    env.close()
    ref_ms = ref.take()
    rate = steps / cpu
    return {"steps": steps, "resets": resets, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "steps_per_s_per_core": round(rate, 1), "steps_per_s_wall": round(steps / wall, 1),
            "reference_control_step_ms": round(ref_ms, 3)}


def expert(pack: object, seeds: tuple[int, ...]) -> dict:
    """The expert's success over every scene of a pack."""
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=300)
    runs = []
    for sid in env.scene_ids:
        for seed in seeds:
            res, _ = rollout(env, seed=seed, options={"scene_id": sid})
            runs.append({"scene": sid[:12], "seed": seed, "success": res.success, "steps": res.steps,
                         "failure": res.failure})
    env.close()
    ok = sum(r["success"] for r in runs)
    return {"episodes": len(runs), "successes": ok, "success_rate": round(ok / max(1, len(runs)), 3),
            "mean_steps_success": round(float(np.mean([r["steps"] for r in runs if r["success"]] or [0])), 1),
            "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=8, help="scenes per prompt")
    ap.add_argument("--steps", type=int, default=1500, help="env steps per speed measurement")
    ap.add_argument("--work", default="out/bench_env", help="folder for the packs and the asset cache")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="pipeline workers for the packs")
    ap.add_argument("--out", default=str(Path(__file__).with_name("env_speed.json")))
    args = ap.parse_args()
    work = Path(args.work)
    cfg = PipelineConfig(collision=CollisionConfig.fast(), preview_size=0, workers=args.workers)
    packs = {}
    for prompt in PROMPTS:
        t = time.perf_counter()
        packs[prompt] = generate(prompt, args.scenes, work / prompt.replace(" ", "_"), seed=args.seed, config=cfg,
                                 cache_dir=work / "cache", progress=True)
        print(f"pack {prompt!r}: {len(packs[prompt])} scenes ({time.perf_counter() - t:.0f}s)", flush=True)
    first = packs[PROMPTS[0]]
    result: dict = {"machine": {"platform": platform.platform(), "processor": platform.processor(),
                                "cpus": os.cpu_count(), "loadavg_start": [round(x, 2) for x in os.getloadavg()]},
                    "pack": {"prompt": PROMPTS[0], "scenes": len(first)}, "speed": {}, "expert": {}}
    ref = Reference(first)
    ref.steps(20)
    result["reference"] = {"control_step_ms": round(ref.take(), 3), "render_64_stock_ms": round(ref.render_ms(), 3),
                           "design_control_step_ms": Reference.DESIGN_STEP_MS,
                           "design_render_64_stock_ms": Reference.DESIGN_RENDER_MS}
    print("reference", result["reference"], flush=True)
    for name, opts in MODES.items():
        result["speed"][name] = speed(first, args.steps, args.seed, ref, **opts)
        print(name, result["speed"][name], flush=True)
    for prompt, pk in packs.items():
        result["expert"][prompt] = expert(pk, (args.seed,))
        r = result["expert"][prompt]
        print(f"expert {prompt!r}: {r['successes']}/{r['episodes']}", flush=True)
    total = sum(r["episodes"] for r in result["expert"].values())
    wins = sum(r["successes"] for r in result["expert"].values())
    result["expert_overall"] = {"episodes": total, "successes": wins, "success_rate": round(wins / max(1, total), 3)}
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
