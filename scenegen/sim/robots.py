"""The robot registry: name -> :class:`RobotSpec` (URDF, joints, home pose, gripper, reach).

Robots are data, not code paths: every consumer (layout, world, RL expert) reads the spec.
The Franka Panda shipped with ``pybullet_data`` is registered as ``"panda"`` (the default);
``"bimanual_panda"`` is two Pandas side by side on one bench (composed into one URDF on first
use, see :mod:`scenegen.sim.robot_urdf`), each arm a spec of its own in :attr:`RobotSpec.arms`;
register your own URDF robot with :func:`register_robot`. :func:`get_robot` checks the
catalog against the robot's gripper the first time a robot is looked up: every graspable
category must fit between the open fingers at every size it can be drawn at.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import ConfigError
from scenegen.rotations import quat_matrix, quat_mul
from scenegen.scene import Pose
from scenegen.sim.robot_urdf import Mount, compose_urdf

DEFAULT_ROBOT = "panda"


@dataclass(frozen=True)
class RobotSpec:
    """Everything the toolkit needs to know about one robot arm with a parallel gripper."""

    name: str
    """Registry name, e.g. ``"panda"``."""
    urdf: str
    """URDF path: absolute, or relative to ``pybullet_data``."""
    ee_link: str
    """End-effector link (the grasp point between the fingers)."""
    arm_joints: tuple[str, ...]
    """Names of the arm's actuated joints, base to tip."""
    finger_joints: tuple[str, ...]
    """Names of the gripper's finger joints."""
    home: tuple[float, ...]
    """Home positions of ``arm_joints`` then ``finger_joints`` (rad or m)."""
    max_opening: float
    """Maximum distance between the fingers (m)."""
    reach_min: float = 0.3
    """Closest comfortable xy distance of a grasp point from the base (m)."""
    reach_max: float = 0.8
    """Farthest comfortable xy distance of a grasp point from the base (m)."""
    base_pose: Pose = field(default_factory=lambda: Pose((0.0, 0.0, 0.0)))
    """Pose of the robot base in the world (the base looks along +x)."""
    use_fixed_base: bool = True
    """Load the base fixed in the world."""
    camera_link: str | None = None
    """Link the wrist camera is attached to (defaults to ``ee_link``)."""
    wrist_eye: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Wrist camera position in the camera link's frame."""
    wrist_target: tuple[float, float, float] = (0.0, 0.0, 0.1)
    """Point the wrist camera looks at, in the camera link's frame."""
    wrist_up: tuple[float, float, float] = (1.0, 0.0, 0.0)
    """Wrist camera up vector in the camera link's frame."""
    base_clearance: float = 0.2
    """Radius (m) around the base kept free of objects."""
    arms: tuple[RobotSpec, ...] = ()
    """The arms of a multi-arm robot, each a spec naming its own joints, links, home, reach and wrist camera,
    its ``base_pose`` being its mount in the robot's base frame; the robot's own ``arm_joints``,
    ``finger_joints`` and ``home`` then list every arm's, in arm order. () for a single arm (the robot itself)."""

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ConfigError(f"RobotSpec.name = {self.name!r} must be a non-empty identifier")
        if len(self.home) != len(self.arm_joints) + len(self.finger_joints):
            raise ConfigError(f"robot {self.name}: home has {len(self.home)} values but there are "
                              f"{len(self.arm_joints)} arm + {len(self.finger_joints)} finger joints")
        if not all(math.isfinite(v) for v in self.home):
            raise ConfigError(f"robot {self.name}: home {self.home} must be finite numbers")
        if not 0 <= self.reach_min < self.reach_max:
            raise ConfigError(f"robot {self.name}: reach band [{self.reach_min}, {self.reach_max}] must "
                              "satisfy 0 <= reach_min < reach_max")
        if self.max_opening <= 0:
            raise ConfigError(f"robot {self.name}: max_opening = {self.max_opening} must be > 0")
        if not self.arm_joints:
            raise ConfigError(f"robot {self.name}: arm_joints is empty; name the arm's joints")
        if self.base_clearance < 0:
            raise ConfigError(f"robot {self.name}: base_clearance = {self.base_clearance} must be >= 0")
        if self.arms:
            arm_j = tuple(j for a in self.arms for j in a.arm_joints)
            fin_j = tuple(j for a in self.arms for j in a.finger_joints)
            home = tuple(v for a in self.arms for v in a.home_arm) + tuple(v for a in self.arms for v in a.home_fingers)
            if (arm_j, fin_j, home) != (self.arm_joints, self.finger_joints, tuple(self.home)) \
                    or len({a.name for a in self.arms}) != len(self.arms) or any(a.arms for a in self.arms):
                raise ConfigError(f"robot {self.name}: arm_joints, finger_joints and home must list its arms' "
                                  "(distinct names, one level) in arm order; build it with multi_arm()")

    @property
    def arm_specs(self) -> tuple[RobotSpec, ...]:
        """The arms: :attr:`arms`, or the robot itself when it has one arm."""
        return self.arms or (self,)

    @property
    def home_arm(self) -> tuple[float, ...]:
        """Home positions of the arm joints."""
        return self.home[: len(self.arm_joints)]

    @property
    def home_fingers(self) -> tuple[float, ...]:
        """Home positions of the finger joints."""
        return self.home[len(self.arm_joints):]

    @property
    def wrist_link(self) -> str:
        """The link the wrist camera rides on."""
        return self.camera_link or self.ee_link

    def urdf_path(self) -> Path:
        """Absolute URDF path (relative paths resolve inside ``pybullet_data``).

        Raises:
            ConfigError: the file does not exist.

        """
        p = Path(self.urdf)
        if not p.is_absolute():
            import pybullet_data

            p = Path(pybullet_data.getDataPath()) / p
        if not p.is_file():
            raise ConfigError(f"robot {self.name}: URDF {p} does not exist; fix RobotSpec.urdf")
        return p


