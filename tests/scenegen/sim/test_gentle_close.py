"""A gentle close: a gripper command under GENTLE_GRIP caps the finger speed for that step; a full one lifts the cap."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from scenegen.sim.control import GENTLE_GRIP, ArmController
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig
from scenegen.tasks.plan import GENTLE_MASS, GENTLE_SPEED, close_speed
from tests.helpers.export_scenes import golden_scene
from tests.helpers.scene_assets import cache_dir


def _grip(ctrl: ArmController, command: float) -> float:
    """Width change (m) of one control step with this gripper command, the arm held still."""
    before = ctrl.gripper_width()
    ctrl.apply(np.array([0, 0, 0, 0, 0, 0, command]))
    return ctrl.gripper_width() - before


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    with World.build(scene, lookup) as w:
        yield w


def test_a_small_gripper_command_closes_gently_and_a_full_one_at_full_speed(world):
    cfg = EpisodeConfig(image_keys=(), render_max_faces=0)
    ctrl = ArmController(world, cfg)
    step = 1.0 / cfg.control_hz
    assert ctrl.finger_speed is None and GENTLE_SPEED < GENTLE_GRIP
    free = -_grip(ctrl, 1.0)  # a free close: most of the opening in one step
    for _ in range(6):
        _grip(ctrl, -1.0)
    gentle = -_grip(ctrl, GENTLE_SPEED)
    assert ctrl.closed and ctrl.finger_speed == GENTLE_SPEED
    assert free > 0.03 and 0 < gentle <= 2 * GENTLE_SPEED * step + 1e-3, (free, gentle)
    assert 0 < -_grip(ctrl, GENTLE_SPEED) <= 2 * GENTLE_SPEED * step + 1e-3  # still capped while it says so
    for _ in range(6):
        _grip(ctrl, -1.0)
    assert ctrl.finger_speed is None  # an open lifted the motors' cap: the next full close is as fast as the first
    assert -_grip(ctrl, 1.0) == pytest.approx(free, abs=2e-3)
    for _ in range(6):
        _grip(ctrl, -1.0)
    assert -_grip(ctrl, GENTLE_GRIP) == pytest.approx(free, abs=2e-3)  # from GENTLE_GRIP up: full speed


def test_only_light_objects_are_closed_on_gently(world):
    asset = next(a for a in world.assets.values() if a.mass > GENTLE_MASS)
    assert close_speed(asset) is None
    assert close_speed(replace(asset, mass=GENTLE_MASS * 0.9)) == GENTLE_SPEED
