"""Placement records and the checks the layout runs on them: 2D footprints and 3D collisions."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import shapely
from shapely.geometry import MultiPoint, Point, Polygon, box

from scenegen.assets.base import Asset
from scenegen.geometry import AssetGeometry, set_link_pose, transform_points
from scenegen.relations import RelationConfig
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose


@dataclass
class Placed:
    """An object at a candidate pose, with its world footprint and height range."""

    node: str
    pose: Pose
    poly: Polygon
    """Footprint: xy convex hull of the posed hull vertices."""
    bounds: np.ndarray
    """Footprint bounds ``[xmin, ymin, xmax, ymax]``."""
    zmin: float
    zmax: float

    @property
    def centre(self) -> np.ndarray:
        """Centre of the footprint's bounding box."""
        return 0.5 * (self.bounds[:2] + self.bounds[2:])

    @property
    def half(self) -> np.ndarray:
        """Half sizes of the footprint's bounding box."""
        return 0.5 * (self.bounds[2:] - self.bounds[:2])

    @classmethod
    def make(cls, node: str, pose: Pose, geom: AssetGeometry) -> Placed:
        """Pose ``geom`` and compute its footprint."""
        qx, qy, qz, qw = pose.orientation
        pos = np.asarray(pose.position, dtype=float)
        if abs(qx) < 1e-9 and abs(qy) < 1e-9:  # yaw only: rotate the precomputed upright footprint
            yaw = 2.0 * np.arctan2(qz, qw)
            c, s = np.cos(yaw), np.sin(yaw)
            xy = geom.hull2d @ np.array([[c, s], [-s, c]]) + pos[:2]
            poly = Polygon(xy)
            zmin, zmax = pos[2] + geom.zlim[0], pos[2] + geom.zlim[1]
        else:
            pts = transform_points(geom.hull, pose)
            xy = pts[:, :2]
            poly = MultiPoint([tuple(p) for p in xy]).convex_hull
            if not isinstance(poly, Polygon):
                poly = poly.buffer(1e-4)
            zmin, zmax = pts[:, 2].min(), pts[:, 2].max()
        bounds = np.concatenate([xy.min(0), xy.max(0)])
        return cls(node, pose, poly, bounds, float(zmin), float(zmax))


def place_pose(geom: AssetGeometry, q: tuple, centre: np.ndarray, surface_z: float) -> Pose:
    """Asset pose with orientation ``q`` whose footprint is centred on ``centre`` and bottom at ``surface_z``."""
    lo, hi, zmin = posed_extent(geom, q)
    mid = 0.5 * (lo + hi)
    pos = (float(centre[0] - mid[0]), float(centre[1] - mid[1]), float(surface_z - zmin))
    return Pose(pos, tuple(float(v) for v in q))


def posed_extent(geom: AssetGeometry, q: tuple) -> tuple[np.ndarray, np.ndarray, float]:
    """Footprint bounds (xy min, xy max) and lowest z of ``geom`` rotated by ``q`` about its origin."""
    if abs(q[0]) < 1e-9 and abs(q[1]) < 1e-9:
        yaw = 2.0 * np.arctan2(q[2], q[3])
        c, s = np.cos(yaw), np.sin(yaw)
        xy = geom.hull2d @ np.array([[c, s], [-s, c]])
        return xy.min(0), xy.max(0), geom.zlim[0]
    pts = geom.hull @ quat_matrix(q).T
    return pts[:, :2].min(0), pts[:, :2].max(0), float(pts[:, 2].min())


def overlaps(a: Placed, b: Placed, margin: float) -> bool:
    """True when the two footprints come closer than ``margin``."""
    if (a.bounds[0] > b.bounds[2] + margin or b.bounds[0] > a.bounds[2] + margin
            or a.bounds[1] > b.bounds[3] + margin or b.bounds[1] > a.bounds[3] + margin):
        return False
    return a.poly.distance(b.poly) < margin


def sample_in(rng: np.random.Generator, region: Polygon, lim: tuple | None = None) -> np.ndarray | None:
    """A uniform point of ``region`` (inside the box ``lim`` when given), or None."""
    if region.is_empty:
        return None
    x0, y0, x1, y1 = region.bounds
    if lim is not None:
        x0, y0, x1, y1 = max(x0, lim[0]), max(y0, lim[1]), min(x1, lim[2]), min(y1, lim[3])
        if x0 >= x1 or y0 >= y1:
            return None
    pts = rng.uniform((x0, y0), (x1, y1), size=(64, 2))
    ok = np.flatnonzero(shapely.contains_xy(region, pts[:, 0], pts[:, 1]))
    return pts[ok[0]] if len(ok) else None


