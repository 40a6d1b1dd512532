"""End-effector control: action -> commanded pose -> inverse kinematics -> joint position motors.

The controller keeps a *commanded* end-effector pose that each action moves by at most
``max_delta`` metres and ``max_yaw_delta`` / ``max_tilt_delta`` radians, clipped to the
workspace; PyBullet's inverse kinematics (with joint limits and the home pose as rest pose for
the null space) turns it into arm joint targets that position motors track for ``substeps``
physics steps.

Two action modes (:data:`ACTION_MODES`), every component in [-1, 1]:

- ``ee7`` (the default): ``(dx, dy, dz, droll, dpitch, dyaw, gripper)``. The translation is
  along the world (robot base) axes; the rotation ``Rz(dyaw) Ry(dpitch) Rx(droll)`` about the
  fixed world axes is applied to the commanded orientation from the left. The commanded
  orientation is kept as a *swing* (a tilt of the gripper's approach axis away from straight
  down, about a horizontal axis, at most ``max_tilt``) times a downward gripper turned by a
  *yaw* (within home yaw +- ``yaw_limit``): ``R = S(tilt) Rz(yaw) Rx(pi)``.
- ``ee5``: ``(dx, dy, dz, dyaw, gripper)``, the gripper always pointing down (no tilt).

``gripper > 0`` closes the fingers, ``<= 0`` opens them. A close below :data:`GENTLE_GRIP` is a gentle one:
the fingers move at most ``gripper`` m/s (the expert closes on light objects at 0.05), so the action alone says
how the fingers close and a policy trained on recorded actions can do the same; from :data:`GENTLE_GRIP` up
they close at full speed.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from scenegen.errors import ConfigError
from scenegen.fileio import Closeable
from scenegen.rotations import down_quat, matrix_to_quat, quat_matrix, rpy_to_matrix, yaw_of
from scenegen.sim.world import World, disconnect

ACTION_MODES: dict[str, tuple[str, ...]] = {
    "ee7": ("dx", "dy", "dz", "droll", "dpitch", "dyaw", "gripper"),
    "ee5": ("dx", "dy", "dz", "dyaw", "gripper"),
}
"""Action mode -> the names of its components, in order."""
DEFAULT_ACTION_MODE = "ee7"
ACTION_DIM = len(ACTION_MODES[DEFAULT_ACTION_MODE])
"""Size of the default (``ee7``) action."""
_DOWN = np.array([0.0, 0.0, -1.0])
_FREE_FINGERS = 1e9
"""Finger velocity clamp (m/s) that lifts a gentle close's clamp."""
GENTLE_GRIP = 0.5
"""Gripper commands in ``(0, GENTLE_GRIP)`` close the fingers at most that fast (m/s); from here up at full speed."""


def action_dim(mode: str) -> int:
    """Number of components of an action in ``mode``.

    Raises:
        ConfigError: unknown mode.

    """
    if mode not in ACTION_MODES:
        raise ConfigError(f"action mode {mode!r} is unknown; use one of {', '.join(ACTION_MODES)}")
    return len(ACTION_MODES[mode])


def wrap(angle: float) -> float:
    """Angle wrapped to [-pi, pi)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def check_action(action: object, mode: str = DEFAULT_ACTION_MODE, arms: int = 1) -> np.ndarray:
    """Validate an action of ``mode``: finite numbers in [-1, 1], one per component (of each of ``arms`` arms).

    Raises:
        ValueError: wrong shape, NaN/inf, or a value outside [-1, 1] (the message shows it).

    """
    names = ACTION_MODES[mode] if mode in ACTION_MODES else ()
    dim = action_dim(mode) * arms
    if arms > 1:
        names = (f"{arms} x ({', '.join(names)})",)
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"action {str(action)[:80]!r} is not {dim} numbers ({', '.join(names)})") from None
    if a.shape != (dim,):
        raise ValueError(f"action must have shape ({dim},) ({', '.join(names)}; action_mode {mode!r}), "
                         f"got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"action {a.tolist()} holds NaN or inf; the policy produced invalid numbers")
    if np.any(np.abs(a) > 1.0 + 1e-6):
        raise ValueError(f"action {np.round(a, 4).tolist()} is outside [-1, 1]; clip or squash the policy output")
    return np.clip(a, -1.0, 1.0)


def rotvec_matrix(v: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector (axis times angle, radians)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_rotvec(np.asarray(v, dtype=float)).as_matrix()


def matrix_rotvec(m: np.ndarray) -> np.ndarray:
    """Rotation vector (axis times angle, radians, angle <= pi) of a rotation matrix."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(np.asarray(m, dtype=float)).as_rotvec()


