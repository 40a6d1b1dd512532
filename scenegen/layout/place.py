"""Placing one object: its candidate region, rejection sampling and the checks.

Used by :func:`scenegen.layout.solver.solve_layout`, which owns the :class:`LayoutState`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import shapely
from shapely.geometry import Point, Polygon
from shapely.ops import unary_union

from scenegen.geometry import AssetGeometry
from scenegen.graph import INVERSE, SceneGraph
from scenegen.layout.collide import (
    Collider,
    Placed,
    inradius,
    overlaps,
    place_pose,
    posed_extent,
    relation_zone,
    sample_in,
)
from scenegen.relations import RelationConfig, check_relation
from scenegen.rotations import axis_angle_quat, quat_matrix, quat_mul
from scenegen.scene import Pose

if TYPE_CHECKING:
    from scenegen.layout.config import LayoutConfig

STATE_QUAT = {"upright": (0.0, 0.0, 0.0, 1.0), "inverted": (1.0, 0.0, 0.0, 0.0),
              "lying": axis_angle_quat((1.0, 0.0, 0.0), math.pi / 2)}
"""Orientation of each node state in the asset frame (inverted: 180 deg about x; lying: 90 deg about x)."""


@dataclass
class LayoutState:
    """Everything one :func:`~scenegen.layout.solver.solve_layout` call works with."""

    graph: SceneGraph
    geoms: dict[str, AssetGeometry]
    cfg: LayoutConfig
    tight: RelationConfig
    rng: np.random.Generator
    table: str
    table_region: Polygon
    free_region: Polygon
    reach_region: Polygon
    base_xy: np.ndarray
    reach: tuple[float, float]
    keepout: Polygon
    ancestors: dict[str, set[str]]
    parent_of: dict[str, str]
    needs_reach: set[str]
    """Targets, receptacles and whatever holds them: their centres must be within reach."""
    deadline: float
    collider: Collider | None
    placed: dict[str, Placed] = field(default_factory=dict)
    loose: RelationConfig | None = None
    """The loosened relation bands no goal may meet at the start (None: ``cfg.relations.loosened()``)."""
    zone: Polygon | None = None
    """The task zone (inside the reach band) where the centres of ``in_zone`` objects go; None: anywhere."""
    in_zone: set[str] = field(default_factory=set)
    """Targets and receptacles (their holders need only be within reach)."""
    arm_bands: tuple = ()
    """A multi-arm robot's ``(base xy, reach_min, reach_max)`` per arm: a centre within any arm's band is in
    reach; () for a single arm (``base_xy`` and ``reach``)."""



def place_node(ctx: LayoutState, n: str, reasons: Counter) -> tuple[bool, int]:
    """Place node ``n`` by rejection sampling; count rejection reasons. Returns ``(placed, samples)``."""
    graph, cfg = ctx.graph, ctx.cfg
    obj = graph.object(n)
    par = graph.parent(n)
    rel, parent = par if par is not None else ("on", ctx.table)
    geom = ctx.geoms[n]
    others = linked_relations(ctx, n)
    state_q = STATE_QUAT.get(obj.state, STATE_QUAT["upright"])
    region, why = candidate_region(ctx, n, rel, parent, others, geom, state_q)
    if region is None:
        reasons[why] += 1
        return False, 1
    shapely.prepare(region)
    surface = surface_z(ctx, rel, parent)
    misses = 0
    for attempt in range(cfg.max_attempts):
        if time.monotonic() > ctx.deadline:
            reasons["time budget spent"] += 1
            return False, attempt
        yaw = float(ctx.rng.uniform(0, 2 * math.pi)) if cfg.random_yaw else 0.0
        q = quat_mul(axis_angle_quat((0.0, 0.0, 1.0), yaw), state_q)
        if obj.state == "lying" and rolls_lying(geom):  # a lying bottle: any roll about its long axis
            q = quat_mul(q, axis_angle_quat((0.0, 0.0, 1.0), float(ctx.rng.uniform(0, 2 * math.pi))))
        lim = None
        if parent == ctx.table:  # the footprint's box at this yaw must fit the table's rectangle
            lo, hi, _ = posed_extent(geom, q)
            half = 0.5 * (hi - lo)
            tb = ctx.table_region.bounds
            lim = (tb[0] + half[0], tb[1] + half[1], tb[2] - half[0], tb[3] - half[1])
        centre = sample_in(ctx.rng, region, lim)
        if centre is None:
            reasons[f"no room {rel} {'the table' if parent == ctx.table else parent}"] += 1
            misses += 1
            if misses >= 25:  # the room left is too small for this object: restart
                return False, attempt + 1
            continue
        cand = Placed.make(n, place_pose(geom, q, centre, surface + cfg.drop_gap), geom)
        why = check_2d(ctx, n, obj.role, rel, parent, cand)
        if why is None:
            why = check_relations(ctx, n, cand, others + [(n, rel, parent)])
        if why is None:
            why = check_goals(ctx, n, cand)
        if why is None and ctx.collider is not None:
            cand, why = check_3d(ctx, n, rel, parent, cand)
        if why is not None:
            reasons[why] += 1
            continue
        ctx.placed[n] = cand
        return True, attempt + 1
    return False, cfg.max_attempts


def rolls_lying(geom: AssetGeometry) -> bool:
    """True for a tall, round object (a bottle): lying, it rests on its side at any roll about its long (z) axis."""
    lo, hi = np.min(geom.hull, axis=0), np.max(geom.hull, axis=0)
    ext = hi - lo
    return bool(ext[2] >= 1.5 * max(ext[0], ext[1]) and abs(ext[0] - ext[1]) < 0.1 * max(ext[0], ext[1]))


def linked_relations(ctx: LayoutState, n: str) -> list[tuple[str, str, str]]:
    """Non-support relations between ``n`` and objects placed before it (placed at check time)."""
    out = []
    for r in ctx.graph.relations():
        if n in (r.subject, r.object) and r.subject != r.object:
            if r.relation in ("on", "in") and r.subject == n:
                continue
            out.append((r.subject, r.relation, r.object))
    return out


def surface_z(ctx: LayoutState, rel: str, parent: str) -> float:
    """World z a child of ``parent`` starts from: the inner floor of an upright cavity, else the top."""
    pp = ctx.placed[parent]
    if parent != ctx.table and ctx.geoms[parent].has_cavity and upright(pp.pose):
        return float(pp.pose.position[2]) + ctx.geoms[parent].floor_z
    return pp.zmax


def upright(pose: Pose) -> bool:
    """True when the pose is a pure yaw (the object stands as in its asset frame)."""
    qx, qy = pose.orientation[0], pose.orientation[1]
    return qx * qx + qy * qy < 1e-6


def support_region(ctx: LayoutState, n: str, rel: str, parent: str, radius: float) -> Polygon:
    """Where the centre of ``n`` may go on or in ``parent``, kept ``radius`` inside the edges."""
    if parent == ctx.table:
        reg = ctx.reach_region if n in ctx.needs_reach else ctx.free_region
        reg = reg.buffer(-radius, join_style=2) if radius > 0 else reg
        if ctx.zone is not None and n in ctx.in_zone:
            return reg.intersection(ctx.zone)
        if ctx.zone is not None and n in ctx.needs_reach:  # holds a task object: it reaches well into the zone
            return reg.intersection(ctx.zone.buffer(0.5 * radius))
        return reg
    pp, pg = ctx.placed[parent], ctx.geoms[parent]
    if pg.has_cavity and upright(pp.pose):
        rot = quat_matrix(pp.pose.orientation)[:2, :2]
        base = Polygon(pg.inner @ rot.T + np.asarray(pp.pose.position[:2]))
    else:
        base = pp.poly.buffer(-ctx.tight.contain_shrink)
    if n in ctx.in_zone and ctx.zone is not None:
        base = base.intersection(ctx.zone)
        if base.is_empty:
            return base
    inner = base.buffer(-radius)
    if inner.is_empty or inner.area < 1e-6:
        c = base.centroid
        return Point(c.x, c.y).buffer(0.003)
    return inner


def candidate_region(ctx: LayoutState, n: str, rel: str, parent: str, others: list[tuple[str, str, str]],
                      geom: AssetGeometry, state_q: tuple) -> tuple[Polygon | None, str]:
    """Where the footprint centre of ``n`` may go, or None and why that is empty.

    That is its support region, minus the room other objects take, inside every relation zone
    to objects already placed.
    """
    r = inradius(geom, state_q)
    region = support_region(ctx, n, rel, parent, r)
    where = "the table" if parent == ctx.table else parent
    if region.is_empty or region.area < 1e-7:
        return None, f"no room {rel} {where} (object too large)"
    for s, k, o in others:
        other = o if s == n else s
        if other not in ctx.placed or other in ctx.ancestors[n] or k in ("on", "in"):
            continue
        kind = k if s == n else INVERSE.get(k, k)
        region = region.intersection(relation_zone(kind, ctx.placed[other], r, ctx.tight))
        if region.is_empty or region.area < 1e-7:
            return None, f"no room for {s} {k} {o} on {where}"
    blocked = [p.poly.buffer(r + ctx.cfg.margin, quad_segs=4) for m, p in ctx.placed.items()
               if m != ctx.table and m not in ctx.ancestors[n] and n not in ctx.ancestors[m]]
    if blocked:
        region = region.difference(unary_union(blocked))
        if region.is_empty or region.area < 1e-7:
            return None, f"no room {rel} {where} (other objects take the space)"
    return region, ""


# ----------------------------------------------------------------------------- checks
def check_2d(ctx: LayoutState, n: str, role: str, rel: str, parent: str, cand: Placed) -> str | None:
    """Support region, robot base, reach and footprint overlaps; the reason of the first failure or None."""
    if parent == ctx.table:
        if not ctx.table_region.contains(cand.poly):
            return "no room on the table (footprint off the table top)"
        if not ctx.keepout.is_empty and cand.poly.intersects(ctx.keepout):
            return "no room on the table (too close to the robot base)"
    elif not support_region(ctx, n, rel, parent, 0.0).contains(Point(*cand.centre)):
        return f"no room {rel} {parent}"
    if n in ctx.needs_reach and (why := out_of_band(ctx, cand.centre)) is not None:
        return why
    for m, other in ctx.placed.items():
        if m == ctx.table or m in ctx.ancestors[n] or n in ctx.ancestors[m]:
            continue
        if overlaps(cand, other, ctx.cfg.margin):
            where = "the table" if parent == ctx.table else parent
            return f"no room {'on' if parent == ctx.table else rel} {where} (overlaps {m})"
    return None


def out_of_band(ctx: LayoutState, xy: np.ndarray) -> str | None:
    """Why a point (xy) is outside the robot's reach band (any arm's, several arms), or None."""
    if ctx.arm_bands:
        if not any(lo <= float(np.linalg.norm(xy - b)) <= hi for b, lo, hi in ctx.arm_bands):
            return "out of every arm's reach"
        return None
    d = float(np.linalg.norm(xy - ctx.base_xy))
    if not ctx.reach[0] <= d <= ctx.reach[1]:
        return f"out of the robot's reach ({d:.2f} m from the base, reach {ctx.reach[0]:.2f}..{ctx.reach[1]:.2f} m)"
    return None


PLACE_DIRS = {"left_of": (0.0, 1.0), "right_of": (0.0, -1.0), "in_front_of": (-1.0, 0.0), "behind": (1.0, 0.0),
              "near": (-1.0, 0.0)}
"""Unit xy direction from a directional (or ``near``) goal's reference object to where its subject is put."""
PLACE_GAP = 0.03
"""Gap (m) between the two footprints' half-widths at a directional goal's place point."""


