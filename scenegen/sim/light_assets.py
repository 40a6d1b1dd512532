"""Render-light copies of object assets: same physics and collision, decimated visual mesh.

The TinyRenderer's cost follows the triangle count, and at 64x64 pixels a 4k-triangle bowl
costs as much as the rest of the scene. :class:`LightAssets` wraps an asset lookup: an
asset whose visual mesh has more than ``max_faces`` triangles is returned as a copy whose
``urdf`` points to a rewritten URDF (in the system temporary folder) with a vertex-clustered
visual mesh (:func:`~scenegen.assets.mesh.simplify.cluster_decimate`) and the original collision
parts, inertia and contact settings. Everything else (extents, grasp hints, the asset folder
itself) is unchanged, so geometry read from the asset's own files (hulls, cavities) stays exact.
A textured mesh loses its texture (the URDF colour is used), so meshes at or under the budget
are kept as they are.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import trimesh

from scenegen.assets.base import Asset
from scenegen.assets.mesh.simplify import cluster_decimate
from scenegen.fileio import publish_dir

_LOCK = threading.Lock()
_MESH = re.compile(r'filename="([^"]+)"')


def write_obj(path: Path, v: np.ndarray, f: np.ndarray) -> None:
    """Write a plain OBJ file (vertices to the micrometre, triangles; no normals or UVs)."""
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in f]
    path.write_text("\n".join(lines) + "\n")


def light_asset(asset: Asset, max_faces: int) -> Asset:
    """The render-light copy of one asset (the asset itself when its visual is within budget)."""
    if asset.path is None or asset.visual_faces <= max_faces:
        return asset
    src_urdf = asset.urdf_path
    key = hashlib.sha256(f"{asset.id}:{asset.path}:{max_faces}".encode()).hexdigest()[:20]
    folder = Path(tempfile.gettempdir()) / "scenegen_light_assets" / key
    urdf = folder / "model.urdf"
    visual_ref = Path(asset.visual).as_posix()

    def swap(m: re.Match) -> str:
        ref = m.group(1)
        if ref == visual_ref:
            return f'filename="{(folder / "visual.obj").as_posix()}"'
        return f'filename="{(Path(asset.path) / ref).resolve().as_posix()}"'

    def fill(tmp: Path) -> None:
        mesh = trimesh.load(asset.file(asset.visual), force="mesh", process=False)
        write_obj(tmp / "visual.obj", *cluster_decimate(mesh.vertices, mesh.faces, max_faces))
        (tmp / "model.urdf").write_text(_MESH.sub(swap, src_urdf.read_text()))

    with _LOCK:
        if not urdf.is_file():  # another process may publish it first: its copy is kept
            publish_dir(folder, fill, keep_existing=lambda f: (f / "model.urdf").is_file())
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
