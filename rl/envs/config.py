"""Configuration of the pick-and-place environment and of its domain randomization.

Both are frozen dataclasses validated in ``__post_init__``; a bad value raises
:class:`~scenegen.errors.ConfigError` showing the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from scenegen.errors import ConfigError
from scenegen.sim.world import WorldConfig
from scenegen.tasks.config import EpisodeConfig
from scenegen.validate import finite

DR_FACTORS = ("light_direction", "light_intensity", "camera_pose", "object_color", "table_color",
              "friction", "mass")
"""Randomized factors, each with a weight in :attr:`DRConfig.weights`."""
RELATIVE_FACTORS = ("light_intensity", "friction", "mass")
"""Factors whose amplitude is a relative change (a fraction of the nominal value, below 1)."""


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
                finite(f"DRConfig.{f.name}", getattr(self, f.name), 0.0, 180.0)
        raw = dict(self.weights)
        unknown = sorted(set(raw) - set(DR_FACTORS))
        if unknown:
            raise ConfigError(f"DRConfig.weights: unknown factor(s) {unknown}; use {', '.join(DR_FACTORS)}")
        merged = {k: finite(f"DRConfig.weights[{k!r}]", raw.get(k, 1.0), 0.0, 100.0) for k in DR_FACTORS}
        object.__setattr__(self, "weights", tuple(sorted(merged.items())))
        for name in RELATIVE_FACTORS:
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


@dataclass(frozen=True)
class EnvConfig(EpisodeConfig):
    """Settings of :class:`~rl.envs.pick_place.PickPlaceEnv`: a task episode's plus domain randomization."""

    dr: DRConfig | None = None
    """Domain randomization (None: nominal scenes)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dr is not None and not isinstance(self.dr, DRConfig):
            raise ConfigError(f"EnvConfig.dr = {self.dr!r} must be a DRConfig or None")

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
