"""Pieces already in a receptacle kept there: the next hand lets go on touching one; one knocked out is put back.

The expert works through its goals in order and moves on once a goal holds after its release. A later goal
can undo it: the fork, lowered into a mug, knocks the spoon already standing in it over the rim, or the hand
comes down on the spoon's handle, wedges it between the palm and a finger and lifts it out as it retreats
(benchmark traces: the expert reached its last goal with the spoon on the table and waited out the episode).
:func:`bumps` ends the lowering at the hand's first touch of a piece already in the receptacle, and before
the expert ends :func:`knocked_out` sends it back to the first placement goal that no longer holds.
"""

from __future__ import annotations

from typing import Any

from scenegen.graph import Goal
from scenegen.tasks.spots import holds
from scenegen.tasks.tracker import world_goal_holds


def knocked_out(expert: Any, goals: list[Goal]) -> int:
    """The goal index the expert goes on with: its own, or a finished placement goal knocked undone since.

    Only once the expert is past its last goal, and only when no goal was given up on the way (the episode
    has failed already: it ends as it did before). State goals (a mug upright) are the flip skill's and are
    left alone. The goal taken up again starts with fresh tries.
    """
    if expert.goal_index < len(goals) or expert.failure:
        return expert.goal_index
    w = expert.env.world
    for i, g in enumerate(goals):
        if not g.is_state and not world_goal_holds(w, g):
            expert.tries = 0
            return i
    return expert.goal_index


def bumps(expert: Any, goal: Goal) -> bool:
    """True when the robot touches something already ``in`` the receptacle that the expert lowers a subject into.

    Lowering the fork beside the spoon, the hand came down on the spoon's handle leaning over the rim; lowered
    on, the handle wedged between the palm and a finger, and the retreat lifted the spoon out of the mug
    (benchmark traces). The expert lets go at the first touch instead: the subject drops the rest of the way.
    """
    if goal.predicate != "in":
        return False
    w = expert.env.world
    return any(w.in_contact("robot", n) for n in holds(w, goal.subject, goal.object))
