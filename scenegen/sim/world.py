"""The PyBullet world of a :class:`~scenegen.scene.Scene`: build, settle, query, render.

Each :class:`World` owns its own physics client (DIRECT by default) and passes
``physicsClientId`` to every call, so several worlds coexist in one process. The world
holds the ground plane (``WorldConfig.ground_z`` below the table top, so objects knocked
off the table can be detected), the table, the robot at its home pose (fixed base, joints
held by position motors) and the objects from their URDFs with their physics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from scenegen.assets.base import Asset
from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.errors import AssetError, ConfigError
from scenegen.fileio import Closeable
from scenegen.geometry import link_pose, set_link_pose
from scenegen.scene import Pose, Scene
from scenegen.sim.robots import RobotSpec, arm_base, get_robot
from scenegen.validate import finite_fields

AssetLookup = dict[str, Asset] | Callable[[str], Asset]


@dataclass(frozen=True)
class ArmJoints:
    """One arm of the world's robot, by joint and link index (a single-arm robot has one, the robot itself)."""

    spec: RobotSpec
    """The arm's spec (the robot's own for a single arm)."""
    base: Pose
    """World pose of the arm's base."""
    arm_joints: tuple[int, ...]
    """Its arm joints' indices, base to tip."""
    finger_joints: tuple[int, ...]
    """Its finger joints' indices."""
    ee_link: int
    """Its end-effector link's index."""


@dataclass(frozen=True)
class WorldConfig:
    """Physics settings of a world."""

    timestep: float = 1.0 / 240.0
    """Seconds per physics step."""
    substeps: int = 1
    """Internal sub-steps per step."""
    solver_iterations: int = 50
    """Constraint solver iterations."""
    gravity: float = -9.81
    """Gravity along z (m/s^2)."""
    ground_z: float = -0.75
    """Height of the ground plane, relative to the table top."""
    rolling_friction: float = ROLLING_FRICTION
    """Rolling friction of every object (stops round objects rolling forever); the URDFs' value."""
    spinning_friction: float = SPINNING_FRICTION
    """Spinning friction of every object."""
    hold_robot: bool = True
    """Hold the robot's joints at home with position motors."""

    def __post_init__(self) -> None:
        finite_fields(self, strict=True)
        if not 0 < self.timestep <= 0.05:
            raise ConfigError(f"WorldConfig.timestep = {self.timestep} must be in (0, 0.05] s")
        if self.substeps < 1 or self.solver_iterations < 1:
            raise ConfigError(f"WorldConfig substeps ({self.substeps}) and solver_iterations "
                              f"({self.solver_iterations}) must be >= 1")
        if self.ground_z >= 0 or self.rolling_friction < 0 or self.spinning_friction < 0:
            raise ConfigError(f"WorldConfig: ground_z ({self.ground_z}) must be < 0 and frictions >= 0")


@dataclass
class SettleReport:
    """What :meth:`World.settle` did."""

    steps: int
    """Physics steps taken."""
    seconds: float
    """Simulated seconds."""
    at_rest: bool
    """Every object came to rest within the budget."""
    max_displacement: dict[str, float] = field(default_factory=dict)
    """Node id -> largest distance (m) its origin moved from the initial pose."""
    kinetic_energy: float = 0.0
    """Total kinetic energy (J) of the objects at the end."""
    moving: list[str] = field(default_factory=list)
    """Objects still moving at the end."""

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {"steps": self.steps, "seconds": self.seconds, "at_rest": self.at_rest,
                "max_displacement": dict(sorted(self.max_displacement.items())),
                "kinetic_energy": self.kinetic_energy, "moving": list(self.moving)}


def _resolve(lookup: AssetLookup, asset_id: str, node: str) -> Asset:
    try:
        asset = lookup(asset_id) if callable(lookup) else lookup[asset_id]
    except KeyError:
        raise AssetError(f"node {node}: asset {asset_id[:12]} is not in the asset lookup; "
                         "generate or load it first") from None
    if asset is None:
        raise AssetError(f"node {node}: asset {asset_id[:12]} could not be found")
    return asset


def disconnect(client: int) -> None:
    """Disconnect a PyBullet client; one already gone is ignored."""
    import pybullet as p

    try:
        p.disconnect(physicsClientId=client)
    except Exception:  # noqa: BLE001 - already disconnected
        pass


