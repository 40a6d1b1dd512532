"""Adversarial poses for every relation: what looks close to a goal but is not one reads false.

Bodies are built by hand (no simulator): a cup-like receptacle with a known cavity, a block
as a support, and subjects posed bridging the rim, half inside, resting on the rim, leaning
on the receptacle's outside, stacked but sliding... Each row gives the relation, the subject,
the object, the contact record (None: geometry alone) and the verdict. The same predicate
decides the env's success, QA's semantic check and the expert's progress
(:mod:`scenegen.tasks.tracker` builds the bodies and contacts from a world).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenegen.relations import Body, Contact, RelationConfig, judge_relation
from scenegen.rotations import axis_angle_quat, quat_matrix
from scenegen.scene import Pose


def _cylinder(radius: float, height: float, n: int = 24) -> np.ndarray:
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    return np.vstack([np.c_[ring, np.zeros(n)], np.c_[ring, np.full(n, height)]])


def _ring(radius: float, n: int = 16) -> np.ndarray:
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    return np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)


CUP = Body(Pose((0.5, 0.0, 0.0)), (0.09, 0.09, 0.10), (0.0, 0.0, 0.03), _cylinder(0.045, 0.10), _ring(0.04))
"""A cup: 9 cm across, 10 cm tall (rim at z = 0.10), cavity 8 cm across."""
BLOCK = Body(Pose((0.5, 0.0, 0.0)), (0.05, 0.05, 0.05))
"""A 5 cm block (top at z = 0.05)."""
TABLE = Body(Pose((0.55, 0.0, -0.04)), (1.2, 0.8, 0.04))

RESTING = Contact(parent=True, table=False)
ON_TABLE = Contact(parent=False, table=True)
STILL_ON_TABLE = Contact(parent=True, table=True, object_is_table=True)


def box(x: float, y: float, z: float, ext: tuple, tilt_deg: float = 0.0, axis: tuple = (0.0, 1.0, 0.0),
        com: tuple | None = None) -> Body:
    """A box whose origin (its bottom centre) is at (x, y, z), tilted about ``axis``."""
    return Body(Pose((x, y, z), axis_angle_quat(axis, math.radians(tilt_deg))), ext, com)


def rod_from(bottom: tuple, length: float, tilt_deg: float, thick: float = 0.012) -> Body:
    """A thin rod standing on ``bottom``, leaning by ``tilt_deg`` from vertical toward +x."""
    t = math.radians(tilt_deg)
    q = axis_angle_quat((0.0, -1.0, 0.0), math.pi / 2 - t)  # the rod's long (asset x) axis turned up
    axis = np.array([math.sin(t), 0.0, math.cos(t)])
    centre = np.asarray(bottom, dtype=float) + axis * length / 2
    # the asset origin is the bottom centre of the box: half its thickness below the centre, across the rod
    origin = centre - quat_matrix(q) @ np.array([0.0, 0.0, thick / 2])
    return Body(Pose(tuple(origin), q), (length, thick, thick))


ROWS = [
    # ---- in: true cases
    ("in", "a cube on the cavity's floor", box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)), CUP, RESTING, True),
    ("in", "a spoon standing in the cup, leaning on its rim", rod_from((0.48, 0.0, 0.008), 0.15, 30.0), CUP,
     RESTING, True),
    ("in", "a cube on the floor (geometry alone)", box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)), CUP, None, True),
    # ---- in: adversarial
    ("in", "bridging the rim: a spoon lying across the top", box(0.5, 0.0, 0.10, (0.2, 0.04, 0.02)), CUP,
     RESTING, False),
    ("in", "bridging the rim (geometry alone)", box(0.5, 0.0, 0.10, (0.2, 0.04, 0.02)), CUP, None, False),
    ("in", "half inside: one end in the cup, the other on the table",
     box(0.565, 0.0, 0.0, (0.16, 0.03, 0.03), tilt_deg=-35.0), CUP, Contact(True, True), False),
    ("in", "resting on the rim: a ball wider than the mouth", Body(Pose((0.5, 0.0, 0.085)), (0.1, 0.1, 0.1)),
     CUP, RESTING, False),
    ("in", "leaning on the receptacle's outside", box(0.57, 0.0, 0.0, (0.03, 0.03, 0.12), tilt_deg=-15.0), CUP,
     Contact(True, True), False),
    ("in", "inside but sliding", box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)), CUP, Contact(True, False, 0.4),
     False),
    ("in", "inside but floating (touching nothing)", box(0.5, 0.0, 0.03, (0.03, 0.03, 0.03)), CUP,
     Contact(False, False), False),
    ("in", "into a receptacle lying on its side", box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)),
     Body(Pose((0.5, 0.0, 0.045), axis_angle_quat((1.0, 0.0, 0.0), math.pi / 2)), CUP.extents, CUP.com, CUP.hull,
          CUP.cavity), RESTING, False),
    ("in", "inside, but also touching the table (a colander's hole, a broken floor)",
     box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)), CUP, Contact(True, True), False),
    ("in", "beside the cup on the table", box(0.65, 0.0, 0.0, (0.03, 0.03, 0.03)), CUP, ON_TABLE, False),
    # ---- on: true cases
    ("on", "a block stacked on a block", box(0.5, 0.0, 0.05, (0.05, 0.05, 0.05)), BLOCK, RESTING, True),
    ("on", "a block on the table", box(0.5, 0.0, 0.0, (0.05, 0.05, 0.05)), TABLE, STILL_ON_TABLE, True),
    # ---- on: adversarial
    ("on", "stacked but sliding", box(0.5, 0.0, 0.05, (0.05, 0.05, 0.05)), BLOCK, Contact(True, False, 0.3),
     False),
    ("on", "overhanging: its centre of mass beyond the edge", box(0.54, 0.0, 0.05, (0.05, 0.05, 0.05)), BLOCK,
     RESTING, False),
    ("on", "leaning on the block's side", box(0.545, 0.0, 0.0, (0.05, 0.05, 0.06), tilt_deg=-20.0), BLOCK,
     Contact(True, True), False),
    ("on", "hovering above (touching nothing)", box(0.5, 0.0, 0.06, (0.05, 0.05, 0.05)), BLOCK,
     Contact(False, False), False),
    ("on", "floating high (geometry alone)", box(0.5, 0.0, 0.2, (0.05, 0.05, 0.05)), BLOCK, None, False),
    ("on", "bridging from the table onto the block", box(0.55, 0.0, 0.0, (0.2, 0.03, 0.03), tilt_deg=-14.0),
     BLOCK, Contact(True, True), False),
    # ---- directional and distance relations
    ("left_of", "to the left (larger y)", box(0.5, 0.15, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, True),
    ("left_of", "to the left but sliding", box(0.5, 0.15, 0.0, (0.05, 0.05, 0.05)), BLOCK,
     Contact(False, True, 0.5), False),
    ("left_of", "stacked on the object, a little to the left", box(0.5, 0.015, 0.05, (0.05, 0.05, 0.05)), BLOCK,
     RESTING, False),
    ("left_of", "mostly in front, barely left", box(0.2, 0.05, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, False),
    ("right_of", "to the right (smaller y)", box(0.5, -0.15, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, True),
    ("right_of", "on the left side", box(0.5, 0.15, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, False),
    ("in_front_of", "nearer the robot (smaller x)", box(0.35, 0.0, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE,
     True),
    ("in_front_of", "inside the cup in front of its centre", box(0.49, 0.0, 0.008, (0.02, 0.02, 0.02)), CUP,
     RESTING, False),
    ("behind", "farther from the robot (larger x)", box(0.65, 0.0, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE,
     True),
    ("behind", "level with the object", box(0.5, 0.2, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, False),
    ("near", "a few centimetres away", box(0.5, 0.1, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, True),
    ("near", "inside the cup (in it, not near it)", box(0.5, 0.0, 0.008, (0.03, 0.03, 0.03)), CUP, RESTING,
     False),
    ("near", "stacked on the object", box(0.5, 0.0, 0.05, (0.05, 0.05, 0.05)), BLOCK, RESTING, False),
    ("near", "across the table", box(0.5, 0.4, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, False),
    ("far_from", "across the table", box(0.5, 0.4, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, True),
    ("far_from", "next to it", box(0.5, 0.1, 0.0, (0.05, 0.05, 0.05)), BLOCK, ON_TABLE, False),
    ("far_from", "far but still sliding away", box(0.5, 0.4, 0.0, (0.05, 0.05, 0.05)), BLOCK,
     Contact(False, True, 0.8), False),
]


@pytest.mark.parametrize(("kind", "what", "subj", "obj", "contact", "want"), ROWS,
                         ids=[f"{r[0]}: {r[1]}" for r in ROWS])
def test_adversarial_pose(kind, what, subj, obj, contact, want):
    holds, why = judge_relation(kind, subj, obj, RelationConfig(), contact)
    assert holds is want, f"{kind} / {what}: {why}"
    assert (why == "") is holds  # a false verdict always says why


def test_every_relation_has_true_and_false_rows():
    from scenegen.graph import RELATIONS

    for kind in RELATIONS:
        verdicts = {r[5] for r in ROWS if r[0] == kind}
        assert verdicts == {True, False}, kind


def test_the_spoon_standing_in_the_cup_really_leans_below_the_rim():
    # guard the fixture itself: the leaning rod's centre is inside the cavity and below the rim
    rod = ROWS[1][2]
    c = rod.mass_centre()
    assert c[2] < 0.10 and math.hypot(c[0] - 0.5, c[1]) < 0.04
    lo, hi = rod.z_range()
    assert lo == pytest.approx(0.008, abs=5e-3) and hi > 0.10  # it sticks out of the cup, as spoons do
