"""Spatial relation and state predicates: one implementation, shared by layout, QA, env success and the expert.

An object is described by a :class:`Body`: its asset-frame pose (origin at the bottom centre of
its bounding box, see :mod:`scenegen.assets.base`) and extents, and, when known, its centre of
mass, convex hull and (for an open container) its cavity; a :class:`Contact` adds what the
simulator says about the subject (what it touches, how fast it moves). The layout judges its
candidate poses with bodies alone (:func:`check_relation`); the env, QA's semantic check and the
expert judge the simulated world with bodies *and* contacts (:mod:`scenegen.tasks.tracker`
builds both), through the same :func:`judge_relation`.

What each relation means (``s REL o``):

- ``in``: ``o`` stands upright; the centre of mass of ``s`` is below ``o``'s rim and inside the
  footprint of ``o``'s cavity (its bounding-box footprint when no cavity is known; for a receptacle
  with compartments, inside one of them, or inside the one a goal names: :meth:`Body.slot`); ``s``
  does not reach below ``o``'s bottom; with contacts, ``s`` rests on ``o`` (touches it, directly or
  through objects resting in it), touches no table, and is at rest.
- ``on``: the centre of mass of ``s`` is over ``o``'s footprint; the bottom of ``s`` lies in a
  band at ``o``'s top; with contacts, ``s`` touches ``o`` (or what rests on it), touches the
  table only when ``o`` is the table, and is at rest.
- ``left_of`` / ``right_of`` / ``in_front_of`` / ``behind``: the centre of ``s`` is offset from
  ``o``'s along the axis, inside a cone; ``near`` / ``far_from``: footprint gap / centre
  distance bands. None of them holds while ``s`` rests on or in ``o``, and, with contacts, while
  ``s`` moves.

Relations are read in the robot's view frame (see :mod:`scenegen.scene`): ``left_of`` =
larger y, ``right_of`` = smaller y, ``in_front_of`` = smaller x, ``behind`` = larger x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import shapely
from shapely.geometry import MultiPoint, MultiPolygon, Point, Polygon

from scenegen.errors import ConfigError, GraphError
from scenegen.graph import RELATIONS, STATES
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.validate import finite_fields

_UNIT_CORNERS = np.array([[sx * 0.5, sy * 0.5, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (0, 1)])


@dataclass(frozen=True)
class RelationConfig:
    """Tolerances and distance bands of the relation predicates (metres)."""

    support_tol: float = 0.02
    """``on``/``in``: the subject's bottom may float at most this far above the parent's top."""
    on_depth: float = 0.04
    """``on``: the subject's bottom may sink at most this far below the parent's top (concave tops)."""
    in_tol: float = 0.04
    """``in``: the subject's bottom may be at most this far above the receptacle's rim."""
    floor_tol: float = 0.01
    """``in``: the subject's bottom may be at most this far below the receptacle's bottom."""
    contain_shrink: float = 0.0
    """``on``/``in``: the subject's centre must lie this far inside the parent's footprint."""
    dir_min_offset: float = 0.02
    """Directional relations: minimum centre offset along the relation's axis."""
    dir_cone: float = 1.0
    """Directional relations: maximum ratio of the cross offset to the axial offset."""
    near_max: float = 0.12
    """``near``: maximum gap between the two footprints."""
    far_min: float = 0.35
    """``far_from``: minimum distance between the footprint centres."""
    tilt_deg: float = 25.0
    """States: maximum angle between the object's z axis and the ideal direction; ``in``: largest tilt of the
    receptacle."""
    rest_speed: float = 0.1
    """With contacts: a subject moving faster than this (m/s) satisfies no relation (it is sliding or falling)."""

    def __post_init__(self) -> None:
        finite_fields(self, low=0.0, strict=True)
        if self.dir_cone <= 0 or self.far_min <= 0:
            raise ConfigError(f"RelationConfig: dir_cone ({self.dir_cone}) and far_min ({self.far_min}) must be > 0")
        if not 0 < self.tilt_deg < 90:
            raise ConfigError(f"RelationConfig.tilt_deg = {self.tilt_deg} must be in (0, 90)")

    def loosened(self) -> RelationConfig:
        """A more lenient copy: a goal must not hold even by it at the start, so settling cannot make it true.

        Directional relations hold by it for any offset toward the relation's side, so a ``left_of``
        goal's subject must start level with the object or on its right.
        """
        return replace(
            self, support_tol=self.support_tol * 2 + 0.01, in_tol=self.in_tol * 1.5,
            dir_min_offset=0.0, dir_cone=1000.0,
            near_max=self.near_max + 0.02, far_min=max(1e-3, self.far_min - 0.03),
            tilt_deg=min(89.0, self.tilt_deg * 1.5),
        )

    def tightened(self) -> RelationConfig:
        """A stricter copy for sampling layouts, leaving slack for settling to move objects."""
        return replace(
            self, support_tol=self.support_tol * 0.5, in_tol=self.in_tol * 0.75,
            contain_shrink=self.contain_shrink + 0.005,
            dir_min_offset=self.dir_min_offset * 1.5 + 0.01, dir_cone=self.dir_cone * 0.7,
            near_max=self.near_max * 0.6, far_min=self.far_min * 1.1 + 0.02, tilt_deg=self.tilt_deg * 0.5,
        )


