"""The release over a sorter: the closed hand rises clear of the rim, then opens (scenegen.tasks.release)."""

from types import SimpleNamespace

import numpy as np

from scenegen.graph import Goal
from scenegen.scene import Pose
from scenegen.tasks import grasps, release
from scenegen.tasks.expert import ExpertConfig


class _Ctrl:
    def __init__(self, z: float) -> None:
        self.target_pos, self.target_yaw, self.z = np.array([0.5, 0.0, z]), 0.0, z

    def ee_pose(self):
        return np.array([0.5, 0.0, self.z]), None


class _Expert:
    """Just what release_step reads: the env's controller and world, goals, count, phase and _move."""

    def __init__(self, z: float, goal: Goal, slots: dict | None) -> None:
        asset = SimpleNamespace(params={"slots": slots} if slots else {}, extents=(0.3, 0.2, 0.05))
        world = SimpleNamespace(assets={"sorter_1": asset}, pose=lambda n: Pose((0.5, 0.0, 0.0), (0, 0, 0, 1)))
        self.env = SimpleNamespace(controller=_Ctrl(z), world=world)
        self.goals, self.goal_index, self.cfg, self.swing = [goal], 0, ExpertConfig(open_steps=2), None
        self.phase, self.count, self.opened_at, self.moves = "release", 0, None, []

    def _move(self, wp, yaw, close, swing=None):
        self.moves.append((np.asarray(wp, dtype=float), close))
        return np.zeros(7, dtype=np.float32)

    def _set(self, phase: str) -> None:
        self.phase, self.count = phase, 0

    def run(self, heights: list[float]) -> list[bool]:
        """Steps release_step at these hand heights; the gripper command (True: closed) of each action."""
        for z in heights:
            self.env.controller.z = z
            if release.release_step(self) is None:
                break
            self.count += 1
        return [close for _, close in self.moves]


SLOTS = {"A": [-0.15, -0.09, -0.05, 0.0], "B": [-0.15, 0.0, -0.05, 0.09]}
GOAL = Goal("hex_nut_1", "in", "sorter_1", "A")


def test_the_closed_hand_rises_clear_of_the_rim_before_the_fingers_open():
    least = 0.05 + grasps.FINGER_REACH + release.RIM_CLEARANCE
    ex = _Expert(least - 0.004, GOAL, SLOTS)
    assert release.clear_height(ex.env.world, GOAL) == np.float64(least)
    closes = ex.run([least - 0.004, least - 0.001, least + 0.001, least + 0.002, least + 0.003, least + 0.003])
    assert closes == [True, True, False, False], "two steps up closed, then open_steps open"
    assert ex.moves[0][0][2] >= least + release.RISE_ABOVE - 1e-9, "the rise aims above the least clear height"
    assert ex.phase == "retreat"


def test_a_release_into_a_receptacle_without_compartments_opens_at_once():
    ex = _Expert(0.03, Goal("hex_nut_1", "in", "sorter_1"), None)   # an asset without slots (a bin)
    assert ex.run([0.03] * 4) == [False, False] and ex.phase == "retreat"
    on = _Expert(0.03, Goal("hex_nut_1", "on", "sorter_1"), SLOTS)
    assert on.run([0.03] * 4) == [False, False]


def test_a_hand_that_cannot_rise_opens_after_max_rise_steps():
    ex = _Expert(0.03, GOAL, SLOTS)
    closes = ex.run([0.03] * (release.MAX_RISE_STEPS + 4))
    assert closes == [True] * release.MAX_RISE_STEPS + [False, False] and ex.phase == "retreat"
