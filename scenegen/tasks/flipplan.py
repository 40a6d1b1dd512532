"""Planning an inverted mug's flip on the arm's IK twin (:mod:`scenegen.tasks.flip`): which turn first, which yaw.

The flip pinches the handle with the hand horizontal, lifts, swings the hand half a turn about the
closing axis and lowers the mug onto its spot. Whether the Panda can do all of that depends on the
mug's distance from the base and on where the handle points: measured on the twin, a mug 0.65 m out
is reached with the approach 60-90 degrees from the line out from the base, not at 100 degrees and
more (the wrist would have to be further out than the arm reaches), while a mug 0.4 m out is reached
from 60 to 140 degrees. A fixed turn target (:data:`scenegen.tasks.mugturn.TURN_TO`) therefore left
far mugs out of reach, and the flip then waited in its approach until it timed out.

:func:`plan_flip` dry-runs the whole flip (:func:`flip_path`: the approach, the lift, the swing and
the lowering, each pose warm-started from the last, a joint leaping more than :data:`JUMP` between
two poses counting as a failure) with :func:`scenegen.tasks.swingcheck.reaches`, and picks:

- no turn, when the approach already points sideways (:data:`~scenegen.tasks.mugturn.SIDEWAYS`) and
  the flip from there is reached;
- else the turn (among :data:`TARGETS`, both sides) whose flip is reached, preferring a target whose
  neighbours are reached too (the mug may turn a little less or more than the hand);
- else what :func:`~scenegen.tasks.mugturn.turn_plan` picks (the flip as before).

Each choice keeps the arm's links (lead-in included) :data:`~scenegen.tasks.armclear.ARM_MARGIN` clear of the
other objects too: when none does, the fixed turn is made, as when nothing is reached. On the retry of a flip that
could not reach above the handle, the turn may first carry the mug to a spot whose flip is reached
(:mod:`scenegen.tasks.mugshift`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from scenegen.rotations import quat_matrix
from scenegen.sim.control import compose_orientation, wrap
from scenegen.tasks.footprint import box_shape, footprint, inside
from scenegen.tasks.mugshift import carry_rise, shift_plan
from scenegen.tasks.mugturn import SIDEWAYS, HandleGrasp, turn_plan
from scenegen.tasks.plan import YAW_RANGE
from scenegen.tasks.slices import slice_boxes, surface_points
from scenegen.tasks.swingcheck import approach_path, reaches

_DOWN = np.array([0.0, 0.0, -1.0])
TARGETS = tuple(math.radians(a) for a in (60, 70, 80, 90, 100, 110, 120, 130))
"""Angles (rad) from the line out from the base that a turn may bring a handle grasp's approach to."""
JUMP = 1.0
"""Largest change (rad) of any arm joint between two poses of a dry-run flip (more: an IK branch leap)."""
SWING_POSES = 8
"""Poses of the dry-run swing, from the hand horizontal over straight down to horizontal the other way."""
SWING_CLEARANCE = 0.012
"""Least height (m) of a swinging mug's lowest point above the table (the hand rises when it would dip lower)."""
MIN_TURN = math.radians(15)
"""Smallest turn (rad) worth making (a smaller one leaves a flip out of reach about as it was)."""
SWEEP_MARGIN = 0.01
"""Clearance (m) a swinging mug keeps from the other objects' boxes."""
MAX_VERTS = 400
"""Mesh vertices kept (evenly strided) to find a swinging mug's lowest point."""
BOX_GROW = 0.005
"""How far (m) an object's box (:func:`object_box`) reaches past its visual mesh (its collision proxy may, a little)."""


@dataclass(frozen=True)
class FlipPlan:
    """How to flip one inverted mug: a turn first (or none) and the flip's gripper yaw."""

    turn: tuple[float, float] | None
    """``(top-down gripper yaw, turn)`` of :func:`~scenegen.tasks.mugturn.turn_plan`, or None: no turn."""
    yaw: float | None
    """Gripper yaw of the flip (None: chosen after the turn)."""
    reached: bool
    """The dry run reached the whole flip."""
    home: bool = False
    """The flip is reached from the arm's home pose, not from where the arm is: go home first."""
    shift: np.ndarray | None = None
    """How far (world xy, m) the turn carries the mug first (:mod:`scenegen.tasks.mugshift`); None: nowhere."""
    rise: float = 0.0
    """How much higher (m) the carried mug is lifted, over what lies on the way (:mod:`scenegen.tasks.mugshift`)."""


def horizontal_swing(approach: np.ndarray) -> np.ndarray:
    """The controller's swing (rotation vector) that points the approach axis along a horizontal ``approach``."""
    a = np.cross(_DOWN, np.asarray(approach, dtype=float))
    return a / np.linalg.norm(a) * (math.pi / 2)


