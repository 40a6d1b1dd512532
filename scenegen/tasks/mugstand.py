"""The flip skill's stand-up of a mug lying on its side: pinch the thin wall of its rim, turn it upright.

A lying mug's body (8-9 cm) is wider than the gripper's opening and its handle may point anywhere
about its axis, but the wall of its rim is thin. :func:`rim_grasp` finds a point of the rim (its
top, or :data:`AROUNDS` round it, away from the handle): the hand points into the opening, dipped one
of :data:`DIPS` toward the wall (at the top, a level hand, 20 cm long along its closing axis, would
meet the table), its fingers closing across the wall, one inside the mug and one outside it.
:class:`MugStand` (mixed into :class:`scenegen.tasks.flip.FlipSkill`, which drives the approach, the
pinch, the lowering and the release) lifts the mug until it can swing below the hand, then turns the hand about the
horizontal axis across the mug's, closed-loop on the mug's own up axis, until the mug stands
upright (a turn about the vertical, :data:`SPINS`, may ride along to keep the wrist in reach),
and sets it down. The whole motion is dry-run on the arm's IK twin first (:func:`rim_path`,
:func:`scenegen.tasks.swingcheck.reaches`), from where the arm is or from its home pose; when
neither reaches it, the skill fails at once ("could not reach the rim of X").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scenegen.assets.base import Asset
from scenegen.relations import up_axis
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.control import rotvec_matrix, swing_yaw, wrap
from scenegen.tasks.flipplan import JUMP
from scenegen.tasks.grasps import grasp_mesh
from scenegen.tasks.plan import YAW_RANGE
from scenegen.tasks.swingcheck import reaches

_DOWN = np.array([0.0, 0.0, -1.0])
_UP = np.array([0.0, 0.0, 1.0])
DIPS = tuple(math.radians(a) for a in (30, 45, 60))
"""Angles (rad) of the rim pinch's approach below horizontal, into the mug's opening, tried in this order."""
DEPTH = 0.012
"""How far (m) inside the rim's edge, along the mug's axis, the fingertips' centre pinches the wall."""
RIM_BAND = 0.004
"""Height band (m) below the rim's top in the asset frame whose vertices give the wall's radii."""
HANDLE_UP = math.cos(math.radians(50))
"""A handle pointing up more than this (the cosine of its angle from straight up) sits at the rim's top: no pinch."""
UPRIGHT_TOL = math.radians(6)
"""Tilt (rad) of the held mug's up axis from vertical at which its turn is done."""
SPINS = tuple(math.radians(a) for a in (0, 45, -45, 90, -90))
"""Turns (rad) about the vertical the hand may add to the mug's quarter turn (an upright mug's heading is free)."""
AROUNDS = tuple(math.radians(a) for a in (0, 50, -50, 90, -90))
"""Angles (rad) round the rim from its topmost point at which the wall may be pinched, tried in this order."""
TURN_POSES = 6
"""Poses of the dry-run turn (a quarter turn about the horizontal axis across the mug's)."""


@dataclass(frozen=True)
class RimGrasp:
    """A pinch of the top wall of a lying mug's rim, in the world (:func:`rim_grasp`)."""

    point: np.ndarray
    """Fingertip centre: in the wall, :data:`DEPTH` inside the rim's edge at its top."""
    approach: np.ndarray
    """Unit approach axis: into the opening, dipped toward the wall."""
    closing: np.ndarray
    """Unit closing axis, across the wall (perpendicular to the approach)."""
    up: np.ndarray
    """Unit horizontal direction of the mug's axis, from its base to its opening."""
    width: float
    """The wall's thickness between the fingers (m)."""
    reach: float
    """Largest distance (m) from the grasp point to any point of the mug (its swing radius)."""
    base: np.ndarray
    """World position of the centre of the mug's base."""