def box_corners(pose: Pose, extents: tuple[float, float, float]) -> np.ndarray:
    """The 8 world-frame corners (8x3) of an asset's bounding box at ``pose``."""
    local = _UNIT_CORNERS * np.asarray(extents, dtype=float)
    return local @ quat_matrix(pose.orientation).T + np.asarray(pose.position, dtype=float)


def box_center(pose: Pose, extents: tuple[float, float, float]) -> np.ndarray:
    """World position (3,) of the centre of the asset's bounding box."""
    return quat_matrix(pose.orientation) @ np.array([0.0, 0.0, extents[2] / 2]) + np.asarray(pose.position)


def footprint(pose: Pose, extents: tuple[float, float, float]) -> Polygon:
    """The xy footprint polygon of the oriented bounding box."""
    pts = box_corners(pose, extents)[:, :2]
    hull = MultiPoint([tuple(p) for p in pts]).convex_hull
    return hull if isinstance(hull, Polygon) else hull.buffer(1e-4)


def z_range(pose: Pose, extents: tuple[float, float, float]) -> tuple[float, float]:
    """Lowest and highest world z of the oriented bounding box."""
    z = box_corners(pose, extents)[:, 2]
    return float(z.min()), float(z.max())


@dataclass(frozen=True)
class Body:
    """An object as the relation predicates see it (asset frame: origin at the bottom centre of its box)."""

    pose: Pose
    """Asset-frame pose in the world."""
    extents: tuple[float, float, float]
    """Bounding-box extents (x, y, z) of the asset."""
    com: tuple[float, float, float] | None = None
    """Centre of mass in the asset frame; None: the bounding box's centre."""
    hull: np.ndarray | None = None
    """Convex-hull vertices (N x 3, asset frame); when given, the body's height range and footprint come
    from it (a rolled or tilted object's box reaches far below its real lowest point)."""
    cavity: np.ndarray | None = None
    """Inner footprint (K x 2, asset frame) of an open container's cavity; None: no cavity is known."""
    slots: dict[str, np.ndarray] | None = None
    """Compartments of a receptacle that has them: name -> footprint (K x 2, asset frame); with no ``cavity``,
    the opening is their union."""

    def points(self) -> np.ndarray:
        """World points bounding the body: its posed hull, or its posed box corners."""
        if self.hull is not None and len(self.hull):
            rot = quat_matrix(self.pose.orientation)
            return np.asarray(self.hull, dtype=float) @ rot.T + np.asarray(self.pose.position, dtype=float)
        return box_corners(self.pose, self.extents)

    def z_range(self) -> tuple[float, float]:
        """Lowest and highest world z."""
        z = self.points()[:, 2]
        return float(z.min()), float(z.max())

    def footprint(self) -> Polygon:
        """The xy footprint polygon (of the hull, or of the oriented bounding box)."""
        if self.hull is None:
            return footprint(self.pose, self.extents)
        hull = MultiPoint([tuple(p) for p in self.points()[:, :2]]).convex_hull
        return hull if isinstance(hull, Polygon) else hull.buffer(1e-4)

    def centre(self) -> np.ndarray:
        """World position (3,) of the centre of the asset's bounding box."""
        return box_center(self.pose, self.extents)

    def mass_centre(self) -> np.ndarray:
        """World position (3,) of the centre of mass (the box centre when unknown)."""
        if self.com is None:
            return self.centre()
        return quat_matrix(self.pose.orientation) @ np.asarray(self.com, dtype=float) + np.asarray(self.pose.position)

    def opening(self) -> Polygon | MultiPolygon:
        """World footprint of the cavity (of its compartments, or of the whole body when no cavity is known)."""
        if (self.cavity is None or len(self.cavity) < 3) and self.slots:
            return MultiPolygon([self._posed(q) for _, q in sorted(self.slots.items())])
        if self.cavity is None or len(self.cavity) < 3:
            return self.footprint()
        return self._posed(self.cavity)

    def _posed(self, poly: np.ndarray) -> Polygon:
        rot = quat_matrix(self.pose.orientation)
        pts = np.column_stack((np.asarray(poly, dtype=float), np.zeros(len(poly)))) @ rot.T
        return shapely.polygons(pts[:, :2] + np.asarray(self.pose.position[:2], dtype=float))  # as Polygon(...)

    def slot(self, name: str | None) -> Body:
        """The body whose cavity is compartment ``name`` alone (``self`` for None), for an ``in`` goal naming it.

        Raises:
            GraphError: the body has no compartment ``name``.

        """
        if name is None:
            return self
        if not self.slots or name not in self.slots:
            have = ", ".join(sorted(self.slots or ())) or "none"
            raise GraphError(f"the receptacle has no compartment {name!r} (it has: {have}); name one it has")
        return replace(self, cavity=np.asarray(self.slots[name], dtype=float), slots=None)


