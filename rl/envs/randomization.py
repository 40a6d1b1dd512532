"""Domain randomization: draw one episode's perturbations and apply them to a cached world.

Every factor is drawn, in a fixed order, from the env's seeded generator whatever its
weight (a zero weight gives the nominal value), so the same seed gives the same episode
for any mix of weights. Dynamics and colours are re-applied at every reset from the
nominal values recorded when the world was built, so nothing leaks between episodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rl.envs.config import DRConfig
from scenegen.scene import Light
from scenegen.sim.views import View, nominal_view
from scenegen.tasks.worlds import CachedWorld


@dataclass
class DRSample:
    """One episode's perturbations."""

    view: View
    """Camera offsets and light."""
    rgba: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    """Node id -> colour."""
    friction: dict[str, float] = field(default_factory=dict)
    """Node id -> lateral friction."""
    mass_scale: dict[str, float] = field(default_factory=dict)
    """Node id -> mass (and inertia) scale."""

    def to_dict(self) -> dict:
        """JSON-ready summary (for ``info``)."""
        li = self.view.light
        return {"eye_offset": [round(float(v), 5) for v in self.view.eye_offset],
                "target_offset": [round(float(v), 5) for v in self.view.target_offset],
                "light_direction": [round(float(v), 5) for v in li.direction],
                "light_ambient": round(li.ambient, 5), "light_diffuse": round(li.diffuse, 5),
                "friction": {k: round(v, 5) for k, v in self.friction.items()},
                "mass_scale": {k: round(v, 5) for k, v in self.mass_scale.items()}}


def _light(base: Light, rng: np.random.Generator, cfg: DRConfig) -> Light:
    d = np.asarray(base.direction, dtype=float)
    d = d / max(np.linalg.norm(d), 1e-9)
    az, el = math.atan2(d[1], d[0]), math.asin(float(np.clip(d[2], -1, 1)))
    u = rng.uniform(-1, 1, 3)
    amp = math.radians(cfg.amplitude("light_direction"))
    az += amp * u[0]
    el = float(np.clip(el + 0.5 * amp * u[1], math.radians(15), math.radians(89)))
    direction = (math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el))
    s = 1.0 + cfg.amplitude("light_intensity") * u[2]
    return Light(direction=tuple(float(v) for v in direction), color=base.color,
                 ambient=float(min(1.0, base.ambient * s)), diffuse=float(min(1.0, base.diffuse * s)),
                 specular=base.specular)


def sample(entry: CachedWorld, cfg: DRConfig, rng: np.random.Generator) -> DRSample:
    """Draw one episode's perturbations for a cached world."""
    world = entry.world
    base = nominal_view(world)
    light = _light(base.light, rng, cfg)
    cam = rng.uniform(-1, 1, 6)
    w = cfg.weight("camera_pose")
    view = View(cam[:3] * cfg.camera_position * w, cam[3:] * cfg.camera_target * w, light)
    out = DRSample(view)
    support = world.scene.graph.support_id
    for n in sorted(entry.nominal):
        nom = entry.nominal[n]
        u = rng.uniform(-1, 1, 5)
        amp = cfg.amplitude("table_color" if n == support else "object_color")
        rgb = np.clip(np.asarray(nom["rgba"][:3]) + amp * u[:3], 0.0, 1.0)
        out.rgba[n] = (*(float(v) for v in rgb), float(nom["rgba"][3]))
        if n != support:
            out.friction[n] = float(nom["friction"] * (1.0 + cfg.amplitude("friction") * u[3]))
            out.mass_scale[n] = float(1.0 + cfg.amplitude("mass") * u[4])
    return out


def apply(entry: CachedWorld, s: DRSample) -> None:
    """Set the sample's colours and dynamics in the world (from nominal values)."""
    import pybullet as p

    world = entry.world
    c = world.client
    for n, rgba in s.rgba.items():
        p.changeVisualShape(world.body_of[n], -1, rgbaColor=list(rgba), physicsClientId=c)
    for n, fr in s.friction.items():
        nom = entry.nominal[n]
        k = s.mass_scale.get(n, 1.0)
        p.changeDynamics(world.body_of[n], -1, lateralFriction=fr, mass=nom["mass"] * k,
                         localInertiaDiagonal=[v * k for v in nom["inertia"]], physicsClientId=c)
    entry.randomized = True


def restore(entry: CachedWorld) -> None:
    """Put the nominal colours and dynamics back (after a randomized episode)."""
    import pybullet as p

    if not entry.randomized:
        return
    world = entry.world
    c = world.client
    support = world.scene.graph.support_id
    for n, nom in entry.nominal.items():
        p.changeVisualShape(world.body_of[n], -1, rgbaColor=list(nom["rgba"]), physicsClientId=c)
        if n != support:
            p.changeDynamics(world.body_of[n], -1, lateralFriction=nom["friction"], mass=nom["mass"],
                             localInertiaDiagonal=list(nom["inertia"]), physicsClientId=c)
    entry.randomized = False