def rim_grasp(asset: Asset, pose: Pose, opening: float, dip: float = DIPS[0],
              around: float = 0.0) -> RimGrasp | None:
    """Where to pinch the rim of a mug lying on its side at ``pose``; None when it is not lying or not pinchable.

    The mug's axis is its asset z axis at ``x = asset.grasp["x"]`` (base at z = 0, rim at the top of its
    extents); the wall's outer and inner radii come from the mesh vertices within :data:`RIM_BAND` of the
    rim, the handle's left out. The pinch is ``around`` (rad) round the rim from its topmost point, the
    approach dipping ``dip`` (rad) from the mug's axis toward the wall. None when the axis is tilted more
    than 25 degrees from horizontal, the handle points at the pinch (:data:`HANDLE_UP`), or the wall is not
    thinner than ``opening`` less 2 cm.
    """
    mesh = grasp_mesh(asset)
    if mesh is None or "handle_reach" not in (asset.params or {}):
        return None
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    u = rot[:, 2]
    if abs(float(u[2])) > math.sin(math.radians(25)):
        return None
    top = _UP - float(_UP @ u) * u  # the rim's topmost direction, across the axis
    top /= np.linalg.norm(top)
    wall = math.cos(around) * top + math.sin(around) * np.cross(u, top)
    if float(rot[:, 0] @ wall) > HANDLE_UP:
        return None
    verts = mesh[0]
    x_axis = float((asset.grasp or {}).get("x", 0.0))
    height = float(verts[:, 2].max())
    radius = float(asset.extents[1]) / 2
    r = np.hypot(verts[:, 0] - x_axis, verts[:, 1])
    band = (verts[:, 2] > height - RIM_BAND) & (r < radius + 0.002)
    if band.sum() < 6:
        return None
    r_out, r_in = float(r[band].max()), float(r[band].min())
    width = r_out - r_in
    if not 0.0 < width < opening - 0.02:
        return None
    rim = rot @ np.array([x_axis, 0.0, height]) + pos
    point = rim + wall * (r_out - width / 2) - u * DEPTH
    approach = -math.cos(dip) * u - math.sin(dip) * wall
    closing = math.cos(dip) * wall - math.sin(dip) * u
    u_h = np.array([u[0], u[1], 0.0]) / math.hypot(float(u[0]), float(u[1]))
    world = verts @ rot.T + pos
    reach = float(np.max(np.linalg.norm(world - point, axis=1)))
    base = rot @ np.array([x_axis, 0.0, 0.0]) + pos
    return RimGrasp(point, approach, closing, u_h, float(width), reach, base)


def first_rim_grasp(asset: Asset, pose: Pose, opening: float) -> RimGrasp | None:
    """The first of :func:`rim_grasp` round the rim (:data:`AROUNDS`) that exists, or None (no rim pinch)."""
    for around in AROUNDS:
        got = rim_grasp(asset, pose, opening, DIPS[0], around)
        if got is not None:
            return got
    return None


def rim_frame(rg: RimGrasp, fingers: float) -> np.ndarray:
    """The hand's orientation (3x3) pinching ``rg``, its fingers closing along ``fingers`` (+-1) x the closing axis."""
    y = rg.closing * fingers
    return np.column_stack([np.cross(y, rg.approach), y, rg.approach])


def turn_rotation(up: np.ndarray, spin: float, frac: float = 1.0) -> np.ndarray:
    """The world rotation (3x3) turning a held mug's ``up`` axis to vertical and ``spin`` about it, ``frac`` of it."""
    up = np.asarray(up, dtype=float)
    across = np.cross(up, _UP)
    angle = math.atan2(float(np.linalg.norm(across)), float(up[2]))
    tilt = across / (np.linalg.norm(across) + 1e-12) * angle * frac
    return rotvec_matrix(_UP * spin * frac) @ rotvec_matrix(tilt)


