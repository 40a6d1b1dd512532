"""The LeRobot v3.0 dataset format: paths, features, parquet schemas and a field-by-field check.

A v3.0 dataset (as LeRobot 0.4+ reads it) is a folder::

    meta/info.json                              codebase_version "v3.0", fps, robot_type, features,
                                                totals, chunks_size, data_path, video_path, splits
    meta/stats.json                             per feature: min, max, mean, std, count
    meta/tasks.parquet                          one row per task string: task (the pandas index), task_index
    meta/episodes/chunk-000/file-000.parquet    one row per episode: episode_index, tasks, length,
                                                data/chunk_index, data/file_index, dataset_from_index,
                                                dataset_to_index, videos/<key>/{chunk_index, file_index,
                                                from_timestamp, to_timestamp}, meta/episodes/{chunk,file}_index
    data/chunk-XXX/file-YYY.parquet             one row per frame, many episodes per file
    videos/<key>/chunk-XXX/file-YYY.mp4         one stream per camera, many episodes per file

This module holds what the writer, the reader and the tests share: the path templates, how a
feature becomes a parquet column, the pandas metadata that makes ``meta/tasks.parquet`` load
with its task strings as the index, and :func:`check_dataset`, which reads a folder back with
pyarrow and reports every field the format requires that is missing or inconsistent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from scenegen.errors import PackError

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
"""Files per ``chunk-XXX`` folder."""
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
TASKS_PATH = "meta/tasks.parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
DATA_FILES_SIZE_MB = 100
VIDEO_FILES_SIZE_MB = 200

INDEX_FEATURES: dict[str, dict] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
"""The columns every v3.0 data file has (LeRobot's default features)."""
EPISODE_COLUMNS = ("episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
                   "dataset_from_index", "dataset_to_index")
"""Columns every row of ``meta/episodes`` has (plus four ``videos/<key>/...`` per video key)."""
VIDEO_EPISODE_COLUMNS = ("chunk_index", "file_index", "from_timestamp", "to_timestamp")
STAT_KEYS = ("min", "max", "mean", "std", "count")
CAMERA_PREFIX = "observation.images."


def arrow_type(feature: dict) -> Any:
    """The pyarrow type of a non-video feature's column (as LeRobot's ``datasets`` features map it).

    ``shape [1]`` is a scalar, ``[n]`` a fixed-size list, ``[n, m]`` a list of fixed-size lists;
    ``image`` is the ``{bytes, path}`` struct of an encoded (PNG) image.
    """
    import pyarrow as pa

    dtype = feature["dtype"]
    if dtype == "image":
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    base = {"float32": pa.float32(), "float64": pa.float64(), "int64": pa.int64(), "int32": pa.int32(),
            "bool": pa.bool_(), "string": pa.string(), "uint8": pa.uint8()}[dtype]
    shape = list(feature["shape"])
    if shape == [1]:
        return base
    if len(shape) == 1:
        return pa.list_(base, shape[0])
    if len(shape) == 2:
        return pa.list_(pa.list_(base, shape[1]))
    raise PackError(f"feature of shape {shape} has no column form here; flatten it")


def tasks_table(tasks: list[str]) -> Any:
    """``meta/tasks.parquet``'s table: ``task_index`` and ``task``, with pandas metadata making ``task`` the index."""
    import pyarrow as pa

    table = pa.table({"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())})
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [{"name": None, "field_name": None, "pandas_type": "unicode", "numpy_type": "object",
                            "metadata": {"encoding": "UTF-8"}}],
        "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
                     "numpy_type": "int64", "metadata": None},
                    {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object",
                     "metadata": None}],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
    return table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})


