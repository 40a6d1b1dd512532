"""Configuration of the pick-and-place environment and of its domain randomization.

Both are frozen dataclasses validated in ``__post_init__``; a bad value raises
:class:`~scenegen.errors.ConfigError` showing the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from scenegen.errors import ConfigError
from scenegen.world import WorldConfig

CAMERAS = ("front", "wrist")
"""Cameras an observation may hold."""
DR_FACTORS = ("light_direction", "light_intensity", "camera_pose", "object_color", "table_color",
              "friction", "mass")
"""Randomized factors, each with a weight in :attr:`DRConfig.weights`."""
_RELATIVE = ("light_intensity", "friction", "mass")
POINTCLOUD_BACKENDS = ("auto", "numpy", "open3d")


def _finite(name: str, value: object, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name} = {value!r} must be a finite number")
    if not low <= value <= high:
        raise ConfigError(f"{name} = {value!r} must be within [{low}, {high}]")
    return float(value)


@dataclass(frozen=True)
class DRConfig:
    """Domain randomization: per-factor amplitudes, scaled by per-factor weights (0 disables a factor).

    Each reset draws every factor from the env's seeded generator: a value ``u`` uniform in
    [-1, 1] moves the factor by ``weight * amplitude * u`` around its nominal value.
    """

    light_direction_deg: float = 30.0
    """Largest change (degrees) of the light's azimuth; the elevation moves by half of it."""
    light_intensity: float = 0.3
    """Largest relative change of the light's ambient and diffuse coefficients."""
    camera_position: float = 0.03
    """Largest offset (m, per axis) of a fixed camera's eye."""
    camera_target: float = 0.02
    """Largest offset (m, per axis) of a fixed camera's look-at point."""
    object_color: float = 0.2
    """Largest change of each RGB channel of every object's colour (0..1 scale)."""
    table_color: float = 0.2
    """Largest change of each RGB channel of the table's colour."""
    friction: float = 0.25
    """Largest relative change of each object's lateral friction."""
    mass: float = 0.25
    """Largest relative change of each object's mass (its inertia scales with it)."""
    weights: Mapping[str, float] | tuple = field(default_factory=lambda: dict.fromkeys(DR_FACTORS, 1.0))
    """Factor name -> weight >= 0 (missing names weigh 1); stored as a sorted tuple of pairs."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "weights":
                _finite(f"DRConfig.{f.name}", getattr(self, f.name), 0.0, 180.0)
        raw = dict(self.weights)
        unknown = sorted(set(raw) - set(DR_FACTORS))
        if unknown:
            raise ConfigError(f"DRConfig.weights: unknown factor(s) {unknown}; use {', '.join(DR_FACTORS)}")
        merged = {k: _finite(f"DRConfig.weights[{k!r}]", raw.get(k, 1.0), 0.0, 100.0) for k in DR_FACTORS}
        object.__setattr__(self, "weights", tuple(sorted(merged.items())))
        for name in _RELATIVE:
            if self.amplitude(name) >= 1.0:
                raise ConfigError(f"DRConfig: {name} amplitude x weight = {self.amplitude(name):.3f} must be < 1 "
                                  "(a relative change of 100% or more)")
        if self.amplitude("light_direction") >= 90:
            raise ConfigError(f"DRConfig: light_direction_deg x weight = {self.amplitude('light_direction')} "
                              "must be < 90")

    def weight(self, factor: str) -> float:
        """Weight of one factor."""
        return dict(self.weights)[factor]

    def amplitude(self, factor: str) -> float:
        """Weighted amplitude of a factor (``camera_pose`` gives the eye's)."""
        base = {"light_direction": self.light_direction_deg, "light_intensity": self.light_intensity,
                "camera_pose": self.camera_position, "object_color": self.object_color,
                "table_color": self.table_color, "friction": self.friction, "mass": self.mass}[factor]
        return base * self.weight(factor)

    def with_weights(self, **weights: float) -> DRConfig:
        """A copy with some factor weights changed (e.g. ``cfg.with_weights(mass=0, friction=2)``)."""
        return replace(self, weights={**dict(self.weights), **weights})

    @classmethod
    def off(cls) -> DRConfig:
        """A config whose factors all weigh 0 (nominal values every episode)."""
        return cls(weights=dict.fromkeys(DR_FACTORS, 0.0))


def _default_world() -> WorldConfig:
    return WorldConfig(timestep=1.0 / 200.0, solver_iterations=20)


@dataclass(frozen=True)
class EnvConfig:
    """Settings of :class:`~rl.envs.pick_place.PickPlaceEnv`."""

    scene_ids: tuple[str, ...] | None = None
    """Scenes to draw from (ids or unique prefixes); None draws from every scene of the pack."""
    image_keys: tuple[str, ...] = ("front",)
    """Cameras rendered into the observation (``front``, ``wrist``); () renders nothing."""
    image_size: int = 128
    """Side (pixels) of every camera image (square)."""
    pointcloud: bool = False
    """Add ``points``: a point cloud fused from the front camera's depth, cropped and downsampled."""
    pointcloud_points: int = 1024
    """Points in the cloud (sampled, or repeated when fewer remain)."""
    pointcloud_voxel: float = 0.01
    """Voxel size (m) of the downsampling."""
    pointcloud_backend: str = "auto"
    """``numpy``, ``open3d`` or ``auto`` (open3d when installed)."""
    instruction_max_length: int = 256
    """Longest instruction text (longer ones are cut)."""
    control_hz: float = 20.0
    """Actions per simulated second; physics runs ``1 / (control_hz * world.timestep)`` substeps each."""
    max_delta: float = 0.02
    """End-effector translation (m) per step at action magnitude 1."""
    max_yaw_delta: float = 0.2
    """End-effector yaw change (rad) per step at action magnitude 1."""
    yaw_limit: float = 2.0
    """The commanded yaw stays within home yaw +- this (rad), inside the wrist joint's range."""
    workspace: tuple[float, float, float, float, float, float] = (0.2, -0.5, 0.005, 0.95, 0.5, 0.5)
    """Box ``(xmin, ymin, zmin, xmax, ymax, zmax)`` the commanded end effector stays in; z is above the table."""
    max_episode_steps: int = 200
    """Steps before an episode is truncated (``timeout``)."""
    finger_force: float = 60.0
    """Force (N) of each finger's position motor."""
    finger_friction: float = 1.5
    """Lateral friction of the finger pads."""
    arm_gain: float = 0.3
    """Position gain of the arm's joint motors."""
    ik_iterations: int = 20
    """Iterations of PyBullet's inverse kinematics per solve (the twin's forward-kinematics check corrects the rest)."""
    ik_refine: bool = True
    """Refine inverse kinematics on a kinematic twin of the robot (millimetre accuracy; see control.IKTwin)."""
    light_robot: bool = True
    """Render a low-poly copy of the robot (same physics; see :mod:`rl.envs.light_robot`)."""
    sleeping: bool = True
    """Let objects at rest sleep (Bullet deactivation: the solver skips them until something touches them)."""
    render_max_faces: int = 600
    """Objects whose visual mesh has more triangles are drawn with a decimated copy (0 keeps every mesh;
    physics is unchanged, see :mod:`rl.envs.light_assets`)."""
    render_ground: bool = False
    """Draw the ground plane under the table (off: a plain background, and faster images)."""
    world: WorldConfig = field(default_factory=_default_world)
    """Physics settings of every world."""
    require_release: bool = True
    """A goal counts only once the robot no longer touches its object, and the object is at rest."""
    rest_speed: float = 0.1
    """Speed (m/s) under which a goal object counts as at rest."""
    knock_off_margin: float = 0.05
    """An object whose origin drops this far below the table top was knocked off."""
    terminate_on_success: bool = True
    """End the episode when every goal holds."""
    max_cached_worlds: int = 8
    """Built worlds kept per env (least recently used ones are closed)."""
    dr: DRConfig | None = None
    """Domain randomization (None: nominal scenes)."""

    def __post_init__(self) -> None:
        if self.scene_ids is not None:
            if isinstance(self.scene_ids, str) or not all(isinstance(s, str) and s for s in self.scene_ids):
                raise ConfigError(f"EnvConfig.scene_ids = {self.scene_ids!r} must be a list of scene ids")
            if not self.scene_ids:
                raise ConfigError("EnvConfig.scene_ids is empty; give at least one scene id or None for all")
            object.__setattr__(self, "scene_ids", tuple(self.scene_ids))
        keys = tuple(self.image_keys)
        if len(set(keys)) != len(keys) or any(k not in CAMERAS for k in keys):
            raise ConfigError(f"EnvConfig.image_keys = {self.image_keys!r} must be distinct names from {CAMERAS}")
        object.__setattr__(self, "image_keys", keys)
        ints = {"image_size": (8, 1024), "pointcloud_points": (1, 100_000), "instruction_max_length": (1, 10_000),
                "max_episode_steps": (1, 100_000), "ik_iterations": (1, 1000), "max_cached_worlds": (1, 1024),
                "render_max_faces": (0, 10_000_000)}
        for name, (lo, hi) in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"EnvConfig.{name} = {v!r} must be an int in {lo}..{hi}")
        _finite("EnvConfig.pointcloud_voxel", self.pointcloud_voxel, 1e-4, 1.0)
        _finite("EnvConfig.control_hz", self.control_hz, 1.0, 1000.0)
        _finite("EnvConfig.max_delta", self.max_delta, 1e-4, 0.2)
        _finite("EnvConfig.max_yaw_delta", self.max_yaw_delta, 1e-4, 1.0)
        _finite("EnvConfig.yaw_limit", self.yaw_limit, 0.1, math.pi)
        _finite("EnvConfig.finger_force", self.finger_force, 1.0, 1000.0)
        _finite("EnvConfig.finger_friction", self.finger_friction, 0.0, 10.0)
        _finite("EnvConfig.arm_gain", self.arm_gain, 0.01, 1.0)
        _finite("EnvConfig.rest_speed", self.rest_speed, 1e-4, 10.0)
        _finite("EnvConfig.knock_off_margin", self.knock_off_margin, 1e-3, 1.0)
        if self.pointcloud_backend not in POINTCLOUD_BACKENDS:
            raise ConfigError(f"EnvConfig.pointcloud_backend = {self.pointcloud_backend!r} must be one of "
                              f"{POINTCLOUD_BACKENDS}")
        ws = tuple(self.workspace)
        if len(ws) != 6 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in ws) \
                or not (ws[0] < ws[3] and ws[1] < ws[4] and 0 <= ws[2] < ws[5]):
            raise ConfigError(f"EnvConfig.workspace = {self.workspace!r} must be (xmin, ymin, zmin, xmax, ymax, "
                              "zmax) with min < max and 0 <= zmin")
        object.__setattr__(self, "workspace", tuple(float(v) for v in ws))
        if not isinstance(self.world, WorldConfig):
            raise ConfigError(f"EnvConfig.world = {self.world!r} must be a WorldConfig")
        if self.dr is not None and not isinstance(self.dr, DRConfig):
            raise ConfigError(f"EnvConfig.dr = {self.dr!r} must be a DRConfig or None")
        ratio = 1.0 / (self.control_hz * self.world.timestep)
        if ratio < 1:
            raise ConfigError(f"EnvConfig.control_hz = {self.control_hz} is faster than physics "
                              f"({1 / self.world.timestep:.0f} Hz); lower it")

    @property
    def substeps(self) -> int:
        """Physics steps per control step."""
        return max(1, round(1.0 / (self.control_hz * self.world.timestep)))

    def replace(self, **changes: object) -> EnvConfig:
        """A validated copy with some fields changed."""
        return replace(self, **changes)


def make_config(config: EnvConfig | None = None, **overrides: object) -> EnvConfig:
    """An :class:`EnvConfig` from a base config and keyword overrides (``dr`` may be a dict of DRConfig fields).

    Raises:
        ConfigError: an unknown field name or a bad value.

    """
    base = config or EnvConfig()
    names = {f.name for f in fields(EnvConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ConfigError(f"unknown env option(s) {unknown}; valid options: {', '.join(sorted(names))}")
    if isinstance(overrides.get("dr"), Mapping):
        overrides["dr"] = DRConfig(**overrides["dr"])
    if isinstance(overrides.get("world"), Mapping):
        overrides["world"] = WorldConfig(**overrides["world"])
    return replace(base, **overrides) if overrides else base
