"""Cheap checks of a laid-out scene before any world is built: reach and the front camera's view.

:func:`precheck` needs only the layout's poses and the assets: no physics, no rendering. It
rejects scenes that the expert or QA would reject later, after settling (the costly part):

- **reach**: each target's grasp point (its asset's grasp hint at its pose, or its centre of
  mass, where the expert pinches a long object) lies within the robot's reach band as widened by
  the expert (:func:`out_of_reach`, the expert's own test), which gives up on anything outside it;
- **view**: each target and receptacle projects into the camera's image, covers at least
  ``min_fraction`` of it (its convex hull's projection: an upper bound of what the camera can
  see of it), and no more than ``max_occlusion`` of it is hidden behind the convex hulls of the
  objects between it and the camera (an over-estimate, so the bound is looser than QA's).

The pipeline runs it twice per attempt: on a layout of the task objects alone (:func:`task_graph`,
before the distractors' assets are even built) and on the full layout (before settling). The
layout places the task objects before the distractors, from the same seed, so unless it has to
restart the first layout already shows where the task objects will stand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenegen.errors import ConfigError
from scenegen.rotations import quat_matrix
from scenegen.scene import Camera, Pose, Scene

GRASP_REACH = (0.8, 1.1)
"""The expert attempts a grasp point between ``0.8 x reach_min`` and ``1.1 x reach_max`` (xy, from the base)."""


def out_of_reach(spec: Any, base: Any, point: Any) -> float | None:
    """The xy distance (m) of a grasp ``point`` from an arm's ``base`` when the expert would not attempt it, else None.

    The one reach test of a grasp: the expert gives up on a goal whose planned grasp fails it, and
    the layout precheck and QA's reachability check reject scenes with it. ``spec``: the arm's
    :class:`~scenegen.sim.robots.RobotSpec` (its ``reach_min`` and ``reach_max``, widened by
    :data:`GRASP_REACH`).
    """
    d = float(np.hypot(float(point[0]) - float(base[0]), float(point[1]) - float(base[1])))
    return None if GRASP_REACH[0] * spec.reach_min <= d <= GRASP_REACH[1] * spec.reach_max else d


@dataclass(frozen=True)
class PrecheckConfig:
    """Thresholds of the checks made on the layout, before a world is built."""

    reach: bool = True
    """Reject a scene when a target's grasp point lies outside the expert's reach band."""
    view: bool = True
    """Reject a scene when a target or receptacle is out of the camera's view, too small or hidden."""
    camera: str = "front"
    """The camera whose view is checked."""
    min_fraction: float = 0.0003
    """Least fraction of the image a task object's projected hull must cover (QA's visibility minimum)."""
    max_occlusion: float = 0.85
    """Largest fraction of a task object's sampled surface points hidden behind other objects' hulls
    (hulls hide more than the objects do, so this is looser than QA's 60 %)."""
    samples: int = 48
    """Surface points sampled per object for the occlusion estimate."""

    def __post_init__(self) -> None:
        if not (0 <= self.min_fraction < 1 and 0 < self.max_occlusion <= 1 and 8 <= self.samples <= 1024):
            raise ConfigError(f"PrecheckConfig: min_fraction ({self.min_fraction}) must be in [0, 1), max_occlusion "
                              f"({self.max_occlusion}) in (0, 1] and samples ({self.samples}) in 8..1024")


def task_objects(scene: Scene) -> tuple[list[str], list[str]]:
    """Targets (goal subjects and ``target`` roles) and receptacles (goal objects and ``receptacle`` roles)."""
    graph = scene.graph
    support = graph.support_id
    targets = {o.id for o in graph.objects("target")}
    receptacles = {o.id for o in graph.objects("receptacle")}
    for goal in graph.goals:
        if goal.subject in graph:
            targets.add(goal.subject)
        if goal.object is not None and goal.object in graph and goal.object != support:
            receptacles.add(goal.object)
    targets.discard(support)  # type: ignore[arg-type]
    return sorted(targets), sorted(receptacles - targets)


def _hull_points(asset: Any, pose: Pose) -> np.ndarray:
    from scenegen.geometry import asset_geometry

    rot = quat_matrix(pose.orientation)
    return asset_geometry(asset).hull @ rot.T + np.asarray(pose.position, dtype=float)