def relation_zone(kind: str, anchor: Placed, r: float, tight: RelationConfig) -> Polygon:
    """Where the centre of an object (inner radius ``r``) may go for ``object kind anchor`` to hold."""
    c = anchor.centre
    if kind == "near":
        return anchor.poly.buffer(0.9 * tight.near_max + r, quad_segs=4)
    if kind == "far_from":
        return box(-10.0, -10.0, 10.0, 10.0).difference(Point(*c).buffer(tight.far_min + 0.005))
    length, cone = 5.0, 0.95 * tight.dir_cone
    wedge = [(tight.dir_min_offset, 0.0), (length, cone * length), (length, -cone * length)]
    axis, sign = {"left_of": (1, 1), "right_of": (1, -1), "in_front_of": (0, -1), "behind": (0, 1)}[kind]
    pts = []
    for along, across in wedge:
        v = [0.0, 0.0]
        v[axis], v[1 - axis] = sign * along, across
        pts.append((c[0] + v[0], c[1] + v[1]))
    return Polygon(pts)


def inradius(geom: AssetGeometry, state_q: tuple) -> float:
    """A radius the footprint always covers around its centre, whatever the yaw."""
    if abs(state_q[0]) < 1e-9 and abs(state_q[1]) < 1e-9:
        return 0.9 * geom.inradius
    lo, hi, _ = posed_extent(geom, state_q)
    return 0.4 * float((hi - lo).min())


_POOL = threading.local()
_POOL_BODIES = 128


def _pool() -> dict:
    """Return this thread's private collision client and its cache of loaded bodies."""
    import pybullet as p

    st = getattr(_POOL, "st", None)
    if st is None or st["pid"] != os.getpid():
        st = {"pid": os.getpid(), "client": p.connect(p.DIRECT), "bodies": OrderedDict()}
        _POOL.st = st
    return st


class Collider:
    """Collision parts of the scene's assets in a private PyBullet client, for penetration queries.

    Bodies are loaded lazily (only when two bounding boxes overlap) into a per-thread client
    that is kept between layouts, with its bodies cached by URDF path.
    """

    def __init__(self, assets: dict[str, Asset], tol: float) -> None:
        self.assets = assets
        self.tol = tol
        self._slot: dict[str, tuple[str, int]] = {}
        used: dict[str, int] = {}
        for n in sorted(assets):
            path = str(assets[n].urdf_path)
            self._slot[n] = (path, used.get(path, 0))
            used[path] = used.get(path, 0) + 1

    def _body(self, node: str, pose: Pose) -> tuple[int, int]:
        import pybullet as p

        st = _pool()
        key, bodies = self._slot[node], st["bodies"]
        if key in bodies:
            bodies.move_to_end(key)
            body = bodies[key]
        else:
            body = p.loadURDF(key[0], pose.position, pose.orientation, useFixedBase=True,
                              physicsClientId=st["client"])
            bodies[key] = body
            mine = set(self._slot.values())
            for old in [k for k in bodies if k not in mine][: max(0, len(bodies) - _POOL_BODIES)]:
                p.removeBody(bodies.pop(old), physicsClientId=st["client"])
        set_link_pose(st["client"], body, pose)
        return st["client"], body

    def deepest(self, cand: Placed, others: list[Placed]) -> tuple[str | None, float]:
        """The placed object ``cand`` penetrates deepest (beyond the tolerance) and the depth, or ``(None, 0)``.

        Only pairs whose bounding boxes overlap are handed to PyBullet.
        """
        import pybullet as p

        worst, depth = None, 0.0
        client = body = None
        for other in sorted(others, key=lambda o: o.node):
            if (cand.bounds[0] > other.bounds[2] or other.bounds[0] > cand.bounds[2]
                    or cand.bounds[1] > other.bounds[3] or other.bounds[1] > cand.bounds[3]
                    or cand.zmin > other.zmax or other.zmin > cand.zmax):
                continue
            if body is None:
                client, body = self._body(cand.node, cand.pose)
            _, ob = self._body(other.node, other.pose)
            pts = p.getClosestPoints(body, ob, 0.0, physicsClientId=client)
            d = min((c[8] for c in pts), default=0.0)
            if -d > self.tol and -d > depth:
                worst, depth = other.node, -d
        return worst, depth
