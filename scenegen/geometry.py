"""Geometry of assets for placement, and small PyBullet helpers shared by layout and world.

:func:`asset_geometry` reads an asset's visual mesh once (cached by asset id) and keeps what
the layout needs: the convex-hull vertices, and for open containers the inner floor height
and inner footprint, estimated by ray casting (the procedural cavity is not stored).

PyBullet places a body by its URDF link frame in ``loadURDF`` but reports and resets the
pose of its centre of mass; :func:`link_pose` and :func:`set_link_pose` convert, so that
every pose in a :class:`~scenegen.scene.Scene` is the asset-frame (URDF link) pose.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.rotations import quat_conj, quat_matrix, quat_mul
from scenegen.scene import Pose

_CACHE: OrderedDict[str, AssetGeometry] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 1024


@dataclass(frozen=True)
class AssetGeometry:
    """Placement geometry of one asset, in its own frame (origin at the bottom centre)."""

    extents: tuple[float, float, float]
    """Bounding-box extents (x, y, z)."""
    hull: np.ndarray
    """Convex-hull vertices (N x 3) of the visual mesh."""
    floor_z: float
    """Height of the inner floor seen from above at the centre (equals the top without a cavity)."""
    inner: np.ndarray
    """Inner footprint polygon (K x 2) of the cavity; empty (0 x 2) without a cavity."""
    hull2d: np.ndarray
    """Vertices (M x 2) of the upright footprint: the xy convex hull, simplified to 0.5 mm."""
    zlim: tuple[float, float]
    """Lowest and highest z of the hull."""
    inradius: float
    """Distance from the origin to the nearest edge of the upright footprint."""

    @property
    def has_cavity(self) -> bool:
        """True when the object is open at the top with a floor clearly below its rim."""
        return len(self.inner) >= 3


def _box_hull(ext: tuple[float, float, float]) -> np.ndarray:
    return np.array([[sx * ext[0] / 2, sy * ext[1] / 2, sz * ext[2]]
                     for sx in (-1, 1) for sy in (-1, 1) for sz in (0, 1)])


_NOT_DIGITS = str.maketrans("", "", "0123456789. -")


def _plain(text: str, dots: int | None) -> bool:
    """Whether ``text`` is single-spaced tokens of digits, each with an optional leading '-'.

    ``dots`` is then the number of '.' in all (one a token for decimals, 0 for integers): each
    token parses in C to exactly one number or stops the parse early (a short count).
    """
    if text.translate(_NOT_DIGITS) or (dots is not None and text.count(".") != dots) or "  " in text:
        return False
    return text.count("-") == text.count(" -") + text.startswith("-") and not text.startswith(" ") \
        and not text.endswith(" ")


def _parse(text: str, dtype: type, count: int) -> np.ndarray | None:
    """``count`` space-separated numbers parsed in C (the values ``float``/``int`` give each), or None."""
    if not text:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a short read shows in the count
        out = np.fromstring(text, dtype=dtype, sep=" ")
    if len(out) != count or (dtype is np.int64 and len(out) and np.abs(out).max() >= 10**17):
        return None
    return out


def _plain_vertices(rows: list[str]) -> np.ndarray | None:
    """``v`` rows of exactly three decimal numbers, single-spaced (what the asset writer makes), else None."""
    text = " ".join(rows)
    if not all(r.count(" ") == 2 for r in rows) or not _plain(text, 3 * len(rows)):
        return None
    v = _parse(text, float, 3 * len(rows))
    return None if v is None else v.reshape(-1, 3)


def read_obj(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (N x 3) and triangles (M x 3, fan-triangulated) of an OBJ file, read fast."""
    lines = path.read_text().splitlines()
    v = _plain_vertices([ln[2:] for ln in lines if ln.startswith("v ")])
    if v is None:
        vl = [ln[2:].split()[:3] for ln in lines if ln.startswith("v ")]
        v = np.asarray(vl, dtype=float).reshape(-1, 3)
    fl = [ln[2:].split() for ln in lines if ln.startswith("f ")]
    f = None
    if fl and all(len(t) == 3 for t in fl):  # fast path: triangles only
        per = len(fl[0][0].split("/"))
        joined = " ".join(" ".join(t) for t in fl).replace("//", "/0/").replace("/", " ")
        ints = _parse(joined, np.int64, 3 * per * len(fl)) if _plain(joined, 0) else None
        if ints is not None:
            f = ints.reshape(-1, 3 * per)[:, ::per]
        else:
            flat = joined.split()
            if len(flat) == 3 * per * len(fl):
                f = np.asarray(flat, dtype=np.int64).reshape(-1, 3 * per)[:, ::per]
    if f is None:
        tri = []
        for toks in fl:
            idx = [int(tok.split("/")[0]) for tok in toks]
            tri += [(idx[0], idx[i], idx[i + 1]) for i in range(1, len(idx) - 1)]
        f = np.asarray(tri, dtype=np.int64).reshape(-1, 3)
    f = np.where(f < 0, f + len(v), f - 1)  # OBJ indices are 1-based; negative ones count from the end
    if len(f) and (f.min() < 0 or f.max() >= len(v)):
        raise ValueError(f"{path.name}: face index out of range")
    return v, f


