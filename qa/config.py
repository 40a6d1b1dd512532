"""QA thresholds: one frozen dataclass per check, gathered in :class:`QAConfig`.

Every field carries its default and its meaning; ``__post_init__`` rejects values out
of range with a :class:`~scenegen.errors.ConfigError` that shows the value. The VLM
endpoint's key is never part of a config's ``repr`` or of :meth:`QAConfig.to_dict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from scenegen.errors import ConfigError
from scenegen.relations import RelationConfig
from scenegen.validate import finite_fields, require

CHECK_ORDER = ("geometry", "physics", "semantic", "visibility", "reachability", "feasibility", "vlm")
"""Every check, in the order they run (cheap and state-preserving first, the expert and VLM last)."""
DEFAULT_CHECKS = CHECK_ORDER[:-1]
"""Checks run when none are named: all but the VLM judge (it needs an endpoint)."""


@dataclass(frozen=True)
class GeometryConfig:
    """Asset validity and scale plausibility."""

    size_tol: float = 0.05
    """Extents may exceed the category's size range by this fraction on each side."""
    mass_tol: float = 0.01
    """Mass may exceed the category's mass range by this fraction on each side."""
    min_density: float = 20.0
    """Smallest plausible mass / volume (kg/m^3)."""
    max_density: float = 25000.0
    """Largest plausible mass / volume (kg/m^3)."""
    check_files: bool = True
    """Require the URDF, visual mesh and every collision part to exist on disk."""
    check_goal_fit: bool = True
    """For ``in``/``on`` goals, the subject must fit its object (see ``fit_ratio``)."""
    in_fit_ratio: float = 1.0
    """``in`` goals: the subject's narrow side must be at most this times the receptacle's narrow side."""
    on_fit_ratio: float = 2.0
    """``on`` goals: the subject's narrow side must be at most this times the support's wide side."""

    def __post_init__(self) -> None:
        finite_fields(self)
        n = type(self).__name__
        require(f"{n}.size_tol", self.size_tol, 0 <= self.size_tol < 1, "in [0, 1)")
        require(f"{n}.mass_tol", self.mass_tol, 0 <= self.mass_tol < 1, "in [0, 1)")
        require(f"{n}.min_density", self.min_density, 0 < self.min_density < self.max_density,
                "> 0 and below max_density")
        require(f"{n}.in_fit_ratio", self.in_fit_ratio, self.in_fit_ratio > 0, "> 0")
        require(f"{n}.on_fit_ratio", self.on_fit_ratio, self.on_fit_ratio > 0, "> 0")


@dataclass(frozen=True)
class PhysicsConfig:
    """Spawn penetration, settling displacement, floating, falling and jitter."""

    max_spawn_penetration: float = 0.005
    """Largest penetration (m) between two bodies at their layout (spawn) poses."""
    max_displacement: float = 0.05
    """Largest distance (m) an object's origin may end from its layout pose after settling."""
    contact_tol: float = 0.004
    """An object closer than this (m) to another body counts as touching it (not floating)."""
    fall_margin: float = 0.03
    """An object whose lowest point is this far (m) below the table top has fallen off."""
    max_kinetic_energy: float = 1e-3
    """Largest kinetic energy (J) of any one object after settling (jitter)."""

    def __post_init__(self) -> None:
        finite_fields(self)
        n = type(self).__name__
        require(f"{n}.max_spawn_penetration", self.max_spawn_penetration, 0 < self.max_spawn_penetration < 0.1,
                "in (0, 0.1) m")
        require(f"{n}.max_displacement", self.max_displacement, 0 < self.max_displacement < 1, "in (0, 1) m")
        require(f"{n}.contact_tol", self.contact_tol, 0 < self.contact_tol < 0.05, "in (0, 0.05) m")
        require(f"{n}.fall_margin", self.fall_margin, 0 < self.fall_margin < 1, "in (0, 1) m")
        require(f"{n}.max_kinetic_energy", self.max_kinetic_energy, self.max_kinetic_energy > 0, "> 0 J")


@dataclass(frozen=True)
class SemanticConfig:
    """Relations and initial states of the graph in the settled world."""

    relations: RelationConfig = field(default_factory=RelationConfig)
    """Tolerances of the relation predicates (the same as the layout's, untightened)."""
    check_states: bool = True
    """Also check every object's initial state (upright, inverted, lying)."""
    min_score: float = 1.0
    """Fraction of relations and states that must hold."""

    def __post_init__(self) -> None:
        finite_fields(self)
        if not isinstance(self.relations, RelationConfig):
            raise ConfigError(f"SemanticConfig.relations = {self.relations!r} must be a RelationConfig")
        require(f"{type(self).__name__}.min_score", self.min_score, 0 < self.min_score <= 1, "in (0, 1]")


