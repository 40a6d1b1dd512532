"""Whether the arm's links, posed on its IK twin, come near the other objects (the flip's dry run, issue 19).

Measured on tier-3 ``flip_mugs`` scenes (``benchmarks/seed_tasks.py``, seed 0), 4 of 12 episodes failed
because the forearm or the wrist knocked a neighbouring mug onto its side during the flip's low
horizontal approach and its swing: the dry run (:mod:`scenegen.tasks.flipplan`) checked the swinging mug
against the other objects, not the arm. :class:`Obstacles` puts the other objects' world boxes, as fixed
boxes, into the twin's own client for the length of a dry run (the twin is shared by worlds of one
robot; the boxes are removed after); :meth:`Obstacles.near` tells whether a link of the arm, posed as the
twin last solved, comes within :data:`ARM_MARGIN` of one of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scenegen.fileio import Closeable
from scenegen.tasks.footprint import shape_body

ARM_MARGIN = 0.005
"""Least clearance (m) of the arm's links (hand and fingers included) from another object's box.

The boxes are the objects' meshes' own, grown by 5 mm (:func:`scenegen.tasks.flipplan.object_box`): 1 cm from
the mesh in all. It was 1 cm from the physics engine's box, which for a rotated body is several centimetres
looser still, so that most flips beside a neighbour counted as out of reach.
"""


def arm_links(twin: Any, ctrl: Any) -> set[int]:
    """Links of the twin that move with the controller's arm: the child of its first joint and all below it."""
    import pybullet as p

    c, rid = twin.client, twin.robot
    parent = {j: p.getJointInfo(rid, j, physicsClientId=c)[16] for j in range(p.getNumJoints(rid, physicsClientId=c))}
    links = {int(ctrl.arm_joints[0])}
    grew = True
    while grew:
        new = {j for j, par in parent.items() if par in links and j not in links}
        links |= new
        grew = bool(new)
    return links


class Obstacles(Closeable):
    """The other objects' boxes ``(lo, hi)`` (world, m) as fixed boxes in the IK twin's client, until closed."""

    def __init__(self, twin: Any, ctrl: Any, boxes: list[tuple[np.ndarray, np.ndarray]],
                 margin: float = ARM_MARGIN) -> None:
        import pybullet as p

        self._p, self.twin, self.margin = p, twin, float(margin)
        self.links = arm_links(twin, ctrl)
        self.bodies: list[int] = []
        c = twin.client
        for box in boxes:  # a Shape as its upright prism (scenegen.tasks.footprint), a plain (lo, hi) as its box
            self.bodies.append(shape_body(p, c, box))

    def near(self) -> bool:
        """True when a link of the arm, as the twin is posed now, lies within the margin of an obstacle."""
        p, c, rid = self._p, self.twin.client, self.twin.robot
        for body in self.bodies:
            for cp in p.getClosestPoints(rid, body, self.margin, physicsClientId=c):
                if cp[3] in self.links:
                    return True
        return False

    def _close(self) -> None:
        """Remove the boxes from the twin's client (their box shapes stay: Bullet keeps a removed body's shape)."""
        p, c = self._p, self.twin.client
        if c >= 0:
            for body in self.bodies:
                p.removeBody(body, physicsClientId=c)
        self.bodies = []