def ray_hits(tris: np.ndarray, origins: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Distance along each ray to the nearest triangle it hits (inf when none); Moller-Trumbore."""
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    out = np.full(len(origins), np.inf)
    for i, (o, d) in enumerate(zip(origins, dirs, strict=True)):
        p = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        t0 = o - tris[:, 0]
        u = np.einsum("ij,ij->i", t0, p) * inv
        q = np.cross(t0, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9)
        if hit.any():
            out[i] = float(t[hit].min())
    return out


def _cavity(verts: np.ndarray, faces: np.ndarray, top: float) -> tuple[float, np.ndarray]:
    """Inner floor height and inner footprint polygon from rays cast into the mesh."""
    if len(faces) == 0:
        return top, np.zeros((0, 2))
    tris = verts[faces]
    down = ray_hits(tris, np.array([[1.3e-4, 0.7e-4, top + 0.05]]), np.array([[0.0, 0.0, -1.0]]))[0]
    floor = top + 0.05 - down if np.isfinite(down) else 0.0
    depth = top - floor
    if depth < max(0.006, 0.1 * top):
        return top, np.zeros((0, 2))
    z = floor + 0.35 * depth
    angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    dirs = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    radius = ray_hits(tris, np.tile([0.0, 0.0, z], (len(dirs), 1)), dirs)
    if not np.isfinite(radius).all():  # open side: not a cavity a child can sit in
        return top, np.zeros((0, 2))
    radius = np.maximum(radius - 0.002, 0.0)
    return float(floor), np.stack([np.cos(angles) * radius, np.sin(angles) * radius], axis=1)


def _footprint2d(hull: np.ndarray) -> np.ndarray:
    from shapely.geometry import MultiPoint, Polygon

    poly = MultiPoint(np.asarray(hull[:, :2], dtype=float)).convex_hull  # from the array: 100x faster than tuples
    if not isinstance(poly, Polygon):
        poly = poly.buffer(1e-4)
    poly = poly.simplify(5e-4, preserve_topology=True)
    return np.asarray(poly.exterior.coords)[:-1]


def _inradius(poly: np.ndarray) -> float:
    from shapely.geometry import Point, Polygon

    shape = Polygon(poly)
    origin = Point(0.0, 0.0)
    return float(shape.exterior.distance(origin)) if shape.contains(origin) else 0.0


def asset_geometry(asset: Asset) -> AssetGeometry:
    """Return the (cached) placement geometry of an asset.

    Falls back to the bounding box (no cavity) when the visual mesh cannot be read.
    """
    key = f"{asset.id}:{asset.path}"
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    ext = tuple(float(v) for v in asset.extents)
    hull, floor, inner = _box_hull(ext), ext[2], np.zeros((0, 2))
    if asset.path is not None and asset.file(asset.visual).is_file():
        try:
            verts, faces = read_obj(asset.file(asset.visual))
            from scipy.spatial import ConvexHull

            hull = verts[ConvexHull(verts).vertices]
            floor, inner = _cavity(verts, faces, float(verts[:, 2].max()))
        except Exception:  # noqa: BLE001 - unreadable or flat mesh: use the box
            hull, floor, inner = _box_hull(ext), ext[2], np.zeros((0, 2))
    fp = _footprint2d(hull)
    geom = AssetGeometry(ext, hull, float(floor), inner, fp, (float(hull[:, 2].min()), float(hull[:, 2].max())),
                         _inradius(fp))
    with _CACHE_LOCK:
        _CACHE[key] = geom
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return geom


def transform_points(points: np.ndarray, pose: Pose) -> np.ndarray:
    """Apply ``pose`` to points (N x 3) given in the posed frame."""
    return points @ quat_matrix(pose.orientation).T + np.asarray(pose.position, dtype=float)


# ----------------------------------------------------------------------------- pybullet helpers
def _pose_mul(a: tuple, b: tuple) -> tuple:
    """Compose two (position, quaternion) transforms: a * b."""
    ra = quat_matrix(a[1])
    pos = np.asarray(a[0], dtype=float) + ra @ np.asarray(b[0], dtype=float)
    return tuple(float(v) for v in pos), quat_mul(a[1], b[1])


def _pose_inv(a: tuple) -> tuple:
    q = quat_conj(a[1])
    pos = -(quat_matrix(q) @ np.asarray(a[0], dtype=float))
    return tuple(float(v) for v in pos), q


def link_pose(client: int, body: int) -> Pose:
    """Asset-frame (URDF link frame) pose of a body's base."""
    import pybullet as p

    com = p.getBasePositionAndOrientation(body, physicsClientId=client)
    local = p.getDynamicsInfo(body, -1, physicsClientId=client)[3:5]
    pos, orn = _pose_mul(com, _pose_inv(local))
    return Pose(pos, tuple(float(v) for v in orn))


def set_link_pose(client: int, body: int, pose: Pose) -> None:
    """Teleport a body's base so that its URDF link frame is at ``pose``."""
    import pybullet as p

    local = p.getDynamicsInfo(body, -1, physicsClientId=client)[3:5]
    pos, orn = _pose_mul((pose.position, pose.orientation), local)
    p.resetBasePositionAndOrientation(body, pos, orn, physicsClientId=client)