PANDA = RobotSpec(
    name="panda",
    urdf="franka_panda/panda.urdf",
    ee_link="panda_grasptarget",
    arm_joints=tuple(f"panda_joint{i}" for i in range(1, 8)),
    finger_joints=("panda_finger_joint1", "panda_finger_joint2"),
    home=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.04, 0.04),
    max_opening=0.08,
    reach_min=0.3,
    reach_max=0.8,
    camera_link="panda_hand",
    wrist_eye=(0.06, 0.0, 0.02),
    wrist_target=(0.0, 0.0, 0.35),
    wrist_up=(1.0, 0.0, 0.0),
    base_clearance=0.2,
)

ROBOTS: dict[str, RobotSpec] = {PANDA.name: PANDA}
"""The registry: name -> spec."""


def arm_base(arm: RobotSpec, robot: RobotSpec, robot_base: Pose) -> Pose:
    """World pose of an arm's base: the robot's base for a single arm, else the arm's mount on it."""
    if arm is robot or not robot.arms:
        return robot_base
    rot = quat_matrix(robot_base.orientation)
    pos = np.asarray(robot_base.position, dtype=float) + rot @ np.asarray(arm.base_pose.position, dtype=float)
    return Pose(tuple(float(v) for v in pos), quat_mul(tuple(robot_base.orientation), tuple(arm.base_pose.orientation)))


def arm_reach(robot: RobotSpec, robot_base: Pose) -> list[tuple[np.ndarray, float, float, float]]:
    """Per arm: ``(base xy in the world, reach_min, reach_max, base_clearance)``."""
    return [(np.asarray(arm_base(a, robot, robot_base).position[:2], dtype=float), a.reach_min, a.reach_max,
             a.base_clearance) for a in robot.arm_specs]


def reaching_arms(robot: RobotSpec, robot_base: Pose, xy: object, scale: tuple[float, float] = (1.0, 1.0)) -> list[int]:
    """Indices of the arms whose reach band (scaled by ``scale``) holds the point ``xy``, nearest base first."""
    pt = np.asarray(xy, dtype=float)[:2]
    hits = [(float(np.linalg.norm(pt - b)), i) for i, (b, lo, hi, _) in enumerate(arm_reach(robot, robot_base))
            if scale[0] * lo <= float(np.linalg.norm(pt - b)) <= scale[1] * hi]
    return [i for _, i in sorted(hits)]


