"""Carrying an inverted mug to a clear spot before its flip, when no flip from where it stands is reached.

Measured on ``flip_mugs`` scenes (``benchmarks/seed_tasks.py``, seed 0: 3 of 12 episodes of tier 3, 5 of 12 of
tier 4), the commonest failure was "could not reach above the handle": the flip's dry run
(:func:`scenegen.tasks.flipplan.plan_flip`) found no flip of a mug 0.6-0.7 m out or beside a neighbour, and the
expert's retries tried the same approach again. Traced on the IK twin, the blocker is most often the arm's
forearm (``panda_link5``): with the hand horizontal at the handle's height it runs 20-30 cm back from the hand
only 8-10 cm above the table, through any mug, bottle or box on that side. A flip needs room on the handle's side.

:func:`shift_plan` looks for a spot that has it: the mug's axis moved by one of :data:`SHIFT_DISTS` in one of
:data:`SHIFT_ANGLES` directions (nearest first, then the roomiest), the spot inside the arm's flip band
(:data:`REACH_BAND`), on the table, its footprint :data:`SPOT_GAP` clear of every other object; the first spot
whose whole flip the dry run reaches (:func:`~scenegen.tasks.flipplan.plan_flip`'s own planner, a turn first
allowed) wins, at most :data:`MAX_PLANS` spots being dry-run. The turn of :mod:`scenegen.tasks.mugturn` then
carries the mug there (its handle pinched top-down), raised over whatever lies on the way (:func:`carry_rise`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from scenegen.tasks.mugturn import HandleGrasp

SHIFT_DISTS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
"""Distances (m) a mug may be carried before its flip, shortest first."""
SHIFT_ANGLES = tuple(math.radians(a) for a in range(0, 360, 30))
"""World directions (rad) a mug may be carried in."""
SHIFT_MARGIN = 0.015
"""Least clearance (m) in the table's plane of the carried mug's footprint from another object's box on the way."""
SPOT_GAP = 0.03
"""Least clearance (m) in the table's plane of the mug's footprint at its new spot from another object's box."""
REACH_BAND = (0.33, 0.64)
"""Distances (m) from the arm's base of the spots a mug may be carried to (a farther mug: no farther out)."""
TABLE_INSET = 0.04
"""How far (m) inside the table's edge the carried mug's footprint stays."""
MAX_PLANS = 20
"""Most spots dry-run (each about 0.7 s of the twin's time)."""
RISE_MARGIN = 0.015
"""Height (m) the carried mug's bottom passes over an object on the way."""


def _gap(a_lo: np.ndarray, a_hi: np.ndarray, b: tuple[np.ndarray, np.ndarray]) -> float:
    """Separation (m, <= 0: overlap) in the table's plane of the xy boxes ``(a_lo, a_hi)`` and ``b``."""
    return float(np.max(np.maximum(np.asarray(b[0])[:2] - a_hi, a_lo - np.asarray(b[1])[:2])))


