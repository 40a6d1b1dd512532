"""Configuration of a task episode: cameras, observations, arm control, task bookkeeping and worlds.

A frozen dataclass validated in ``__post_init__``; a bad value raises
:class:`~scenegen.errors.ConfigError` showing the value. The gymnasium env extends it with
domain randomization (:class:`rl.envs.config.EnvConfig`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from scenegen.errors import ConfigError
from scenegen.graph import Goal
from scenegen.sim.control import ACTION_MODES
from scenegen.sim.world import WorldConfig
from scenegen.validate import finite, int_in, is_finite

CAMERAS = ("front", "wrist", "wrist_left", "wrist_right")
"""Cameras an observation may hold (``wrist_left`` and ``wrist_right``: the two arms' of ``bimanual_panda``)."""
POINTCLOUD_BACKENDS = ("auto", "numpy", "open3d")
GOALS_PER_BUDGET = 4
"""An expert episode gets its step budget once per this many goals (a sort of 10 parts gets three)."""
GOAL_WEIGHTS = {"upright": 2}
"""How many goals a state goal of each predicate counts as in the step budget (others count one).

A flip (:mod:`scenegen.tasks.flip`) takes about twice a pick-and-place: measured with the scripted expert
(``benchmarks/seed_tasks.py``, seed 0), one mug flip alone takes 80-198 steps (mean 126, 12 scenes) and a
two-mug scene 248-397 (mean 341, 170 a goal), while a bottle put in a bin takes 68 steps alone and 87-100 a
goal in scenes of two to five.
"""


def goal_units(goals: int | Iterable[Goal]) -> int:
    """Goals as the step budget counts them: a number as it is, each goal of a list by :data:`GOAL_WEIGHTS`."""
    if isinstance(goals, int):
        return goals
    return sum(GOAL_WEIGHTS.get(g.predicate, 1) if g.is_state else 1 for g in goals)


def episode_budget(max_steps: int, goals: int | Iterable[Goal]) -> int:
    """The step budget of an episode of ``goals``: ``max_steps`` per :data:`GOALS_PER_BUDGET` goals begun.

    ``goals`` is a number of goals or the goals themselves, weighted by :data:`GOAL_WEIGHTS` (:func:`goal_units`).
    A function of the scene alone, so a scene's budget (and its expert episode) stays deterministic.
    """
    return int(max_steps) * max(1, math.ceil(goal_units(goals) / GOALS_PER_BUDGET))


def _default_world() -> WorldConfig:
    return WorldConfig(timestep=1.0 / 200.0, solver_iterations=20)


@dataclass(frozen=True)
class EpisodeConfig:
    """Settings of a task episode (:class:`~scenegen.tasks.episode.TaskEpisode`): cameras, control, task, worlds.

    The gymnasium env's :class:`~rl.envs.config.EnvConfig` adds domain randomization to these.
    """

    scene_ids: tuple[str, ...] | None = None
    """Scenes to draw from (ids or unique prefixes); None draws from every scene of the pack."""
    image_keys: tuple[str, ...] = ("front",)
    """Cameras rendered into the observation (``front``, ``wrist``; a two-arm robot has ``wrist_left`` and
    ``wrist_right`` instead of ``wrist``); () renders nothing."""
    image_size: int = 128
    """Side (pixels) of every camera image (square)."""
    pointcloud: bool = False
    """Add ``points``: a point cloud fused from the front camera's depth, cropped and downsampled."""
    privileged: bool = False
    """Add ``privileged``: the goals' subjects relative to the hand and their targets, heights, goals holding
    and progress (:mod:`scenegen.tasks.privileged`), for a critic; a policy must not read it."""
    pointcloud_points: int = 1024
    """Points in the cloud (sampled, or repeated when fewer remain)."""
    pointcloud_voxel: float = 0.01
    """Voxel size (m) of the downsampling."""
    pointcloud_backend: str = "auto"
    """``numpy``, ``open3d`` or ``auto`` (open3d when installed)."""
    paraphrase: bool = True
    """Draw each episode's instruction among the scene's paraphrases (seeded; reported in ``info``); False
    keeps the original prompt."""
    instruction_max_length: int = 256
    """Longest instruction text (longer ones are cut)."""
    action_mode: str = "ee7"
    """``ee7``: ``(dx, dy, dz, droll, dpitch, dyaw, gripper)``, the gripper may tilt; ``ee5``:
    ``(dx, dy, dz, dyaw, gripper)``, the gripper always points down (see :mod:`scenegen.sim.control`)."""
    control_hz: float = 20.0
    """Actions per simulated second; physics runs ``1 / (control_hz * world.timestep)`` substeps each."""
    max_delta: float = 0.02
    """End-effector translation (m) per step at action magnitude 1."""
    max_yaw_delta: float = 0.2
    """End-effector yaw change (rad) per step at action magnitude 1."""
    max_tilt_delta: float = 0.2
    """``ee7``: end-effector roll and pitch change (rad) per step at action magnitude 1."""
    max_tilt: float = 1.75
    """``ee7``: largest angle (rad) between the gripper's approach axis and straight down (100 deg)."""
    yaw_limit: float = 2.0
    """The commanded yaw stays within home yaw +- this (rad), inside the wrist joint's range."""
    workspace: tuple[float, float, float, float, float, float] = (0.2, -0.5, 0.005, 0.95, 0.5, 0.5)
    """Box ``(xmin, ymin, zmin, xmax, ymax, zmax)`` the commanded end effector stays in; z is above the table."""
    max_episode_steps: int = 200
    """Steps before an episode is truncated (``timeout``), per :data:`GOALS_PER_BUDGET` goals begun when
    ``steps_scale_with_goals`` (a sort of 10 parts gets three times this; a flip counts as :data:`GOAL_WEIGHTS`)."""
    steps_scale_with_goals: bool = True
    """Scale the episode's step limit with its scene's number of goals (:func:`episode_budget`)."""
    finger_force: float = 60.0
    """Force (N) of each finger's position motor."""
    finger_friction: float = 1.5
    """Lateral friction of the finger pads."""
    finger_stiffness: float = 3e5
    """Contact stiffness (N/m) of the finger pads (the Panda URDF's 3e4 lets a pinch squeeze through a thin
    handle)."""
    finger_damping: float = 3e3
    """Contact damping (N s/m) of the finger pads."""
    arm_gain: float = 0.3
    """Position gain of the arm's joint motors."""
    ik_iterations: int = 20
    """Iterations of PyBullet's inverse kinematics per solve (the twin's forward-kinematics check corrects the rest)."""
    ik_refine: bool = True
    """Refine inverse kinematics on a kinematic twin of the robot (millimetre accuracy; see control.IKTwin)."""
    light_robot: bool = True
    """Render a low-poly copy of the robot (same physics; see :mod:`scenegen.sim.light_robot`)."""
    sleeping: bool = True
    """Let objects at rest sleep (Bullet deactivation: the solver skips them until something touches them)."""
    render_max_faces: int = 600
    """Objects whose visual mesh has more triangles are drawn with a decimated copy that keeps their look (up to
    4x this budget when needed, or the mesh itself; 0 keeps every mesh; physics is unchanged, see
    :mod:`scenegen.sim.light_assets`)."""
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
    fresh_worlds: bool = True
    """Start every episode in a world no episode has run in (a used one is built again: 0.05-0.1 s on 2
    cores), so that an episode depends only on its seed and scene. Off, a used world is restored from its
    snapshot (1-2 ms), but Bullet's broadphase (which stale pairs it keeps, the order of its contact
    manifolds), which ``restoreState`` does not bring back, then carries over: objects fall asleep at other
    times and the episode drifts from a fresh one (see :meth:`scenegen.tasks.episode.TaskEpisode.reset`)."""

    def __post_init__(self) -> None:
        cls = type(self).__name__
        if self.scene_ids is not None:
            if isinstance(self.scene_ids, str) or not all(isinstance(s, str) and s for s in self.scene_ids):
                raise ConfigError(f"{cls}.scene_ids = {self.scene_ids!r} must be a list of scene ids")
            if not self.scene_ids:
                raise ConfigError(f"{cls}.scene_ids is empty; give at least one scene id or None for all")
            object.__setattr__(self, "scene_ids", tuple(self.scene_ids))
        keys = tuple(self.image_keys)
        if len(set(keys)) != len(keys) or any(k not in CAMERAS for k in keys):
            raise ConfigError(f"{cls}.image_keys = {self.image_keys!r} must be distinct names from {CAMERAS}")
        object.__setattr__(self, "image_keys", keys)
        ints = {"image_size": (8, 1024), "pointcloud_points": (1, 100_000), "instruction_max_length": (1, 10_000),
                "max_episode_steps": (1, 100_000), "ik_iterations": (1, 1000), "max_cached_worlds": (1, 1024),
                "render_max_faces": (0, 10_000_000)}
        for name, (lo, hi) in ints.items():
            int_in(f"{cls}.{name}", getattr(self, name), lo, hi)
        finite(f"{cls}.pointcloud_voxel", self.pointcloud_voxel, 1e-4, 1.0)
        finite(f"{cls}.control_hz", self.control_hz, 1.0, 1000.0)
        finite(f"{cls}.max_delta", self.max_delta, 1e-4, 0.2)
        finite(f"{cls}.max_yaw_delta", self.max_yaw_delta, 1e-4, 1.0)
        finite(f"{cls}.yaw_limit", self.yaw_limit, 0.1, math.pi)
        finite(f"{cls}.max_tilt_delta", self.max_tilt_delta, 1e-4, 1.0)
        finite(f"{cls}.max_tilt", self.max_tilt, 0.0, 2.5)
        if self.action_mode not in ACTION_MODES:
            raise ConfigError(f"{cls}.action_mode = {self.action_mode!r} must be one of {tuple(ACTION_MODES)}")
        finite(f"{cls}.finger_force", self.finger_force, 1.0, 1000.0)
        finite(f"{cls}.finger_friction", self.finger_friction, 0.0, 10.0)
        finite(f"{cls}.finger_stiffness", self.finger_stiffness, 1e3, 1e8)
        finite(f"{cls}.finger_damping", self.finger_damping, 1.0, 1e6)
        finite(f"{cls}.arm_gain", self.arm_gain, 0.01, 1.0)
        finite(f"{cls}.rest_speed", self.rest_speed, 1e-4, 10.0)
        finite(f"{cls}.knock_off_margin", self.knock_off_margin, 1e-3, 1.0)
        if self.pointcloud_backend not in POINTCLOUD_BACKENDS:
            raise ConfigError(f"{cls}.pointcloud_backend = {self.pointcloud_backend!r} must be one of "
                              f"{POINTCLOUD_BACKENDS}")
        ws = tuple(self.workspace)
        if len(ws) != 6 or not all(is_finite(v) for v in ws) \
                or not (ws[0] < ws[3] and ws[1] < ws[4] and 0 <= ws[2] < ws[5]):
            raise ConfigError(f"{cls}.workspace = {self.workspace!r} must be (xmin, ymin, zmin, xmax, ymax, "
                              "zmax) with min < max and 0 <= zmin")
        object.__setattr__(self, "workspace", tuple(float(v) for v in ws))
        if not isinstance(self.world, WorldConfig):
            raise ConfigError(f"{cls}.world = {self.world!r} must be a WorldConfig")
        ratio = 1.0 / (self.control_hz * self.world.timestep)
        if ratio < 1:
            raise ConfigError(f"{cls}.control_hz = {self.control_hz} is faster than physics "
                              f"({1 / self.world.timestep:.0f} Hz); lower it")

    @property
    def action_dim(self) -> int:
        """Components of one arm's action in :attr:`action_mode` (an episode's action holds one per arm)."""
        return len(ACTION_MODES[self.action_mode])

    @property
    def substeps(self) -> int:
        """Physics steps per control step."""
        return max(1, round(1.0 / (self.control_hz * self.world.timestep)))

    def replace(self, **changes: object) -> EpisodeConfig:
        """A validated copy with some fields changed."""
        return replace(self, **changes)


