"""Collision proxies: convex parts from CoACD, primitives, or the convex hull.

``method="auto"`` picks, per mesh: the builder's primitive (box, cylinder, sphere)
when it gave one and it fits the bounding box; CoACD for shapes with a cavity or a
noticeably concave outline; the convex hull for shapes that are already (nearly) convex;
and the convex hull, with a logged warning, when CoACD fails, crashes or runs out of time
(:mod:`scenegen.assets.coacd_runner` runs it in a helper process and caches the result).
CoACD's parts are merged down to ``max_hulls`` without bridging a container's cavity
(:func:`~scenegen.assets.hulls.merge_parts` with air probes), then fitted to the visual
mesh's bounding box within ``bbox_tolerance``: parts poking out are cut at the box, a proxy
that came out short is stretched back.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import trimesh

from scenegen.assets.coacd_runner import run_coacd
from scenegen.assets.hulls import air_probes, as_convex, bbox_error, covered, fit_to_bbox, merge_parts, proxy_gap
from scenegen.errors import AssetError, ConfigError

log = logging.getLogger(__name__)

METHODS = ("auto", "coacd", "primitive", "hull")
PRIMITIVES = ("box", "cylinder", "sphere")


@dataclass(frozen=True)
class CollisionConfig:
    """How collision proxies are built."""

    threshold: float = 0.05
    """CoACD concavity threshold (smaller: more, tighter parts)."""
    max_hulls: int = 16
    """Most convex parts per asset."""
    method: str = "auto"
    """``auto``, ``coacd``, ``primitive`` or ``hull``."""
    preprocess_resolution: int = 50
    """CoACD's voxel resolution of the manifold pre-pass (run only on meshes that are not watertight)."""
    resolution: int = 1000
    """CoACD's surface samples for the concavity metric (CoACD's own default: 2000)."""
    mcts_iterations: int = 60
    """CoACD's Monte-Carlo tree search iterations per cut (CoACD's default, 150, costs about 3x
    the time on thin-walled containers for a similar proxy)."""
    mcts_nodes: int = 12
    """CoACD's tree search nodes (CoACD's default: 20)."""
    mcts_max_depth: int = 2
    """CoACD's tree search depth (CoACD's default: 3)."""
    max_hull_vertices: int = 64
    """Most vertices per convex part (0: no limit)."""
    simplify: float = 0.005
    """Simplify the mesh given to CoACD to this tolerance, as a fraction of its bbox diagonal
    (0: off). Needs ``manifold3d``; a thin-walled 4,000-triangle bowl otherwise costs CoACD
    several times longer for the same proxy."""
    convex_ratio: float = 0.9
    """``auto`` treats a closed mesh as convex when volume / hull volume reaches this."""
    bbox_tolerance: float = 0.05
    """Largest relative difference of the proxy's bounding-box extents from the visual mesh's."""
    seed: int = 0
    """CoACD's random seed (fixed for determinism)."""
    isolate: bool = True
    """Run CoACD in a child process, so that a crash in its native code cannot take the caller down."""
    timeout_s: float = 300.0
    """Longest CoACD run (seconds, with ``isolate``) before falling back to the convex hull."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"collision method {self.method!r} is unknown; use one of {', '.join(METHODS)}")
        if not 0.01 <= self.threshold <= 1.0:
            raise ConfigError(f"collision threshold {self.threshold} is out of range; use 0.01..1")
        if not 1 <= self.max_hulls <= 256:
            raise ConfigError(f"max_hulls {self.max_hulls} is out of range; use 1..256")
        for name in ("preprocess_resolution", "resolution", "mcts_iterations", "mcts_nodes",
                     "mcts_max_depth"):
            if getattr(self, name) < 1:
                raise ConfigError(f"collision {name}={getattr(self, name)} must be at least 1")
        if self.max_hull_vertices != 0 and self.max_hull_vertices < 8:
            raise ConfigError(f"max_hull_vertices {self.max_hull_vertices} is too small; use 0 or >= 8")
        if not 0.0 <= self.simplify <= 0.05:
            raise ConfigError(f"simplify {self.simplify} is out of range; use 0..0.05")
        if not 0.0 < self.convex_ratio <= 1.0:
            raise ConfigError(f"convex_ratio {self.convex_ratio} is out of range; use (0, 1]")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s {self.timeout_s} must be positive")
        if not 0.0 < self.bbox_tolerance < 0.5:
            raise ConfigError(f"bbox_tolerance {self.bbox_tolerance} is out of range; use (0, 0.5)")

    @classmethod
    def fast(cls, **overrides: object) -> CollisionConfig:
        """Cheaper CoACD settings (lower resolution, shorter search) for tests and previews."""
        base: dict = {"threshold": 0.08, "preprocess_resolution": 30, "resolution": 400,
                      "mcts_iterations": 20, "mcts_nodes": 8, "mcts_max_depth": 2, "simplify": 0.01}
        base.update(overrides)
        return cls(**base)

    def cache_key(self) -> dict:
        """The fields that change the proxy (the asset cache key): all but ``isolate`` and ``timeout_s``."""
        d = dataclasses.asdict(self)
        d.pop("isolate")
        d.pop("timeout_s")
        return d

    def coacd_settings(self) -> dict:
        """Keyword arguments of ``coacd.run_coacd`` for these settings.

        CoACD's own merging is off: it is the costliest step, and :func:`merge_parts` does the
        same job (down to ``max_hulls``) in a fraction of the time.
        """
        return {
            "threshold": self.threshold, "max_convex_hull": -1,
            "preprocess_mode": "auto", "preprocess_resolution": self.preprocess_resolution,
            "resolution": self.resolution, "mcts_nodes": self.mcts_nodes,
            "mcts_iterations": self.mcts_iterations, "mcts_max_depth": self.mcts_max_depth,
            "merge": False, "decimate": self.max_hull_vertices > 0,
            "max_ch_vertex": self.max_hull_vertices or 256, "seed": self.seed,
        }


@dataclass
class CollisionResult:
    """The convex parts of one proxy and how they were obtained."""

    method: str
    """``coacd``, ``primitive`` or ``hull``."""
    parts: list[trimesh.Trimesh]
    """Convex, watertight parts in the asset frame."""
    primitive: dict | None = None
    """The primitive spec when ``method == "primitive"``."""
    note: str = ""
    """Why a fallback happened (empty when none)."""
    bbox_error: float = 0.0
    """Largest relative difference of the proxy's bbox extents from the visual mesh's."""
    seconds: float = 0.0
    """CoACD wall time spent now (0 when served from the decomposition cache)."""
    cached: bool = False
    """The decomposition came from the cache."""
    stats: dict = field(default_factory=dict)
    """Extra figures (concavity ratio, parts before merging...)."""


def convexity_ratio(mesh: trimesh.Trimesh) -> float | None:
    """Volume of a closed mesh over its convex hull's volume (None when not watertight)."""
    if not mesh.is_watertight:
        return None
    hull_vol = mesh.convex_hull.volume
    return float(abs(mesh.volume) / hull_vol) if hull_vol > 0 else None