def swing_yaw(rot: np.ndarray) -> tuple[np.ndarray, float]:
    """Split a gripper orientation into its swing and yaw: ``rot = S Rz(yaw) Rx(pi)``.

    Returns the swing as a rotation vector about a horizontal axis (its norm is the tilt of the
    approach axis from straight down) and the yaw.
    """
    approach = np.asarray(rot, dtype=float)[:, 2]
    axis = np.cross(_DOWN, approach)
    s = float(np.linalg.norm(axis))
    tilt = math.atan2(s, float(np.clip(_DOWN @ approach, -1.0, 1.0)))
    swing = axis / s * tilt if s > 1e-12 else np.zeros(3)
    rest = rotvec_matrix(swing).T @ rot if s > 1e-12 else rot
    return swing, math.atan2(rest[1, 0], rest[0, 0])


def compose_orientation(swing: np.ndarray, yaw: float) -> np.ndarray:
    """The gripper orientation ``S Rz(yaw) Rx(pi)`` (3x3) of a swing rotation vector and a yaw."""
    down = quat_matrix(down_quat(yaw))
    return down if not np.any(swing) else rotvec_matrix(swing) @ down


def rotation_delta(action_rpy: np.ndarray, tilt_delta: float, yaw_delta: float) -> np.ndarray:
    """``Rz(dyaw) Ry(dpitch) Rx(droll)`` of an action's ``(droll, dpitch, dyaw)`` components."""
    r, p, y = (float(v) for v in action_rpy)
    return rpy_to_matrix((r * tilt_delta, p * tilt_delta, y * yaw_delta))


class IKTwin(Closeable):
    """A kinematic copy of a robot in its own PyBullet client, for accurate inverse kinematics.

    PyBullet's null-space IK leaves errors of several millimetres. The twin starts from the
    real robot's joint positions, solves, checks the solution by forward kinematics and
    shifts the IK target by the residual (a few rounds), without touching the real world.
    """

    def __init__(self, world: World) -> None:
        import pybullet as p

        self._p = p
        self.client = p.connect(p.DIRECT)
        base = world.scene.robot_base
        self.robot = p.loadURDF(str(world.robot.urdf_path()), base.position, base.orientation, useFixedBase=True,
                                physicsClientId=self.client)
        self.key = twin_key(world)

    def solve(self, dofs: list[int], q_now: list[float], ee_link: int, pos: np.ndarray,
              orn: tuple[float, float, float, float], ik_kwargs: dict, offset: np.ndarray,
              rounds: int = 3, tol: float = 5e-4) -> tuple[list[float], np.ndarray]:
        """Joint positions (every DoF) that put ``ee_link`` at ``pos``/``orn``, starting from ``q_now``.

        ``offset`` is the target shift that corrected the previous solve (a warm start: it changes
        slowly, so one IK round usually suffices); the new shift is returned with the solution.
        """
        p, c = self._p, self.client
        for j, v in zip(dofs, q_now, strict=True):
            p.resetJointState(self.robot, j, v, physicsClientId=c)
        want = np.asarray(pos, dtype=np.float64)
        shift = np.asarray(offset, dtype=np.float64)
        q: list[float] = list(q_now)
        for _ in range(rounds):
            q = list(p.calculateInverseKinematics(self.robot, ee_link, (want + shift).tolist(), orn,
                                                  physicsClientId=c, **ik_kwargs))
            for j, v in zip(dofs, q, strict=True):
                p.resetJointState(self.robot, j, v, physicsClientId=c)
            got = np.asarray(p.getLinkState(self.robot, ee_link, computeForwardKinematics=True,
                                            physicsClientId=c)[4])
            err = want - got
            if float(np.linalg.norm(err)) < tol:
                break
            shift = np.clip(shift + err, -0.05, 0.05)
        return q, shift

    def _close(self) -> None:
        """Disconnect the twin's client (:meth:`close` calls this once)."""
        client, self.client = self.client, -1
        disconnect(client)


def twin_key(world: World) -> tuple:
    """Worlds with equal keys can share one :class:`IKTwin`."""
    b = world.scene.robot_base
    return (str(world.robot.urdf_path()), tuple(b.position), tuple(b.orientation))


