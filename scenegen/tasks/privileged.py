"""A privileged state vector of an episode: what a critic may read that a policy may not.

A value function trained from images alone must infer where every object is from pixels; in
simulation it can read the state instead (an asymmetric actor-critic: the policy still sees only
its cameras). :func:`privileged_state` lays out, for each of the first :data:`MAX_GOALS` goals, the
subject's position relative to the hand and to the goal's object, its height above the table and
whether the goal holds now, then the task's progress: a fixed-size float32 vector whatever the
scene (goals past the first ``MAX_GOALS`` are left out; missing ones are zeros).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_GOALS = 4
"""Goals described in the vector."""
PER_GOAL = 8
"""Numbers per goal: subject - hand (3), subject - goal object (3; zeros for a state goal), height, holds."""
PRIVILEGED_DIM = MAX_GOALS * PER_GOAL + 1
"""Length of the vector (the goals', then the progress)."""


def privileged_state(world: Any, goals: Sequence[Any], holds: Sequence[bool], progress: float,
                     hand: np.ndarray, table_height: float) -> np.ndarray:
    """The privileged state ``(PRIVILEGED_DIM,)`` (float32) of a world.

    Args:
        world: the episode's world (``pose(node)``, ``body_of``).
        goals: the scene's goals (``subject``, ``object``).
        holds: per goal, whether it holds now.
        progress: the task's progress in [0, 1].
        hand: the end-effector position (m, world frame; the first arm's on a two-arm robot).
        table_height: the table's top (m).

    """
    out = np.zeros(PRIVILEGED_DIM, dtype=np.float32)
    for i, goal in enumerate(list(goals)[:MAX_GOALS]):
        if goal.subject not in world.body_of:
            continue
        s = np.asarray(world.pose(goal.subject).position, dtype=float)
        row = out[i * PER_GOAL:(i + 1) * PER_GOAL]
        row[0:3] = s - np.asarray(hand, dtype=float)
        if goal.object is not None and goal.object in world.body_of:
            row[3:6] = s - np.asarray(world.pose(goal.object).position, dtype=float)
        row[6] = s[2] - table_height
        row[7] = float(bool(holds[i])) if i < len(holds) else 0.0
    out[-1] = float(progress)
    return out