def spot_gap(lo: np.ndarray, hi: np.ndarray, shift: np.ndarray, boxes: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Least xy clearance (m; 1 without boxes) of the box ``(lo, hi)`` moved by ``shift`` from ``boxes``."""
    lo2, hi2 = np.asarray(lo, dtype=float)[:2] + shift, np.asarray(hi, dtype=float)[:2] + shift
    return min([_gap(lo2, hi2, b) for b in boxes] or [1.0])


def crossed(lo: np.ndarray, hi: np.ndarray, shift: np.ndarray, boxes: list[tuple[np.ndarray, np.ndarray]],
            margin: float = SHIFT_MARGIN) -> list[int]:
    """Indices of ``boxes`` the xy box ``(lo, hi)`` swept along ``shift`` comes within ``margin`` of.

    A box already nearer than ``margin`` where the mug stands counts only when the mug comes nearer still.
    """
    lo2, hi2 = np.asarray(lo, dtype=float)[:2], np.asarray(hi, dtype=float)[:2]
    out = []
    for i, b in enumerate(boxes):
        need = min(margin, _gap(lo2, hi2, b)) - 1e-6
        if any(_gap(lo2 + f * shift, hi2 + f * shift, b) < need for f in np.linspace(0.1, 1.0, 10)):
            out.append(i)
    return out


def carry_rise(lo: np.ndarray, hi: np.ndarray, shift: np.ndarray, boxes: list[tuple[np.ndarray, np.ndarray]],
               table: float) -> float:
    """Height (m) the mug standing on the table at ``(lo, hi)`` is raised to carry it along ``shift`` over ``boxes``.

    0 when the way is clear; else its bottom passes :data:`RISE_MARGIN` over the highest box it crosses.
    """
    tops = [float(np.asarray(boxes[i][1])[2]) for i in crossed(lo, hi, shift, boxes)]
    return max(0.0, max(tops, default=table) + RISE_MARGIN - table) if tops else 0.0


def candidate_shifts(centre: np.ndarray, lo: np.ndarray, hi: np.ndarray, base_xy: np.ndarray,
                     boxes: list[tuple[np.ndarray, np.ndarray]],
                     table_box: tuple[np.ndarray, np.ndarray] | None = None) -> list[np.ndarray]:
    """The carries (world xy, m) worth a dry run, best first: nearest, then the roomiest spot (see the module).

    Args:
        centre: the mug's axis on the table (world xy).
        lo: the mug's world box, low corner.
        hi: its high corner.
        base_xy: the arm's base on the table.
        boxes: the other objects' world boxes.
        table_box: the table's world box (None: no edge check).
    """
    centre, base = np.asarray(centre, dtype=float)[:2], np.asarray(base_xy, dtype=float)[:2]
    far = max(REACH_BAND[1], float(np.linalg.norm(centre - base)))
    out = []
    for dist in SHIFT_DISTS:
        row = []
        for a in SHIFT_ANGLES:
            shift = dist * np.array([math.cos(a), math.sin(a)])
            r = float(np.linalg.norm(centre + shift - base))
            if not REACH_BAND[0] <= r <= far:
                continue
            if table_box is not None:
                t_lo, t_hi = np.asarray(table_box[0])[:2] + TABLE_INSET, np.asarray(table_box[1])[:2] - TABLE_INSET
                if np.any(np.asarray(lo)[:2] + shift < t_lo) or np.any(np.asarray(hi)[:2] + shift > t_hi):
                    continue
            gap = spot_gap(lo, hi, shift, boxes)
            if gap >= SPOT_GAP:
                row.append((-min(gap, 0.2), round(math.degrees(a)), shift))
        out.extend(s for *_, s in sorted(row, key=lambda t: (t[0], t[1])))
    return out


def shift_plan(plan: Any, ctrl: Any, hg: HandleGrasp, verts: np.ndarray, base_xy: np.ndarray, backoff: float,
               hover: float, table: float, boxes: list[tuple[np.ndarray, np.ndarray]],
               table_box: tuple[np.ndarray, np.ndarray] | None = None,
               max_plans: int = MAX_PLANS) -> tuple[Any, np.ndarray] | None:
    """A flip plan from a spot the mug is first carried to, and the carry (world xy, m); None when none is reached.

    Args:
        plan: the planner, called as ``plan(ctrl, hg, verts, base_xy, backoff, hover, table, True, boxes, True)``
            (:func:`scenegen.tasks.flipplan._plan`) for the mug moved to each candidate spot.
        ctrl: the arm's controller (its IK twin and yaw band).
        hg: the mug's handle grasp where it stands.
        verts: the mug's mesh vertices in the world.
        base_xy: the arm's base on the table.
        backoff: how far behind the grasp the horizontal approach starts (m).
        hover: height (m) the empty hand moves at.
        table: the table's height (m).
        boxes: the other objects' world boxes.
        table_box: the table's world box (None: no edge check).
        max_plans: the most spots dry-run.
    """
    verts = np.asarray(verts, dtype=float)
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    centre = hg.point[:2] + hg.approach[:2] * hg.lever
    for shift in candidate_shifts(centre, lo, hi, base_xy, boxes, table_box)[:max_plans]:
        sh = np.array([*shift, 0.0])
        got = plan(ctrl, replace(hg, point=hg.point + sh), verts + sh, base_xy, backoff, hover, table, True,
                   boxes, True)
        if got.reached:
            return got, shift
    return None
