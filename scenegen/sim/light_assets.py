"""Render-light copies of object assets: same physics and collision, decimated visual mesh.

The TinyRenderer's cost follows the triangle count, and at 64x64 pixels a 4k-triangle bowl
costs as much as the rest of the scene. :class:`LightAssets` wraps an asset lookup: an
asset whose visual mesh has more than ``max_faces`` triangles is returned as a copy whose
``urdf`` points to a rewritten URDF (in the system temporary folder) with a vertex-clustered
visual mesh and the original collision parts, inertia and contact settings. Everything
else (extents, grasp hints, the asset folder itself) is unchanged, so geometry read from the
asset's own files (hulls, cavities) stays exact. A textured mesh loses its texture (the
URDF colour is used), so meshes at or under the budget are kept as they are.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset

_LOCK = threading.Lock()
_MESH = re.compile(r'filename="([^"]+)"')


def cluster_decimate(vertices: np.ndarray, faces: np.ndarray, max_faces: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertex-clustering decimation: snap vertices to a grid (as coarse as needed), merge, drop degenerates."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    size = float(np.max(hi - lo)) or 1.0
    out_v, out_f = v, f
    for cells in (48, 40, 32, 26, 20, 16, 12, 10, 8, 6, 4):
        keys = np.floor((v - lo) / (size / cells)).astype(np.int64)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        n = int(inverse.max()) + 1
        sums = np.zeros((n, 3))
        np.add.at(sums, inverse, v)
        new_v = sums / np.bincount(inverse, minlength=n)[:, None]
        nf = inverse[f]
        keep = (nf[:, 0] != nf[:, 1]) & (nf[:, 1] != nf[:, 2]) & (nf[:, 0] != nf[:, 2])
        nf = nf[keep]
        if len(nf):
            _, first = np.unique(np.sort(nf, axis=1), axis=0, return_index=True)
            nf = nf[np.sort(first)]
        if len(nf) == 0:
            break
        out_v, out_f = new_v, nf
        if len(nf) <= max_faces:
            break
    return out_v, out_f


def _write_obj(path: Path, v: np.ndarray, f: np.ndarray) -> None:
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in f]
    path.write_text("\n".join(lines) + "\n")


def light_asset(asset: Asset, max_faces: int) -> Asset:
    """The render-light copy of one asset (the asset itself when its visual is within budget)."""
    if asset.path is None or asset.visual_faces <= max_faces:
        return asset
    import trimesh

    src_urdf = asset.urdf_path
    key = hashlib.sha256(f"{asset.id}:{asset.path}:{max_faces}".encode()).hexdigest()[:20]
    folder = Path(tempfile.gettempdir()) / "scenegen_light_assets" / key
    urdf = folder / "model.urdf"
    with _LOCK:
        if not urdf.is_file():
            tmp = folder.with_name(f".{key}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.mkdir(parents=True, exist_ok=True)
            mesh = trimesh.load(asset.file(asset.visual), force="mesh", process=False)
            v, f = cluster_decimate(mesh.vertices, mesh.faces, max_faces)
            _write_obj(tmp / "visual.obj", v, f)
            visual_ref = Path(asset.visual).as_posix()

            def swap(m: re.Match) -> str:
                ref = m.group(1)
                if ref == visual_ref:
                    return f'filename="{(folder / "visual.obj").as_posix()}"'
                return f'filename="{(Path(asset.path) / ref).resolve().as_posix()}"'

            (tmp / "model.urdf").write_text(_MESH.sub(swap, src_urdf.read_text()))
            try:
                os.replace(tmp, folder)
            except OSError:  # another process wrote it first
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
    return replace(asset, urdf=str(urdf))


class LightAssets:
    """An asset lookup returning render-light copies (see :func:`light_asset`)."""

    def __init__(self, lookup: Mapping[str, Asset] | Callable[[str], Asset], max_faces: int) -> None:
        self.lookup = lookup
        self.max_faces = max_faces
        self._done: dict[str, Asset] = {}

    def __call__(self, asset_id: str) -> Asset:
        if asset_id not in self._done:
            asset = self.lookup(asset_id) if callable(self.lookup) else self.lookup[asset_id]
            self._done[asset_id] = light_asset(asset, self.max_faces)
        return self._done[asset_id]
