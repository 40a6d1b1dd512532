"""Placement spots that need more than a receptacle's centre: beside what it already holds, and across a deep rim.

Two cases of :func:`scenegen.tasks.plan.place_target`:

- :func:`free_spot`: a receptacle that already holds something (a mug with a spoon standing in it) takes the
  next subject at the spot of its cavity farthest from every point of what it holds, measured on their
  hulls (a piece leaning in a mug has its origin half way up its length, far from where it stands);
- :func:`across_rim`: a long subject put ``on`` an open container deeper than the ``on`` predicate allows to
  sink (a spatula on a 6 cm frying pan) cannot lie on its floor; it is laid across the rim instead, both ends
  beyond it, turned as little as possible, its centre of mass over the cavity.
"""

from __future__ import annotations

import math

import numpy as np
import shapely.affinity
from shapely.geometry import LineString, Point

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry, ray_hits, transform_points
from scenegen.relations import RelationConfig, box_center, footprint, judge_relation
from scenegen.rotations import quat_matrix
from scenegen.sim.world import World
from scenegen.tasks.grasps import grasp_mesh, is_long
from scenegen.tasks.tracker import node_body

END_OVER = (0.045, 0.03, 0.02)
"""Each end of a subject laid across a rim reaches this far (m) beyond the cavity's opening: the first that
some line across it allows (a spatula 2 cm longer than the pan is wide, laid across its middle, each end 2 cm
over the rim, slides in when it is dropped a little tilted; laid along a shorter chord it does not)."""
COM_IN = 0.02
"""A subject laid across a rim has its centre of mass at least this far (m) inside the opening's edge."""
CLEAR = 0.01
"""Least gap (m) between a subject laid across a rim and any other object."""


def holds(world: World, s: str, o: str) -> list[str]:
    """The objects other than ``s`` that lie ``in`` receptacle ``o`` now."""
    receptacle = node_body(world.assets[o], world.pose(o))
    return [n for n in world.objects() if n not in (s, o)
            and judge_relation("in", node_body(world.assets[n], world.pose(n)), receptacle)[0]]


def free_spot(world: World, s: str, o: str, holds: list[str], candidates: list[np.ndarray]) -> np.ndarray:
    """Of ``candidates`` (xy in ``o``'s cavity), the one farthest from every surface point of ``holds`` over the cavity.

    ``holds``: the objects already in ``o`` (other than ``s``). Only their points over the cavity's opening
    (2 cm around it) count: a spoon's handle leaning out over the rim stays clear of a finger-wide descent
    outside it. The points are the visual mesh's (:func:`_surface`), not the hull's. The first candidate when
    no point lies there.
    """
    region = node_body(world.assets[o], world.pose(o)).opening().buffer(0.02)
    pts = [p[:2] for n in holds for p in transform_points(_surface(world.assets[n]), world.pose(n))
           if region.contains(Point(float(p[0]), float(p[1])))]
    if not pts:
        return np.asarray(candidates[0], dtype=float)
    q = np.asarray(pts, dtype=float)
    return np.asarray(max(candidates, key=lambda c: float(np.min(np.linalg.norm(q - c, axis=1)))), dtype=float)


def _surface(asset: Asset) -> np.ndarray:
    """Points all over an asset's surface (asset frame): its visual mesh's vertices, else its hull's.

    A hull has vertices only at a thin piece's ends: a spoon leaning in a mug has none along the shaft that
    crosses the cavity, so a spot measured on its hull alone can lie right under the shaft.
    """
    mesh = grasp_mesh(asset)
    return np.asarray(asset_geometry(asset).hull if mesh is None or not len(mesh[0]) else mesh[0], dtype=float)


def cavity_floor(world: World, o: str) -> float | None:
    """World height of an upright open container's floor under its opening's centre (a ray on its mesh), or None.

    None when ``o`` has no cavity, does not stand upright, or the ray misses (no readable mesh).
    """
    asset, pose = world.assets[o], world.pose(o)
    rot = quat_matrix(pose.orientation)
    mesh = grasp_mesh(asset)
    if mesh is None or rot[2, 2] < 0.9 or not asset_geometry(asset).has_cavity:
        return None
    c = node_body(asset, pose).opening().centroid
    top = float(transform_points(asset_geometry(asset).hull, pose)[:, 2].max())
    local = rot.T @ (np.array([c.x, c.y, top + 0.01]) - np.asarray(pose.position, dtype=float))
    hit = ray_hits(mesh[0][mesh[1]], local[None, :], (rot.T @ np.array([0.0, 0.0, -1.0]))[None, :])[0]
    return None if not math.isfinite(hit) else top + 0.01 - float(hit)


