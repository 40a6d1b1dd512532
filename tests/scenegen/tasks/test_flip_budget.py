"""A flip goal counts as more than one goal in an episode's step budget (issue 19)."""

from scenegen.graph import Goal
from scenegen.tasks.config import GOAL_WEIGHTS, GOALS_PER_BUDGET, episode_budget, goal_units


def _flips(n):
    return [Goal(f"mug_{i}", "upright") for i in range(n)]


def _places(n):
    return [Goal(f"bottle_{i}", "in", "bin_1") for i in range(n)]


def test_an_upright_goal_counts_twice_and_a_relation_goal_once():
    assert GOAL_WEIGHTS["upright"] == 2
    assert goal_units(_flips(3)) == 6
    assert goal_units(_places(3)) == 3
    assert goal_units([*_flips(1), *_places(2), Goal("mug_9", "inverted")]) == 5  # other states count one
    assert goal_units(7) == 7  # a plain number of goals is taken as it is


def test_flips_get_more_budget_than_as_many_placements():
    assert episode_budget(100, _places(3)) == episode_budget(100, 3) == 100
    assert episode_budget(100, _flips(3)) == 200  # six goal units: two blocks of GOALS_PER_BUDGET
    assert episode_budget(100, _flips(GOALS_PER_BUDGET)) == 200
    assert episode_budget(100, _flips(5)) == 300
    assert episode_budget(100, []) == 100
