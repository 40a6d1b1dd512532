"""Grasps the expert can make on thin, long and wide objects, from the object's mesh in its current pose.

Asset grasp hints are a guess made when the mesh is built; these grasps are measured on the
mesh itself, in the world, so they hold for any size the catalog draws and any pose the object
settled in:

- :func:`section_grasp`, for long objects lying down (screwdriver, marker, cutlery, spatula,
  carrot...): the world mesh is cut across its long axis at stations ever farther from the
  centre of mass; the first cross-section narrower than the open gripper (with a margin) that
  rises high enough for the finger pads to pinch it with the fingertips above the table is
  the grasp, closing across the long axis at the section's middle height.
- :func:`rim_grasp`, for upright open containers wider than the open gripper (mugs, bowls,
  baskets): the fingers straddle the wall at the rim, one inside and one outside, at the
  place on the rim whose outside reaches least far (away from a mug's handle) and faces the
  robot the most.

Both return None when no such grasp exists; :func:`scenegen.tasks.plan.plan_grasp` then falls back to the
asset's hint. Meshes are read once per asset; results are cached per pose (to the millimetre).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry, read_obj
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose

FINGERTIP_BELOW = 0.0072
"""How far (m) the Panda's fingertips reach below its grasp target (``panda_grasptarget``)."""
FINGER_REACH = 0.0086
"""How far (m) the Panda's finger collision shapes reach below its grasp target (measured)."""
TABLE_CLEARANCE = 0.0105
"""Lowest grasp-target height (m) above the table: the fingertips stay just clear of it. The fingers'
collision shapes reach :data:`FINGER_REACH` below the target; at 8 mm they pressed on the table and its
friction held them open (a marker lying on the table was missed in 6 of 20 grasps)."""
PINCH_MIN = 0.003
"""Least height (m) of material the finger pads must overlap."""
PAD_HALF = 0.012
"""Half the length (m) of the Panda's finger pads along a pinched long object (10.5 mm measured, plus slack)."""
PAD_STEP = 0.002
"""Spacing (m) of the cuts across a long object under the pads."""
PAD_TAPER = 0.002
"""Largest difference (m) between the widest and the narrowest section under the pads of a pinch."""
SECTION_SLACK = 0.012
"""Least opening (m) a pinch across a long object leaves beyond its section's width."""
ROUND_SLACK = 0.005
"""Least opening (m) beyond the section's width of a pinch across a tall object lying on its side (a bottle): its
round flank guides a finger landing on its edge down beside it, and a wide bottle pinched higher, for want of
room, is squeezed out of the fingers (a 7.3 cm bottle was flung off the table)."""
FLAT_CLEARANCE = 0.008
"""Lowest grasp-target height (m) above the table for an object (or section) whose top is lower than
:data:`TABLE_CLEARANCE` (a washer): the pads must reach down to its edge, the fingertips skimming the table."""


def lowest_target(table: float, top: float) -> float:
    """Lowest grasp-target height (m) over a table at ``table`` for an object (or section) whose top is at ``top``.

    :data:`TABLE_CLEARANCE` above the table, or :data:`FLAT_CLEARANCE` for a flat one (its top below that).
    """
    return table + (TABLE_CLEARANCE if top - table >= TABLE_CLEARANCE else FLAT_CLEARANCE)


LONG_RATIO = 2.2
"""An object whose box is this many times longer (x) than wide (y) is long."""

_MESHES: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
_PARTS: OrderedDict[str, tuple[tuple[np.ndarray, np.ndarray], ...]] = OrderedDict()
_RESULTS: OrderedDict[tuple, tuple | None] = OrderedDict()
_LOCK = threading.Lock()


def grasp_mesh(asset: Asset) -> tuple[np.ndarray, np.ndarray] | None:
    """Vertices and triangles of an asset's visual mesh (asset frame), read once; None when unreadable."""
    key = f"{asset.id}:{asset.path}"
    with _LOCK:
        if key in _MESHES:
            return _MESHES[key]
    if asset.path is None or not asset.file(asset.visual).is_file():
        return None
    try:
        mesh = read_obj(asset.file(asset.visual))
    except (OSError, ValueError):
        return None
    with _LOCK:
        _MESHES[key] = mesh
        while len(_MESHES) > 256:
            _MESHES.popitem(last=False)
    return mesh


def touch_meshes(asset: Asset) -> list[tuple[np.ndarray, np.ndarray]]:
    """The meshes the fingers touch: the visual mesh and every convex collision part (asset frame), read once.

    A collision part can reach past the visual surface (a fork's convex head part covers its neck, a centimetre
    nearer the handle than the visual flare), and the fingers stop on whichever they meet first.
    """
    key = f"{asset.id}:{asset.path}:collision"
    with _LOCK:
        parts = _PARTS.get(key)
    if parts is None:
        found = []
        for rel in asset.collision if asset.path is not None else ():
            try:
                found.append(read_obj(asset.file(rel)))
            except (OSError, ValueError):
                continue
        parts = tuple(found)
        with _LOCK:
            _PARTS[key] = parts
            while len(_PARTS) > 256:
                _PARTS.popitem(last=False)
    return [m for m in (grasp_mesh(asset), *parts) if m is not None]