def _reach(scene: Scene, assets: dict[str, Any], targets: list[str]) -> str:
    from scenegen.sim.robots import get_robot

    spec = get_robot(scene.robot)
    lo, hi = GRASP_REACH[0] * spec.reach_min, GRASP_REACH[1] * spec.reach_max
    base = np.asarray(scene.robot_base.position[:2], dtype=float)
    for t in targets:
        pose, hint = scene.poses[t], dict(assets[t].grasp or {})
        rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
        # the expert grasps at the hint, or a long object near its centre of mass: both must miss
        points = [np.array([float(hint.get("x", 0.0)), float(hint.get("y", 0.0)), 0.0]),
                  np.asarray(assets[t].com, dtype=float)]
        if spec.arms:  # several arms: any arm may take it
            from scenegen.sim.robots import reaching_arms

            if not any(reaching_arms(spec, scene.robot_base, (pos + rot @ q)[:2], GRASP_REACH) for q in points):
                return f"out of reach: {t}'s grasp point is out of every arm's reach"
            continue
        dist = [out_of_reach(spec, base, pos + rot @ q) for q in points]
        if all(d is not None for d in dist):
            return f"out of reach: {t}'s grasp point is {dist[0]:.2f} m from the robot base ({lo:.2f}..{hi:.2f})"
    return ""


class _View:
    """A pinhole camera's projection and the segments from its eye."""

    def __init__(self, cam: Camera) -> None:
        self.eye = np.asarray(cam.eye, dtype=float)
        fwd = np.asarray(cam.target, dtype=float) - self.eye
        self.fwd = fwd / np.linalg.norm(fwd)
        right = np.cross(self.fwd, np.asarray(cam.up, dtype=float))
        self.right = right / np.linalg.norm(right)
        self.up = np.cross(self.right, self.fwd)
        self.t = math.tan(math.radians(cam.fov_deg) / 2)
        self.aspect = cam.width / cam.height

    def project(self, pts: np.ndarray) -> np.ndarray:
        """Normalised image coordinates (``[-1, 1]`` inside the frame); points behind the eye get inf."""
        rel = pts - self.eye
        depth = rel @ self.fwd
        with np.errstate(divide="ignore", invalid="ignore"):
            u = (rel @ self.right) / (depth * self.t * self.aspect)
            v = (rel @ self.up) / (depth * self.t)
        bad = depth <= 1e-6
        return np.column_stack([np.where(bad, np.inf, u), np.where(bad, np.inf, v)])


_FACETS: dict[str, np.ndarray | None] = {}


def _facets(asset: Any, pose: Pose) -> np.ndarray | None:
    """Facet equations ``n . x + c <= 0`` of an asset's convex hull at ``pose`` (None when flat).

    The hull is computed once per asset (in its own frame) and its planes moved with the pose.
    """
    from scipy.spatial import ConvexHull, QhullError

    from scenegen.geometry import asset_geometry

    if asset.id not in _FACETS:
        if len(_FACETS) > 4096:
            _FACETS.clear()
        try:
            _FACETS[asset.id] = ConvexHull(asset_geometry(asset).hull).equations
        except (QhullError, ValueError):
            _FACETS[asset.id] = None
    eq = _FACETS[asset.id]
    if eq is None:
        return None
    rot, pos = quat_matrix(pose.orientation), np.asarray(pose.position, dtype=float)
    normals = eq[:, :3] @ rot.T
    return np.column_stack([normals, eq[:, 3] - normals @ pos])


def _blocked(eye: np.ndarray, pts: np.ndarray, eq: np.ndarray) -> np.ndarray:
    """Which segments eye -> point pass through the convex hull with facets ``eq`` (before the point)."""
    d = pts - eye                                        # segment eye + s d, s in [0, 1)
    num = -(eye @ eq[:, :3].T + eq[:, 3])                # n.(eye + s d) + c <= 0  <=>  s (n.d) <= num
    den = d @ eq[:, :3].T
    with np.errstate(divide="ignore", invalid="ignore"):
        s = num[None, :] / den
    enter = np.where(den < 0, s, -np.inf).max(axis=1)
    leave = np.where(den > 0, s, np.inf).min(axis=1)
    outside = np.any((np.abs(den) < 1e-12) & (num[None, :] < 0), axis=1)
    return ~outside & (enter < leave) & (leave > 0.0) & (enter < 0.98)