@dataclass(frozen=True)
class VisibilityConfig:
    """Coverage and occlusion of the task objects in the front camera."""

    camera: str = "front"
    """Camera whose segmentation is measured."""
    render_size: int = 256
    """Side of the square render (pixels); 0 uses the camera's own width and height."""
    min_fraction: float = 0.0003
    """Each target and receptacle must cover at least this fraction of the image (about 5 pixels of a
    128 x 128 frame, 20 of the 256 x 256 render)."""
    max_occlusion: float = 0.6
    """Largest occlusion ratio ``1 - visible / visible when rendered alone``."""

    def __post_init__(self) -> None:
        finite_fields(self)
        n = type(self).__name__
        require(f"{n}.camera", self.camera, isinstance(self.camera, str) and bool(self.camera), "a camera name")
        require(f"{n}.render_size", self.render_size,
                isinstance(self.render_size, int) and (self.render_size == 0 or 16 <= self.render_size <= 1024),
                "0 or an int in 16..1024")
        require(f"{n}.min_fraction", self.min_fraction, 0 <= self.min_fraction < 1, "in [0, 1)")
        require(f"{n}.max_occlusion", self.max_occlusion, 0 <= self.max_occlusion <= 1, "in [0, 1]")


@dataclass(frozen=True)
class ReachabilityConfig:
    """Inverse kinematics to a pre-grasp and a place pose, and the gripper's opening."""

    pregrasp_height: float = 0.10
    """The pre-grasp point is this far (m) above the target's top."""
    place_height: float = 0.10
    """The place point is this far (m) above the receptacle's top plus the target's height."""
    position_tol: float = 0.015
    """Largest distance (m) between the pose asked for and the pose IK reaches."""
    orientation_tol_deg: float = 25.0
    """Largest angle between the gripper's approach axis asked for (down) and the one reached."""
    ik_iterations: int = 200
    """Iterations of PyBullet's IK solver per call."""
    ik_restarts: int = 3
    """IK calls per pose, each starting from the previous solution."""
    width_margin: float = 0.005
    """The target's grasp width plus this margin (m) must fit the gripper's maximum opening."""

    def __post_init__(self) -> None:
        finite_fields(self)
        n = type(self).__name__
        require(f"{n}.pregrasp_height", self.pregrasp_height, 0 <= self.pregrasp_height < 1, "in [0, 1) m")
        require(f"{n}.place_height", self.place_height, 0 <= self.place_height < 1, "in [0, 1) m")
        require(f"{n}.position_tol", self.position_tol, 0 < self.position_tol < 0.5, "in (0, 0.5) m")
        require(f"{n}.orientation_tol_deg", self.orientation_tol_deg, 0 < self.orientation_tol_deg <= 180,
                "in (0, 180] degrees")
        require(f"{n}.ik_iterations", self.ik_iterations,
                isinstance(self.ik_iterations, int) and 1 <= self.ik_iterations <= 10000, "an int in 1..10000")
        require(f"{n}.ik_restarts", self.ik_restarts,
                isinstance(self.ik_restarts, int) and 1 <= self.ik_restarts <= 20, "an int in 1..20")
        require(f"{n}.width_margin", self.width_margin, 0 <= self.width_margin < 0.1, "in [0, 0.1) m")


@dataclass(frozen=True)
class FeasibilityConfig:
    """The privileged scripted expert (``scenegen.tasks.expert.run_expert``), when it is installed."""

    max_steps: int = 400
    """Step budget of one expert episode."""
    seed: int = 0
    """Seed of the expert episode."""
    min_progress: float = 1.0
    """Fraction of the goals the expert must achieve."""

    def __post_init__(self) -> None:
        n = type(self).__name__
        require(f"{n}.max_steps", self.max_steps, isinstance(self.max_steps, int) and self.max_steps >= 1,
                "an int >= 1")
        require(f"{n}.seed", self.seed, isinstance(self.seed, int), "an int")
        require(f"{n}.min_progress", self.min_progress, 0 < self.min_progress <= 1, "in (0, 1]")


