"""Semantic check: every relation and initial state of the graph holds in the settled world.

The predicates are :mod:`scenegen.relations` (the layout's, untightened); this module
only adds the measured values behind each verdict, relation by relation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from shapely.geometry import Point

from qa.checks._common import join_failures
from qa.config import QAConfig
from qa.result import CheckResult
from scenegen.relations import box_center, check_relation, footprint, state_holds, up_axis, z_range
from scenegen.scene import Pose, Scene

NAME = "semantic"
_AXES = {"left_of": (1, 1), "right_of": (1, -1), "in_front_of": (0, -1), "behind": (0, 1)}


def measure(kind: str, sp: Pose, se: tuple, op: Pose, oe: tuple) -> dict:
    """The quantities a relation is judged on (metres), for reports.

    Args:
        kind: relation word.
        sp: subject pose.
        se: subject extents.
        op: object pose.
        oe: object extents.

    """
    sc, oc = box_center(sp, se), box_center(op, oe)
    out: dict = {"centre_offset_xy": [round(float(v), 4) for v in (sc[:2] - oc[:2])]}
    if kind in ("on", "in"):
        s_bot, _ = z_range(sp, se)
        o_bot, o_top = z_range(op, oe)
        out.update({"subject_bottom_z": s_bot, "object_top_z": o_top, "object_bottom_z": o_bot,
                    "height_above_top": s_bot - o_top,
                    "centre_inside_footprint": bool(footprint(op, oe).contains(Point(float(sc[0]), float(sc[1]))))})
    elif kind in _AXES:
        axis, sign = _AXES[kind]
        d = sc[:2] - oc[:2]
        out.update({"axial_offset": float(sign * d[axis]), "cross_offset": float(abs(d[1 - axis]))})
    elif kind == "near":
        out["gap"] = float(footprint(sp, se).distance(footprint(op, oe)))
    elif kind == "far_from":
        out["distance"] = float(np.linalg.norm(sc[:2] - oc[:2]))
    return out


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Evaluate every relation (and, optionally, every object's initial state) on the world's current poses.

    Args:
        scene: the scene (its graph).
        world: the settled world (poses and asset extents are read; nothing is moved).
        cfg: QA settings (``cfg.semantic``).

    Returns:
        A :class:`CheckResult`; ``metrics["relations"]`` lists ``{relation, holds, why, measured}``
        and ``metrics["states"]`` ``{object, state, holds, tilt_deg}``; score = fraction that hold.

    """
    sc = cfg.semantic
    poses = world.poses()
    ext = {n: tuple(a.extents) for n, a in world.assets.items()}
    rows: list[dict] = []
    failures: list[str] = []
    for rel in scene.graph.relations():
        s, k, o = rel.subject, rel.relation, rel.object
        if s not in poses or o not in poses:
            rows.append({"relation": f"{s} {k} {o}", "holds": False, "why": "object missing from the world"})
            failures.append(f"relation does not hold: {s} {k} {o} (object missing from the world)")
            continue
        holds, why = check_relation(k, poses[s], ext[s], poses[o], ext[o], sc.relations)
        rows.append({"relation": f"{s} {k} {o}", "holds": holds, "why": why,
                     "measured": measure(k, poses[s], ext[s], poses[o], ext[o])})
        if not holds:
            failures.append(f"relation does not hold: {s} {k} {o} ({why})")
    states: list[dict] = []
    if sc.check_states:
        support = scene.graph.support_id
        for obj in scene.graph.objects():
            if obj.id == support or obj.id not in poses:
                continue
            holds = state_holds(obj.state, poses[obj.id], sc.relations)
            tilt = math.degrees(math.acos(float(np.clip(up_axis(poses[obj.id])[2], -1, 1))))
            states.append({"object": obj.id, "state": obj.state, "holds": holds, "tilt_deg": tilt})
            if not holds:
                failures.append(f"state does not hold: {obj.id} is not {obj.state} (z axis tilted {tilt:.0f} deg)")
    total = len(rows) + len(states)
    good = sum(r["holds"] for r in rows) + sum(s["holds"] for s in states)
    score = good / total if total else 1.0
    return CheckResult(NAME, score >= sc.min_score - 1e-12, score, join_failures(failures),
                       {"relations": rows, "states": states, "held": good, "total": total})
