"""Letting go over a sorter's compartment: the fingertips rise clear of its walls before the fingers open.

A part sorted into a compartment is lowered until its fingertip target is 1 cm above the sorter's rim
(:func:`scenegen.tasks.bins.slot_drop`), but the fast descent overshoots that target by about 3 mm and the fingers'
collision shapes reach :data:`~scenegen.tasks.grasps.FINGER_REACH` below it, so the fingertips ended 2 mm below the
rim. Opened there, the Panda's fingers span about 9 cm across their outer faces, the width of a compartment: they
pressed both walls' top edges from the inside (55 N each) and stopped opening, and the retreat lifted the 0.58 kg
sorter with them up to 0.44 m, then dropped it, spilling the parts already sorted (sort benchmark, tier 3, scene
c38321ac268c: a 5 cm bearing ring; the expert then ran out of steps). :func:`release_step` first raises the closed
hand until the fingertips clear the rim by :data:`RIM_CLEARANCE` (a few steps at most), then opens it as before;
any other release is left as it was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scenegen.relations import z_range
from scenegen.tasks.grasps import FINGER_REACH
from scenegen.tasks.tracker import asset_slots

RIM_CLEARANCE = 0.001
"""The fingertips open only once their lowest point is this far (m) above the compartments' rim."""
RISE_ABOVE = 0.0005
"""The closed hand is raised toward this much (m) above the least clear height, so that it gets there."""
MAX_RISE_STEPS = 8
"""Steps the closed hand may rise before the fingers open whatever its height."""


def clear_height(world: Any, goal: Any) -> float | None:
    """Least grasp-target height (m) at which open fingers clear the rim of ``goal``'s sorter, or None.

    None when the goal is not an ``in`` into a receptacle with compartments (its release is left as it was).
    """
    if goal.predicate != "in" or goal.object is None or goal.object not in world.assets:
        return None
    asset = world.assets[goal.object]
    if not asset_slots(asset):
        return None
    rim = z_range(world.pose(goal.object), tuple(asset.extents))[1]
    return float(rim + FINGER_REACH + RIM_CLEARANCE)


def release_step(expert: Any) -> np.ndarray | None:
    """One step of the expert's ``release`` phase: rise clear of a sorter's walls if need be, then open.

    Args:
        expert: the :class:`~scenegen.tasks.expert.ScriptedExpert` (its phase is ``release``).

    Returns:
        The action, or None once the fingers have opened for ``open_steps`` steps (the phase is then
        ``retreat``).

    """
    ctrl, w = expert.env.controller, expert.env.world
    if expert.count == 0:
        expert.opened_at = None
    if expert.opened_at is None:
        goal = expert.goals[expert.goal_index]
        least = clear_height(w, goal)
        pos, _ = ctrl.ee_pose()
        if least is not None and float(pos[2]) < least and expert.count < MAX_RISE_STEPS:
            up = np.array([*ctrl.target_pos[:2], max(float(ctrl.target_pos[2]), least + RISE_ABOVE)])
            return expert._move(up, ctrl.target_yaw, True, swing=expert.swing)
        expert.opened_at = expert.count
    if expert.count - expert.opened_at >= expert.cfg.open_steps:
        expert._set("retreat")
        return None
    return expert._move(ctrl.target_pos, ctrl.target_yaw, False, swing=expert.swing)