def _cached(key: tuple, compute):  # noqa: ANN001, ANN202
    with _LOCK:
        if key in _RESULTS:
            return _RESULTS[key]
    out = compute()
    with _LOCK:
        _RESULTS[key] = out
        while len(_RESULTS) > 512:
            _RESULTS.popitem(last=False)
    return out


def _pose_key(asset: Asset, pose: Pose, *extra: float) -> tuple:
    return (asset.id, str(asset.path), *np.round(pose.position, 3), *np.round(pose.orientation, 2), *extra)


def is_long(asset: Asset, pose: Pose) -> bool:
    """True when the object is long and lies with its long (x) axis roughly horizontal."""
    ext = asset.extents
    return ext[0] >= LONG_RATIO * ext[1] and abs(float(quat_matrix(pose.orientation)[2, 0])) < 0.5


def lying_axis(asset: Asset, pose: Pose) -> int | None:
    """The asset axis (0: x, 2: z) along which a long object lies horizontally, or None when it does not lie long.

    x for a long object (:func:`is_long`); z for a tall one lying on its side (a bottle knocked over: its
    upright grasp hint would pinch it above its equator, or across a vertical axis).
    """
    if is_long(asset, pose):
        return 0
    ext = asset.extents
    tall = ext[2] >= LONG_RATIO * max(ext[0], ext[1])
    return 2 if tall and abs(float(quat_matrix(pose.orientation)[2, 2])) < 0.5 else None


