"""Compose a Scene from a graph and its assets: layout, robot, cameras (framing the task zone) and lights.

:func:`build_scene` is what the pipeline calls per graph; it returns an unsettled
:class:`~scenegen.scene.Scene` whose ``id`` is its :meth:`~scenegen.scene.Scene.compute_id`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenegen.assets.base import Asset
from scenegen.errors import ConfigError
from scenegen.graph import SceneGraph
from scenegen.layout.config import LayoutConfig
from scenegen.layout.solver import solve_layout
from scenegen.scene import Light, Scene
from scenegen.sim.camera import DEFAULT_TASK_ZONE, FRAME_MARGIN, FRONT_ELEVATION_DEG, FRONT_FOV_DEG, default_cameras
from scenegen.sim.robots import DEFAULT_ROBOT, get_robot


@dataclass(frozen=True)
class SceneConfig:
    """How scenes are composed from graphs."""

    layout: LayoutConfig = field(default_factory=LayoutConfig)
    """Placement settings."""
    robot: str = DEFAULT_ROBOT
    """Registered robot name (see :mod:`scenegen.sim.robots`)."""
    image_width: int = 128
    """Camera image width (pixels)."""
    image_height: int = 128
    """Camera image height (pixels)."""
    front_fov_deg: float = FRONT_FOV_DEG
    """Vertical field of view of the front camera."""
    front_elevation_deg: float = FRONT_ELEVATION_DEG
    """Angle of the front camera's line of sight below the horizontal."""
    frame_margin: float = FRAME_MARGIN
    """The front camera frames the layout's task zone widened by this much (m) on every side."""
    wrist_fov_deg: float = 70.0
    """Vertical field of view of the wrist camera."""
    light_jitter: float = 0.2
    """Random perturbation of the light direction and intensity per scene (0 = fixed light)."""

    def __post_init__(self) -> None:
        if not isinstance(self.layout, LayoutConfig):
            raise ConfigError(f"SceneConfig.layout = {self.layout!r} must be a LayoutConfig")
        get_robot(self.robot)
        for name in ("image_width", "image_height"):
            v = getattr(self, name)
            if not (isinstance(v, int) and 8 <= v <= 2048):
                raise ConfigError(f"SceneConfig.{name} = {v!r} must be an int in 8..2048")
        for name in ("front_fov_deg", "wrist_fov_deg"):
            v = getattr(self, name)
            if not 10 <= v <= 120:
                raise ConfigError(f"SceneConfig.{name} = {v!r} must be within 10..120 degrees")
        if not 5 <= self.front_elevation_deg <= 89 or not 0 <= self.frame_margin <= 1:
            raise ConfigError(f"SceneConfig.front_elevation_deg = {self.front_elevation_deg!r} must be within 5..89 "
                              f"and frame_margin = {self.frame_margin!r} within 0..1")
        if not 0 <= self.light_jitter <= 1:
            raise ConfigError(f"SceneConfig.light_jitter = {self.light_jitter!r} must be within 0..1")


def _light(rng: np.random.Generator, jitter: float) -> Light:
    base = Light()
    if jitter <= 0:
        return base
    d = np.asarray(base.direction) + rng.uniform(-1, 1, 3) * jitter * np.array([1.0, 1.0, 0.3])
    d[2] = max(d[2], 0.3)
    d = d / np.linalg.norm(d)
    scale = 1.0 + rng.uniform(-0.5, 0.5) * jitter
    return Light(direction=tuple(round(float(v), 6) for v in d), color=base.color,
                 ambient=round(min(1.0, base.ambient * scale), 6), diffuse=round(min(1.0, base.diffuse * scale), 6),
                 specular=base.specular)


def build_scene(graph: SceneGraph, assets: dict[str, Asset], seed: int = 0,
                config: SceneConfig | None = None) -> Scene:
    """Lay out ``graph`` and return an unsettled Scene (id = ``compute_id()``).

    Args:
        graph: a valid scene graph.
        assets: node id -> asset for every node (the table included).
        seed: layout and light seed.
        config: composition settings.

    Raises:
        LayoutError: the objects cannot be placed so that every relation holds.
        ConfigError: the robot is unknown.

    """
    cfg = config or SceneConfig()
    spec = get_robot(cfg.robot)
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 4])
    layout_rng, light_rng = (np.random.default_rng(s) for s in ss.spawn(2))
    poses = solve_layout(graph, assets, layout_rng, cfg.layout, spec)
    cams = default_cameras(spec, cfg.layout.task_zone or DEFAULT_TASK_ZONE, cfg.layout.table_height, cfg.image_width,
                           cfg.image_height, cfg.front_fov_deg, cfg.wrist_fov_deg, cfg.front_elevation_deg,
                           cfg.frame_margin)
    scene = Scene(
        id="", graph=graph, assets={n: a.id for n, a in sorted(assets.items()) if n in graph},
        poses=poses, robot=spec.name, robot_base=spec.base_pose, table_height=cfg.layout.table_height,
        cameras=cams, lights=[_light(light_rng, cfg.light_jitter)], seed=int(seed),
    )
    scene.id = scene.compute_id()
    return scene