def closing_yaw(axis: np.ndarray, near: float, home: float) -> float:
    """Gripper yaw (before any swing) closing the fingers along the horizontal ``axis``, inside the yaw band."""
    yaw = math.atan2(axis[0], -axis[1])
    options = [home + wrap(y - home) for y in (yaw, yaw + math.pi)]
    ok = [y for y in options if abs(y - home) <= YAW_RANGE] or options
    return float(min(ok, key=lambda y: abs(wrap(y - near))))


def pinch_yaws(hg: HandleGrasp, near: float, home: float) -> list[float]:
    """The gripper yaws pinching ``hg`` inside the yaw band, the one counter-clockwise of home first."""
    yaw = closing_yaw(hg.axis, near, home)
    other = yaw - math.copysign(math.pi, yaw - home)  # the same pinch, fingers swapped
    yaws = [yaw, other] if abs(other - home) <= YAW_RANGE else [yaw]
    return sorted(yaws, key=lambda y: wrap(y - home) <= 0.0)


def _rz(d: float) -> np.ndarray:
    c, s = math.cos(d), math.sin(d)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotated(hg: HandleGrasp, verts: np.ndarray, turn: float) -> tuple[HandleGrasp, np.ndarray]:
    """The handle grasp and mug vertices (world) after turning the mug by ``turn`` (rad) about its axis."""
    rz = _rz(turn)
    axis = np.array([*(hg.point[:2] + hg.approach[:2] * hg.lever), 0.0])
    moved = replace(hg, point=rz @ (hg.point - axis) + axis, approach=rz @ hg.approach, axis=rz @ hg.axis)
    return moved, (np.asarray(verts, dtype=float) - axis) @ rz.T + axis