def multi_arm(name: str, arm: RobotSpec, mounts: dict[str, tuple[float, float, float]], yaw: float = 0.0,
              reach: tuple[float, float] = (0.0, 1.2)) -> RobotSpec:
    """A robot of several copies of ``arm`` on one bench: one composed URDF, each arm prefixed ``<label>_``.

    Args:
        name: the robot's registry name.
        arm: the single arm copied (its URDF's folder must hold its meshes).
        mounts: arm label (``"left"``) -> position (m) of that arm's base on the bench (robot base frame).
        yaw: turn of every arm about z (rad; 0: the arms look along +x, as the single arm does).
        reach: the robot's own reach band about its base (the arms' bands are what the layout and expert use).

    Raises:
        ConfigError: bad labels or an unreadable arm URDF.

    """
    if not mounts or not all(k.isidentifier() for k in mounts):
        raise ConfigError(f"robot {name}: arm labels {list(mounts)} must be identifiers")
    urdf = compose_urdf(name, tuple(Mount(arm.urdf_path(), f"{k}_", xyz, yaw) for k, xyz in mounts.items()))
    orn = _yaw_quat(yaw)
    arms = []
    for k, xyz in mounts.items():
        cam = None if arm.camera_link is None else f"{k}_{arm.camera_link}"
        arms.append(RobotSpec(
            name=k, urdf=str(urdf), ee_link=f"{k}_{arm.ee_link}", arm_joints=tuple(f"{k}_{j}" for j in arm.arm_joints),
            finger_joints=tuple(f"{k}_{j}" for j in arm.finger_joints), home=arm.home, max_opening=arm.max_opening,
            reach_min=arm.reach_min, reach_max=arm.reach_max, base_pose=Pose(tuple(map(float, xyz)), orn),
            camera_link=cam, wrist_eye=arm.wrist_eye, wrist_target=arm.wrist_target, wrist_up=arm.wrist_up,
            base_clearance=arm.base_clearance))
    return RobotSpec(
        name=name, urdf=str(urdf), ee_link=arms[0].ee_link, arm_joints=tuple(j for a in arms for j in a.arm_joints),
        finger_joints=tuple(j for a in arms for j in a.finger_joints),
        home=tuple(v for a in arms for v in a.home_arm) + tuple(v for a in arms for v in a.home_fingers),
        max_opening=arm.max_opening, reach_min=reach[0], reach_max=reach[1], camera_link=arms[0].camera_link,
        wrist_eye=arm.wrist_eye, wrist_target=arm.wrist_target, wrist_up=arm.wrist_up, base_clearance=0.0,
        arms=tuple(arms))


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


BIMANUAL_MOUNT_Y = 0.3
"""The two Pandas of ``bimanual_panda`` stand this far (m) left and right of the robot base, looking along +x."""


def bimanual_panda() -> RobotSpec:
    """Two Pandas on one bench, ``left`` at y = +0.3 m and ``right`` at y = -0.3 m (like a YAM pair)."""
    return multi_arm("bimanual_panda", PANDA, {"left": (0.0, BIMANUAL_MOUNT_Y, 0.0),
                                               "right": (0.0, -BIMANUAL_MOUNT_Y, 0.0)})


FACTORIES: dict[str, Callable[[], RobotSpec]] = {"bimanual_panda": bimanual_panda}
"""Robots built (and registered) on first look-up: name -> factory."""


def register_robot(spec: RobotSpec, *, overwrite: bool = False) -> RobotSpec:
    """Add a robot to the registry and return it.

    Raises:
        ConfigError: the name is taken (pass ``overwrite=True`` to replace it).

    """
    if spec.name in ROBOTS and not overwrite and ROBOTS[spec.name] != spec:
        raise ConfigError(f"robot {spec.name!r} is already registered; pick another name or pass overwrite=True")
    ROBOTS[spec.name] = spec
    return spec


def get_robot(name: str | RobotSpec) -> RobotSpec:
    """Look a robot up by name (a spec is returned unchanged) and check the catalog against its gripper.

    Raises:
        ConfigError: no robot has that name (the message lists the registered ones).
        GripperError: a graspable catalog category does not fit the gripper (see :func:`check_gripper`).

    """
    if isinstance(name, RobotSpec):
        spec = name
    else:
        try:
            if name not in ROBOTS and name in FACTORIES:
                register_robot(FACTORIES[name]())
            spec = ROBOTS[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown robot {name!r}; registered robots: {', '.join(robot_names())} "
                              "(add yours with scenegen.sim.robots.register_robot)") from None
    check_gripper(spec)
    return spec


def check_gripper(spec: RobotSpec, catalog: Catalog | None = None) -> None:
    """Check every graspable category of the catalog against the robot's maximum opening (cached).

    Raises:
        GripperError: names the first category that does not fit, its size range and the opening.

    """
    _gripper_checked(catalog or load_catalog(), spec.name, float(spec.max_opening))


@functools.lru_cache(maxsize=64)
def _gripper_checked(catalog: Catalog, robot: str, opening: float) -> bool:
    catalog.check_gripper(opening, f"robot {robot!r}")
    return True


def robot_names() -> list[str]:
    """Names of the registered robots, sorted."""
    return sorted(set(ROBOTS) | set(FACTORIES))
