"""Physics check: spawn penetration, settling displacement, floating, fallen off the table, jitter.

The spawn penetration is measured with every object back at its layout pose (the state
of a freshly built world), inside a saved and restored PyBullet state, so the settled
world is left exactly as it was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qa.checks._common import join_failures, preserved
from qa.config import QAConfig
from qa.result import CheckResult
from scenegen.relations import z_range
from scenegen.scene import Scene

NAME = "physics"


def _spawn_penetration(scene: Scene, world: Any) -> tuple[float, tuple[str, str] | None]:
    with preserved(world):
        for n in world.objects():
            if n in scene.poses:
                world.set_pose(n, scene.poses[n])
        return world.max_penetration()


def _kinetic_energy(world: Any, node: str) -> float:
    p = world._p
    info = p.getDynamicsInfo(world.body_of[node], -1, physicsClientId=world.client)
    lin, ang = world.velocity(node)
    return 0.5 * info[0] * float(lin @ lin) + 0.5 * float(np.dot(info[2], ang * ang))


def _nearest_contact(world: Any, node: str, reach: float) -> tuple[float, str | None]:
    """Smallest distance from ``node`` to any other body within ``reach`` (inf when none), and that body."""
    p, c = world._p, world.client
    body = world.body_of[node]
    lo, hi = world.aabb(node)
    near = p.getOverlappingObjects((lo - reach).tolist(), (hi + reach).tolist(), physicsClientId=c) or []
    best, other = float("inf"), None
    for b in sorted({o[0] for o in near} - {body}):
        pts = p.getClosestPoints(body, b, reach, physicsClientId=c)
        d = min((pt[8] for pt in pts), default=float("inf"))
        if d < best:
            best = float(d)
            other = world.node_of.get(b, "robot" if b == world.robot_id else "ground" if b == world.ground_id
                                      else str(b))
    return best, other


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Check the physical plausibility of a settled world.

    Args:
        scene: the scene (its ``poses`` are the layout/spawn poses).
        world: the world after settling; left unchanged.
        cfg: QA settings (``cfg.physics``).

    Returns:
        A :class:`CheckResult` whose ``metrics["objects"]`` holds, per object, the displacement
        from its layout pose, the nearest contact and its body, the lowest z, and the kinetic energy.

    """
    pc = cfg.physics
    failures: list[str] = []
    depth, pair = _spawn_penetration(scene, world)
    metrics: dict = {"spawn_penetration": depth, "spawn_pair": list(pair) if pair else None}
    if depth > pc.max_spawn_penetration:
        failures.append(f"penetration at spawn: {pair[0]} and {pair[1]} overlap by {depth * 1000:.1f} mm "
                        f"(max {pc.max_spawn_penetration * 1000:.1f} mm)")
    fallen, floating, moved, jitter = [], [], [], []
    per: dict[str, dict] = {}
    floor = scene.table_height - pc.fall_margin
    for n in world.objects():
        pose = world.pose(n)
        start = np.asarray(scene.poses[n].position) if n in scene.poses else np.asarray(pose.position)
        disp = float(np.linalg.norm(np.asarray(pose.position) - start))
        zmin = z_range(pose, tuple(world.assets[n].extents))[0]  # getAABB pads primitives by ~2.5 cm
        dist, other = _nearest_contact(world, n, pc.contact_tol)
        ke = _kinetic_energy(world, n)
        m = {"displacement": disp, "min_z": zmin, "contact_distance": dist if np.isfinite(dist) else None,
             "contact_with": other, "kinetic_energy": ke}
        m["fallen"] = sum(z_range(pose, tuple(world.assets[n].extents))) / 2 < floor  # the box's centre: its
        # lowest corner lies 3-4 cm below the table top for a mug lying rolled on its side, its mesh on the table
        m["floating"] = not m["fallen"] and not dist <= pc.contact_tol
        m["moved"] = disp > pc.max_displacement
        m["jitter"] = ke > pc.max_kinetic_energy
        per[n] = m
        if m["fallen"]:
            fallen.append(f"fell off the table: {n} is at z {zmin:.3f} m, below the table top "
                          f"{scene.table_height:.3f} m - {pc.fall_margin:.3f}")
        if m["floating"]:
            gap = "no body within reach" if not np.isfinite(dist) else f"nearest body {other} at {dist * 1000:.1f} mm"
            floating.append(f"floating: {n} touches nothing ({gap})")
        if m["moved"]:
            moved.append(f"moved while settling: {n} ended {disp * 100:.1f} cm from its layout pose "
                         f"(max {pc.max_displacement * 100:.1f} cm)")
        if m["jitter"]:
            jitter.append(f"jitter: {n} still has {ke:.2e} J of kinetic energy (max {pc.max_kinetic_energy:.1e} J)")
    failures += fallen + floating + moved + jitter
    metrics["objects"] = per
    n_obj = max(1, len(per))
    bad = {n for n, m in per.items() if m["fallen"] or m["floating"] or m["moved"] or m["jitter"]}
    score = (n_obj - len(bad)) / n_obj * (0.5 if depth > pc.max_spawn_penetration else 1.0)
    metrics["max_displacement"] = max((m["displacement"] for m in per.values()), default=0.0)
    metrics["max_kinetic_energy"] = max((m["kinetic_energy"] for m in per.values()), default=0.0)
    return CheckResult(NAME, not failures, score, join_failures(failures), metrics)