def place_point(kind: str, anchor_xy: np.ndarray, anchor_ext: np.ndarray, subject_ext: np.ndarray) -> np.ndarray:
    """Where (xy) a directional goal ``subject kind anchor`` puts its subject: beside the anchor, footprints apart.

    The offset is the sum of the two footprints' half-diagonals (so it holds at any yaw of either) and a gap.

    The one place point of a directional goal: the layout keeps it within reach, QA's reachability
    check runs IK to it.
    """
    off = 0.5 * (math.hypot(*anchor_ext[:2]) + math.hypot(*subject_ext[:2])) + PLACE_GAP  # any yaw of either
    return np.asarray(anchor_xy[:2], dtype=float) + off * np.asarray(PLACE_DIRS[kind])


def check_relations(ctx: LayoutState, n: str, cand: Placed, rels: list[tuple[str, str, str]]) -> str | None:
    """Every relation between ``n`` and placed objects, with the tightened predicates; first failure or None."""
    for s, k, o in rels:
        if s != n and s not in ctx.placed or o != n and o not in ctx.placed:
            continue
        sp = cand if s == n else ctx.placed[s]
        op = cand if o == n else ctx.placed[o]
        ok, why = check_relation(k, sp.pose, ctx.geoms[s].extents, op.pose, ctx.geoms[o].extents, ctx.tight)
        if not ok:
            return f"relation {s} {k} {o} not met ({why})"
    return None


