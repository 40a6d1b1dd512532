"""Layout: place a scene graph's objects so that every relation holds.

The table goes first (its top at ``table_height``, centred at ``table_center_x``). Then objects
are placed parents before children (``on``/``in``), the most constrained first: among the
objects whose support is placed, the one with most relations to placed objects, then what must
lie within the robot's reach (targets, receptacles and what holds them), then the larger. For
each object a candidate region is built with shapely: its support region (the table top, the
reach annulus, a parent's footprint or a container's inner footprint), minus the room placed
objects take, inside the zone every relation to a placed object allows. Samples (a yaw and a
centre in that region) are then checked in order of cost: table edge, robot base and reach; 2D
footprint overlaps with a margin; every relation predicate (:mod:`scenegen.relations`, tightened
to leave slack for settling); no goal may hold at the start, even by the loosened predicates (a
``left_of`` goal's subject starts on the object's right side or level with it); a 3D check of
the collision parts (objects lifted off their support until clear). Targets and receptacles (and
what holds them) have their centres in the task zone, inside the robot's reach band. When an
object cannot be placed the layout restarts; samples, restarts and time are bounded, and a
failure raises :class:`~scenegen.errors.LayoutError` naming the object, its relations and the
most frequent reason.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator

import numpy as np
from shapely.geometry import Point, Polygon, box
from shapely.ops import unary_union

from scenegen.assets.base import Asset
from scenegen.errors import LayoutError
from scenegen.geometry import asset_geometry
from scenegen.graph import SceneGraph
from scenegen.layout.collide import Collider, Placed
from scenegen.layout.config import LayoutConfig
from scenegen.layout.place import LayoutState, linked_relations, place_node
from scenegen.scene import Pose
from scenegen.sim.robots import RobotSpec, arm_reach, get_robot

_REACH_ROLES = ("target", "receptacle")


def solve_layout(graph: SceneGraph, assets: dict[str, Asset], rng: np.random.Generator,
                 config: LayoutConfig | None = None, robot: str | RobotSpec = "panda") -> dict[str, Pose]:
    """Place every object of ``graph`` so that all its relations hold.

    Args:
        graph: a valid scene graph with one support (table) node.
        assets: node id -> generated asset (the table's is a box slab).
        rng: random generator (same generator state => same layout).
        config: placement settings.
        robot: robot name or spec (its base pose and reach band bound targets and receptacles).

    Returns:
        Node id -> asset-frame pose, the table included (its top at ``config.table_height``).

    Raises:
        LayoutError: an object could not be placed; the message names it, the relation and why.

    """
    cfg = config or LayoutConfig()
    ctx = _context(graph, assets, rng, cfg, get_robot(robot))
    order = _placement_order(ctx)
    _precheck(ctx, order)
    failures: Counter = Counter()
    last_fail: tuple[str, Counter] | None = None
    attempts = 0
    for _restart in range(cfg.max_restarts + 1):
        ctx.placed = {ctx.table: ctx.placed[ctx.table]}
        for n in _next_nodes(ctx, order):
            reasons: Counter = Counter()
            ok, used = place_node(ctx, n, reasons)
            attempts += used
            if not ok:
                failures[n] += 1
                last_fail = (n, reasons)
                break
        else:
            return {k: v.pose for k, v in ctx.placed.items()}
        if time.monotonic() > ctx.deadline:
            break
    raise LayoutError(_failure_message(ctx, failures, last_fail, attempts))


# ----------------------------------------------------------------------------- setup
def _context(graph: SceneGraph, assets: dict[str, Asset], rng: np.random.Generator, cfg: LayoutConfig,
             spec: RobotSpec) -> LayoutState:
    table = graph.support_id
    if table is None:
        raise LayoutError("the scene graph has no support (table) node; add one with role 'support'")
    missing = sorted(n for n in graph.g.nodes if n not in assets)
    if missing:
        raise LayoutError(f"no asset for object(s) {missing}; generate an asset for every node first")
    geoms = {n: asset_geometry(assets[n]) for n in graph.g.nodes}
    tx, ty, tz = geoms[table].extents
    table_pose = Pose((cfg.table_center_x, 0.0, cfg.table_height - tz))
    table_rect = box(cfg.table_center_x - tx / 2, -ty / 2, cfg.table_center_x + tx / 2, ty / 2)
    region = table_rect.buffer(-cfg.edge_margin, join_style=2)
    base_xy = np.array(spec.base_pose.position[:2], dtype=float)
    clearance = spec.base_clearance if cfg.base_clearance is None else cfg.base_clearance
    keepout = Point(*base_xy).buffer(clearance) if clearance > 0 else Polygon()
    rmin = spec.reach_min if cfg.reach_min is None else cfg.reach_min
    rmax = spec.reach_max if cfg.reach_max is None else cfg.reach_max
    if rmin >= rmax:
        raise LayoutError(f"robot reach band [{rmin}, {rmax}] m is empty; fix LayoutConfig.reach_min/reach_max")
    annulus = Point(*base_xy).buffer(rmax, 64).difference(Point(*base_xy).buffer(rmin, 64))
    arm_bands: tuple = ()
    if spec.arms:  # several arms: the union of their reach bands, each arm's base kept clear
        arm_bands = tuple((b, rmin if cfg.reach_min is None else cfg.reach_min,
                           rmax if cfg.reach_max is None else cfg.reach_max)
                          for b, rmin, rmax, _ in arm_reach(spec, spec.base_pose))
        annulus = unary_union([Point(*b).buffer(hi, 64).difference(Point(*b).buffer(lo, 64))
                               for b, lo, hi in arm_bands])
        clear = [Point(*b).buffer(c if cfg.base_clearance is None else cfg.base_clearance)
                 for b, _, _, c in arm_reach(spec, spec.base_pose)]
        keepout = unary_union([k for k in clear if not k.is_empty]) if any(not k.is_empty for k in clear) else Polygon()
    free = region.difference(keepout)
    ancestors: dict[str, set[str]] = {}
    for n in graph.support_order():
        par = graph.parent(n)
        ancestors[n] = set() if par is None else {par[1]} | ancestors.get(par[1], set())
    parent_of = {n: (graph.parent(n) or ("on", table))[1] for n in graph.g.nodes if n != table}
    needs_reach: set[str] = set()
    for o in graph.objects():
        if o.role in _REACH_ROLES:
            needs_reach |= {o.id} | ancestors.get(o.id, set())
    needs_reach.discard(table)
    collider = Collider(assets, cfg.penetration_tol) if cfg.check_3d else None
    ctx = LayoutState(graph, geoms, cfg, cfg.relations.tightened(), rng, table, region, free,
                      free.intersection(annulus), base_xy, (rmin, rmax), keepout, ancestors, parent_of, needs_reach,
                      time.monotonic() + cfg.time_budget_s, collider)
    ctx.arm_bands = arm_bands
    ctx.placed[table] = Placed.make(table, table_pose, geoms[table])
    ctx.loose = cfg.relations.loosened()
    if cfg.task_zone is not None:
        ctx.zone = box(*cfg.task_zone).intersection(annulus)
        ctx.in_zone = {o.id for o in graph.objects() if o.role in _REACH_ROLES}
    return ctx


def _placement_order(ctx: LayoutState) -> list[str]:
    """Static order: parents before children; then what must be within reach; then larger first."""
    graph = ctx.graph
    depth: dict[str, int] = {}
    for n in graph.support_order():
        par = graph.parent(n)
        depth[n] = 0 if par is None else depth.get(par[1], 0) + 1

    def key(n: str) -> tuple:
        ext = ctx.geoms[n].extents
        return (depth[n], n not in ctx.needs_reach, -round(ext[0] * ext[1], 4), n)

    return sorted((n for n in depth if n != ctx.table), key=key)


def _next_nodes(ctx: LayoutState, order: list[str]) -> Iterator[str]:
    """Yield the nodes to place, most constrained first.

    Among the nodes whose parent is placed, the one with the most relations to placed
    objects goes next (ties keep the static order).
    """
    links: dict[str, list[str]] = {n: [] for n in order}
    for r in ctx.graph.relations():
        if r.relation in ("on", "in") or r.subject == r.object:
            continue
        for a, b in ((r.subject, r.object), (r.object, r.subject)):
            if a in links:
                links[a].append(b)
    rank = {n: i for i, n in enumerate(order)}
    remaining = list(order)
    while remaining:
        ready = [n for n in remaining if ctx.parent_of[n] in ctx.placed]
        if not ready:
            return
        n = min(ready, key=lambda m: (-sum(o in ctx.placed for o in links[m]), rank[m]))
        remaining.remove(n)
        yield n


def _table_children(ctx: LayoutState, order: list[str]) -> list[str]:
    out = []
    for n in order:
        par = ctx.graph.parent(n)
        if par is None or par[1] == ctx.table:
            out.append(n)
    return out


def _precheck(ctx: LayoutState, order: list[str]) -> None:
    """Fail fast on layouts that cannot exist: too much footprint, reach band off the table."""
    on_table = _table_children(ctx, order)
    need = 0.0
    for n in on_table:
        g = ctx.geoms[n]
        area = Polygon(g.hull[:, :2]).convex_hull.area if len(g.hull) >= 3 else g.extents[0] * g.extents[1]
        need += (math.sqrt(area) + ctx.cfg.margin) ** 2
    have = ctx.free_region.area
    if need > ctx.cfg.max_fill * have:
        raise LayoutError(f"no room on the table: {len(on_table)} objects need about {need:.2f} m^2 of "
                          f"footprint but the free table top is {have:.2f} m^2 (max fill "
                          f"{ctx.cfg.max_fill:.0%}); use fewer or smaller objects or a larger table")
    reach_needed = [n for n in order if n in ctx.needs_reach]
    if ctx.in_zone and (ctx.zone is None or ctx.zone.area < 1e-4):
        raise LayoutError(f"the task zone {ctx.cfg.task_zone} lies outside the robot's reach band "
                          f"({ctx.reach[0]:.2f}..{ctx.reach[1]:.2f} m from the base); fix LayoutConfig.task_zone")
    if reach_needed and ctx.reach_region.area < 1e-4:
        rmin, rmax = ctx.reach
        raise LayoutError(f"{reach_needed[0]} ({ctx.graph.object(reach_needed[0]).role}) cannot be within the "
                          f"robot's reach ({rmin:.2f}..{rmax:.2f} m from the base): the reach band does not "
                          f"overlap the table top; move the table (table_center_x) or widen the reach")


def _failure_message(ctx: LayoutState, failures: Counter, last: tuple[str, Counter] | None, attempts: int) -> str:
    if last is None:
        return "layout failed before placing anything; check the graph and assets"
    node, reasons = last
    obj = ctx.graph.object(node)
    par = ctx.graph.parent(node)
    rel_txt = f"{node} {par[0]} {par[1]}" if par else node
    top = reasons.most_common(1)[0][0] if reasons else "no candidate position"
    rels = [f"{s} {k} {o}" for s, k, o in linked_relations(ctx, node) if k not in ("on", "in")]
    extra = f"; its relations: {', '.join(rels)}" if rels else ""
    return (f"could not place {node} ({obj.category}, {obj.role}; {rel_txt}) after {attempts} samples and "
            f"{sum(failures.values())} restarts: most samples failed with '{top}'{extra}; "
            "use fewer objects, drop a relation or enlarge the table")
