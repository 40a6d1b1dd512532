"""Reachability check: IK reaches pre-grasp and place poses, grasps fit the gripper, the expert's grasps work.

Each target's grasp width must fit the gripper, and the expert's own grasp of each target it
picks up must lie in its reach band and leave the open gripper clear of the neighbours (a lying bottle's
pinch may be blocked where the expert clears it first: a push it plans, or a neighbour that is itself a goal's
subject and goes before or after it, :mod:`scenegen.tasks.blocked`).

For each pose, PyBullet's ``calculateInverseKinematics`` (with joint limits and the home
pose as rest pose) is called, its solution is set on the joints (clipped to the limits)
and the end-effector link's pose is read back: the pose counts as reached when the
position error and the tilt of the approach axis are within tolerance. The orientation
asked for is the end effector's home orientation (top-down for the Panda) turned by
the object's yaw (or by 90 degrees more, or not at all: the first grasp yaw that works).
The simulator state is restored afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from qa.checks._common import join_failures, preserved, task_nodes
from qa.config import QAConfig, ReachabilityConfig
from qa.result import CheckResult
from scenegen.layout.place import place_point
from scenegen.relations import box_center, z_range
from scenegen.rotations import axis_angle_quat, quat_matrix, quat_mul, yaw_of
from scenegen.scene import Pose, Scene
from scenegen.tasks.blocked import blocked_lying, push_plan
from scenegen.tasks.clearance import blocker
from scenegen.tasks.flip import flip_grasp_width
from scenegen.tasks.plan import plan_grasp
from scenegen.tasks.precheck import out_of_reach

NAME = "reachability"


class _Arm:
    """The robot's movable joints, their limits and one arm's home end-effector pose (arm 0: a single arm)."""

    def __init__(self, world: Any, arm: int = 0) -> None:
        p, c, r = world._p, world.client, world.robot_id
        self.ee_link = world.arms[arm].ee_link if getattr(world, "arms", None) else world.ee_link
        self.ee_name = world.robot.arm_specs[arm].ee_link
        self.p, self.c, self.r, self.world = p, c, r, world
        self.movable: list[int] = []
        lo, hi = [], []
        for j in range(p.getNumJoints(r, physicsClientId=c)):
            info = p.getJointInfo(r, j, physicsClientId=c)
            if info[2] == p.JOINT_FIXED:
                continue
            self.movable.append(j)
            a, b = float(info[8]), float(info[9])
            if b <= a:  # continuous joint
                a, b = -2 * math.pi, 2 * math.pi
            lo.append(a)
            hi.append(b)
        self.lo, self.hi = np.array(lo), np.array(hi)
        home = dict(zip(world.arm_joints + world.finger_joints, world.robot.home, strict=True))
        self.rest = [float(home.get(j, 0.0)) for j in self.movable]
        self.set(self.rest)
        self.home_orn = world.link_pose(self.ee_name).orientation
        self.home_axis = quat_matrix(self.home_orn)[:, 2]

    def set(self, q: list[float]) -> None:
        qs = np.clip(np.asarray(q, dtype=float), self.lo, self.hi)
        for j, v in zip(self.movable, qs, strict=True):
            self.p.resetJointState(self.r, j, float(v), 0.0, physicsClientId=self.c)

    def reach(self, pos: np.ndarray, yaw: float, rc: ReachabilityConfig) -> dict:
        """Reach ``pos`` top-down at the first grasp yaw that works, else return the closest miss.

        The yaws tried suit a parallel gripper: ``yaw``, ``yaw + 90 deg`` and 0, each folded into +-90 deg.
        """
        return _first_or_closest(self._solve(pos, _fold(c), rc) for c in (yaw, yaw + math.pi / 2, 0.0))

    def _solve(self, pos: np.ndarray, yaw: float, rc: ReachabilityConfig) -> dict:
        """Solve IK for ``pos`` with the home orientation turned by ``yaw``; return the errors."""
        p, w = self.p, self.world
        orn = quat_mul(axis_angle_quat((0.0, 0.0, 1.0), yaw), self.home_orn)
        self.set(self.rest)
        err, ang = float("inf"), 180.0
        for _ in range(rc.ik_restarts):
            q = p.calculateInverseKinematics(
                self.r, self.ee_link, [float(x) for x in pos], list(orn), lowerLimits=self.lo.tolist(),
                upperLimits=self.hi.tolist(), jointRanges=(self.hi - self.lo).tolist(), restPoses=self.rest,
                maxNumIterations=rc.ik_iterations, residualThreshold=1e-5, physicsClientId=self.c)
            self.set(list(q))
            got = w.link_pose(self.ee_name)
            err = float(np.linalg.norm(np.asarray(got.position) - pos))
            axis = quat_matrix(got.orientation)[:, 2]
            ang = math.degrees(math.acos(float(np.clip(axis @ self.home_axis, -1.0, 1.0))))
            if err <= rc.position_tol and ang <= rc.orientation_tol_deg:
                break
        ok = err <= rc.position_tol and ang <= rc.orientation_tol_deg
        return {"position": [round(float(x), 4) for x in pos], "yaw_deg": round(math.degrees(yaw), 1), "error": err,
                "tilt_deg": ang, "reached": ok}


class _Arms:
    """Every arm of the robot: a pose is reached when some arm reaches it (the nearest arm's miss otherwise)."""

    def __init__(self, world: Any) -> None:
        self.arms = [_Arm(world, i) for i in range(len(getattr(world, "arms", ()) or [0]))]
        self.labels = [a.name for a in world.robot.arm_specs]

    def reach(self, pos: np.ndarray, yaw: float, rc: ReachabilityConfig) -> dict:
        """The first arm's reach of ``pos`` that succeeds, else the closest miss (``arm`` names it, several arms)."""
        if len(self.arms) == 1:
            return self.arms[0].reach(pos, yaw, rc)
        return _first_or_closest({**arm.reach(pos, yaw, rc), "arm": label}
                                 for label, arm in zip(self.labels, self.arms, strict=True))


def _first_or_closest(tries: Iterator[dict]) -> dict:
    """The first try that reached its pose (later ones are not run), else the one with the smallest error."""
    best: dict | None = None
    for res in tries:
        if res["reached"]:
            return res
        if best is None or res["error"] < best["error"]:
            best = res
    assert best is not None
    return best


def _fold(yaw: float) -> float:
    """The same parallel-jaw grasp yaw within [-90, 90) degrees (the jaws are symmetric)."""
    return (yaw + math.pi / 2) % math.pi - math.pi / 2


def _yaw(pose: Pose) -> float:
    m = quat_matrix(pose.orientation)
    return math.atan2(m[1, 0], m[0, 0])


def _place_point(world: Any, scene: Scene, subj: str, pred: str, obj: str, rc: ReachabilityConfig) -> np.ndarray:
    poses = world.poses()
    se, oe = world.assets[subj].extents, world.assets[obj].extents
    oc = box_center(poses[obj], oe)
    height = float(se[2])
    if pred in ("on", "in"):
        top = z_range(poses[obj], oe)[1]
        return np.array([oc[0], oc[1], top + height + rc.place_height])
    xy = place_point(pred, oc, oe, se)
    return np.array([xy[0], xy[1], scene.table_height + height + rc.place_height])


def _expert_grasp(world: Any, scene: Scene, t: str, home_yaw: float,
                  picked: set[str]) -> tuple[dict, list[str]]:
    """The expert's own grasp of target ``t`` (:func:`~scenegen.tasks.plan.plan_grasp`) and why it fails, if it does.

    It fails when its point is outside the band the expert attempts (the expert's own test,
    :func:`~scenegen.tasks.precheck.out_of_reach`) or the open gripper would come down on a neighbour
    (:func:`~scenegen.tasks.clearance.blocker`, the hand allowed to graze one), unless ``t`` lies on its side and
    the expert clears that neighbour first as its skill does (:func:`~scenegen.tasks.blocked.maybe_push`): the
    neighbour is another goal's subject (in ``picked``), or a push of ``t`` clears the pinch
    (:func:`~scenegen.tasks.blocked.push_plan`). Multi-arm robots are left to the IK poses (the bimanual expert
    picks the arm).
    """
    opening = float(world.robot.max_opening)
    g = plan_grasp(world, t, opening, home_yaw)
    row = {"object": t, "point": [round(float(x), 4) for x in g.point], "yaw_deg": round(math.degrees(g.yaw), 1),
           "mode": g.mode}
    why = []
    if not world.robot.arms and (d := out_of_reach(world.robot, scene.robot_base.position, g.point)) is not None:
        why.append(f"out of reach: the expert's grasp of {t} is {d:.2f} m from the robot base")
    if (n := blocker(world, t, g.point, g.yaw, opening, hand=False)) is not None:
        lying = not world.robot.arms and blocked_lying(world, t, g.point, g.yaw) is not None
        if lying and n in picked - {t}:
            row["cleared_by"] = f"{n}'s own goal"
        elif lying and push_plan(world, t, g.point, g.yaw, home_yaw) is not None:
            row["cleared_by"] = "a push"
        else:
            why.append(f"grasp blocked: the open gripper on {t} would come down on {n}")
    row["ok"] = not why
    return row, why


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Check that the robot can reach above each target and each goal's place pose, and grip each target.

    Args:
        scene: the scene (roles and goals).
        world: the settled world; its state is restored afterwards.
        cfg: QA settings (``cfg.reachability``).

    Returns:
        A :class:`CheckResult`; ``metrics["poses"]`` lists every pose tried with its IK error and
        tilt, ``metrics["grasp"]`` every target's grasp width against the gripper's opening and
        ``metrics["expert_grasp"]`` the expert's planned grasp of every target it picks up.

    """
    rc = cfg.reachability
    targets, _ = task_nodes(scene)
    targets = [t for t in targets if t in world.body_of and t != scene.graph.support_id]
    failures: list[str] = []
    poses_out: list[dict] = []
    grasp_out: list[dict] = []
    expert_out: list[dict] = []
    expert_failures: list[str] = []  # reported after the IK poses'
    opening = float(world.robot.max_opening)
    picked = {g.subject for g in scene.graph.goals if not g.is_state}  # state goals go to the flip skill
    with preserved(world):
        arm = _Arms(world)
        current = world.poses()
        home_yaw = yaw_of(arm.arms[0].home_orn)
        for t in targets:
            if t in picked:
                row, why = _expert_grasp(world, scene, t, home_yaw, picked)
                expert_out.append(row)
                expert_failures.extend(why)
            ext = world.assets[t].extents
            c = box_center(current[t], ext)
            top = z_range(current[t], ext)[1]
            res = arm.reach(np.array([c[0], c[1], top + rc.pregrasp_height]), _yaw(current[t]), rc)
            res.update({"kind": "pre-grasp", "object": t})
            poses_out.append(res)
            if not res["reached"]:
                failures.append(f"out of reach: pre-grasp above {t} (IK misses by {res['error'] * 100:.1f} cm, "
                                f"tilt {res['tilt_deg']:.0f} deg; tol {rc.position_tol * 100:.1f} cm)")
            grasp = world.assets[t].grasp or {}
            width = float(grasp.get("width", min(ext[:2])))
            flip_width = flip_grasp_width(world, t, scene.graph.goals)  # a flip pinches a handle or a lying bottle
            width = width if flip_width is None else flip_width
            fits = width + rc.width_margin <= opening
            grasp_out.append({"object": t, "mode": grasp.get("mode", "top"), "width": width,
                              "max_opening": opening, "fits": fits})
            if not fits:
                failures.append(f"too wide to grasp: {t} is {width * 100:.1f} cm across its grasp, the gripper "
                                f"opens {opening * 100:.1f} cm (margin {rc.width_margin * 100:.1f} cm)")
        for goal in scene.graph.goals:
            if goal.object is None or goal.predicate == "far_from" or goal.subject not in world.body_of \
                    or goal.object not in world.body_of:
                continue
            pos = _place_point(world, scene, goal.subject, goal.predicate, goal.object, rc)
            res = arm.reach(pos, _yaw(current[goal.object]), rc)
            res.update({"kind": "place", "object": goal.object, "goal": f"{goal.subject} {goal.predicate} "
                        f"{goal.object}"})
            poses_out.append(res)
            if not res["reached"]:
                failures.append(f"out of reach: place pose for {res['goal']} (IK misses by "
                                f"{res['error'] * 100:.1f} cm, tilt {res['tilt_deg']:.0f} deg)")
    failures.extend(expert_failures)
    n = len(poses_out) + len(grasp_out) + len(expert_out)
    good = sum(r["reached"] for r in poses_out) + sum(g["fits"] for g in grasp_out) + sum(
        e["ok"] for e in expert_out)
    return CheckResult(NAME, not failures, good / n if n else 1.0, join_failures(failures),
                       {"poses": poses_out, "grasp": grasp_out, "expert_grasp": expert_out,
                        "max_error": max((r["error"] for r in poses_out), default=0.0)})