AXIS_RPY = {"z": (0.0, 0.0, 0.0), "x": (0.0, np.pi / 2, 0.0), "y": (-np.pi / 2, 0.0, 0.0)}
"""Roll-pitch-yaw turning a z-axis cylinder onto each axis."""


def axis_rotation(axis: str) -> np.ndarray:
    """4x4 rotation turning the z axis onto ``axis`` (``x``, ``y`` or ``z``)."""
    if axis not in AXIS_RPY:
        raise AssetError(f"cylinder axis {axis!r} is unknown; use x, y or z")
    return trimesh.transformations.euler_matrix(*AXIS_RPY[axis], axes="sxyz")


def primitive_mesh(spec: dict, center: np.ndarray) -> trimesh.Trimesh:
    """Mesh of a primitive spec (box / cylinder along its ``axis``, z by default / sphere) centred on ``center``."""
    kind = spec.get("type")
    try:
        if kind == "box":
            m = trimesh.creation.box(extents=[float(x) for x in spec["extents"]])
        elif kind == "cylinder":
            m = trimesh.creation.cylinder(radius=float(spec["radius"]), height=float(spec["height"]),
                                          sections=48)
            m.apply_transform(axis_rotation(spec.get("axis", "z")))
        elif kind == "sphere":
            m = trimesh.creation.icosphere(subdivisions=3, radius=float(spec["radius"]))
        else:
            raise AssetError(f"unknown collision primitive {kind!r}; use one of {', '.join(PRIMITIVES)}")
    except (KeyError, TypeError, ValueError) as exc:
        raise AssetError(f"collision primitive {spec} is malformed ({exc}); give its sizes") from None
    m.apply_translation(center)
    return m


