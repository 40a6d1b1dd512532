"""Collision settings and results: :class:`CollisionConfig` (how proxies are built), :class:`CollisionResult`.

Kept apart from the builders (:mod:`scenegen.assets.collision.build`, :mod:`scenegen.assets.collision.coacd`)
so that code choosing settings imports no geometry.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import trimesh

from scenegen.errors import ConfigError

METHODS = ("auto", "direct", "coacd", "primitive", "hull")


@dataclass(frozen=True)
class CollisionConfig:
    """How collision proxies are built."""

    threshold: float = 0.05
    """CoACD concavity threshold (smaller: more, tighter parts)."""
    max_hulls: int = 16
    """Most convex parts of a CoACD decomposition (a builder's own parts follow ``direct_tolerance``)."""
    method: str = "auto"
    """``auto`` (per mesh: the builder's primitive, else the builder's own convex parts, else CoACD for
    a cavity or a concave outline, else the convex hull), ``direct`` (the builder's own parts where it
    has them, else as ``auto``), ``coacd`` (CoACD for every mesh that is not a primitive), ``primitive``
    or ``hull``."""
    direct_tolerance: float = 0.002
    """Largest bridge (m) one of a builder's own convex parts may make over a concave stretch (the chord
    across a curved inner wall, the inside of a bend); smaller: more, tighter parts."""
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
        if not 0.0002 <= self.direct_tolerance <= 0.02:
            raise ConfigError(f"direct_tolerance {self.direct_tolerance} is out of range; use 0.0002..0.02 m")
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

        CoACD's own merging is off: it is the costliest step, and
        :func:`~scenegen.assets.collision.hulls.merge_parts` does the same job (down to
        ``max_hulls``) in a fraction of the time.
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
    """``direct`` (the builder's own parts), ``coacd``, ``primitive`` or ``hull``."""
    parts: list[trimesh.Trimesh]
    """Convex, watertight parts in the asset frame."""
    primitive: dict | None = None
    """The primitive spec when ``method == "primitive"``."""
    note: str = ""
    """Why a fallback happened (empty when none)."""
    bbox_error: float = 0.0
    """Largest relative difference of the proxy's bbox extents from the visual mesh's."""
    seconds: float = 0.0
    """Decomposition wall time spent now: CoACD's (0 when served from the decomposition cache) or the
    builder's own parts'."""
    cached: bool = False
    """The decomposition came from the cache."""
    stats: dict = field(default_factory=dict)
    """Extra figures (concavity ratio, parts before merging...)."""
