"""Prove that LeRobot itself reads scenegen's demonstrations with ``LeRobotDataset(repo_id, root=DIR)``.

On the GPU machine (Python 3.12, torch 2.11), with lerobot 0.6.x and what it imports brought as wheels
(``bash ../shared/device/wheels.sh datasets pandas pyarrow av draccus einops termcolor opencv-python-headless
fsspec dill multiprocess xxhash pyyaml`` plus the lerobot-0.6.1 wheel in ``.whl/``, installed with the line it
prints), run::

    python benchmarks/lerobot_load.py --work out/lerobot_load --out benchmarks/lerobot_load.json

Here (no lerobot: it needs Python >= 3.12 and torch < 2.12) the same checks run on scenegen's own reader::

    python benchmarks/lerobot_load.py --work /tmp/lerobot_load --reader scenegen --out /tmp/lerobot_load/r.json

1. A 2-scene pack and two datasets of ``--episodes`` expert episodes (front + wrist cameras): ``video``
   (mp4, H.264 4:4:4) and ``image`` (PNG in the parquet). The raw camera frames are taken by replaying each
   recorded episode in the env (same scene, seed and actions; the env is deterministic, and the replayed
   state must equal the recorded one).
2. The reader (``lerobot.datasets.lerobot_dataset.LeRobotDataset``, the module path of lerobot 0.6.x)
   iterates every frame: shapes and dtypes of images ``(3, H, W)`` float in [0, 1], ``observation.state``,
   ``action``, the task string and indices; state and action equal the recorded ones exactly; decoded images
   match the raw frames exactly (image features) or within the video codec's error (PSNR, max abs error).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def record(work: Path, episodes: int, size: int) -> dict:
    from rl.data.demos import record_demos
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig, generate

    pk = generate("put the banana in the bowl", 2, work / "pack", seed=0, progress=False, cache_dir=work / "cache",
                  config=PipelineConfig(collision=CollisionConfig.fast(), preview_size=0))
    out = {}
    for fmt in ("video", "image"):
        path = work / f"ds_{fmt}"
        if not (path / "meta" / "stats.json").is_file():
            record_demos(str(pk.root), episodes, str(path), image_size=size, cameras=("front", "wrist"),
                         overwrite=True, progress=False, image_format=fmt)
        out[fmt] = path
    return {"pack": pk.root, **out}


def raw_frames(pack: Path, ds_path: Path) -> tuple[dict, dict]:
    """Replay every episode: camera frames per episode, and the recorded state / action arrays."""
    from rl.data.reader import DemoDataset
    from rl.envs import PickPlaceEnv

    ds = DemoDataset(ds_path)
    cfg = ds.scenegen["env_config"]
    env = PickPlaceEnv(str(pack), image_size=cfg["image_size"], image_keys=tuple(cfg["image_keys"]),
                       max_episode_steps=cfg["max_episode_steps"], action_mode=cfg.get("action_mode", "ee7"))
    raw, rec = {}, {}
    for i in range(len(ds)):
        ep = ds[i]
        obs, _ = env.reset(seed=ep.seed, options={"scene_id": ep.scene_id})
        frames = {c: [] for c in ds.cameras}
        for t, a in enumerate(ep.actions):
            if not np.array_equal(obs["proprio"], ep.observations["proprio"][t]):
                raise SystemExit(f"replay of episode {i} left the recorded state at step {t}: not deterministic")
            for c in ds.cameras:
                frames[c].append(obs[c])
            obs, *_ = env.step(a)
        raw[i] = {c: np.stack(v) for c, v in frames.items()}
        rec[i] = {"state": ep.observations["proprio"], "action": ep.actions}
    env.close()
    return raw, rec


def frames_from(reader: str, path: Path):
    """(episode, frame index, item) over every frame, from LeRobot's dataset or scenegen's reader."""
    if reader == "lerobot":
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        ds = LeRobotDataset(f"scenegen/{path.name}", root=path)
        meta = {"len": len(ds), "num_episodes": ds.num_episodes, "fps": ds.fps, "camera_keys": ds.meta.camera_keys}
        return meta, ((int(it["episode_index"]), int(it["frame_index"]), it) for it in (ds[i] for i in range(len(ds))))
    import torch

    from rl.data.reader import DemoDataset

    ds = DemoDataset(path)

    def items():
        for e in range(len(ds)):
            data = ds.frames(e)
            for t in range(len(data["action"])):
                it = {k: torch.as_tensor(np.asarray(v[t], dtype=np.float32)) for k, v in data.items()
                      if k in ("observation.state", "action")}
                for c in ds.cameras:
                    it[f"observation.images.{c}"] = torch.as_tensor(data[f"observation.images.{c}"][t]).permute(
                        2, 0, 1).float() / 255
                it["task"] = ds.tasks[int(data["task_index"][t])]
                yield e, t, it
    return {"len": ds.num_frames, "num_episodes": len(ds), "fps": ds.fps, "camera_keys": ds.cameras}, items()


def check(reader: str, path: Path, raw: dict, rec: dict) -> dict:
    info = json.loads((path / "meta" / "info.json").read_text())
    meta, it = frames_from(reader, path)
    cams = [k for k in info["features"] if k.startswith("observation.images.")]
    sq, worst, frames, exact, problems = {c: 0.0 for c in cams}, dict.fromkeys(cams, 0.0), 0, True, []
    for e, t, item in it:
        frames += 1
        st, ac = item["observation.state"].numpy(), item["action"].numpy()
        if st.shape != (info["features"]["observation.state"]["shape"][0],) or ac.shape != rec[e]["action"][t].shape:
            problems.append(f"episode {e} frame {t}: shapes {st.shape} {ac.shape}")
        if not (np.array_equal(st, rec[e]["state"][t]) and np.array_equal(ac, rec[e]["action"][t])):
            problems.append(f"episode {e} frame {t}: state/action differ from the recording")
        if not isinstance(item["task"], str) or not item["task"]:
            problems.append(f"episode {e} frame {t}: task {item['task']!r}")
        for c in cams:
            img = item[c]
            h, w = info["features"][c]["shape"][:2]
            if tuple(img.shape) != (3, h, w) or float(img.min()) < 0 or float(img.max()) > 1:
                problems.append(f"episode {e} frame {t}: {c} of shape {tuple(img.shape)}")
                continue
            got = np.round(img.permute(1, 2, 0).numpy() * 255).astype(np.int16)
            want = raw[e][c.split(".")[-1]][t].astype(np.int16)
            d = np.abs(got - want)
            exact &= not d.any()
            sq[c] += float((d.astype(np.float64) ** 2).mean())
            worst[c] = max(worst[c], float(d.max()))
    psnr = {c: (round(10 * np.log10(255**2 / (sq[c] / frames)), 2) if sq[c] else float("inf")) for c in cams}
    return {"reader": reader, "frames_iterated": frames, "total_frames": info["total_frames"],
            "dataset_len": meta["len"], "episodes": meta["num_episodes"], "fps": meta["fps"],
            "images_exact": bool(exact), "psnr_db": psnr, "max_abs_error": worst, "problems": problems[:20],
            "ok": not problems and frames == info["total_frames"] == meta["len"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default="out/lerobot_load")
    p.add_argument("--out", default=str(Path(__file__).with_name("lerobot_load.json")))
    p.add_argument("--reader", choices=("lerobot", "scenegen"), default="lerobot")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--image-size", type=int, default=64)
    a = p.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    made = record(work, a.episodes, a.image_size)
    results = {}
    for fmt in ("video", "image"):
        raw, rec = raw_frames(made["pack"], made[fmt])
        results[fmt] = check(a.reader, made[fmt], raw, rec)
        print(fmt, json.dumps(results[fmt]), flush=True)
    versions = {}
    for mod in ("lerobot", "datasets", "pyarrow", "av", "torch"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # not installed (lerobot here)
            versions[mod] = None
    report = {"benchmark": "lerobot_load", "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
              "python": platform.python_version(), "versions": versions, "seconds": round(time.time() - t0, 1),
              "results": results, "ok": all(r["ok"] for r in results.values()) and results["image"]["images_exact"]}
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(("OK" if report["ok"] else "FAILED") + f" -> {a.out}")


if __name__ == "__main__":
    main()