def check_goals(ctx: LayoutState, n: str, cand: Placed) -> str | None:
    """No goal between ``n`` and a placed object may hold at the start, even by the loosened predicates.

    Settling moves objects by millimetres; a goal that nearly holds in the layout could hold
    after it, and the task would be solved before it starts (``on``/``in`` goals cannot: the
    subject starts on its own support).
    """
    loose = ctx.cfg.relations.loosened() if ctx.loose is None else ctx.loose
    for g in ctx.graph.goals:
        if g.is_state or g.predicate in ("on", "in") or n not in (g.subject, g.object):
            continue
        if g.object == n and g.predicate in PLACE_DIRS:  # the subject's place beside n must be reachable
            at = place_point(g.predicate, cand.centre, ctx.geoms[n].extents, ctx.geoms[g.subject].extents)
            if (why := out_of_band(ctx, at)) is not None:
                return f"the place for {g.subject} {g.predicate} {n} is {why}"
        other = g.object if g.subject == n else g.subject
        if other not in ctx.placed:
            continue
        sp = cand if g.subject == n else ctx.placed[g.subject]
        op = cand if g.object == n else ctx.placed[g.object]
        if check_relation(g.predicate, sp.pose, ctx.geoms[g.subject].extents, op.pose,
                          ctx.geoms[g.object].extents, loose)[0]:
            return f"goal {g.subject} {g.predicate} {g.object} would hold at the start"
    return None


def check_3d(ctx: LayoutState, n: str, rel: str, parent: str, cand: Placed) -> tuple[Placed, str | None]:
    """Lift the candidate off its support until clear; reject collisions with anything else."""
    col = ctx.collider
    assert col is not None
    top = ctx.placed[parent].zmax
    # ``in``: the subject's centre stays below the rim; ``on``: its bottom stays near the parent's top
    limit = top - 0.5 * (cand.zmax - cand.zmin) if rel == "in" else top + ctx.tight.support_tol
    for _ in range(8):
        hit, depth = col.deepest(cand, [p for m, p in ctx.placed.items() if m != n])
        if hit is None:
            return cand, None
        if hit != parent and hit not in ctx.ancestors[n]:
            return cand, f"3D collision with {hit}"
        lift = depth + ctx.cfg.drop_gap + 0.001
        if cand.zmin + lift > limit:
            return cand, f"does not fit {rel} {parent} (3D collision)"
        x, y, z = cand.pose.position
        cand = Placed.make(n, Pose((x, y, z + lift), cand.pose.orientation), ctx.geoms[n])
    return cand, f"does not fit {rel} {parent} (3D collision)"