def build_collision(mesh: trimesh.Trimesh, config: CollisionConfig | None = None, *,
                    primitive: dict | None = None, cavity: bool = False,
                    cache_dir: str | os.PathLike | None = None, name: str = "mesh") -> CollisionResult:
    """Build the collision proxy of a visual mesh.

    Args:
        mesh: visual mesh in the asset frame.
        config: collision settings (default :class:`CollisionConfig`).
        primitive: the builder's primitive hint (see ``ProceduralMesh.primitive``).
        cavity: the object has a cavity that the proxy must keep (forces CoACD in ``auto``).
        cache_dir: cache root holding the decomposition cache.
        name: name used in warnings.

    Returns:
        The :class:`CollisionResult`; its parts fit the visual bbox within ``bbox_tolerance``.

    """
    config = config or CollisionConfig()
    center = mesh.bounds.mean(axis=0)
    ratio = convexity_ratio(mesh)
    method = config.method
    if method == "auto":
        if primitive:
            method = "primitive"
        elif cavity or ratio is None or ratio < config.convex_ratio:
            method = "coacd"
        else:
            method = "hull"
    stats: dict = {"convexity_ratio": ratio}
    note, seconds, cached = "", 0.0, False
    prim = None
    if method == "primitive":
        prim = dict(primitive) if primitive else {"type": "box", "extents": [float(x) for x in mesh.extents]}
        parts = [primitive_mesh(prim, center)]
        err = bbox_error(parts, mesh)
        if err > config.bbox_tolerance and config.method == "auto":
            log.info("%s: the %s primitive misses the bbox by %.1f%%; decomposing instead", name,
                     prim["type"], 100 * err)
            return build_collision(mesh, config, cavity=cavity, cache_dir=cache_dir, name=name)
    elif method == "coacd":
        try:
            raw, seconds, cached = run_coacd(mesh, config, cache_dir)
            parts = as_convex(raw)
            stats["coacd_parts"] = len(raw)
            if not parts:
                raise AssetError("CoACD parts are all degenerate")
        except AssetError as exc:
            note = f"{exc}; used the convex hull instead"
            log.warning("%s: %s", name, note)
            method, parts = "hull", [mesh.convex_hull]
    else:
        parts = [mesh.convex_hull]
    if method == "coacd":
        probes = air_probes(mesh) if cavity else None
        parts = merge_parts(parts, config.max_hulls, probes=probes)
        parts = fit_to_bbox(parts, mesh, config.bbox_tolerance)
        if probes is not None and len(probes):
            stats["probes_open"] = float(1.0 - covered(parts, probes).mean())
    err = bbox_error(parts, mesh)
    if err > config.bbox_tolerance:
        note = (note + "; " if note else "") + f"proxy bbox off by {err:.1%}; used the convex hull"
        log.warning("%s: %s", name, note)
        method, parts, prim = "hull", [mesh.convex_hull], None
        err = bbox_error(parts, mesh)
    stats["gap"] = proxy_gap(parts, np.asarray(mesh.vertices, dtype=float)) if method != "primitive" else None
    return CollisionResult(method=method, parts=parts, primitive=prim, note=note, bbox_error=err,
                           seconds=seconds, cached=cached, stats=stats)
