"""Demonstration datasets: a LeRobot-style folder of compressed NumPy episodes, its writer and reader.

Layout (see ``docs/rl.md``)::

    DIR/
      meta/info.json          format, version, fps, features (dtype, shape), counts, env config, failures
      meta/episodes.jsonl     one line per episode: index, scene_id, instruction, task_index, length, seed, return
      meta/tasks.jsonl        one line per distinct instruction: task_index, task
      data/chunk-000/episode_000000.npz
                              observation.images.<camera> (T,H,W,3) uint8, observation.state (T,D) float32,
                              observation.points (T,N,3) float32 (optional), action (T,5) float32,
                              reward (T,) float32, done (T,) bool, frame_index, episode_index, task_index (T,) int64,
                              timestamp (T,) float32

Frame ``t`` holds the observation the action ``t`` was taken in and the reward that followed.
Every file is written to a temporary name and renamed into place; ``meta/`` is rewritten
after each episode, so an interrupted recording leaves a readable dataset.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenegen.errors import ConfigError, PackError

FORMAT = "scenegen-demos"
VERSION = 1
CHUNK_SIZE = 1000
"""Episodes per ``data/chunk-XXX`` folder."""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def frame_arrays(obs_list: list[dict], actions: list, rewards: list, episode_index: int, task_index: int,
                 fps: float) -> dict[str, np.ndarray]:
    """Stack one episode's observations, actions and rewards into the dataset's per-frame arrays."""
    t = len(actions)
    if not (len(obs_list) == t == len(rewards)) or t == 0:
        raise ConfigError(f"an episode needs as many observations, actions and rewards (got {len(obs_list)}, "
                          f"{t}, {len(rewards)}), and at least one step")
    out: dict[str, np.ndarray] = {}
    for key in obs_list[0]:
        if key == "instruction":
            continue
        arr = np.stack([np.asarray(o[key]) for o in obs_list])
        if key == "proprio":
            out["observation.state"] = arr.astype(np.float32)
        elif key == "points":
            out["observation.points"] = arr.astype(np.float32)
        else:
            out[f"observation.images.{key}"] = arr.astype(np.uint8)
    out["action"] = np.asarray(actions, dtype=np.float32).reshape(t, -1)
    out["reward"] = np.asarray(rewards, dtype=np.float32)
    done = np.zeros(t, dtype=bool)
    done[-1] = True
    out["done"] = done
    out["frame_index"] = np.arange(t, dtype=np.int64)
    out["episode_index"] = np.full(t, episode_index, dtype=np.int64)
    out["task_index"] = np.full(t, task_index, dtype=np.int64)
    out["timestamp"] = (np.arange(t) / fps).astype(np.float32)
    return out


class DemoWriter:
    """Writes episodes into a new dataset folder.

    Raises:
        PackError: ``out`` already holds a dataset and ``overwrite`` is False, or is a file.

    """

    def __init__(self, out: str | os.PathLike, fps: float, meta: dict | None = None, overwrite: bool = False) -> None:
        self.root = Path(out)
        if self.root.exists() and not self.root.is_dir():
            raise PackError(f"{out} is a file; give a folder for the demonstrations")
        if (self.root / "meta" / "info.json").exists() and not overwrite:
            raise PackError(f"{out} already holds a demonstration dataset; pick another folder or overwrite it")
        if overwrite and (self.root / "meta").is_dir():
            import shutil

            for sub in ("meta", "data"):
                shutil.rmtree(self.root / sub, ignore_errors=True)
        (self.root / "meta").mkdir(parents=True, exist_ok=True)
        self.fps = float(fps)
        self.meta = dict(meta or {})
        self.episodes: list[dict] = []
        self.tasks: dict[str, int] = {}
        self.features: dict[str, dict] = {}
        self.frames = 0
        self.failures: dict[str, int] = {}

    def add(self, rec: dict, seed: int | None = None) -> int:
        """Save one recorded episode (from :func:`scenegen.tasks.expert.rollout`, ``record=True``); return its index."""
        idx = len(self.episodes)
        task = str(rec.get("instruction", ""))
        task_index = self.tasks.setdefault(task, len(self.tasks))
        arrays = frame_arrays(rec["obs"], rec["actions"], rec["rewards"], idx, task_index, self.fps)
        rel = f"data/chunk-{idx // CHUNK_SIZE:03d}/episode_{idx:06d}.npz"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, path)
        for k, v in arrays.items():
            self.features.setdefault(k, {"dtype": str(v.dtype), "shape": list(v.shape[1:])})
        t = len(rec["actions"])
        self.frames += t
        self.episodes.append({"episode_index": idx, "scene_id": rec.get("scene_id"), "instruction": task,
                              "task_index": task_index, "length": t, "seed": seed,
                              "return": float(np.sum(rec["rewards"])), "file": rel})
        self.write_meta()
        return idx

    def count_failure(self, reason: str) -> None:
        """Count one failed (unsaved) episode by reason."""
        self.failures[reason] = self.failures.get(reason, 0) + 1

    def write_meta(self) -> None:
        """Rewrite ``meta/`` (info, episodes, tasks)."""
        info = {"format": FORMAT, "version": VERSION, "layout": "LeRobot-style folders, one .npz per episode",
                "fps": self.fps, "total_episodes": len(self.episodes), "total_frames": self.frames,
                "total_tasks": len(self.tasks), "chunk_size": CHUNK_SIZE, "features": self.features,
                "failures": dict(sorted(self.failures.items())), **self.meta}
        meta = self.root / "meta"
        _atomic_write(meta / "info.json", json.dumps(info, indent=1, sort_keys=True))
        _atomic_write(meta / "episodes.jsonl", "".join(json.dumps(e, sort_keys=True) + "\n" for e in self.episodes))
        _atomic_write(meta / "tasks.jsonl", "".join(json.dumps({"task_index": i, "task": t}) + "\n"
                                                     for t, i in sorted(self.tasks.items(), key=lambda kv: kv[1])))


@dataclass
class Episode:
    """One demonstration read back."""

    index: int
    scene_id: str | None
    instruction: str
    observations: dict[str, np.ndarray]
    """Observation key (``front``, ``wrist``, ``proprio``, ``points``) -> array over frames."""
    actions: np.ndarray
    rewards: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)


class DemoDataset:
    """Reads a dataset written by :class:`DemoWriter`: episodes, or (observation, action) pairs for BC.

    Raises:
        PackError: the folder is not a dataset of this format or version, or a file is missing.

    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        if not info_path.is_file():
            raise PackError(f"{root} has no meta/info.json: not a demonstration dataset; record one with "
                            "`scenegen demos`")
        try:
            self.info = json.loads(info_path.read_text())
            lines = (self.root / "meta" / "episodes.jsonl").read_text().splitlines()
            self.episodes_meta = [json.loads(line) for line in lines if line.strip()]
        except (OSError, json.JSONDecodeError) as exc:
            raise PackError(f"{root}: unreadable metadata ({exc}); record the dataset again") from None
        if self.info.get("format") != FORMAT or self.info.get("version") != VERSION:
            raise PackError(f"{root}: format {self.info.get('format')!r} v{self.info.get('version')} is not "
                            f"{FORMAT} v{VERSION}; record it again with this version")

    def __len__(self) -> int:
        return len(self.episodes_meta)

    @property
    def num_frames(self) -> int:
        """Frames over every episode."""
        return int(sum(e["length"] for e in self.episodes_meta))

    def __getitem__(self, i: int) -> Episode:
        meta = self.episodes_meta[i]
        rel = Path(meta["file"])
        if rel.is_absolute() or ".." in rel.parts:
            raise PackError(f"{self.root}: episode file {rel} points outside the dataset; do not use it")
        path = self.root / rel
        if not path.is_file():
            raise PackError(f"{self.root}: episode file {rel} is missing; record the dataset again")
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        obs: dict[str, np.ndarray] = {}
        for k, v in data.items():
            if k.startswith("observation.images."):
                obs[k.split(".", 2)[2]] = v
            elif k == "observation.state":
                obs["proprio"] = v
            elif k == "observation.points":
                obs["points"] = v
        return Episode(int(meta["episode_index"]), meta.get("scene_id"), meta.get("instruction", ""), obs,
                       data["action"], data["reward"])

    def __iter__(self) -> Iterator[Episode]:
        for i in range(len(self)):
            yield self[i]

    def pairs(self) -> Iterator[tuple[dict, np.ndarray]]:
        """Every ``(observation, action)`` pair, episode by episode (observations include the instruction)."""
        for ep in self:
            for t in range(len(ep)):
                obs = {k: v[t] for k, v in ep.observations.items()}
                obs["instruction"] = ep.instruction
                yield obs, ep.actions[t]
