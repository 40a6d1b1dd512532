"""A drag whose hand cannot come down above the part gives up instead of waiting out the episode."""

from types import SimpleNamespace

import numpy as np

from scenegen.scene import Pose
from scenegen.tasks.drag import STUCK_STEPS, DragSkill


class _Ctrl:
    target_yaw = 0.0

    def __init__(self, pos):
        self.pos = np.asarray(pos, dtype=float)

    def ee_pose(self):
        return self.pos, (0.0, 0.0, 0.0, 1.0)

    def gripper_width(self):
        return 0.0


def _expert(ctrl):
    world = SimpleNamespace(pose=lambda n: Pose((0.6, 0.0, 0.02)), assets={"fork_1": SimpleNamespace(
        extents=(0.18, 0.02, 0.01))})
    ex = SimpleNamespace(env=SimpleNamespace(world=world, controller=ctrl), moves=0)
    ex._reached = lambda wp, **k: float(np.linalg.norm(ctrl.pos - wp)) < 0.005

    def move(wp, yaw, closed, speed=1.0):
        ex.moves += 1
        return np.zeros(7)

    ex._move = move
    return ex


def test_a_hand_resting_on_a_rim_gives_the_drag_up():
    ctrl = _Ctrl((0.62, 0.0, 0.09))  # held 2 cm off and 1 cm above its spot (on a mug's rim)
    drag = DragSkill(_expert(ctrl), "fork_1", np.array([0.63, 0.0]))
    actions = [drag.act() for _ in range(STUCK_STEPS + 1)]
    assert actions[-1] is None and "cannot come down" in drag.failure
    assert all(a is not None for a in actions[:-1])


def test_a_hand_still_coming_down_goes_on():
    ctrl = _Ctrl((0.6, 0.0, 0.3))
    drag = DragSkill(_expert(ctrl), "fork_1", np.array([0.63, 0.0]))
    for _ in range(3 * STUCK_STEPS):
        assert drag.act() is not None and drag.failure is None
        ctrl.pos = ctrl.pos - np.array([0.0, 0.0, 0.002])  # 2 mm nearer a step
