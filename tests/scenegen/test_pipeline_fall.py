"""The pipeline's acceptance of a settled world: when an object counts as fallen off the table (issue 19)."""

import math
from types import SimpleNamespace

from scenegen.pipeline import AcceptConfig, acceptance
from scenegen.relations import z_range
from scenegen.rotations import axis_angle_quat, quat_mul
from scenegen.scene import Pose

EXTENTS = (0.12, 0.09, 0.1)  # a mug's box, the handle along +x


def _world(pose: Pose) -> SimpleNamespace:
    scene = SimpleNamespace(table_height=0.0)
    return SimpleNamespace(scene=scene, poses=lambda: {"mug_1": pose}, objects=lambda: ["mug_1"],
                           assets={"mug_1": SimpleNamespace(extents=EXTENTS)}, max_penetration=lambda: (0.0, None))


REPORT = SimpleNamespace(at_rest=True, moving=[], seconds=1.0)
CFG = AcceptConfig(check_support=False)


def test_a_mug_lying_rolled_on_its_side_is_on_the_table():
    # tier-5 flip_mugs (seed 0): 33 of 40 graphs were rejected "fell off the table", each a mug lying on its side,
    # rolled about its axis so that its box's lowest corner sat 3-3.6 cm below the table top, its mesh on the table
    lying = quat_mul(axis_angle_quat((0.0, 0.0, 1.0), 0.3), axis_angle_quat((1.0, 0.0, 0.0), math.pi / 2))
    q = quat_mul(lying, axis_angle_quat((0.0, 0.0, 1.0), math.radians(53)))  # rolled about its own axis
    pose = Pose((0.5, 0.0, 0.037), q)  # the mug's axis is off its box's centre (the handle): the box sits low
    lo, hi = z_range(pose, EXTENTS)
    assert lo < -CFG.fall_margin < (lo + hi) / 2  # the corner test would call it fallen
    assert acceptance(_world(pose), REPORT, CFG) == ""


def test_an_object_below_the_table_top_fell_off():
    pose = Pose((0.5, 1.2, -0.6), (0.0, 0.0, 0.0, 1.0))  # on the floor beside the table
    assert acceptance(_world(pose), REPORT, CFG) == "fell off the table: mug_1"
    tipped = Pose((0.5, 0.9, -0.09), (0.0, 0.0, 0.0, 1.0))  # its box's centre 4 cm under the top: over the edge
    assert acceptance(_world(tipped), REPORT, CFG) == "fell off the table: mug_1"