class ControlSettings(Protocol):
    """What :class:`ArmController` reads from its config (an :class:`~scenegen.tasks.config.EpisodeConfig`)."""

    action_mode: str
    workspace: tuple[float, float, float, float, float, float]
    max_delta: float
    max_yaw_delta: float
    max_tilt_delta: float
    max_tilt: float
    yaw_limit: float
    ik_iterations: int
    arm_gain: float
    finger_force: float

    @property
    def substeps(self) -> int: ...  # noqa: D102


class ArmController:
    """Commanded end-effector pose and gripper of one arm of a world's robot (see the module for the action modes).

    ``arm`` picks the arm of a multi-arm robot (:attr:`World.arms`; see
    :class:`scenegen.sim.multi_arm.MultiArmController`); a single-arm robot has arm 0, the robot itself.
    """

    def __init__(self, world: World, cfg: ControlSettings, twin: IKTwin | None = None, arm: int = 0) -> None:
        import pybullet as p

        self._p = p
        self.world = world
        self.cfg = cfg
        self.mode = getattr(cfg, "action_mode", DEFAULT_ACTION_MODE)
        self.dim = action_dim(self.mode)
        self.twin = twin
        if not 0 <= arm < len(world.arms):
            raise ConfigError(f"robot {world.robot.name} has {len(world.arms)} arm(s); arm {arm} does not exist")
        self.arm = world.arms[arm]
        self.arm_joints, self.finger_joints = list(self.arm.arm_joints), list(self.arm.finger_joints)
        self.ee_link = self.arm.ee_link
        c, rid = world.client, world.robot_id
        self.dofs = [j for j in range(p.getNumJoints(rid, physicsClientId=c))
                     if p.getJointInfo(rid, j, physicsClientId=c)[2] != p.JOINT_FIXED]
        missing = [j for j in world.arm_joints + world.finger_joints if j not in self.dofs]
        if missing:
            raise ConfigError(f"robot {world.robot.name}: joints {missing} are fixed; they cannot be controlled")
        infos = [p.getJointInfo(rid, j, physicsClientId=c) for j in self.dofs]
        self.lower = [i[8] for i in infos]
        self.upper = [i[9] for i in infos]
        self.ranges = [max(u - lo, 1e-3) for lo, u in zip(self.lower, self.upper, strict=True)]
        home = dict(zip(world.arm_joints + world.finger_joints, world.robot.home, strict=True))
        self.rest = [home.get(j, 0.0) for j in self.dofs]
        self.arm_idx = [self.dofs.index(j) for j in self.arm_joints]
        self.arm_forces = [max(p.getJointInfo(rid, j, physicsClientId=c)[10], 10.0) for j in self.arm_joints]
        self.finger_open = [float(self.upper[self.dofs.index(j)]) for j in self.finger_joints]
        self.finger_closed = [float(self.lower[self.dofs.index(j)]) for j in self.finger_joints]
        ws = cfg.workspace
        th = world.scene.table_height
        self.low = np.array([ws[0], ws[1], th + ws[2]])
        self.high = np.array([ws[3], ws[4], th + ws[5]])
        self.substeps = cfg.substeps
        self.home_pos = np.zeros(3)
        self.home_yaw = 0.0
        self.target_pos = np.zeros(3)
        self.target_yaw = 0.0
        self.target_swing = np.zeros(3)
        self.closed = False
        self.finger_speed: float | None = None
        """Largest finger speed (m/s) of this step's close (its gripper command, under :data:`GENTLE_GRIP`), or None."""
        self._finger_clamp = False
        self.reset()
        self.home_pos = self.target_pos.copy()
        self.home_yaw = self.target_yaw

    # ------------------------------------------------------------------ state
    def ee_pose(self) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """Actual end-effector position and orientation."""
        st = self._p.getLinkState(self.world.robot_id, self.ee_link, computeForwardKinematics=True,
                                  physicsClientId=self.world.client)
        return np.asarray(st[4], dtype=np.float64), tuple(st[5])

    def gripper_width(self) -> float:
        """Distance between the fingers (m)."""
        states = self._p.getJointStates(self.world.robot_id, self.finger_joints,
                                        physicsClientId=self.world.client)
        return float(sum(s[0] for s in states))

    @property
    def target_rotation(self) -> np.ndarray:
        """The commanded end-effector orientation (3x3): swing times a downward gripper at the yaw."""
        return compose_orientation(self.target_swing, self.target_yaw)

    @property
    def target_tilt(self) -> float:
        """Angle (rad) of the commanded approach axis from straight down."""
        return float(np.linalg.norm(self.target_swing))

    def reset(self) -> None:
        """Take the commanded pose from the robot's current (home) pose and open the gripper.

        The home gripper points down; its small tilt (if any) is dropped, so that every episode
        starts from the same commanded orientation.
        """
        pos, orn = self.ee_pose()
        self.target_pos = np.clip(pos, self.low, self.high)
        self.target_yaw = wrap(yaw_of(orn))
        self.target_swing = np.zeros(3)
        self.closed = False
        self.ik_offset = np.zeros(3)

    # ------------------------------------------------------------------ acting
    def _rotate(self, action: np.ndarray) -> None:
        """Move the commanded orientation by the action's rotation components, within the limits."""
        lo, hi = self.home_yaw - self.cfg.yaw_limit, self.home_yaw + self.cfg.yaw_limit
        if self.mode == "ee5":
            self.target_yaw = float(np.clip(self.target_yaw + float(action[3]) * self.cfg.max_yaw_delta, lo, hi))
            return
        if not np.any(action[3:5]) and not np.any(self.target_swing):  # a pure yaw: kept exact
            self.target_yaw = float(np.clip(self.target_yaw + float(action[5]) * self.cfg.max_yaw_delta, lo, hi))
            return
        rot = rotation_delta(action[3:6], self.cfg.max_tilt_delta, self.cfg.max_yaw_delta) @ self.target_rotation
        swing, yaw = swing_yaw(rot)
        # the yaw moves continuously from the last one (never across the band's ends)
        yaw = self.target_yaw + wrap(yaw - self.target_yaw)
        tilt = float(np.linalg.norm(swing))
        if tilt > self.cfg.max_tilt:
            swing = swing * (self.cfg.max_tilt / tilt)
        self.target_swing, self.target_yaw = swing, float(np.clip(yaw, lo, hi))

    def apply(self, action: np.ndarray) -> None:
        """Move the commanded pose by a validated action and simulate one control step."""
        self.command(action)
        self.world.step(self.substeps)

    def ik_kwargs(self) -> dict:
        """The inverse-kinematics settings of this arm (limits, ranges, rest pose, iterations), for its twin too."""
        return {"lowerLimits": self.lower, "upperLimits": self.upper, "jointRanges": self.ranges,
                "restPoses": self.rest, "maxNumIterations": self.cfg.ik_iterations, "residualThreshold": 1e-4}

    def command(self, action: np.ndarray) -> None:
        """Move the commanded pose by a validated action and set the arm's motors (no physics step)."""
        p, c, rid = self._p, self.world.client, self.world.robot_id
        self.target_pos = np.clip(self.target_pos + action[:3] * self.cfg.max_delta, self.low, self.high)
        self._rotate(action)
        self.closed = bool(action[-1] > 0)
        self.finger_speed = float(action[-1]) if 0 < action[-1] < GENTLE_GRIP else None
        kw = self.ik_kwargs()
        orn = down_quat(self.target_yaw) if not np.any(self.target_swing) else matrix_to_quat(self.target_rotation)
        if self.twin is not None:
            q_now = [s[0] for s in p.getJointStates(rid, self.dofs, physicsClientId=c)]
            q, self.ik_offset = self.twin.solve(self.dofs, q_now, self.ee_link, self.target_pos, orn, kw,
                                                self.ik_offset)
        else:
            q = p.calculateInverseKinematics(rid, self.ee_link, self.target_pos.tolist(), orn,
                                             physicsClientId=c, **kw)
        arm = [q[i] for i in self.arm_idx]
        p.setJointMotorControlArray(rid, self.arm_joints, p.POSITION_CONTROL, targetPositions=arm,
                                    forces=self.arm_forces, positionGains=[self.cfg.arm_gain] * len(arm),
                                    physicsClientId=c)
        fingers = self.finger_closed if self.closed else self.finger_open
        if self.finger_speed is None and not self._finger_clamp:
            p.setJointMotorControlArray(rid, self.finger_joints, p.POSITION_CONTROL, targetPositions=fingers,
                                        forces=[self.cfg.finger_force] * len(fingers), physicsClientId=c)
            return
        # PyBullet keeps a motor's velocity clamp until it is set again: a gentle close's clamp is lifted here
        speed = _FREE_FINGERS if self.finger_speed is None else self.finger_speed
        for j, t in zip(self.finger_joints, fingers, strict=True):
            p.setJointMotorControl2(rid, j, p.POSITION_CONTROL, targetPosition=t, force=self.cfg.finger_force,
                                    maxVelocity=speed, physicsClientId=c)
        self._finger_clamp = self.finger_speed is not None