def _plane_section(verts: np.ndarray, faces: np.ndarray, normal: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Points where the mesh's edges cross the plane (normal, origin); empty (0 x 3) when none do."""
    d = (verts - origin) @ normal
    tri = d[faces]
    pts = []
    for a, b in ((0, 1), (1, 2), (2, 0)):
        da, db = tri[:, a], tri[:, b]
        cross = (da * db) < 0
        if not cross.any():
            continue
        t = (da[cross] / (da[cross] - db[cross]))[:, None]
        va, vb = verts[faces[cross, a]], verts[faces[cross, b]]
        pts.append(va + t * (vb - va))
    return np.concatenate(pts) if pts else np.zeros((0, 3))


def section_grasp(asset: Asset, pose: Pose, table: float, opening: float,
                  reserve: float = 0.0) -> tuple[np.ndarray, np.ndarray, float] | None:
    """A pinch across a long object: ``(point, closing axis, width)`` in the world, or None.

    Args:
        asset: the object's asset (its visual mesh is cut).
        pose: its current asset-frame pose.
        table: table-top height.
        opening: the gripper's largest opening (m).
        reserve: the grasp keeps at least this far (m) from the end nearest the centre of mass
            (the end that goes first when the object is stood up in a receptacle).

    """
    found = section_grasps(asset, pose, table, opening, reserve)
    return found[0] if found else None


def section_grasps(asset: Asset, pose: Pose, table: float, opening: float,
                   reserve: float = 0.0, axis: int = 0) -> tuple[tuple[np.ndarray, np.ndarray, float], ...]:
    """Every pinch across a long object that :func:`section_grasp` accepts, nearest the centre of mass first.

    Stations are 4 mm apart; the expert takes a farther one when the open gripper would come down on a
    neighbour at the nearest (:mod:`scenegen.tasks.clearance`). ``axis``: the asset axis the object is long
    along (see :func:`lying_axis`).
    """
    return _cached(_pose_key(asset, pose, table, opening, reserve, axis),
                   lambda: _section(asset, pose, table, opening, reserve, axis))


def heavy_end(asset: Asset, pose: Pose) -> np.ndarray:
    """World point of the end of a long object nearest its centre of mass (on its long axis, at the CoM height)."""
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    ext = asset.extents
    com = np.asarray(asset.com, dtype=float)
    end = -ext[0] / 2 if com[0] < 0 else ext[0] / 2
    return rot @ np.array([end, com[1], com[2]]) + pos


def _cut(meshes: list[tuple[np.ndarray, np.ndarray]], u: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Points where any of the (world-frame) meshes crosses the plane through ``origin`` normal to ``u``."""
    return np.concatenate([_plane_section(v, f, u, origin) for v, f in meshes])


def _section(asset: Asset, pose: Pose, table: float, opening: float,
             reserve: float, axis: int = 0) -> tuple[tuple[np.ndarray, np.ndarray, float], ...]:
    meshes = touch_meshes(asset)
    if grasp_mesh(asset) is None:
        return ()
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    meshes = [(v @ rot.T + pos, f) for v, f in meshes]
    verts = meshes[0][0]
    u = np.array([rot[0, axis], rot[1, axis], 0.0])
    if np.linalg.norm(u) < 1e-6:
        return ()
    u /= np.linalg.norm(u)
    v = np.array([-u[1], u[0], 0.0])
    com = rot @ np.asarray(asset.com, dtype=float) + pos
    along = (verts - com) @ u
    lo, hi = float(along.min()) + 0.01, float(along.max()) - 0.01
    length = hi - lo + 0.02
    if reserve > 0:  # keep ``reserve`` from the end nearest the centre of mass
        if -along.min() < along.max():
            lo = max(lo, float(along.min()) + reserve)
        else:
            hi = min(hi, float(along.max()) - reserve)
    cuts: dict[int, tuple[float, float, float, float] | None] = {}

    def cut(k: int) -> tuple[float, float, float, float] | None:  # (lateral lo, hi, z lo, hi) at k * PAD_STEP
        if k not in cuts:
            pts = _cut(meshes, u, com + k * PAD_STEP * u)
            cuts[k] = None if len(pts) < 3 else (float(((pts - com) @ v).min()), float(((pts - com) @ v).max()),
                                                 float(pts[:, 2].min()), float(pts[:, 2].max()))
        return cuts[k]

    reach = round(PAD_HALF / PAD_STEP)
    slack = SECTION_SLACK if axis == 0 else ROUND_SLACK
    steps = np.arange(0.0, 0.4 * length, 0.004)
    found = []
    for off in sorted({float(s) for s in np.concatenate([steps, -steps])}, key=lambda s: (abs(s), s)):
        if not lo <= off <= hi:
            continue
        k0 = round(off / PAD_STEP)
        span = [cut(k) for k in range(k0 - reach, k0 + reach + 1)]
        own = cut(k0)
        if own is None or any(c is None for c in span):
            continue
        # the pads bear on the widest part under them: that must be a section as wide as the narrowest (parallel
        # edges), or the fingers close on a flare's corner (a fork's neck) and squeeze the object out
        left, right = min(c[0] for c in span), max(c[1] for c in span)
        width = right - left
        if width > opening - slack or width - min(c[1] - c[0] for c in span) > PAD_TAPER:
            continue
        z_lo, z_hi = own[2], own[3]
        # the pads (from the fingertips up) must overlap the section, the fingertips clear of the table
        z = max(lowest_target(table, z_hi), min(0.5 * (z_lo + z_hi) - 0.002, z_hi - 0.006))
        overlap = z_hi - max(z_lo, z - FINGERTIP_BELOW)
        if overlap < min(PINCH_MIN, 0.8 * (z_hi - z_lo)):
            continue
        centre = com + off * u + v * float(0.5 * (left + right))
        found.append((np.array([centre[0], centre[1], z]), v, width))
    return tuple(found)


def rim_grasp(asset: Asset, pose: Pose, robot_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
    """A pinch on the wall of an upright open container: ``(point, closing axis, wall width)``, or None.

    Args:
        asset: the container's asset (its cavity and hull are read).
        pose: its current asset-frame pose (must stand upright).
        robot_xy: the robot base's xy (the rim point facing it is preferred).

    """
    rot = quat_matrix(pose.orientation)
    if rot[2, 2] < math.cos(math.radians(20)):
        return None
    geom = asset_geometry(asset)
    if not geom.has_cavity:
        return None
    pos = np.asarray(pose.position, dtype=float)
    inner = geom.inner
    cx, cy = inner.mean(axis=0)
    top = float(geom.zlim[1])
    best, score = None, -math.inf
    for ang in np.linspace(0, 2 * math.pi, 24, endpoint=False):
        d = np.array([math.cos(ang), math.sin(ang)])
        r_in = float(np.max((inner - (cx, cy)) @ d)) + 0.002  # the cavity polygon is kept 2 mm inside the wall
        high = geom.hull[geom.hull[:, 2] > top - 0.02]
        rel = high[:, :2] - (cx, cy)
        near = rel[np.abs(rel @ np.array([-d[1], d[0]])) < 0.01]
        r_out = float(np.max(near @ d)) if len(near) else r_in + 0.006
        wall = r_out - r_in
        if not 0.001 < wall < 0.03:
            continue
        reach = float(np.max(geom.hull[:, :2] @ d - np.array([cx, cy]) @ d))  # how far the body reaches there
        local = np.array([cx + d[0] * (r_in + r_out) / 2, cy + d[1] * (r_in + r_out) / 2, top - 0.012])
        world = rot @ local + pos
        radial = rot @ np.array([d[0], d[1], 0.0])
        to_robot = np.asarray(robot_xy, dtype=float) - world[:2]
        facing = float(radial[:2] @ to_robot / (np.linalg.norm(to_robot) + 1e-9))
        s = -4.0 * (reach - r_out) + 0.02 * facing
        if s > score:
            best, score = (world, radial, wall), s
    return best
