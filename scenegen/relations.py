"""Spatial relation and state predicates over poses and bounding-box extents.

Pure functions shared by the layout solver (on initial poses), QA's semantic check and
the RL success predicates (on settled poses). An object is described by its asset-frame
pose (origin at the bottom centre of its bounding box, see :mod:`scenegen.assets.base`)
and its extents; its footprint is the xy projection of its oriented bounding box.

Relations are read in the robot's view frame (see :mod:`scenegen.scene`): ``left_of`` =
larger y, ``right_of`` = smaller y, ``in_front_of`` = smaller x, ``behind`` = larger x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from shapely.geometry import MultiPoint, Point, Polygon

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
    """States: maximum angle between the object's z axis and the ideal direction."""

    def __post_init__(self) -> None:
        finite_fields(self, low=0.0, strict=True)
        if self.dir_cone <= 0 or self.far_min <= 0:
            raise ConfigError(f"RelationConfig: dir_cone ({self.dir_cone}) and far_min ({self.far_min}) must be > 0")
        if not 0 < self.tilt_deg < 90:
            raise ConfigError(f"RelationConfig.tilt_deg = {self.tilt_deg} must be in (0, 90)")

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


def check_relation(kind: str, subj_pose: Pose, subj_extents: tuple[float, float, float], obj_pose: Pose,
                   obj_extents: tuple[float, float, float],
                   cfg: RelationConfig | None = None) -> tuple[bool, str]:
    """Evaluate ``subject kind object`` and say why when it does not hold.

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
    cfg = cfg or RelationConfig()
    sc, oc = box_center(subj_pose, subj_extents), box_center(obj_pose, obj_extents)
    if kind in ("on", "in"):
        s_bot, _ = z_range(subj_pose, subj_extents)
        o_bot, o_top = z_range(obj_pose, obj_extents)
        region = footprint(obj_pose, obj_extents)
        if cfg.contain_shrink > 0:
            region = region.buffer(-cfg.contain_shrink)
        if region.is_empty or not region.contains(Point(float(sc[0]), float(sc[1]))):
            return False, f"centre ({sc[0]:.3f}, {sc[1]:.3f}) is outside the parent's footprint"
        if kind == "on":
            low = o_top - min(cfg.on_depth, 0.9 * (o_top - o_bot))
            high = o_top + cfg.support_tol
        else:
            low, high = o_bot - cfg.floor_tol, o_top + cfg.in_tol
        if not low <= s_bot <= high:
            return False, f"bottom z {s_bot:.3f} is outside [{low:.3f}, {high:.3f}]"
        return True, ""
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
        gap = footprint(subj_pose, subj_extents).distance(footprint(obj_pose, obj_extents))
        return (True, "") if gap <= cfg.near_max else (False, f"gap {gap:.3f} m exceeds {cfg.near_max:.3f}")
    if kind == "far_from":
        dist = float(np.linalg.norm(sc[:2] - oc[:2]))
        return (True, "") if dist >= cfg.far_min else (False, f"distance {dist:.3f} m is below {cfg.far_min:.3f}")
    raise GraphError(f"unknown relation {kind!r}; use one of {', '.join(RELATIONS)}")


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
