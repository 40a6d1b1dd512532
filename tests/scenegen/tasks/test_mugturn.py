import math

import numpy as np
import pytest

from scenegen.sim.control import compose_orientation, wrap
from scenegen.tasks.mugturn import SIDEWAYS, TURN_TO, HandleGrasp, turn_plan
from scenegen.tasks.plan import YAW_RANGE

BASE = np.array([0.0, 0.0])


def _grasp(point_xy, heading):
    approach = np.array([math.cos(heading), math.sin(heading), 0.0])
    axis = np.cross([0.0, 0.0, -1.0], approach)
    return HandleGrasp(np.array([*point_xy, 0.05]), approach, axis / np.linalg.norm(axis), 0.01, 0.06, 0.1, 0.05)


def _off_radial(g, heading):
    rho = math.atan2(g.point[1] - BASE[1], g.point[0] - BASE[0])
    return wrap(heading - rho)


@pytest.mark.parametrize("home", [0.0, 0.8])
@pytest.mark.parametrize("deg", range(-180, 180, 15))
def test_turn_plan_points_the_approach_sideways_inside_the_yaw_band(deg, home):
    point = (0.55, 0.12)
    rho = math.atan2(point[1], point[0])
    g = _grasp(point, rho + math.radians(deg))
    plan = turn_plan(g, BASE, home)
    if SIDEWAYS[0] <= abs(math.radians(deg)) <= SIDEWAYS[1]:
        assert plan is None
        return
    assert plan is not None
    y0, turn = plan
    assert abs(y0 - home) <= YAW_RANGE + 1e-9 and abs(y0 + turn - home) <= YAW_RANGE + 1e-9
    assert abs(turn) <= math.pi + 1e-9
    # the top-down hand at y0 closes its fingers across the handle
    rot = compose_orientation(np.zeros(3), y0)
    assert np.allclose(rot[:, 2], [0.0, 0.0, -1.0], atol=1e-9)
    assert abs(abs(rot[:, 1] @ g.axis) - 1.0) < 1e-9
    # turning the mug with the hand brings the approach to TURN_TO from the line out from the base
    end = abs(_off_radial(g, math.atan2(g.approach[1], g.approach[0]) + turn))
    assert end == pytest.approx(TURN_TO, abs=1e-6)
    assert SIDEWAYS[0] <= end <= SIDEWAYS[1]


def test_turn_plan_prefers_the_counter_clockwise_side():
    g = _grasp((0.6, 0.0), 0.0)  # the approach points straight out from the base
    _, turn = turn_plan(g, BASE, 0.0)
    assert turn == pytest.approx(TURN_TO)


@pytest.mark.parametrize("side", [1.0, -1.0])
def test_turn_plan_forced_side_turns_a_sideways_approach_to_that_side(side):
    point = (0.5, -0.1)
    rho = math.atan2(point[1], point[0])
    g = _grasp(point, rho - side * math.radians(100))  # already sideways, on the other side
    assert turn_plan(g, BASE, 0.0) is None
    y0, turn = turn_plan(g, BASE, 0.0, side=side)
    assert abs(y0) <= YAW_RANGE + 1e-9 and abs(y0 + turn) <= YAW_RANGE + 1e-9
    assert _off_radial(g, math.atan2(g.approach[1], g.approach[0]) + turn) == pytest.approx(side * TURN_TO, abs=1e-6)
