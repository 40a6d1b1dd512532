"""The robot registry: name -> :class:`RobotSpec` (URDF, joints, home pose, gripper, reach).

Robots are data, not code paths: every consumer (layout, world, RL expert) reads the spec.
The Franka Panda shipped with ``pybullet_data`` is registered as ``"panda"`` (the default);
register your own URDF robot with :func:`register_robot`. :func:`get_robot` checks the
catalog against the robot's gripper the first time a robot is looked up: every graspable
category must fit between the open fingers at every size it can be drawn at.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import ConfigError
from scenegen.scene import Pose

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
            spec = ROBOTS[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown robot {name!r}; registered robots: {', '.join(sorted(ROBOTS))} "
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
    return sorted(ROBOTS)
