"""End-effector paths of one joint-position trajectory, driven in PyBullet and in MuJoCo (no tests here).

The reference is the toolkit's own PyBullet world (:class:`scenegen.sim.world.World`, the robot
loaded from its original URDF); each export drives the same joint targets in its consumer and
its end-effector path is compared with the reference.
"""

from __future__ import annotations

import math

import numpy as np

from scenegen.scene import Scene
from scenegen.sim.robots import get_robot

DURATION = 3.0
"""Trajectory length (s)."""
SAMPLE = 0.1
"""Sampling interval of the end-effector path (s)."""
AMPLITUDE = 0.3
"""Largest excursion (rad) of an arm joint from its home position."""
PATH_TOL = 0.01
"""Largest allowed distance (m) between two end-effector paths."""


def targets(scene: Scene, t: float) -> dict[str, float]:
    """Joint targets at time ``t``: a smooth out-and-back sweep of every arm joint, fingers at home.

    Each arm joint moves by ``(-1)^k AMPLITUDE sin^2(pi t / DURATION)``: it starts and ends at home
    with zero velocity, like a reach and return.
    """
    spec = get_robot(scene.robot)
    q = dict(zip((*spec.arm_joints, *spec.finger_joints), spec.home, strict=True))
    for k, name in enumerate(spec.arm_joints):
        q[name] += (-1) ** k * AMPLITUDE * math.sin(math.pi * min(t, DURATION) / DURATION) ** 2
    return q


def sample_times() -> np.ndarray:
    """Times at which paths are sampled."""
    return np.arange(0.0, DURATION + 1e-9, SAMPLE)


def pybullet_path(client: int, uid: int, scene: Scene, ee_link: str) -> np.ndarray:
    """Drive a PyBullet robot body along :func:`targets` with force-limited position motors; EE path (Nx3)."""
    import pybullet as p

    joints, ee = {}, -1
    for j in range(p.getNumJoints(uid, physicsClientId=client)):
        info = p.getJointInfo(uid, j, physicsClientId=client)
        joints[info[1].decode()] = (j, max(float(info[10]), 1.0))
        if info[12].decode() == ee_link:
            ee = j
    dt = p.getPhysicsEngineParameters(physicsClientId=client)["fixedTimeStep"]
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    out, t = [], 0.0
    for ts in sample_times():
        while t < ts - 1e-9:
            q = targets(scene, t + dt)
            names = [n for n in q if n in joints]
            p.setJointMotorControlArray(uid, [joints[n][0] for n in names], p.POSITION_CONTROL,
                                        targetPositions=[q[n] for n in names],
                                        forces=[joints[n][1] for n in names], physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            t += dt
        out.append(p.getLinkState(uid, ee, computeForwardKinematics=True, physicsClientId=client)[4])
    return np.asarray(out)


_REFERENCE: dict[str, np.ndarray] = {}


def reference_path(scene: Scene, lookup: dict) -> np.ndarray:
    """End-effector path of the trajectory in the toolkit's PyBullet world (objects settled; cached per scene)."""
    from scenegen.sim.world import World

    if scene.id not in _REFERENCE:
        with World.build(scene, lookup) as world:
            for node, pose in (scene.settled or {}).items():
                world.set_pose(node, pose)
            _REFERENCE[scene.id] = pybullet_path(world.client, world.robot_id, scene, get_robot(scene.robot).ee_link)
    return _REFERENCE[scene.id]


def mujoco_path(model, scene: Scene) -> np.ndarray:
    """Drive the exported MJCF robot along :func:`targets` (from its ``home`` keyframe); EE path (Nx3)."""
    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    acts = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a).removeprefix("robot/") for a in range(model.nu)]
    site = model.site("robot/ee").id
    out = []
    for ts in sample_times():
        while data.time < ts - 1e-9:
            q = targets(scene, data.time + model.opt.timestep)
            data.ctrl[:] = [q.get(n, data.ctrl[i]) for i, n in enumerate(acts)]
            mujoco.mj_step(model, data)
        mujoco.mj_kinematics(model, data)
        out.append(data.site_xpos[site].copy())
    return np.asarray(out)


def path_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Largest distance (m) between two paths sampled at the same times."""
    return float(np.linalg.norm(a - b, axis=1).max())