def rim_path(rg: RimGrasp, rot0: np.ndarray, backoff: float, hover: float, table: float,
             lift_z: float, spin: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand poses ``(position, 3x3 orientation)`` of the whole stand-up of a mug pinched by ``rg`` at ``rot0``.

    Above the pre-grasp point at ``hover``, the pre-grasp point (``backoff`` behind the grasp), the grasp, the
    lift to ``lift_z``, the turn (:data:`TURN_POSES` poses about the horizontal axis across the mug's) and the
    upright mug's base set on the table at ``table``; ``spin`` (rad) turns the hand about the vertical too.
    """
    pre = rg.point - rg.approach * backoff
    lifted = np.array([*rg.point[:2], lift_z])
    path = [(np.array([*pre[:2], max(hover, rg.point[2] + 0.05)]), rot0), (pre, rot0), (rg.point, rot0),
            (lifted, rot0)]
    for frac in np.linspace(0.0, 1.0, TURN_POSES + 1)[1:]:
        path.append((lifted, turn_rotation(rg.up, spin, frac) @ rot0))
    turn = turn_rotation(rg.up, spin)
    base = lifted + turn @ (rg.base - rg.point)
    path.append((np.array([*lifted[:2], lifted[2] - (base[2] - table)]), path[-1][1]))
    return path


class MugStand:
    """The flip skill's stand-up of a lying mug (a mixin of :class:`scenegen.tasks.flip.FlipSkill`)."""

    def _start_rim(self, backoff: float) -> None:
        """Plan the rim pinch (``backoff`` m behind it the approach starts) and its yaw on the IK twin.

        An unreachable rim fails the skill at once.
        """
        w = self.env.world
        self.yaw, self.spin = self.env.controller.target_yaw, 0.0
        for around in AROUNDS:
            for dip in DIPS:
                rim = rim_grasp(w.assets[self.node], w.pose(self.node), w.robot.max_opening, dip, around)
                if rim is not None and self._plan_rim(rim, backoff):
                    return
        self._fail(f"could not reach the rim of {self.node}")

    def _plan_rim(self, rim: RimGrasp, backoff: float) -> bool:
        """Take ``rim`` (True) when its stand-up, from where the arm is or from home, is reached on the twin."""
        ctrl = self.env.controller
        lift_z = min(float(ctrl.high[2]), max(self.table + rim.reach + 0.03, rim.point[2] + 0.02))
        frames = []
        for fingers in (1.0, -1.0):
            rot0 = rim_frame(rim, fingers)
            swing, yaw = swing_yaw(rot0)
            yaw = ctrl.home_yaw + wrap(yaw - ctrl.home_yaw)
            if abs(yaw - ctrl.home_yaw) <= YAW_RANGE and float(np.linalg.norm(swing)) < self.env.cfg.max_tilt:
                frames.append((rot0, swing, yaw))
        for home in (False, True):
            for rot0, swing, yaw in frames:
                paths = [rim_path(rim, rot0, backoff, self.hover, self.table, lift_z, spin) for spin in SPINS]
                if not reaches(ctrl, paths[0][:4], JUMP, home=home):
                    continue  # the pinch and lift themselves are out of reach: no spin helps
                for spin, path in zip(SPINS, paths, strict=True):
                    if reaches(ctrl, path, JUMP, home=home, loose=2):
                        self.rim, self.point, self.width, self.lift_z = rim, rim.point, rim.width, lift_z
                        self.swing0, self.yaw, self.home_first, self.spin = swing, yaw, home, spin
                        return True
        return False

    def _retry_descent(self) -> bool:
        """A blocked descent to a rim is not retried (the mug's own retries are :class:`MugTurn`'s)."""
        return False if self.kind == "rim" else super()._retry_descent()

    def _rim(self) -> np.ndarray | None:
        """Pinch the rim (shared phases), lift, turn the mug upright, lower it, let go, rise."""
        ex, ctrl, w = self.ex, self.env.controller, self.env.world
        pos, _ = ctrl.ee_pose()
        if self.phase in ("home", "rise", "over", "descend", "advance", "close"):
            return self._common(self.swing0)
        if not self._held() and self.phase in ("lift", "turn", "lower"):
            self._fail(f"{self.node} dropped while standing it up")
            return None
        if self.phase == "lift":
            wp = np.array([*ctrl.target_pos[:2], self.lift_z])
            if pos[2] > self.lift_z - ex.cfg.pos_tol:
                self._set("turn")
                return None
            return self._move(wp, self.yaw, True, ex.cfg.carry_speed, self.swing0)
        if self.phase == "turn":  # closed loop on the mug's own up axis: it may have slipped in the fingers
            up = up_axis(w.pose(self.node))
            angle = math.acos(float(np.clip(up[2], -1.0, 1.0)))
            if self.count == 0:
                self.angle0 = max(angle, 1e-6)
            if (angle < UPRIGHT_TOL and self.count > 3) or self.count > 80:
                self.swing1 = ctrl.target_swing.copy()
                self._set("lower")
                return None
            spin = self.spin * min(1.0, angle / self.angle0)  # what is left of the spin, spread over the turn
            swing, yaw = swing_yaw(turn_rotation(up, spin) @ ctrl.target_rotation)
            yaw = ctrl.target_yaw + wrap(yaw - ctrl.target_yaw)
            wp = np.array([*ctrl.target_pos[:2], self.lift_z])
            return self._move(wp, yaw, True, 0.4, swing)
        if self.phase == "lower":
            return self._lower(self.swing1, ctrl.target_pos[:2])
        return self._finish(self.swing1)
