"""Write demonstrations as a LeRobot v3.0 dataset (pyarrow and PyAV; no lerobot dependency).

Episodes are appended to an open *file*: one data parquet (rows of every episode in it) and,
per camera, one mp4 stream. After ``episodes_per_file`` episodes the file is closed: the
parquet is written atomically, the videos are finished and renamed into place, and ``meta/``
(info, episodes, tasks, stats) is rewritten to cover it. An interrupted recording so leaves a
valid dataset of every closed file; :meth:`DemoWriter.close` closes the last one.

scenegen's own records (pack, env settings, failure counts) are in ``meta/scenegen.json``,
beside the v3.0 files, so LeRobot's readers see only the fields they know.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rl.data import lerobot_format as fmt
from scenegen.errors import ConfigError, PackError
from scenegen.fileio import TMP_PREFIX, remove, write_atomic

IMAGE_FORMATS = ("video", "image")
"""``video``: one mp4 stream per camera; ``image``: PNG images inside the data parquet."""
SCENEGEN_META = "meta/scenegen.json"


@dataclass
class EpisodeRecord:
    """One episode to write: per-frame arrays and episode facts."""

    frames: dict[str, np.ndarray]
    """Feature name (``observation.state``, ``action``, ``observation.images.front``...) -> ``(T, ...)`` array."""
    task: str
    """The instruction."""
    scene_id: str | None = None
    seed: int | None = None
    object_ids: list[str] = field(default_factory=list)
    """Node id of each slot of ``observation.environment_state`` (7 numbers each: position, quaternion)."""

    def __len__(self) -> int:
        return len(self.frames["action"])


class _Stats:
    """Running min, max, mean and std of one feature over frames (images per channel, scaled to [0, 1])."""

    def __init__(self, image: bool) -> None:
        self.image = image
        self.n = 0
        self.sum = self.sq = self.lo = self.hi = None

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        if self.image:  # (T, H, W, 3) -> per-channel over frames and pixels, like LeRobot's (3, 1, 1)
            x = x.reshape(-1, x.shape[-1]) / 255.0
        else:
            x = x.reshape(x.shape[0], -1)
        s, q, lo, hi = x.sum(0), (x * x).sum(0), x.min(0), x.max(0)
        if self.sum is None:
            self.sum, self.sq, self.lo, self.hi = s, q, lo, hi
        else:
            self.sum, self.sq = self.sum + s, self.sq + q
            self.lo, self.hi = np.minimum(self.lo, lo), np.maximum(self.hi, hi)
        self.n += x.shape[0]

    def to_dict(self, shape: list[int], frames: int) -> dict:
        mean = self.sum / self.n
        std = np.sqrt(np.maximum(self.sq / self.n - mean * mean, 0.0))
        out_shape = [shape[-1], 1, 1] if self.image else shape
        return {"min": self.lo.reshape(out_shape).tolist(), "max": self.hi.reshape(out_shape).tolist(),
                "mean": mean.reshape(out_shape).tolist(), "std": std.reshape(out_shape).tolist(), "count": [frames]}


def _png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(frame, dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _feature(name: str, arr: np.ndarray, image_format: str, names: dict[str, list[str]]) -> dict:
    if name.startswith(fmt.CAMERA_PREFIX):
        return {"dtype": image_format, "shape": list(arr.shape[1:]), "names": ["height", "width", "channels"]}
    shape = list(arr.shape[1:]) or [1]
    dtype = "string" if arr.dtype.kind in "OUS" else str(arr.dtype)
    return {"dtype": dtype, "shape": shape, "names": names.get(name)}


class DemoWriter:
    """Writes episodes into a new LeRobot v3.0 dataset folder.

    Args:
        out: the dataset folder.
        fps: control frequency (frames per second).
        robot_type: the robot's name (``panda``).
        meta: scenegen's records, saved in ``meta/scenegen.json``.
        names: feature name -> names of its dimensions (``info.json``'s ``names``).
        image_format: ``video`` (mp4 per camera) or ``image`` (PNG in the parquet).
        episodes_per_file: episodes per data/video file.
        overwrite: replace a dataset already in ``out``.

    Raises:
        PackError: ``out`` already holds a dataset and ``overwrite`` is False, or is a file.
        ConfigError: a bad ``image_format`` or ``episodes_per_file``.

    """

    def __init__(self, out: str | os.PathLike, fps: float, *, robot_type: str, meta: dict | None = None,
                 names: dict[str, list[str]] | None = None, image_format: str = "video",
                 episodes_per_file: int = 50, overwrite: bool = False) -> None:
        if image_format not in IMAGE_FORMATS:
            raise ConfigError(f"image_format = {image_format!r} must be one of {IMAGE_FORMATS}")
        if not (isinstance(episodes_per_file, int) and 1 <= episodes_per_file <= 100_000):
            raise ConfigError(f"episodes_per_file = {episodes_per_file!r} must be an int in 1..100000")
        self.root = Path(out)
        if self.root.exists() and not self.root.is_dir():
            raise PackError(f"{out} is a file; give a folder for the demonstrations")
        if (self.root / fmt.INFO_PATH).exists() and not overwrite:
            raise PackError(f"{out} already holds a demonstration dataset; pick another folder or overwrite it")
        for sub in ("meta", "data", "videos"):
            remove(self.root / sub)
        (self.root / "meta").mkdir(parents=True, exist_ok=True)
        self.fps = float(fps)
        self.robot_type = robot_type
        self.meta = dict(meta or {})
        self.names = dict(names or {})
        self.image_format = image_format
        self.episodes_per_file = episodes_per_file
        self.features: dict[str, dict] = {}
        self.tasks: dict[str, int] = {}
        self.episodes: list[dict] = []
        """Rows of ``meta/episodes`` of closed files."""
        self.failures: dict[str, int] = {}
        self._stats: dict[str, _Stats] = {}
        self._open: list[tuple[dict, dict[str, np.ndarray]]] = []
        self._encoders: dict = {}
        self._file = 0
        self._frames_closed = 0
        self._video_frames: dict[str, int] = {}
        self.write_meta()

    @property
    def frames(self) -> int:
        """Frames written so far (closed and open files)."""
        return self._frames_closed + sum(len(f["action"]) for _, f in self._open)

    @property
    def num_episodes(self) -> int:
        """Episodes added so far (closed and open files)."""
        return len(self.episodes) + len(self._open)

    def _video_rel(self, key: str, file: int) -> str:
        return fmt.VIDEO_PATH.format(video_key=key, chunk_index=file // fmt.CHUNKS_SIZE,
                                     file_index=file % fmt.CHUNKS_SIZE)

    def _set_features(self, ep: EpisodeRecord) -> None:
        feats = {k: _feature(k, v, self.image_format, self.names) for k, v in ep.frames.items()}
        if not self.features:
            self.features = {**feats, **fmt.INDEX_FEATURES}
            for k, f in self.features.items():
                if f["dtype"] != "string":
                    self._stats[k] = _Stats(image=k.startswith(fmt.CAMERA_PREFIX))
            return
        for k, f in feats.items():
            old = self.features.get(k)
            if old is None or (old["dtype"], old["shape"]) != (f["dtype"], f["shape"]):
                raise ConfigError(f"episode feature {k} ({f['dtype']} {f['shape']}) differs from the dataset's "
                                  f"({old and (old['dtype'], old['shape'])}); one dataset needs one robot and "
                                  "one camera setup")
        if set(feats) != set(self.features) - set(fmt.INDEX_FEATURES):
            raise ConfigError(f"episode features {sorted(feats)} differ from the dataset's")

    def add(self, ep: EpisodeRecord) -> int:
        """Append one episode to the open file; return its episode index.

        Raises:
            ConfigError: an empty episode, or features unlike the dataset's earlier episodes.

        """
        t = len(ep)
        if t == 0 or any(len(v) != t for v in ep.frames.values()):
            raise ConfigError(f"an episode needs at least one frame and {t} rows in every feature")
        self._set_features(ep)
        idx = self.num_episodes
        task_index = self.tasks.setdefault(ep.task, len(self.tasks))
        start = self.frames
        cols = dict(ep.frames)
        cols["frame_index"] = np.arange(t, dtype=np.int64)
        cols["timestamp"] = (np.arange(t) / self.fps).astype(np.float32)
        cols["episode_index"] = np.full(t, idx, dtype=np.int64)
        cols["index"] = np.arange(start, start + t, dtype=np.int64)
        cols["task_index"] = np.full(t, task_index, dtype=np.int64)
        for k, s in self._stats.items():
            s.add(cols[k])
        row = {"episode_index": idx, "tasks": [ep.task], "length": t,
               "data/chunk_index": self._file // fmt.CHUNKS_SIZE, "data/file_index": self._file % fmt.CHUNKS_SIZE,
               "dataset_from_index": start, "dataset_to_index": start + t,
               "scene_id": ep.scene_id, "seed": ep.seed, "object_ids": list(ep.object_ids),
               "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0}
        if "next.reward" in cols:
            row["return"] = float(np.sum(cols["next.reward"]))
        if self.image_format == "video":
            for key in [k for k in cols if k.startswith(fmt.CAMERA_PREFIX)]:
                frames = cols.pop(key)
                enc = self._encoders.get(key)
                if enc is None:
                    from rl.data.video import VideoEncoder

                    final = self.root / self._video_rel(key, self._file)
                    enc = self._encoders[key] = VideoEncoder(final.with_name(f"{TMP_PREFIX}{final.name}"), self.fps,
                                                             frames.shape[2], frames.shape[1])
                    self._video_frames[key] = 0
                begin = self._video_frames[key]
                for f in frames:
                    enc.add(f)
                self._video_frames[key] += t
                row.update({f"videos/{key}/chunk_index": self._file // fmt.CHUNKS_SIZE,
                            f"videos/{key}/file_index": self._file % fmt.CHUNKS_SIZE,
                            f"videos/{key}/from_timestamp": begin / self.fps,
                            f"videos/{key}/to_timestamp": (begin + t) / self.fps})
        self._open.append((row, cols))
        if len(self._open) >= self.episodes_per_file:
            self.close_file()
        return idx

    def count_failure(self, reason: str) -> None:
        """Count one failed (unsaved) episode by reason (kept in ``meta/scenegen.json``)."""
        self.failures[reason] = self.failures.get(reason, 0) + 1

    def close_file(self) -> None:
        """Write the open file's parquet and videos, then ``meta/``; nothing happens when no episode is open."""
        if not self._open:
            return
        import pyarrow as pa

        columns = {}
        for name, ft in self.features.items():
            if ft["dtype"] == "video":
                continue
            values = np.concatenate([c[name] for _, c in self._open])
            if ft["dtype"] == "image":
                columns[name] = pa.array([{"bytes": _png(f), "path": None} for f in values], fmt.arrow_type(ft))
            elif ft["dtype"] == "string":
                columns[name] = pa.array([str(v) for v in values], pa.string())
            else:
                columns[name] = pa.array(list(values) if values.ndim > 1 else values, fmt.arrow_type(ft))
        rel = fmt.DATA_PATH.format(chunk_index=self._file // fmt.CHUNKS_SIZE, file_index=self._file % fmt.CHUNKS_SIZE)
        write_atomic(self.root / rel, fmt.parquet_bytes(pa.table(columns)), error=PackError)
        for key, enc in self._encoders.items():
            enc.close()
            os.replace(enc.path, self.root / self._video_rel(key, self._file))
        self._encoders.clear()
        for row, cols in self._open:
            self.episodes.append(row)
            self._frames_closed += len(cols["action"])
        self._open.clear()
        self._file += 1
        self.write_meta()

    def close(self) -> None:
        """Close the open file (if any) and write ``meta/``."""
        self.close_file()
        self.write_meta()

    def _video_features(self) -> dict:
        feats = {k: dict(v) for k, v in self.features.items()}
        if self.episodes and self.image_format == "video":
            from rl.data.video import video_info

            for k, f in feats.items():
                if f["dtype"] == "video":
                    f["info"] = video_info(self.root / self._video_rel(k, 0))
        return feats

    def write_meta(self) -> None:
        """Rewrite ``meta/`` for the closed files: info, episodes, tasks, stats and scenegen's records."""
        import pyarrow as pa

        n, frames = len(self.episodes), self._frames_closed
        # task indices follow first appearance, so the closed files' tasks are a prefix of them all
        used = sorted(self.tasks, key=self.tasks.get)[:len({t for e in self.episodes for t in e["tasks"]})]
        info = {"codebase_version": fmt.CODEBASE_VERSION, "robot_type": self.robot_type, "total_episodes": n,
                "total_frames": frames, "total_tasks": len(used), "chunks_size": fmt.CHUNKS_SIZE,
                "data_files_size_in_mb": fmt.DATA_FILES_SIZE_MB, "video_files_size_in_mb": fmt.VIDEO_FILES_SIZE_MB,
                "fps": int(round(self.fps)) if float(self.fps).is_integer() else self.fps,
                "splits": {"train": f"0:{n}"} if n else {}, "data_path": fmt.DATA_PATH,
                "video_path": fmt.VIDEO_PATH if self.image_format == "video" else None,
                "features": self._video_features() if self.features else dict(fmt.INDEX_FEATURES)}
        meta = self.root / "meta"
        write_atomic(meta / "info.json", json.dumps(info, indent=2), error=PackError)
        write_atomic(self.root / fmt.TASKS_PATH, fmt.parquet_bytes(fmt.tasks_table(used)), error=PackError)
        if self.episodes:
            write_atomic(self.root / fmt.EPISODES_PATH.format(chunk_index=0, file_index=0),
                         fmt.parquet_bytes(pa.Table.from_pylist(self.episodes)), error=PackError)
            stats = {k: s.to_dict(self.features[k]["shape"], frames) for k, s in self._stats.items()}
            write_atomic(self.root / fmt.STATS_PATH, json.dumps(stats), error=PackError)
        own = {**self.meta, "failures": dict(sorted(self.failures.items())), "saved": n, "image_format":
               self.image_format}
        write_atomic(self.root / SCENEGEN_META, json.dumps(own, indent=1, sort_keys=True, default=str),
                     error=PackError)
