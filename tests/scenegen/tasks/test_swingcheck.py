import math

import numpy as np
import pytest

from scenegen.sim.control import compose_orientation
from scenegen.tasks import swingcheck
from scenegen.tasks.flip import horizontal_swing
from scenegen.tasks.mugturn import HandleGrasp
from scenegen.tasks.swingcheck import approach_path, pick_swing_yaw


class _Ctrl:
    """What pick_swing_yaw reads of a controller without an IK twin."""

    twin = None

    def __init__(self, home: float) -> None:
        self.home_yaw = home


def _grasp(approach=(0.0, 1.0, 0.0)):
    a = np.asarray(approach, dtype=float)
    return HandleGrasp(np.array([0.5, -0.1, 0.85]), a, np.cross([0.0, 0.0, -1.0], a), 0.012, 0.05, 0.11, 0.05)


@pytest.mark.parametrize("home", [0.0, 0.4, -0.3])
def test_the_counter_clockwise_yaw_is_taken_first(home):
    g = _grasp()
    for yaws in ([home - 1.2, home + 1.9], [home + 1.9, home - 1.2]):
        got = pick_swing_yaw(_Ctrl(home), g, yaws, horizontal_swing(g.approach), 0.08, 0.95)
        assert got == pytest.approx(home + 1.9)


def test_a_yaw_whose_approach_the_arm_cannot_reach_is_passed_over(monkeypatch):
    g = _grasp()
    seen = []

    def reaches(ctrl, path):
        seen.append(path)
        return len(seen) > 1  # the first candidate (the counter-clockwise one) is out of reach

    monkeypatch.setattr(swingcheck, "reaches", reaches)
    assert pick_swing_yaw(_Ctrl(0.0), g, [1.5, -1.6], horizontal_swing(g.approach), 0.08, 0.95) == -1.6
    monkeypatch.setattr(swingcheck, "reaches", lambda ctrl, path: False)  # none reachable: the first in order
    assert pick_swing_yaw(_Ctrl(0.0), g, [-1.6, 1.5], horizontal_swing(g.approach), 0.08, 0.95) == 1.5


def test_approach_path_comes_in_horizontally_behind_the_handle():
    g = _grasp((math.cos(0.3), math.sin(0.3), 0.0))
    swing0 = horizontal_swing(g.approach)
    path = approach_path(g, 1.0, swing0, 0.08, 0.95)
    (above, r0), (pre, r1), (point, r2) = path
    assert np.allclose(point, g.point) and np.allclose(pre, g.point - 0.08 * g.approach)
    assert above[2] == pytest.approx(0.95) and np.allclose(above[:2], pre[:2])
    for rot in (r0, r1, r2):
        assert np.allclose(rot, compose_orientation(swing0, 1.0))
        assert np.allclose(rot[:, 2], g.approach, atol=1e-9)  # the approach axis points at the mug, horizontal