def mug_vertices(world: Any, node: str) -> np.ndarray:
    """World positions of (at most :data:`MAX_VERTS` of) the mesh vertices of ``node`` in its current pose."""
    from scenegen.tasks.grasps import grasp_mesh

    verts = grasp_mesh(world.assets[node])[0]
    verts = verts[:: max(1, len(verts) // MAX_VERTS)]
    pose = world.pose(node)
    return verts @ quat_matrix(pose.orientation).T + np.asarray(pose.position, dtype=float)


def flip_path(hg: HandleGrasp, yaw: float, verts: np.ndarray, backoff: float, hover: float, table: float,
              lift_z: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand poses ``(position, 3x3 orientation)`` of the whole flip of a mug pinched by ``hg`` at ``yaw``.

    The approach (:func:`~scenegen.tasks.swingcheck.approach_path`), the lift to ``lift_z``, the swing (the
    grasp point moving across the mug's axis and down in its second half, never letting the mug's lowest
    vertex of ``verts`` dip within :data:`SWING_CLEARANCE` of the table) and the mug lowered upright onto
    its spot, as :class:`~scenegen.tasks.flip.FlipSkill` moves the hand.
    """
    swing0 = horizontal_swing(hg.approach)
    path = approach_path(hg, yaw, swing0, backoff, hover)
    rot0 = path[-1][1]
    local = (np.asarray(verts, dtype=float) - hg.point) @ rot0  # the mug in the hand's frame
    a = swing0 / np.linalg.norm(swing0)
    start = np.asarray(hg.point[:2], dtype=float)
    axis_xy = start + hg.approach[:2] * hg.lever
    end = 2.0 * axis_xy - start
    low = table + hg.height + 0.01
    path.append((np.array([*start, lift_z]), rot0))
    for theta in np.linspace(math.pi / 2, -math.pi / 2, SWING_POSES + 1)[1:]:
        rot = compose_orientation(a * theta, yaw)
        frac = (math.pi / 2 - theta) / math.pi
        z = lift_z if theta > 0 else lift_z + (low - lift_z) * min(1.0, -theta / (math.pi / 2))
        lowest = float((local @ rot.T)[:, 2].min())
        z = max(z, table + SWING_CLEARANCE - lowest)
        path.append((np.array([*(start + frac * (end - start)), z]), rot))
    path.append((np.array([*end, table + hg.height]), path[-1][1]))
    return path


def sweep_hits(path: list[tuple[np.ndarray, np.ndarray]], verts: np.ndarray,
               boxes: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """True when the mug (``verts``, world, as pinched at ``path[2]``), carried along the rest of ``path``, meets a box.

    ``boxes`` are the other objects' world boxes ``(lo, hi)`` or prisms (:class:`~scenegen.tasks.footprint.Shape`),
    each grown by :data:`SWEEP_MARGIN`.
    """
    if not boxes:
        return False
    pos0, rot0 = path[2]
    local = (np.asarray(verts, dtype=float) - pos0) @ rot0
    for pos, rot in path[3:]:
        pts = local @ rot.T + pos
        for box in boxes:
            if np.any(inside(box, pts, SWEEP_MARGIN)):
                return True
    return False


def object_box(world: Any, node: str) -> tuple[np.ndarray, np.ndarray]:
    """A tight world AABB ``(lo, hi)`` of ``node``: its mesh vertices' in its pose, grown by :data:`BOX_GROW`.

    Kept inside the physics engine's AABB (:meth:`~scenegen.sim.world.World.aabb`), which alone is far too loose
    for a rotated body: measured on tier-3 ``flip_mugs`` scenes (seed 0), an inverted mug's came out 22 x 17 x
    19 cm (the mug is 11 x 9 x 10) and a peach's 17 x 19 x 20 cm, so that every flip beside them counted as
    sweeping into them and the flip was given up ("could not reach above the handle").
    """
    lo, hi = (np.asarray(v, dtype=float) for v in world.aabb(node))
    pts = _posed_points(world, node)
    if pts is None:
        return lo, hi
    return np.maximum(lo, pts.min(axis=0) - BOX_GROW), np.minimum(hi, pts.max(axis=0) + BOX_GROW)


def _posed_points(world: Any, node: str, surface: bool = False) -> np.ndarray | None:
    """``node``'s mesh vertices (``surface``: and points on its triangles) in the world; None without a mesh."""
    from scenegen.tasks.grasps import grasp_mesh

    mesh = grasp_mesh(world.assets[node]) if node in world.assets else None
    if mesh is None or not len(mesh[0]):
        return None
    pose = world.pose(node)
    pts = surface_points(*mesh) if surface else np.asarray(mesh[0], dtype=float)
    return pts @ quat_matrix(pose.orientation).T + np.asarray(pose.position, dtype=float)


def object_boxes(world: Any, node: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """World shapes of ``node`` (:class:`~scenegen.tasks.footprint.Shape`, each also its box ``(lo, hi)``): one or more.

    The tightest of: its upright prism (:func:`scenegen.tasks.footprint.footprint`, a rectangle turned as the object
    is, or a circle), or, a long object lying across the table's axes, a row of slabs' boxes
    (:func:`scenegen.tasks.slices.slice_boxes`); each grown by :data:`BOX_GROW` and kept inside the engine's box.
    """
    pts = _posed_points(world, node, surface=True)
    if pts is None:
        return [box_shape(*object_box(world, node))]
    within = tuple(np.asarray(v, dtype=float) for v in world.aabb(node))
    prism = footprint(pts, BOX_GROW, within)
    slabs = slice_boxes(pts, BOX_GROW, within)
    area = sum(float(np.prod(np.maximum(hi - lo, 0.0)[:2])) for lo, hi in slabs)
    return [prism] if len(slabs) < 2 or prism.area() <= area else [box_shape(lo, hi) for lo, hi in slabs]


def other_boxes(world: Any, node: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """World shapes (boxes ``(lo, hi)`` too) of every object but ``node`` (:func:`object_boxes`: one or more each)."""
    return [b for n in world.objects() if n != node for b in object_boxes(world, n)]


def _lift_z(ctrl: Any, hg: HandleGrasp, table: float) -> float:
    return min(float(ctrl.high[2]), table + hg.reach + 0.03)


def reach_yaw(ctrl: Any, hg: HandleGrasp, verts: np.ndarray, near: float, backoff: float, hover: float,
              table: float, now: bool = True, boxes: list | None = None,
              arm: bool = False) -> tuple[float | None, bool]:
    """The first of :func:`pinch_yaws` whose whole flip the arm reaches on its twin, and whether from home.

    From where the arm is (when ``now``), else (or when no yaw is reached from there) from the arm's home
    pose: ``(yaw, False)``, ``(yaw, True)`` or ``(None, False)``. The swing's last pose and the lowering are
    checked loosely (the mug is let go wherever the lowering stops). A flip whose swinging mug meets one of
    ``boxes`` (:func:`sweep_hits`) is not reached; with ``arm``, nor one that brings a link of the arm near one
    of them (:mod:`scenegen.tasks.armclear`).
    """
    yaws = pinch_yaws(hg, near, ctrl.home_yaw)
    lift = _lift_z(ctrl, hg, table)
    paths = [(y, flip_path(hg, y, verts, backoff, hover, table, lift)) for y in yaws]
    if paths and sweep_hits(paths[0][1], verts, boxes or []):  # both yaws swing the mug alike
        return None, False
    for home in ((False, True) if now else (True,)):
        for yaw, path in paths:
            if reaches(ctrl, path, JUMP, home=home, loose=2, obstacles=boxes if arm else None):
                return yaw, home
    return None, False


def _off(hg: HandleGrasp, base_xy: np.ndarray) -> float:
    """Angle (rad) from the line out from the base to the grasp's approach, in (-pi, pi]."""
    rel = np.asarray(hg.point[:2], dtype=float) - base_xy
    return wrap(math.atan2(hg.approach[1], hg.approach[0]) - math.atan2(rel[1], rel[0]))


def plan_flip(ctrl: Any, hg: HandleGrasp, verts: np.ndarray, base_xy: np.ndarray, backoff: float, hover: float,
              table: float, turn: bool = True, boxes: list | None = None, carry: tuple | None = None) -> FlipPlan:
    """How to flip the mug of ``hg`` (see the module): no turn, a dry-run-checked turn, or the fixed turn.

    Args:
        ctrl: the arm's controller (its IK twin and yaw band).
        hg: the mug's handle grasp.
        verts: the mug's mesh vertices in the world (:func:`mug_vertices`).
        base_xy: the arm's base on the table.
        backoff: how far behind the grasp the horizontal approach starts (m).
        hover: height (m) the empty hand moves at.
        table: the table's height (m).
        turn: whether a turn may come first.
        boxes: the other objects' world shapes, which the swinging mug must miss (:func:`other_boxes`).
        carry: the table's world box ``(lo, hi)`` when the turn may carry the mug elsewhere first, else None (the
            flip gives it on the retry of a flip that could not reach the handle: the dry run is stricter than the
            world, and a first attempt often works).

    Every choice keeps the arm's links clear of ``boxes`` too (:mod:`scenegen.tasks.armclear`): a flip whose arm
    would come near another object counts as not reached (letting it come near, as before, knocked neighbours over).
    When none is reached, a turn may come first and ``carry``, the turn may carry the mug to a spot whose flip is
    (:mod:`scenegen.tasks.mugshift`).
    """
    got = _plan(ctrl, hg, verts, base_xy, backoff, hover, table, turn, boxes, bool(boxes))
    if got.reached or not turn or carry is None:
        return got
    boxes = boxes or []
    moved = shift_plan(_plan, ctrl, hg, verts, base_xy, backoff, hover, table, boxes, carry)
    if moved is None:
        return got
    top = moved[0].turn or (closing_yaw(hg.axis, ctrl.target_yaw, ctrl.home_yaw), 0.0)  # a carry alone
    verts = np.asarray(verts, dtype=float)
    rise = carry_rise(verts.min(axis=0), verts.max(axis=0), moved[1], boxes, table)
    return replace(moved[0], turn=top, shift=moved[1], rise=rise, home=False)


def _plan(ctrl: Any, hg: HandleGrasp, verts: np.ndarray, base_xy: np.ndarray, backoff: float, hover: float,
          table: float, turn: bool, boxes: list | None, arm: bool) -> FlipPlan:
    base_xy = np.asarray(base_xy, dtype=float)
    sideways = SIDEWAYS[0] <= abs(_off(hg, base_xy)) <= SIDEWAYS[1]
    if sideways:
        yaw, home = reach_yaw(ctrl, hg, verts, ctrl.target_yaw, backoff, hover, table, boxes=boxes, arm=arm)
        if yaw is not None or not turn:
            return FlipPlan(None, yaw, yaw is not None, home)
    if turn:
        best, best_key = None, None
        for side in (1.0, -1.0):
            got = []
            for to in TARGETS:
                plan = turn_plan(hg, base_xy, ctrl.home_yaw, side=side, to=to)
                yaw = None
                if plan is not None:
                    moved, moved_verts = rotated(hg, verts, plan[1])
                    yaw = reach_yaw(ctrl, moved, moved_verts, plan[0] + plan[1], backoff, hover, table,
                                    now=False, boxes=boxes, arm=arm)[0]
                got.append((plan, yaw if plan is not None and abs(plan[1]) >= MIN_TURN else None))
            for i, (plan, yaw) in enumerate(got):
                if yaw is None:
                    continue
                near = sum(1 for j in (i - 1, i + 1) if 0 <= j < len(got) and got[j][1] is not None)
                key = (-near, side < 0, abs(plan[1]))
                if best_key is None or key < best_key:
                    best, best_key = FlipPlan(plan, yaw, True), key
        if best is not None:
            return best
    if sideways or not turn:
        return FlipPlan(None, None, False)
    return FlipPlan(turn_plan(hg, base_xy, ctrl.home_yaw), None, False)
