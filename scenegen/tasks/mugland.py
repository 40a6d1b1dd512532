"""Where a flipped mug comes down (:mod:`scenegen.tasks.flip`): back on its spot, tipped upright when it lags the hand.

:class:`MugLand` is mixed into :class:`scenegen.tasks.flip.FlipSkill`: :meth:`MugLand._mug_xy` steers the lowering
over the mug's own spot, and a mug that turned in the fingers as it swung and ends its swing more than
:data:`TIP_TOL` short of upright is tipped up about its lowest point before it is let go (:meth:`MugLand._tip`).
"""

from __future__ import annotations

import math

import numpy as np

from scenegen.relations import up_axis
from scenegen.rotations import quat_matrix
from scenegen.sim.control import rotvec_matrix
from scenegen.tasks.grasps import grasp_mesh

TIP_TOL = math.radians(12)
"""Tilt (rad) from upright beyond which a mug ending its swing lagging the hand is tipped up first."""
TIP_STEP = 0.15
"""Largest turn (rad) of the tipping mug the hand leads per step."""


class MugLand:
    """The flipped mug's landing (a mixin of :class:`scenegen.tasks.flip.FlipSkill`)."""

    def _tip(self) -> np.ndarray | None:
        """Tip a mug that lags the hand upright about its base's edge on the table, the fingers holding its handle.

        Measured on tier-2 ``flip_mugs`` scenes (seed 0): a mug turned in the fingers as it swung ended its swing
        45 degrees short of upright, hanging just over the table, and was let go; it stayed leaning (neither
        upright nor lying: no skill stands it up) or fell on its side. The hand carries the pinch along the arc
        that turns the mug upright about its lowest point (the pivot), a step at a time, until the mug is within
        half of :data:`TIP_TOL` of upright (then the usual lowering and release), for at most 40 steps.
        """
        ctrl, w = self.env.controller, self.env.world
        pos, _ = ctrl.ee_pose()
        pose = w.pose(self.node)
        up = up_axis(pose)
        verts = grasp_mesh(w.assets[self.node])[0] @ quat_matrix(pose.orientation).T + np.asarray(pose.position)
        pivot = verts[int(np.argmin(verts[:, 2]))]
        across = np.cross(up, [0.0, 0.0, 1.0])
        angle = math.atan2(float(np.linalg.norm(across)), float(up[2]))
        step = across / (np.linalg.norm(across) + 1e-12) * min(angle, TIP_STEP)
        goal = pivot + rotvec_matrix(step) @ (pos - pivot)
        if angle < TIP_TOL / 2 or self.count > 40:
            self._set("lower")
            self.count = 1  # lower now, without tipping again
            return None
        return self._move(goal, ctrl.target_yaw, True, 0.3, self.swing1)

    def _mug_xy(self) -> np.ndarray:
        """Where the grasp point goes so that the mug's axis is over its spot (from the mug's current pose)."""
        w = self.env.world
        pose = w.pose(self.node)
        x_axis = float((w.assets[self.node].grasp or {}).get("x", 0.0))
        axis_now = (quat_matrix(pose.orientation) @ np.array([x_axis, 0.0, 0.0]) + np.asarray(pose.position))[:2]
        pos, _ = self.env.controller.ee_pose()
        return pos[:2] + (self.axis_xy - axis_now)
