"""The privileged state vector: its layout and values (the env's observation of it: tests/rl/test_rl_env.py)."""

from __future__ import annotations

import numpy as np
import pytest

from scenegen.graph import Goal
from scenegen.scene import Pose
from scenegen.tasks.privileged import MAX_GOALS, PER_GOAL, PRIVILEGED_DIM, privileged_state


class FakeWorld:
    def __init__(self, poses: dict[str, tuple[float, float, float]]) -> None:
        self.body_of = dict.fromkeys(poses, 1)
        self._poses = poses

    def pose(self, node: str) -> Pose:
        return Pose(position=self._poses[node])


def test_layout_and_values():
    world = FakeWorld({"banana": (0.5, 0.1, 0.73), "bowl": (0.55, -0.1, 0.72), "mug": (0.4, 0.2, 0.75)})
    goals = [Goal(subject="banana", predicate="in", object="bowl"), Goal(subject="mug", predicate="upright")]
    v = privileged_state(world, goals, [True, False], 0.5, np.array([0.45, 0.0, 0.9]), table_height=0.7)
    assert v.shape == (PRIVILEGED_DIM,) and v.dtype == np.float32
    np.testing.assert_allclose(v[0:3], [0.05, 0.1, -0.17], atol=1e-6)  # banana - hand
    np.testing.assert_allclose(v[3:6], [-0.05, 0.2, 0.01], atol=1e-6)  # banana - bowl
    assert v[6] == pytest.approx(0.03) and v[7] == 1.0
    mug = v[PER_GOAL:2 * PER_GOAL]
    np.testing.assert_allclose(mug[3:6], 0.0)  # a state goal has no object
    assert mug[7] == 0.0 and np.all(v[2 * PER_GOAL:MAX_GOALS * PER_GOAL] == 0) and v[-1] == 0.5