def parquet_bytes(table: Any) -> bytes:
    """A pyarrow table as parquet file bytes (snappy), for an atomic write."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return sink.getvalue().to_pybytes()


def read_info(root: str | os.PathLike) -> dict:
    """``meta/info.json`` of a dataset folder.

    Raises:
        PackError: there is none, it is unreadable, or it is not a v3.0 dataset.

    """
    path = Path(root) / INFO_PATH
    if not path.is_file():
        raise PackError(f"{root} has no {INFO_PATH}: not a LeRobot dataset; record one with `scenegen demos`")
    try:
        info = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PackError(f"{path}: unreadable ({exc}); record the dataset again") from None
    if info.get("codebase_version") != CODEBASE_VERSION:
        raise PackError(f"{root}: codebase_version {info.get('codebase_version')!r} is not {CODEBASE_VERSION!r}; "
                        "record it again with `scenegen demos` (older LeRobot versions are not read)")
    return info


def _read_table(root: Path, rel: str, problems: list[str]) -> Any | None:
    import pyarrow.parquet as pq

    path = root / rel
    if not path.is_file():
        problems.append(f"{rel} is missing")
        return None
    try:
        return pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        problems.append(f"{rel} is unreadable ({type(exc).__name__}: {exc})")
        return None


def _check_info(info: dict, problems: list[str]) -> None:
    required = {"codebase_version": str, "fps": (int, float), "robot_type": str, "features": dict,
                "total_episodes": int, "total_frames": int, "total_tasks": int, "chunks_size": int,
                "data_path": str, "video_path": (str, type(None)), "splits": dict}
    for key, typ in required.items():
        if key not in info:
            problems.append(f"info.json: {key} is missing")
        elif not isinstance(info[key], typ):
            problems.append(f"info.json: {key} = {info[key]!r} has the wrong type")
    for name, ft in (info.get("features") or {}).items():
        for key in ("dtype", "shape", "names"):
            if key not in ft:
                problems.append(f"info.json: feature {name} has no {key}")
        if ft.get("dtype") == "video" and "info" not in ft:
            problems.append(f"info.json: video feature {name} has no info (codec, fps, pix_fmt)")
    for name in INDEX_FEATURES:
        if name not in (info.get("features") or {}):
            problems.append(f"info.json: index feature {name} is missing")


def check_dataset(root: str | os.PathLike) -> list[str]:
    """Every way a folder falls short of the LeRobot v3.0 format (empty when it conforms).

    Checks ``info.json``'s fields and features, that each data file's columns and types match
    the features, that frames are numbered ``index = 0..N-1`` in order with per-episode
    ``frame_index`` and ``timestamp = frame_index / fps``, that ``meta/episodes`` points at the
    right files and row ranges (and video time spans), the tasks table, and ``stats.json``.
    """
    import numpy as np

    root = Path(root)
    problems: list[str] = []
    try:
        info = read_info(root)
    except PackError as exc:
        return [exc.one_line()]
    _check_info(info, problems)
    feats: dict = info.get("features") or {}
    fps = float(info.get("fps") or 0)
    video_keys = [k for k, f in feats.items() if f.get("dtype") == "video"]
    column_feats = {k: f for k, f in feats.items() if f.get("dtype") != "video"}
    tasks = _read_table(root, TASKS_PATH, problems)
    if tasks is not None:
        if tasks.column_names[:2] != ["task_index", "task"] or b"pandas" not in (tasks.schema.metadata or {}):
            problems.append("meta/tasks.parquet must hold task_index and task (the pandas index)")
        elif tasks.column("task_index").to_pylist() != list(range(tasks.num_rows)):
            problems.append("meta/tasks.parquet: task_index is not 0..n-1")
        if tasks.num_rows != info.get("total_tasks"):
            problems.append(f"total_tasks {info.get('total_tasks')} != {tasks.num_rows} rows in meta/tasks.parquet")
    episodes = _read_table(root, EPISODES_PATH.format(chunk_index=0, file_index=0), problems)
    if episodes is None:
        return problems
    want = list(EPISODE_COLUMNS) + [f"videos/{k}/{c}" for k in video_keys for c in VIDEO_EPISODE_COLUMNS]
    missing = [c for c in want if c not in episodes.column_names]
    if missing:
        problems.append(f"meta/episodes: columns {missing} are missing")
        return problems
    eps = episodes.to_pylist()
    if [e["episode_index"] for e in eps] != list(range(len(eps))) or len(eps) != info.get("total_episodes"):
        problems.append(f"meta/episodes: episode_index is not 0..{info.get('total_episodes', 0) - 1}")
    expected_from = 0
    for e in eps:
        if e["dataset_from_index"] != expected_from or e["dataset_to_index"] - e["dataset_from_index"] != e["length"]:
            problems.append(f"episode {e['episode_index']}: dataset_from/to_index do not follow the previous one")
        expected_from = e["dataset_to_index"]
        for k in video_keys:
            span = e[f"videos/{k}/to_timestamp"] - e[f"videos/{k}/from_timestamp"]
            if abs(span - e["length"] / fps) > 1e-3:
                problems.append(f"episode {e['episode_index']}: {k} spans {span:.4f} s for {e['length']} frames")
            video = root / info["video_path"].format(video_key=k, chunk_index=e[f"videos/{k}/chunk_index"],
                                                     file_index=e[f"videos/{k}/file_index"])
            if not video.is_file():
                problems.append(f"episode {e['episode_index']}: {video.relative_to(root)} is missing")
    if expected_from != info.get("total_frames"):
        problems.append(f"total_frames {info.get('total_frames')} != {expected_from} frames in meta/episodes")
    files = sorted({(e["data/chunk_index"], e["data/file_index"]) for e in eps})
    index_seen = 0
    for chunk, file in files:
        rel = info["data_path"].format(chunk_index=chunk, file_index=file)
        table = _read_table(root, rel, problems)
        if table is None:
            continue
        for name, ft in column_feats.items():
            if name not in table.column_names:
                problems.append(f"{rel}: column {name} is missing")
            elif table.schema.field(name).type != arrow_type(ft):
                problems.append(f"{rel}: column {name} is {table.schema.field(name).type}, "
                                f"not {arrow_type(ft)} ({ft['dtype']} {ft['shape']})")
        if problems:
            continue
        idx = table.column("index").to_numpy()
        if not np.array_equal(idx, np.arange(index_seen, index_seen + len(idx))):
            problems.append(f"{rel}: index does not continue 0..N-1 in order")
        index_seen += len(idx)
        ep_col = table.column("episode_index").to_numpy()
        fi = table.column("frame_index").to_numpy()
        ts = table.column("timestamp").to_numpy()
        for e in (e for e in eps if (e["data/chunk_index"], e["data/file_index"]) == (chunk, file)):
            rows = np.nonzero(ep_col == e["episode_index"])[0]
            if len(rows) != e["length"] or not np.array_equal(fi[rows], np.arange(e["length"])):
                problems.append(f"{rel}: episode {e['episode_index']} rows do not run frame_index 0..length-1")
            elif np.abs(ts[rows] - fi[rows] / fps).max() > 1e-4:
                problems.append(f"{rel}: episode {e['episode_index']} timestamps are not frame_index / fps")
    if not problems and index_seen != info.get("total_frames"):
        problems.append(f"data files hold {index_seen} frames, info.json says {info.get('total_frames')}")
    problems.extend(_check_stats(root, feats))
    return problems


def _check_stats(root: Path, feats: dict) -> list[str]:
    path = root / STATS_PATH
    if not path.is_file():
        return [f"{STATS_PATH} is missing"]
    try:
        stats = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return [f"{STATS_PATH} is unreadable ({exc})"]
    out = []
    for name, ft in feats.items():
        if ft["dtype"] == "string":
            continue
        st = stats.get(name)
        if st is None:
            out.append(f"{STATS_PATH}: {name} has no stats")
            continue
        for key in STAT_KEYS:
            if key not in st:
                out.append(f"{STATS_PATH}: {name} has no {key}")
    return out
