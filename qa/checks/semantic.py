"""Semantic check: every relation and initial state of the graph holds in the settled world, and no goal does.

The predicates are :mod:`scenegen.relations` judged on the simulated world by
:mod:`scenegen.tasks.tracker` (bodies with hulls, centres of mass and cavities; contacts; rest),
the very code that decides the env's success and the expert's progress, with the layout's
untightened tolerances. A goal that already holds in the settled world makes the scene a
pre-solved task (a one-step episode): the scene is rejected. This module only adds the measured
values behind each verdict, relation by relation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from qa.checks._common import join_failures
from qa.config import QAConfig
from qa.result import CheckResult
from scenegen.relations import Body, state_holds, up_axis
from scenegen.scene import Scene
from scenegen.tasks.tracker import contact_graph, node_body, relation_in_world, world_goal_check

NAME = "semantic"
_AXES = {"left_of": (1, 1), "right_of": (1, -1), "in_front_of": (0, -1), "behind": (0, 1)}


def measure(kind: str, s: Body, o: Body) -> dict:
    """The quantities a relation is judged on (metres), for reports.

    Args:
        kind: relation word.
        s: the subject.
        o: the object.

    """
    sc, oc = s.centre(), o.centre()
    out: dict = {"centre_offset_xy": [round(float(v), 4) for v in (sc[:2] - oc[:2])]}
    if kind in ("on", "in"):
        s_bot, _ = s.z_range()
        o_bot, o_top = o.z_range()
        com = s.mass_centre()
        out.update({"subject_bottom_z": s_bot, "object_top_z": o_top, "object_bottom_z": o_bot,
                    "height_above_top": s_bot - o_top, "mass_centre_z": float(com[2]),
                    "mass_centre_below_top": bool(com[2] <= o_top)})
    elif kind in _AXES:
        axis, sign = _AXES[kind]
        d = sc[:2] - oc[:2]
        out.update({"axial_offset": float(sign * d[axis]), "cross_offset": float(abs(d[1 - axis]))})
    elif kind == "near":
        out["gap"] = float(s.footprint().distance(o.footprint()))
    elif kind == "far_from":
        out["distance"] = float(np.linalg.norm(sc[:2] - oc[:2]))
    return out


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Evaluate every relation, every object's initial state, and every goal on the world's current state.

    Args:
        scene: the scene (its graph).
        world: the settled world (poses, contacts and asset geometry are read; nothing is moved).
        cfg: QA settings (``cfg.semantic``).

    Returns:
        A :class:`CheckResult`; ``metrics["relations"]`` lists ``{relation, holds, why, measured}``,
        ``metrics["states"]`` ``{object, state, holds, tilt_deg}`` and ``metrics["goals"]``
        ``{goal, holds_at_start, why}``; score = fraction of relations and states that hold, and the check
        fails when any goal holds at the start.

    """
    sc = cfg.semantic
    poses = world.poses()
    graph = contact_graph(world)
    rows: list[dict] = []
    failures: list[str] = []
    for rel in scene.graph.relations():
        s, k, o = rel.subject, rel.relation, rel.object
        if s not in poses or o not in poses:
            rows.append({"relation": f"{s} {k} {o}", "holds": False, "why": "object missing from the world"})
            failures.append(f"relation does not hold: {s} {k} {o} (object missing from the world)")
            continue
        holds, why = relation_in_world(world, s, k, o, sc.relations, graph)
        sb, ob = node_body(world.assets[s], poses[s]), node_body(world.assets[o], poses[o])
        rows.append({"relation": f"{s} {k} {o}", "holds": holds, "why": why, "measured": measure(k, sb, ob)})
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
    goals: list[dict] = []
    for g in scene.graph.goals:
        text = f"{g.subject} {g.predicate}{' ' + g.object if g.object else ''}"
        if g.subject not in poses or (g.object is not None and g.object not in poses):
            continue
        solved, why = world_goal_check(world, g, sc.relations)
        goals.append({"goal": text, "holds_at_start": solved, "why": why})
        if solved:
            failures.append(f"goal already holds at the start: {text}")
    total = len(rows) + len(states)
    good = sum(r["holds"] for r in rows) + sum(s["holds"] for s in states)
    score = good / total if total else 1.0
    solved_any = any(g["holds_at_start"] for g in goals)
    return CheckResult(NAME, score >= sc.min_score - 1e-12 and not solved_any, 0.0 if solved_any else score,
                       join_failures(failures),
                       {"relations": rows, "states": states, "goals": goals, "held": good, "total": total,
                        "goals_held_at_start": sum(g["holds_at_start"] for g in goals)})