@dataclass(frozen=True)
class Contact:
    """What the simulator says about a relation's subject."""

    parent: bool
    """The subject touches the relation's object, directly or through objects resting on or in it."""
    table: bool
    """The subject touches the table (the support node)."""
    speed: float = 0.0
    """Linear speed of the subject (m/s)."""
    object_is_table: bool = False
    """The relation's object is the table itself."""


def judge_relation(kind: str, subj: Body, obj: Body, cfg: RelationConfig | None = None,
                   contact: Contact | None = None) -> tuple[bool, str]:
    """Evaluate ``subject kind object`` and say why when it does not hold (see the module for the meanings).

    Args:
        kind: one of :data:`scenegen.graph.RELATIONS`.
        subj: the subject.
        obj: the object (the parent for ``on``/``in``).
        cfg: tolerances and bands (defaults to :class:`RelationConfig`).
        contact: the subject's contacts and speed in a simulated world; None judges the geometry alone.

    Returns:
        ``(holds, reason)``; ``reason`` is empty when the relation holds.

    Raises:
        GraphError: ``kind`` is not a known relation.

    """
    cfg = cfg or RelationConfig()
    if kind not in RELATIONS:
        raise GraphError(f"unknown relation {kind!r}; use one of {', '.join(RELATIONS)}")
    if contact is not None and contact.speed > cfg.rest_speed:
        return False, f"the subject is moving ({contact.speed:.2f} m/s > {cfg.rest_speed:.2f})"
    if kind == "in":
        return _inside(subj, obj, cfg, contact)
    if kind == "on":
        return _on_top(subj, obj, cfg, contact)
    if _inside(subj, obj, cfg)[0] or _on_top(subj, obj, cfg)[0]:
        return False, "the subject rests on or in the object, not beside it"
    sc, oc = subj.centre(), obj.centre()
    if kind in ("left_of", "right_of", "in_front_of", "behind"):
        d = sc[:2] - oc[:2]
        axis, sign = {"left_of": (1, 1), "right_of": (1, -1), "in_front_of": (0, -1), "behind": (0, 1)}[kind]
        along, across = sign * d[axis], abs(d[1 - axis])
        if along < cfg.dir_min_offset:
            return False, f"offset {along:.3f} m along the relation's axis is below {cfg.dir_min_offset:.3f}"
        if across > cfg.dir_cone * along:
            return False, f"cross offset {across:.3f} exceeds {cfg.dir_cone:.2f} x axial offset {along:.3f}"
        return True, ""
    if kind == "near":
        gap = subj.footprint().distance(obj.footprint())
        return (True, "") if gap <= cfg.near_max else (False, f"gap {gap:.3f} m exceeds {cfg.near_max:.3f}")
    dist = float(np.linalg.norm(sc[:2] - oc[:2]))
    return (True, "") if dist >= cfg.far_min else (False, f"distance {dist:.3f} m is below {cfg.far_min:.3f}")