def _area_in_frame(uv: np.ndarray) -> float:
    """Area of the convex hull of image points clipped to the frame ``[-1, 1]^2`` (the frame's area is 4)."""
    import shapely
    from scipy.spatial import ConvexHull, QhullError

    try:
        ring = uv[ConvexHull(uv).vertices]
    except (QhullError, ValueError):
        return 0.0
    return float(shapely.polygons(ring).intersection(shapely.box(-1.0, -1.0, 1.0, 1.0)).area)


def _view(scene: Scene, assets: dict[str, Any], nodes: list[str], cfg: PrecheckConfig) -> str:
    cam = next((c for c in scene.cameras if c.name == cfg.camera and c.link is None), None)
    if cam is None:
        return ""
    view = _View(cam)
    roles = {n: ("target" if n in nodes[0] else "receptacle") for n in nodes[0] + nodes[1]}
    others = [n for n in sorted(scene.poses) if n in assets and n != scene.graph.support_id]
    facets: dict[str, np.ndarray | None] = {}
    for n, role in roles.items():
        if n not in others:
            continue
        pts = _hull_points(assets[n], scene.poses[n])
        uv = view.project(pts)
        if not np.all(np.isfinite(uv)):
            return f"out of view: {role} {n} is behind the {cam.name} camera"
        share = _area_in_frame(uv) / 4.0
        if share <= 0:
            return f"out of view: {role} {n} is outside the {cam.name} camera's view"
        if share < cfg.min_fraction:
            return (f"not visible: {role} {n} would cover at most {share:.3%} of the {cam.name} "
                    f"image (min {cfg.min_fraction:.3%})")
        holders = _holders(scene, n)
        centre = pts.mean(axis=0)
        step = max(1, len(pts) // cfg.samples)
        sample = centre + 0.9 * (pts[::step] - centre)   # just inside the hull, off its edges
        hidden = np.zeros(len(sample), dtype=bool)
        for m in others:
            if m != n and m not in holders:
                if m not in facets:
                    facets[m] = _facets(assets[m], scene.poses[m])
                if facets[m] is not None:
                    hidden |= _blocked(view.eye, sample, facets[m])
        if hidden.mean() > cfg.max_occlusion:
            return (f"occluded: {role} {n} would be about {hidden.mean():.0%} hidden in the {cam.name} camera "
                    f"(max {cfg.max_occlusion:.0%})")
    return ""


def _holders(scene: Scene, node: str) -> set[str]:
    """The objects ``node`` stands on or in, up to the table (they cannot hide it)."""
    out, cur = set(), node
    while True:
        par = scene.graph.parent(cur)
        if par is None:
            return out
        cur = par[1]
        out.add(cur)


def task_graph(graph: Any) -> Any:
    """The graph without its distractors, or None when it has none (or one of them holds another object)."""
    distractors = {o.id for o in graph.objects("distractor")}
    if not distractors or any(graph.children(d) for d in distractors):
        return None
    sub = graph.copy()
    for d in sorted(distractors):
        sub.remove_object(d)
    return sub


def precheck(scene: Scene, assets: dict[str, Any], cfg: PrecheckConfig | None = None) -> str:
    """Why a laid-out (unsettled) scene should be rejected before a world is built, or ``""``.

    Args:
        scene: the scene; only the objects it has poses for are considered (a layout of the task
            objects alone checks just them).
        assets: node id -> asset for every posed node.
        cfg: thresholds.

    """
    cfg = cfg or PrecheckConfig()
    targets, receptacles = task_objects(scene)
    targets = [t for t in targets if t in scene.poses and t in assets]
    receptacles = [r for r in receptacles if r in scene.poses and r in assets]
    if cfg.reach:
        why = _reach(scene, assets, targets)
        if why:
            return why
    if cfg.view:
        return _view(scene, assets, [targets, receptacles], cfg)
    return ""