def too_deep(world: World, o: str, rel: RelationConfig | None = None) -> bool:
    """True when a subject lying on ``o``'s cavity floor would sink below what ``on`` allows (with 1 cm to spare)."""
    floor = cavity_floor(world, o)
    if floor is None:
        return False
    top = float(transform_points(asset_geometry(world.assets[o]).hull, world.pose(o))[:, 2].max())
    return top - floor > (rel or RelationConfig()).on_depth - 0.01


def across_rim(world: World, s: str, o: str, reach: tuple[float, float],
               rel: RelationConfig | None = None) -> tuple[np.ndarray, float] | None:
    """Where to lay long subject ``s`` across deep open container ``o``'s rim: ``(xy of s's origin, turn)``, or None.

    None when ``o`` is not too deep to lie in (:func:`too_deep`), ``s`` is not long, or no line across the
    opening leaves both of its ends :data:`END_OVER` beyond the opening with its centre of mass over it,
    clear of the other objects and in reach (the larger overhang first). Turns are tried smallest first
    (10 degree steps) and, for each, lines ever farther from the opening's centre (5 mm steps), on the side
    nearer the robot's base first.
    """
    sa, sp = world.assets[s], world.pose(s)
    if not is_long(sa, sp) or not too_deep(world, o, rel):
        return None
    opening = node_body(world.assets[o], world.pose(o)).opening()
    if opening.is_empty:
        return None
    c = np.asarray(opening.centroid.coords[0], dtype=float)
    radius = math.sqrt(opening.area / math.pi)
    rot = quat_matrix(sp.orientation)
    heading = math.atan2(rot[1, 0], rot[0, 0])
    ext = tuple(sa.extents)
    half = 0.5 * float(ext[0])
    centre = np.asarray(box_center(sp, ext)[:2], dtype=float)
    to_origin = np.asarray(sp.position[:2], dtype=float) - centre
    com_along = float((rot @ np.asarray(sa.com, dtype=float))[:2] @ (rot[:2, 0] / np.linalg.norm(rot[:2, 0])))
    com_along -= float((centre - np.asarray(sp.position[:2])) @ (rot[:2, 0] / np.linalg.norm(rot[:2, 0])))
    base = np.asarray(world.scene.robot_base.position[:2], dtype=float)
    others = [footprint(world.pose(n), tuple(world.assets[n].extents)) for n in world.objects() if n not in (s, o)]
    sfp = footprint(sp, ext)
    for over in END_OVER:
        for turn in sorted(np.radians(np.arange(-90, 91, 10)), key=abs):
            d = np.array([math.cos(heading + turn), math.sin(heading + turn)])
            n = np.array([-d[1], d[0]])
            sides = sorted((1.0, -1.0), key=lambda k: float(np.linalg.norm(c + 0.05 * k * n - base)))
            for r in np.arange(0.0, radius - COM_IN, 0.005):
                for k in sides if r > 0 else (1.0,):
                    p = c + k * r * n
                    if _spans(opening, p, d, half, com_along, over) and _free(sfp, centre, p, turn, others) \
                            and reach[0] <= float(np.linalg.norm(p - base)) <= reach[1]:
                        cr, sr = math.cos(turn), math.sin(turn)
                        return p + np.array([cr * to_origin[0] - sr * to_origin[1],
                                             sr * to_origin[0] + cr * to_origin[1]]), float(turn)
    return None


def _spans(opening, p: np.ndarray, d: np.ndarray, half: float, com_along: float,  # noqa: ANN001
           over: float) -> bool:
    """The subject centred at ``p`` along ``d`` (``half`` its length) crosses the opening, ends ``over`` beyond it."""
    far = 2.0 * (half + 1.0)
    chord = LineString([tuple(p - far * d), tuple(p + far * d)]).intersection(opening)
    if chord.is_empty:
        return False
    pieces = [chord] if chord.geom_type == "LineString" else list(getattr(chord, "geoms", []))
    at = [(np.asarray(g.coords, dtype=float) - p) @ d for g in pieces if g.geom_type == "LineString"]
    if not at:
        return False
    lo, hi = min(float(a.min()) for a in at), max(float(a.max()) for a in at)
    return -half <= lo - over and half >= hi + over and lo + COM_IN <= com_along <= hi - COM_IN


def _free(sfp, centre: np.ndarray, p: np.ndarray, turn: float, others: list) -> bool:  # noqa: ANN001
    """The subject's footprint, turned by ``turn`` and moved from ``centre`` to ``p``, keeps clear of ``others``."""
    fp = shapely.affinity.rotate(sfp, float(turn), origin=tuple(centre), use_radians=True)
    fp = shapely.affinity.translate(fp, *(p - centre))
    return all(q.distance(fp) >= CLEAR for q in others)