def _inside(subj: Body, obj: Body, cfg: RelationConfig, contact: Contact | None = None) -> tuple[bool, str]:
    if float(up_axis(obj.pose)[2]) < math.cos(math.radians(cfg.tilt_deg)):
        return False, "the receptacle is not upright"
    o_bot, rim = obj.z_range()
    s_bot, _ = subj.z_range()
    com = subj.mass_centre()
    if com[2] > rim:
        return False, f"centre of mass z {com[2]:.3f} is above the rim ({rim:.3f})"
    region = obj.opening()
    if cfg.contain_shrink > 0:
        region = region.buffer(-cfg.contain_shrink)
    if region.is_empty or not region.contains(Point(float(com[0]), float(com[1]))):
        return False, f"centre of mass ({com[0]:.3f}, {com[1]:.3f}) is outside the cavity's footprint"
    if s_bot < o_bot - cfg.floor_tol:
        return False, f"bottom z {s_bot:.3f} is below the receptacle's bottom ({o_bot:.3f})"
    return _resting(contact, "receptacle")


def _on_top(subj: Body, obj: Body, cfg: RelationConfig, contact: Contact | None = None) -> tuple[bool, str]:
    o_bot, o_top = obj.z_range()
    s_bot, _ = subj.z_range()
    com = subj.mass_centre()
    region = obj.footprint()
    if cfg.contain_shrink > 0:
        region = region.buffer(-cfg.contain_shrink)
    if region.is_empty or not region.contains(Point(float(com[0]), float(com[1]))):
        return False, f"centre of mass ({com[0]:.3f}, {com[1]:.3f}) is outside the parent's footprint"
    low = o_top - min(cfg.on_depth, 0.9 * (o_top - o_bot))
    high = o_top + cfg.support_tol
    if not low <= s_bot <= high:
        return False, f"bottom z {s_bot:.3f} is outside [{low:.3f}, {high:.3f}]"
    return _resting(contact, "parent")


def _resting(contact: Contact | None, what: str) -> tuple[bool, str]:
    if contact is None:
        return True, ""
    if not contact.parent:
        return False, f"the subject does not touch the {what}"
    if contact.table and not contact.object_is_table:
        return False, f"the subject touches the table, not only the {what}"
    return True, ""


def check_relation(kind: str, subj_pose: Pose, subj_extents: tuple[float, float, float], obj_pose: Pose,
                   obj_extents: tuple[float, float, float],
                   cfg: RelationConfig | None = None) -> tuple[bool, str]:
    """:func:`judge_relation` on bounding boxes alone (the layout's candidate poses): no hull, cavity or contacts.

    Args:
        kind: one of :data:`scenegen.graph.RELATIONS`.
        subj_pose: asset-frame pose of the subject.
        subj_extents: bounding-box extents of the subject's asset.
        obj_pose: asset-frame pose of the object (the parent for ``on``/``in``).
        obj_extents: bounding-box extents of the object's asset.
        cfg: tolerances and bands (defaults to :class:`RelationConfig`).

    Returns:
        ``(holds, reason)``; ``reason`` is empty when the relation holds.

    Raises:
        GraphError: ``kind`` is not a known relation.

    """
    return judge_relation(kind, Body(subj_pose, tuple(subj_extents)), Body(obj_pose, tuple(obj_extents)), cfg)


def relation_holds(kind: str, subj_pose: Pose, subj_extents: tuple[float, float, float], obj_pose: Pose,
                   obj_extents: tuple[float, float, float], cfg: RelationConfig | None = None) -> bool:
    """True when ``subject kind object`` holds (see :func:`check_relation`)."""
    return check_relation(kind, subj_pose, subj_extents, obj_pose, obj_extents, cfg)[0]


def up_axis(pose: Pose) -> np.ndarray:
    """World direction (3,) of the object's own +z axis."""
    return quat_matrix(pose.orientation)[:, 2]


def state_holds(state: str, pose: Pose, cfg: RelationConfig | None = None) -> bool:
    """True when the object at ``pose`` is ``upright``, ``inverted`` or ``lying`` (within ``cfg.tilt_deg``).

    Raises:
        GraphError: ``state`` is not a known state.

    """
    cfg = cfg or RelationConfig()
    uz = float(np.clip(up_axis(pose)[2], -1.0, 1.0))
    tilt = math.radians(cfg.tilt_deg)
    if state == "upright":
        return uz >= math.cos(tilt)
    if state == "inverted":
        return uz <= -math.cos(tilt)
    if state == "lying":
        return abs(uz) <= math.sin(tilt)
    raise GraphError(f"unknown state {state!r}; use one of {', '.join(STATES)}")


def state_of(pose: Pose, cfg: RelationConfig | None = None) -> str | None:
    """The state the object is in, or None when it is tilted in between."""
    for s in STATES:
        if state_holds(s, pose, cfg):
            return s
    return None