@dataclass(frozen=True)
class VLMConfig:
    """The VLM judge: an OpenAI-compatible chat endpoint that looks at rendered views."""

    base_url: str | None = None
    """Endpoint base URL (None: ``$SCENEGEN_VLM_BASE_URL``)."""
    model: str | None = None
    """Model name (None: ``$SCENEGEN_VLM_MODEL``)."""
    api_key: str | None = field(default=None, repr=False)
    """API key (None: ``$SCENEGEN_VLM_API_KEY``); never logged nor written to reports."""
    timeout_s: float = 60.0
    """Seconds one request may take before it counts as a timeout."""
    max_retries: int = 2
    """Retries after a failed or unparsable answer (so at most ``max_retries + 1`` requests)."""
    backoff_s: float = 1.0
    """Wait before the first retry; doubled at each further retry."""
    max_backoff_s: float = 20.0
    """Longest wait between two requests."""
    image_size: int = 256
    """Side (pixels) of each rendered view."""
    views: tuple[str, ...] = ("front", "side")
    """Views sent to the judge: scene camera names, or ``side`` (a fixed camera at the table's side)."""
    min_score: float = 0.5
    """The judge's score must reach this (and its ``pass`` be true) for the check to pass."""
    json_mode: bool = True
    """Ask for ``response_format={"type": "json_object"}`` (retried without it on HTTP 400)."""
    max_tokens: int = 400
    """Largest answer (tokens)."""

    def __post_init__(self) -> None:
        finite_fields(self)
        n = type(self).__name__
        require(f"{n}.timeout_s", self.timeout_s, 0 < self.timeout_s <= 3600, "in (0, 3600] s")
        require(f"{n}.max_retries", self.max_retries, isinstance(self.max_retries, int) and 0 <= self.max_retries <= 10,
                "an int in 0..10")
        require(f"{n}.backoff_s", self.backoff_s, 0 <= self.backoff_s <= self.max_backoff_s <= 600,
                "in [0, max_backoff_s] with max_backoff_s <= 600")
        require(f"{n}.image_size", self.image_size, isinstance(self.image_size, int) and 32 <= self.image_size <= 2048,
                "an int in 32..2048")
        require(f"{n}.views", self.views, isinstance(self.views, tuple) and 1 <= len(self.views) <= 6
                and all(isinstance(v, str) and v for v in self.views), "a tuple of 1..6 camera names")
        require(f"{n}.min_score", self.min_score, 0 <= self.min_score <= 1, "in [0, 1]")
        require(f"{n}.max_tokens", self.max_tokens, isinstance(self.max_tokens, int) and 16 <= self.max_tokens <= 8192,
                "an int in 16..8192")


@dataclass(frozen=True)
class QAConfig:
    """Which checks run and their thresholds."""

    checks: tuple[str, ...] = DEFAULT_CHECKS
    """Checks to run (names from :data:`CHECK_ORDER`); they run in that order whatever the order given."""
    enforce: bool = True
    """Reject scenes that fail a check; False only records the results (audit mode)."""
    fail_fast: bool = False
    """Stop at the first failing check (cheaper; the later checks are then not measured)."""
    geometry: GeometryConfig = field(default_factory=GeometryConfig)
    """Thresholds of the geometry check."""
    physics: PhysicsConfig = field(default_factory=PhysicsConfig)
    """Thresholds of the physics check."""
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    """Thresholds of the semantic check."""
    visibility: VisibilityConfig = field(default_factory=VisibilityConfig)
    """Thresholds of the visibility check."""
    reachability: ReachabilityConfig = field(default_factory=ReachabilityConfig)
    """Thresholds of the reachability check."""
    feasibility: FeasibilityConfig = field(default_factory=FeasibilityConfig)
    """Settings of the feasibility check."""
    vlm: VLMConfig = field(default_factory=VLMConfig)
    """Endpoint and thresholds of the VLM judge."""

    def __post_init__(self) -> None:
        checks = tuple(self.checks) if isinstance(self.checks, (list, tuple)) else self.checks
        if not isinstance(checks, tuple) or not checks:
            raise ConfigError(f"QAConfig.checks = {self.checks!r} must be a non-empty tuple of check names")
        unknown = [c for c in checks if c not in CHECK_ORDER]
        if unknown:
            raise ConfigError(f"QAConfig.checks: unknown check(s) {unknown}; use some of {', '.join(CHECK_ORDER)}")
        object.__setattr__(self, "checks", tuple(c for c in CHECK_ORDER if c in checks))
        for name in CHECK_ORDER:
            sub = getattr(self, name)
            want = _SUBCONFIGS[name]
            if not isinstance(sub, want):
                raise ConfigError(f"QAConfig.{name} = {sub!r} must be a {want.__name__}")

    def to_dict(self) -> dict:
        """A JSON-ready dict of the settings (the VLM key left out)."""
        d = asdict(self)
        d["checks"] = list(self.checks)
        d["vlm"].pop("api_key", None)
        d["vlm"]["views"] = list(self.vlm.views)
        return d


_SUBCONFIGS = {"geometry": GeometryConfig, "physics": PhysicsConfig, "semantic": SemanticConfig,
               "visibility": VisibilityConfig, "reachability": ReachabilityConfig,
               "feasibility": FeasibilityConfig, "vlm": VLMConfig}


def parse_checks(text: str | None, vlm: bool = False) -> tuple[str, ...]:
    """Turn ``"physics,semantic"`` (None or ``all``: the defaults) into check names; ``vlm`` adds the judge.

    Raises:
        ConfigError: an unknown check name (the message lists the known ones).

    """
    if text is None or text.strip() in ("", "default"):
        names = list(DEFAULT_CHECKS)
    elif text.strip() == "all":
        names = list(CHECK_ORDER)
    else:
        names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [c for c in names if c not in CHECK_ORDER]
    if unknown:
        raise ConfigError(f"unknown check(s) {', '.join(unknown)}; use some of {', '.join(CHECK_ORDER)} or 'all'")
    if vlm and "vlm" not in names:
        names.append("vlm")
    return tuple(c for c in CHECK_ORDER if c in names)
