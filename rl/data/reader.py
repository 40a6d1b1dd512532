"""Read a LeRobot v3.0 demonstration dataset back: episodes, or every frame as arrays for training.

:class:`DemoDataset` reads the metadata with pyarrow, data files by episode and videos with
PyAV (each video file is decoded once and cut by the episodes' time spans). Observations are
given back under the env's names (``front``, ``wrist``, ``proprio``, ``points``), so a policy
sees the same keys in training and in the env.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rl.data import lerobot_format as fmt
from rl.data.writer import SCENEGEN_META
from scenegen.errors import PackError

STATE = "observation.state"
ENV_STATE = "observation.environment_state"
POINTS = "observation.points"


def obs_key(feature: str) -> str | None:
    """The env observation key of a dataset feature (``observation.images.front`` -> ``front``), else None."""
    if feature.startswith(fmt.CAMERA_PREFIX):
        return feature[len(fmt.CAMERA_PREFIX):]
    return {STATE: "proprio", POINTS: "points", ENV_STATE: "environment_state"}.get(feature)


@dataclass
class Episode:
    """One demonstration read back."""

    index: int
    scene_id: str | None
    instruction: str
    observations: dict[str, np.ndarray]
    """Observation key (``front``, ``wrist``, ``proprio``, ``points``, ``environment_state``) -> array over frames."""
    actions: np.ndarray
    rewards: np.ndarray
    seed: int | None = None
    object_ids: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actions)


class DemoDataset:
    """A LeRobot v3.0 dataset folder written by :class:`~rl.data.writer.DemoWriter` (or any with these features).

    Raises:
        PackError: not a v3.0 dataset, no episode in it, no ``action`` / ``observation.state``
            feature, or a file missing.

    """

    def __init__(self, root: str | os.PathLike) -> None:
        import pyarrow.parquet as pq

        self.root = Path(root)
        self.info = fmt.read_info(self.root)
        self.features: dict[str, dict] = self.info["features"]
        if int(self.info.get("total_episodes", 0)) == 0:
            raise PackError(f"{root}: the dataset holds no episode; record some with `scenegen demos`")
        for need in ("action", STATE):
            if need not in self.features:
                raise PackError(f"{root}: no {need!r} feature; a scenegen demonstration dataset has "
                                f"'action' and '{STATE}' (features: {', '.join(sorted(self.features))})")
        try:
            self.episodes_meta = pq.read_table(self.root / fmt.EPISODES_PATH.format(chunk_index=0,
                                                                                     file_index=0)).to_pylist()
            self.tasks = pq.read_table(self.root / fmt.TASKS_PATH).column("task").to_pylist()
            self.stats = json.loads((self.root / fmt.STATS_PATH).read_text())
        except (OSError, ValueError, KeyError) as exc:
            raise PackError(f"{root}: unreadable metadata ({type(exc).__name__}: {exc}); record it again") from None
        own = self.root / SCENEGEN_META
        self.scenegen: dict = json.loads(own.read_text()) if own.is_file() else {}
        self.fps = float(self.info["fps"])
        self.robot_type = str(self.info.get("robot_type"))
        self.cameras = [k[len(fmt.CAMERA_PREFIX):] for k in self.features if k.startswith(fmt.CAMERA_PREFIX)]
        self._video_cache: dict[str, tuple[str, np.ndarray]] = {}
        """Camera feature -> (file, its decoded frames): the last video file decoded per camera."""
        self._table_cache: tuple[str, dict] | None = None

    def __len__(self) -> int:
        return len(self.episodes_meta)

    @property
    def num_frames(self) -> int:
        """Frames over every episode."""
        return int(sum(e["length"] for e in self.episodes_meta))

    @property
    def action_dim(self) -> int:
        """Size of an action."""
        return int(self.features["action"]["shape"][0])

    @property
    def state_dim(self) -> int:
        """Size of ``observation.state`` (the env's ``proprio``)."""
        return int(self.features[STATE]["shape"][0])

    @property
    def image_size(self) -> int | None:
        """Side of the camera images (None without cameras)."""
        return int(self.features[fmt.CAMERA_PREFIX + self.cameras[0]]["shape"][0]) if self.cameras else None

    def content_hash(self) -> str:
        """sha256 over every file of the dataset (metadata, data, videos), in path order."""
        h = hashlib.sha256()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and not p.name.startswith(".")):
            rel = path.relative_to(self.root).as_posix()
            if rel == SCENEGEN_META:
                continue
            h.update(rel.encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        return h.hexdigest()

    # ------------------------------------------------------------------ files
    def _safe(self, rel: str) -> Path:
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts:
            raise PackError(f"{self.root}: {rel} points outside the dataset; do not use it")
        path = self.root / p
        if not path.is_file():
            raise PackError(f"{self.root}: {rel} is missing; record the dataset again")
        return path

    def _table(self, chunk: int, file: int) -> dict[str, np.ndarray]:
        import pyarrow.parquet as pq

        rel = self.info["data_path"].format(chunk_index=chunk, file_index=file)
        if self._table_cache is not None and self._table_cache[0] == rel:
            return self._table_cache[1]
        table = pq.read_table(self._safe(rel))
        out: dict[str, np.ndarray] = {}
        for name in table.column_names:
            ft = self.features.get(name, {})
            col = table.column(name)
            if ft.get("dtype") == "image":
                out[name] = np.stack([_unpng(v["bytes"]) for v in col.to_pylist()])
            elif ft.get("dtype") == "string":
                out[name] = np.asarray(col.to_pylist(), dtype=object)
            elif list(ft.get("shape", [1])) == [1]:
                out[name] = col.to_numpy()
            else:
                out[name] = np.asarray(col.to_pylist(), dtype=ft.get("dtype", "float32"))
        self._table_cache = (rel, out)
        return out

    def _video(self, key: str, chunk: int, file: int) -> np.ndarray:
        from rl.data.video import decode_video

        rel = self.info["video_path"].format(video_key=key, chunk_index=chunk, file_index=file)
        hit = self._video_cache.get(key)
        if hit is None or hit[0] != rel:
            hit = self._video_cache[key] = (rel, decode_video(self._safe(rel))[0])
        return hit[1]

    def frames(self, i: int) -> dict[str, np.ndarray]:
        """Episode ``i``'s features (dataset names) as arrays over its frames, videos decoded."""
        e = self.episodes_meta[i]
        table = self._table(e["data/chunk_index"], e["data/file_index"])
        rows = np.nonzero(table["episode_index"] == e["episode_index"])[0]
        if len(rows) != e["length"]:
            raise PackError(f"{self.root}: episode {i} has {len(rows)} rows, its metadata says {e['length']}")
        rows = rows[np.argsort(table["frame_index"][rows])]
        out = {k: v[rows] for k, v in table.items()}
        for key, ft in self.features.items():
            if ft["dtype"] != "video":
                continue
            video = self._video(key, e[f"videos/{key}/chunk_index"], e[f"videos/{key}/file_index"])
            start = int(round(e[f"videos/{key}/from_timestamp"] * self.fps))
            clip = video[start:start + e["length"]]
            if len(clip) != e["length"]:
                raise PackError(f"{self.root}: {key} of episode {i} has {len(clip)} frames, not {e['length']}")
            out[key] = clip
        return out

    def __getitem__(self, i: int) -> Episode:
        if not -len(self) <= i < len(self):
            raise IndexError(f"episode {i} of a dataset of {len(self)}")
        i %= len(self)
        e = self.episodes_meta[i]
        data = self.frames(i)
        obs = {obs_key(k): v for k, v in data.items() if obs_key(k) is not None}
        rewards = data.get("next.reward", np.zeros(e["length"], np.float32))
        return Episode(int(e["episode_index"]), e.get("scene_id"), e["tasks"][0], obs, data["action"], rewards,
                       e.get("seed"), list(e.get("object_ids") or []))

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


def _unpng(data: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
