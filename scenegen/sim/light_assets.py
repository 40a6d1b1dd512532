"""Render-light copies of object assets: same physics and collision, decimated visual mesh.

The TinyRenderer's cost follows the triangle count, and at 64x64 pixels a 4k-triangle bowl
costs as much as the rest of the scene. :class:`LightAssets` wraps an asset lookup: an
asset whose visual mesh has more than ``max_faces`` triangles is returned as a copy whose
``urdf`` points to a rewritten URDF (in the system temporary folder) with a decimated visual
mesh (:func:`render_mesh`: quadric decimation or vertex clustering, whichever stays within a
fraction of a pixel of the mesh's surface; the mesh itself when neither does) and the original collision
parts, inertia and contact settings. Everything else (extents, grasp hints, the asset folder
itself) is unchanged, so geometry read from the asset's own files (hulls, cavities) stays exact.
A textured mesh loses its texture (the URDF colour is used), so meshes at or under the budget
are kept as they are.
"""

from __future__ import annotations

import hashlib
import math
import re
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import trimesh

from scenegen.assets.base import Asset
from scenegen.assets.mesh.simplify import cluster_decimate, simplify
from scenegen.errors import AssetError
from scenegen.fileio import publish_dir

_LOCK = threading.Lock()
_MESH = re.compile(r'filename="([^"]+)"')


def write_obj(path: Path, v: np.ndarray, f: np.ndarray) -> None:
    """Write a plain OBJ file (vertices to the micrometre, triangles; no normals or UVs)."""
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in f]
    path.write_text("\n".join(lines) + "\n")


_METHOD = "faithful-v7"
"""Names the decimation, so copies made by an older method are not reused."""
FIDELITY = (0.0015, 0.015)
"""A render copy's surface stays within ``max(1.5 mm, 1.5% of the mesh's longest side)`` of the mesh's (99th
percentile of the distances from points sampled on either surface to the other surface): about a
third of a pixel of the 128 x 128 front camera, whose pixel spans 4-5 mm on the table."""
_SAMPLES = 1500


def deviation(mesh: trimesh.Trimesh, v: np.ndarray, f: np.ndarray) -> float:
    """Two-way 99th-percentile distance (m) from points sampled on either surface to the other surface."""
    return _compare(mesh, v, f)[0]


def _compare(mesh: trimesh.Trimesh, v: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    """The two-way 99th-percentile surface distance, and a facing share.

    The share is that of the mesh's sampled points whose nearest copy triangle faces their way (a
    thin plate collapsed into one sheet faces one way only).
    """
    if len(f) == 0:
        return math.inf, 0.0
    copy = trimesh.Trimesh(v, f, process=False)
    a, fa = trimesh.sample.sample_surface(mesh, _SAMPLES, seed=0)
    b = trimesh.sample.sample_surface(copy, _SAMPLES, seed=1)[0]
    _, ab, tri = trimesh.proximity.closest_point(copy, a)
    ba = trimesh.proximity.closest_point(mesh, b)[1]
    agree = float(np.mean(np.einsum("ij,ij->i", mesh.face_normals[fa], copy.face_normals[tri]) > 0))
    return float(max(np.percentile(ab, 99), np.percentile(ba, 99))), agree


def _faithful(mesh: trimesh.Trimesh, v: np.ndarray, f: np.ndarray, two_sided: bool) -> bool:
    tol = max(FIDELITY[0], FIDELITY[1] * float(np.max(mesh.extents)))
    dist, agree = _compare(mesh, v, f)
    return dist <= tol and (two_sided or agree >= 0.9)


def render_mesh(mesh: trimesh.Trimesh, max_faces: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vertices, faces)`` of a render copy of ``mesh`` that still looks like it, or None to keep the mesh.

    Quadric decimation (:func:`~scenegen.assets.mesh.simplify.simplify`) keeps thin walls apart,
    where vertex clustering snaps a plate's two faces onto one grid (holes, and coincident
    opposite triangles that render as a checkerboard); clustering does better on meshes of many
    small parts (a bolt's thread), which quadric decimation erodes, but turns triangles over: its copy
    is made two-sided within the same budget. Each is tried at ``max_faces``,
    then at twice and four times it; the first copy whose surface stays within :data:`FIDELITY` of
    the mesh's (and, one-sided, faces the way the mesh does: a thin plate collapsed into a single
    sheet would vanish when seen from its back) is kept.
    """
    for budget in (max_faces, 2 * max_faces, 4 * max_faces):
        if budget >= len(mesh.faces):
            return None
        try:
            quad, _ = simplify(mesh, budget)
            candidates = [(np.asarray(quad.vertices, dtype=np.float64), np.asarray(quad.faces, dtype=np.int64), False)]
        except AssetError:
            candidates = []
        candidates.append((*cluster_decimate(mesh.vertices, mesh.faces, max(4, budget // 2)), True))
        for v, f, clustered in candidates:
            if _faithful(mesh, v, f, clustered):
                # clustering turns some triangles over, and the renderer culls triangles seen from behind:
                # a clustered copy is drawn two-sided (each triangle twice, once per winding)
                return v, np.vstack([f, f[:, ::-1]]) if clustered else f
    return None


def light_asset(asset: Asset, max_faces: int) -> Asset:
    """The render-light copy of one asset (the asset itself when its visual is within budget)."""
    if asset.path is None or asset.visual_faces <= max_faces:
        return asset
    src_urdf = asset.urdf_path
    # the copy's URDF points at the source's collision files by absolute path, so the key covers what they are
    # now (a pack regenerated at the same path with other parts must not find a copy pointing at missing files)
    source = hashlib.sha256(src_urdf.read_bytes() + asset.file(asset.visual).read_bytes()).hexdigest()
    key = hashlib.sha256(f"{asset.id}:{asset.path}:{max_faces}:{_METHOD}:{source}".encode()).hexdigest()[:20]
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
        copy = render_mesh(mesh, max_faces)
        if copy is None:  # no faithful copy: a marker file says to keep the asset as it is
            (tmp / "keep").write_text("no decimated copy keeps the look of this mesh\n")
            return
        write_obj(tmp / "visual.obj", *copy)
        (tmp / "model.urdf").write_text(_MESH.sub(swap, src_urdf.read_text()))

    def done(f: Path) -> bool:
        return (f / "model.urdf").is_file() or (f / "keep").is_file()

    with _LOCK:
        if not done(folder):  # another process may publish it first: its copy is kept
            publish_dir(folder, fill, keep_existing=done)
    if (folder / "keep").is_file():
        return asset
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
