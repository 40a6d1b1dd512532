"""scenegen.fileio: atomic writes, folder publishing, canonical JSON and the close lifecycle."""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from scenegen.errors import PackError, ScenegenError
from scenegen.fileio import TMP_PREFIX, Closeable, canonical_json, content_hash, publish_dir, write_atomic


def _debris(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(f"{TMP_PREFIX}*")]


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / "sub" / "a.json"
    assert write_atomic(path, "one") == path
    write_atomic(path, b"two")
    assert path.read_bytes() == b"two" and _debris(tmp_path) == []


def test_write_atomic_failure_is_typed_one_line_and_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    write_atomic(path, "old")

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(PackError, match=r"could not write .*a\.txt .*No space left.*free disk space") as err:
        write_atomic(path, "new", error=PackError)
    assert "\n" not in str(err.value)
    monkeypatch.undo()
    assert path.read_text() == "old" and _debris(tmp_path) == []
    with pytest.raises(ScenegenError, match="could not write"):  # the default class; the parent is a file
        write_atomic(path / "x", "x")


def test_publish_dir_from_a_mapping_replaces_a_stale_folder(tmp_path):
    final = tmp_path / "scenes" / "s1"
    final.mkdir(parents=True)
    (final / "junk").write_text("stale")
    assert publish_dir(final, {"scene.json": "{}", "sub/a.bin": b"\x00"}) is True
    assert sorted(p.relative_to(final).as_posix() for p in final.rglob("*") if p.is_file()) == ["scene.json",
                                                                                                   "sub/a.bin"]
    assert _debris(tmp_path) == []


def test_publish_dir_keeps_an_existing_copy_when_asked(tmp_path):
    final = tmp_path / "a"
    publish_dir(final, lambda d: (d / "asset.json").write_text("first"))
    kept = publish_dir(final, lambda d: (d / "asset.json").write_text("second"),
                       keep_existing=lambda p: (p / "asset.json").is_file())
    assert kept is False and (final / "asset.json").read_text() == "first" and _debris(tmp_path) == []


def test_publish_dir_cleans_up_after_a_failing_fill(tmp_path):
    def boom(folder):
        (folder / "half").write_text("x")
        raise ValueError("bad build")

    with pytest.raises(ValueError, match="bad build"):
        publish_dir(tmp_path / "a", boom)
    assert not (tmp_path / "a").exists() and _debris(tmp_path) == []

    def no_space(folder):
        raise OSError(28, "No space left on device")

    with pytest.raises(PackError, match="could not write"):
        publish_dir(tmp_path / "a", no_space, error=PackError)
    assert _debris(tmp_path) == []


def test_canonical_json_default_is_the_graph_hash_form():
    data = {"b": (1, 2.123456789012), "a": {"z": None, 3: "é"}}
    assert canonical_json(data) == '{"a":{"3":"\\u00e9","z":null},"b":[1,2.12345679]}'
    assert content_hash(data) == content_hash({"a": {"z": None, "3": "é"}, "b": [1, 2.1234567890]})


def test_canonical_json_plain_options():
    @dataclass
    class D:
        x: float = 0.1

    data = {"p": Path("/a/b"), "n": np.float32(0.5), "i": np.int64(3), "arr": np.arange(2), "d": D()}
    text = canonical_json(data, float_digits=None, plain=True, allow_nan=False)
    assert json.loads(text) == {"p": "/a/b", "n": 0.5, "i": 3, "arr": [0, 1], "d": {"x": 0.1}}
    pretty = canonical_json({"b": 1, "a": [1.5]}, float_digits=None, indent=2, separators=None)
    assert pretty == json.dumps({"b": 1, "a": [1.5]}, indent=2, sort_keys=True)
    with pytest.raises(PackError, match="the thing cannot be stored as JSON"):
        canonical_json({"x": float("nan")}, allow_nan=False, error=PackError, what="the thing")
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_closeable_closes_once_and_never_raises_from_del():
    calls = []

    class Res(Closeable):
        def _close(self):
            calls.append(1)

    with Res() as r:
        assert not r.closed
    assert r.closed and calls == [1]
    r.close()
    assert calls == [1]

    class Broken(Closeable):
        def __init__(self):
            raise RuntimeError("half built")

        def _close(self):
            raise AttributeError("nothing to close")

    with pytest.raises(RuntimeError):
        Broken()
    Broken.__new__(Broken).__del__()  # swallowed