class World(Closeable):
    """A scene built into its own PyBullet client; use :meth:`build`, close with ``with`` or :meth:`close`."""

    def __init__(self, scene: Scene, assets: dict[str, Asset], client: int, robot: RobotSpec,
                 config: WorldConfig) -> None:
        import pybullet as p

        self._p = p
        self.scene = scene
        self.assets = assets
        """Node id -> Asset."""
        self.client = client
        self.robot = robot
        self.config = config
        self.body_of: dict[str, int] = {}
        """Node id -> body id."""
        self.node_of: dict[int, str] = {}
        """Body id -> node id."""
        self.ground_id = -1
        self.robot_id = -1
        self.joint_index: dict[str, int] = {}
        """Robot joint name -> joint index."""
        self.link_index: dict[str, int] = {}
        """Robot link name -> link index (the base link is -1)."""
        self.arm_joints: list[int] = []
        self.finger_joints: list[int] = []
        self.ee_link = -1
        self.arms: list[ArmJoints] = []
        """The robot's arms (one for a single-arm robot), in :attr:`RobotSpec.arm_specs` order."""
        self.time = 0.0

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, scene: Scene, asset_lookup: AssetLookup, gui: bool = False,
              config: WorldConfig | None = None) -> World:
        """Build ``scene`` into a new PyBullet client.

        Args:
            scene: the scene (initial poses are used).
            asset_lookup: asset id -> Asset, as a dict or a callable.
            gui: open the PyBullet GUI instead of a DIRECT client.
            config: physics settings.

        Raises:
            AssetError: an asset is missing.
            ConfigError: the robot is unknown or its URDF lacks a named joint or link.

        """
        import pybullet as p
        import pybullet_data

        cfg = config or WorldConfig()
        spec = get_robot(scene.robot)
        missing = sorted(n for n in scene.assets if n not in scene.poses)
        if missing:
            raise ConfigError(f"scene {scene.id[:12]}: no pose for node(s) {missing}; run the layout first")
        assets = {n: _resolve(asset_lookup, aid, n) for n, aid in sorted(scene.assets.items())}
        client = p.connect(p.GUI if gui else p.DIRECT)
        world = cls(scene, assets, client, spec, cfg)
        try:
            p.setPhysicsEngineParameter(fixedTimeStep=cfg.timestep, numSubSteps=cfg.substeps,
                                        numSolverIterations=cfg.solver_iterations,
                                        deterministicOverlappingPairs=1, physicsClientId=client)
            p.setGravity(0, 0, cfg.gravity, physicsClientId=client)
            world.ground_id = p.loadURDF(str(pybullet_data.getDataPath() + "/plane.urdf"),
                                         [0, 0, scene.table_height + cfg.ground_z], useFixedBase=True,
                                         physicsClientId=client)
            world._load_robot()
            support = scene.graph.support_id
            for n in sorted(assets):
                world._load_object(n, fixed=(n == support))
        except BaseException:
            p.disconnect(physicsClientId=client)
            raise
        return world

    def _load_robot(self) -> None:
        p, c, spec = self._p, self.client, self.robot
        base = self.scene.robot_base
        self.robot_id = p.loadURDF(str(spec.urdf_path()), base.position, base.orientation,
                                   useFixedBase=spec.use_fixed_base, physicsClientId=c)
        for j in range(p.getNumJoints(self.robot_id, physicsClientId=c)):
            info = p.getJointInfo(self.robot_id, j, physicsClientId=c)
            self.joint_index[info[1].decode()] = j
            self.link_index[info[12].decode()] = j
        self.link_index.setdefault(p.getBodyInfo(self.robot_id, physicsClientId=c)[0].decode(), -1)
        names = list(spec.arm_joints) + list(spec.finger_joints)
        absent = [n for n in names if n not in self.joint_index]
        absent += [n for a in spec.arm_specs for n in (a.ee_link, a.wrist_link) if n not in self.link_index]
        if absent:
            raise ConfigError(f"robot {spec.name}: {spec.urdf_path().name} has no joint/link {absent}; "
                              f"it has joints {sorted(self.joint_index)}")
        self.arm_joints = [self.joint_index[n] for n in spec.arm_joints]
        self.finger_joints = [self.joint_index[n] for n in spec.finger_joints]
        self.ee_link = self.link_index[spec.ee_link]
        self.arms = [ArmJoints(a, arm_base(a, spec, base), tuple(self.joint_index[n] for n in a.arm_joints),
                               tuple(self.joint_index[n] for n in a.finger_joints), self.link_index[a.ee_link])
                     for a in spec.arm_specs]
        self.reset_robot()

    def _load_object(self, node: str, fixed: bool) -> None:
        p, c = self._p, self.client
        asset, pose = self.assets[node], self.scene.poses[node]
        if not asset.urdf_path.is_file():
            raise AssetError(f"node {node}: URDF {asset.urdf_path} is missing; regenerate the asset")
        try:
            body = p.loadURDF(str(asset.urdf_path), pose.position, pose.orientation, useFixedBase=fixed,
                              flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=c)
        except p.error:
            raise AssetError(f"node {node}: PyBullet cannot load {asset.urdf_path} (a broken URDF or a missing "
                             "mesh); regenerate the asset") from None
        p.changeDynamics(body, -1, lateralFriction=asset.friction, restitution=asset.restitution,
                         rollingFriction=self.config.rolling_friction,
                         spinningFriction=self.config.spinning_friction, physicsClientId=c)
        self.body_of[node] = body
        self.node_of[body] = node

    # ------------------------------------------------------------------ lifecycle
    def _close(self) -> None:
        """Disconnect the client (:meth:`close` calls this once)."""
        client, self.client = self.client, -1
        disconnect(client)

    # ------------------------------------------------------------------ robot
    def reset_robot(self, positions: tuple[float, ...] | None = None) -> None:
        """Put the robot's arm and fingers at ``positions`` (default: home) and hold them there."""
        p, c = self._p, self.client
        q = tuple(positions if positions is not None else self.robot.home)
        joints = self.arm_joints + self.finger_joints
        if len(q) != len(joints):
            raise ConfigError(f"reset_robot: {len(q)} positions for {len(joints)} joints")
        for j, v in zip(joints, q, strict=True):
            p.resetJointState(self.robot_id, j, v, 0.0, physicsClientId=c)
        if self.config.hold_robot:
            forces = [max(p.getJointInfo(self.robot_id, j, physicsClientId=c)[10], 50.0) for j in joints]
            p.setJointMotorControlArray(self.robot_id, joints, p.POSITION_CONTROL, targetPositions=list(q),
                                        forces=forces, physicsClientId=c)

    def joint_positions(self) -> list[float]:
        """Current positions of the arm then finger joints."""
        states = self._p.getJointStates(self.robot_id, self.arm_joints + self.finger_joints,
                                        physicsClientId=self.client)
        return [s[0] for s in states]

    def link_pose(self, link: str) -> Pose:
        """World pose of a robot link (URDF link frame)."""
        idx = self.link_index[link]
        if idx < 0:
            pos, orn = self._p.getBasePositionAndOrientation(self.robot_id, physicsClientId=self.client)
        else:
            st = self._p.getLinkState(self.robot_id, idx, computeForwardKinematics=True,
                                      physicsClientId=self.client)
            pos, orn = st[4], st[5]
        return Pose(tuple(pos), tuple(orn))

    # ------------------------------------------------------------------ physics
    def step(self, n: int = 1) -> None:
        """Advance the simulation by ``n`` steps."""
        for _ in range(n):
            self._p.stepSimulation(physicsClientId=self.client)
        self.time += n * self.config.timestep

    def objects(self) -> list[str]:
        """Dynamic (non-support) node ids, sorted."""
        support = self.scene.graph.support_id
        return [n for n in sorted(self.body_of) if n != support]

    def settle(self, max_seconds: float = 2.0, lin_tol: float = 0.01, ang_tol: float = 0.1,
               min_seconds: float = 0.15, rest_seconds: float = 0.1) -> SettleReport:
        """Step until every object rests (bounded) and record the settled poses into ``scene.settled``.

        Args:
            max_seconds: simulated time budget.
            lin_tol: linear speed (m/s) under which an object counts as resting.
            ang_tol: angular speed (rad/s) under which an object counts as resting.
            min_seconds: always simulate at least this long (objects start at rest).
            rest_seconds: every object must rest this long in a row.

        """
        if max_seconds <= 0 or lin_tol <= 0 or ang_tol <= 0:
            raise ConfigError(f"settle: max_seconds ({max_seconds}), lin_tol ({lin_tol}) and ang_tol "
                              f"({ang_tol}) must be > 0")
        dt = self.config.timestep
        max_steps = max(1, math.ceil(max_seconds / dt))
        min_steps, need = math.ceil(min_seconds / dt), max(1, math.ceil(rest_seconds / dt))
        objs = self.objects()
        start = {n: np.asarray(self.pose(n).position) for n in objs}
        disp = dict.fromkeys(objs, 0.0)
        calm, steps, moving = 0, 0, list(objs)
        while steps < max_steps:
            self.step()
            steps += 1
            moving = []
            for n in objs:
                lin, ang = self.velocity(n)
                if np.linalg.norm(lin) > lin_tol or np.linalg.norm(ang) > ang_tol:
                    moving.append(n)
            calm = 0 if moving else calm + 1
            if steps % 8 == 0 or calm >= need:
                for n in objs:
                    disp[n] = max(disp[n], float(np.linalg.norm(np.asarray(self.pose(n).position) - start[n])))
            if calm >= need and steps >= min_steps:
                break
        self.scene.settled = self.poses()
        return SettleReport(steps, steps * dt, not moving, disp, self.kinetic_energy(), moving)

    def kinetic_energy(self) -> float:
        """Total kinetic energy (J) of the objects (translational + rotational about the principal axes)."""
        total = 0.0
        for n in self.objects():
            b = self.body_of[n]
            info = self._p.getDynamicsInfo(b, -1, physicsClientId=self.client)
            lin, ang = self.velocity(n)
            total += 0.5 * info[0] * float(lin @ lin) + 0.5 * float(np.dot(info[2], ang * ang))
        return total

    # ------------------------------------------------------------------ queries
    def pose(self, node: str) -> Pose:
        """Current asset-frame pose of a node."""
        return link_pose(self.client, self.body_of[node])

    def poses(self) -> dict[str, Pose]:
        """Current asset-frame poses of every node (table included)."""
        return {n: self.pose(n) for n in sorted(self.body_of)}

    def set_pose(self, node: str, pose: Pose) -> None:
        """Teleport a node (velocities are zeroed)."""
        b = self.body_of[node]
        set_link_pose(self.client, b, pose)
        self._p.resetBaseVelocity(b, [0, 0, 0], [0, 0, 0], physicsClientId=self.client)

    def velocity(self, node: str) -> tuple[np.ndarray, np.ndarray]:
        """Linear (m/s) and angular (rad/s) velocity of a node."""
        lin, ang = self._p.getBaseVelocity(self.body_of[node], physicsClientId=self.client)
        return np.asarray(lin), np.asarray(ang)

    def aabb(self, node: str) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounding box (min, max) of a node's collision geometry."""
        lo, hi = self._p.getAABB(self.body_of[node], physicsClientId=self.client)
        return np.asarray(lo), np.asarray(hi)

    def _body(self, key: str | int) -> int:
        if isinstance(key, int):
            return key
        if key == "robot":
            return self.robot_id
        return self.body_of[key]

    def contacts(self, a: str, b: str | None = None) -> list[tuple]:
        """PyBullet contact points of node ``a`` (with node ``b``, or with anything); ``"robot"`` names the robot."""
        self._p.performCollisionDetection(physicsClientId=self.client)
        kw = {} if b is None else {"bodyB": self._body(b)}
        return list(self._p.getContactPoints(bodyA=self._body(a), physicsClientId=self.client, **kw))

    def in_contact(self, a: str, b: str) -> bool:
        """True when nodes ``a`` and ``b`` touch."""
        return bool(self.contacts(a, b))

    def penetration(self, a: str, b: str) -> float:
        """Penetration depth (m, >= 0) between two nodes' collision geometry."""
        pts = self._p.getClosestPoints(self._body(a), self._body(b), 0.0, physicsClientId=self.client)
        return max(0.0, -min((c[8] for c in pts), default=0.0))

    def max_penetration(self) -> tuple[float, tuple[str, str] | None]:
        """Deepest penetration between any two nodes (the table included) and the pair."""
        nodes = sorted(self.body_of)
        worst, pair = 0.0, None
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                d = self.penetration(a, b)
                if d > worst:
                    worst, pair = d, (a, b)
        return worst, pair

    # ------------------------------------------------------------------ rendering (see scenegen.sim.camera)
    def node_mask(self, seg: np.ndarray, node: str) -> np.ndarray:
        """Boolean mask of the pixels showing ``node`` in a segmentation image."""
        return seg == self._body(node)
