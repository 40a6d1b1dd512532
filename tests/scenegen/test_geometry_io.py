"""The fast OBJ reader and writer give what a line-by-line reader and writer give (issue 18 speed work)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from scenegen.assets.model_urdf import obj_text
from scenegen.geometry import read_obj


def _reference_read(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Token by token with float() and int(): the reader's meaning, slowly."""
    lines = text.splitlines()
    v = np.asarray([ln[2:].split()[:3] for ln in lines if ln.startswith("v ")], dtype=float).reshape(-1, 3)
    tri = []
    for ln in (ln for ln in lines if ln.startswith("f ")):
        idx = [int(tok.split("/")[0]) for tok in ln[2:].split()]
        tri += [(idx[0], idx[i], idx[i + 1]) for i in range(1, len(idx) - 1)]
    f = np.asarray(tri, dtype=np.int64).reshape(-1, 3)
    return v, np.where(f < 0, f + len(v), f - 1)


def _reference_write(mesh: trimesh.Trimesh) -> str:
    rows = [f"v {x:.8f} {y:.8f} {z:.8f}" for x, y, z in np.asarray(mesh.vertices, dtype=float)]
    rows += [f"f {a} {b} {c}" for a, b, c in np.asarray(mesh.faces, dtype=np.int64) + 1]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("text", [
    "v 0.5 -0.25 1e-3\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n",          # a quad, plain and exponent numbers
    "v 0\t0 0\nv 1 0 0\nv 1 1 0\nf 1//1 2//2 3//3\n",                       # a tab, normals only
    "v 0 0 0 1\nv 1 0 0 1\nv 1 1 0 1\nf -3 -2 -1\n",                        # w coordinates, negative indices
    "v -0.00000000 1.50000000 -2.00000000\nv 1.0 0.0 0.0\nv 1. .5 0\nf 1/1/1 2/2/2 3/3/3\n",
    "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1/ 2/ 3/\n",
])
def test_read_obj_matches_a_token_by_token_reader(tmp_path, text):
    path = tmp_path / "m.obj"
    path.write_text(text)
    v, f = read_obj(path)
    rv, rf = _reference_read(text)
    assert v.dtype == rv.dtype and v.tobytes() == rv.tobytes()
    assert f.dtype == rf.dtype and np.array_equal(f, rf)


@pytest.mark.parametrize("text", ["v 1.2.3 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n",   # a broken number
                                  "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1-2 2 3\n",     # a broken index
                                  "v 0 0 0\nf 1 2 3\n"])                          # an index out of range
def test_read_obj_refuses_what_the_slow_reader_refuses(tmp_path, text):
    path = tmp_path / "bad.obj"
    path.write_text(text)
    with pytest.raises(ValueError):
        read_obj(path)


def test_obj_text_is_the_row_by_row_text_and_reads_back(tmp_path):
    rng = np.random.default_rng(7)
    mesh = trimesh.convex.convex_hull(rng.normal(size=(60, 3)) * [0.1, 1e-5, 3.0])
    text = obj_text(mesh, normals=False)
    assert text == _reference_write(mesh)
    (tmp_path / "m.obj").write_text(obj_text(mesh, material="material_0"))
    v, f = read_obj(tmp_path / "m.obj")
    assert np.allclose(v, mesh.vertices, atol=1e-8) and np.array_equal(f, mesh.faces)
