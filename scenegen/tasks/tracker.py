"""Task progress from the simulator's state: goals (via :mod:`scenegen.relations`), rewards, failure flags.

A goal ``subject predicate object`` holds when the relation predicate holds on the
current poses and extents (``upright``/``inverted``/``lying`` goals use the state
predicates); with ``require_release`` the subject must also be at rest and untouched by
the fingers. Rewards are sparse: +1 the first time a goal holds in an episode, -1 for
each object newly knocked off the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scenegen.geometry import asset_geometry, transform_points
from scenegen.graph import Goal
from scenegen.relations import check_relation, state_holds
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig

FAILURES = ("grasp_failed", "dropped", "knocked_off", "wrong_object", "timeout")
"""Failure flags reported in ``info``."""


def hull_box(hull: np.ndarray, pose: Pose) -> tuple[Pose, tuple[float, float, float]]:
    """Axis-aligned world box of a posed convex hull, as an (upright pose, extents) pair.

    A tilted or rolled object's box from its pose and asset extents reaches below its real
    lowest point (a rolled apple's by centimetres); the hull's box does not.
    """
    pts = transform_points(hull, pose)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre = (lo + hi) / 2
    return Pose((float(centre[0]), float(centre[1]), float(lo[2]))), tuple(float(v) for v in hi - lo)


def goal_holds(goal: Goal, poses: dict[str, Pose], extents: dict[str, tuple[float, float, float]],
               hulls: dict[str, np.ndarray] | None = None) -> bool:
    """True when ``goal`` holds for these asset-frame poses and extents (no release condition).

    With ``hulls`` (node -> convex-hull vertices in the asset frame), a relation goal's subject is
    described by the world box of its hull (see :func:`hull_box`) instead of its posed extents.
    """
    if goal.is_state:
        return state_holds(goal.predicate, poses[goal.subject])
    s_pose, s_ext = poses[goal.subject], extents[goal.subject]
    if hulls is not None and goal.subject in hulls:
        s_pose, s_ext = hull_box(hulls[goal.subject], s_pose)
    o_pose, o_ext = poses[goal.object], extents[goal.object]
    exact = hulls is not None and goal.subject in hulls
    if goal.predicate in ("in", "on") and _far_apart(s_pose, s_ext, o_pose, o_ext, exact):
        return False
    return check_relation(goal.predicate, s_pose, s_ext, o_pose, o_ext)[0]


def _far_apart(s_pose: Pose, s_ext: tuple, o_pose: Pose, o_ext: tuple, exact: bool = False) -> bool:
    """Cheap sufficient test that ``on``/``in`` cannot hold (skips the polygon test).

    True when the subject's box centre lies farther from the object's origin than any corner
    of the object's box reaches, or the subject's lowest possible point is 10 cm above the
    object's highest possible point. ``exact``: ``s_pose`` is an upright box (from
    :func:`hull_box`) whose origin is its centre in xy and its bottom in z.
    """
    s_size, o_size = float(np.linalg.norm(s_ext)), float(np.linalg.norm(o_ext))
    if exact:
        s_size = 0.0
    corner = float(np.linalg.norm([o_ext[0] / 2, o_ext[1] / 2, o_ext[2]]))
    d = float(np.hypot(s_pose.position[0] - o_pose.position[0], s_pose.position[1] - o_pose.position[1]))
    return d > corner + s_size + 0.01 or s_pose.position[2] - s_size > o_pose.position[2] + o_size + 0.1


def world_goal_holds(world: World, goal: Goal) -> bool:
    """True when ``goal`` holds in the world's current state (no release condition)."""
    names = [n for n in (goal.subject, goal.object) if n is not None]
    poses = {n: world.pose(n) for n in names}
    extents = {n: tuple(world.assets[n].extents) for n in names}
    hulls = {goal.subject: asset_geometry(world.assets[goal.subject]).hull}
    return goal_holds(goal, poses, extents, hulls)


@dataclass
class StepReport:
    """What one step did to the task."""

    reward: float
    goals: list[bool]
    """Per goal: holds now."""
    success: bool
    progress: float
    knocked: list[str] = field(default_factory=list)
    """Objects knocked off during this step."""
    subject_lost: bool = False
    """A goal's subject is off the table: the task cannot be finished."""


class TaskTracker:
    """Goals, held objects and failure flags of the current episode in one world."""

    def __init__(self, world: World, cfg: EpisodeConfig) -> None:
        import pybullet as p

        self._p = p
        self.world = world
        self.cfg = cfg
        self.goals: list[Goal] = list(world.scene.graph.goals)
        self.subjects = {g.subject for g in self.goals}
        self.extents = {n: tuple(a.extents) for n, a in world.assets.items()}
        self.hulls = {g.subject: asset_geometry(world.assets[g.subject]).hull for g in self.goals}
        self.objects = world.objects()
        self.finger_links = list(world.finger_joints)
        self.table_z = world.scene.table_height
        self._frames = {}
        for n, body in sorted(world.body_of.items()):
            local = p.getDynamicsInfo(body, -1, physicsClientId=world.client)[3:5]
            self._frames[n] = (body, *p.invertTransform(local[0], local[1]))
        self.reset()

    def poses(self) -> dict[str, Pose]:
        """Asset-frame poses of every node (as :meth:`World.poses`, with cached inertial frames)."""
        p, w = self._p, self.world
        out = {}
        for n, (body, inv_pos, inv_orn) in self._frames.items():
            com_pos, com_orn = p.getBasePositionAndOrientation(body, physicsClientId=w.client)
            pos, orn = p.multiplyTransforms(com_pos, com_orn, inv_pos, inv_orn)
            out[n] = Pose(tuple(pos), tuple(orn))
        return out

    def reset(self) -> None:
        """Forget the last episode."""
        self.rewarded = [False] * len(self.goals)
        self.knocked: set[str] = set()
        self.flags = dict.fromkeys(FAILURES, False)
        self.held: set[str] = set()
        self.lifted: set[str] = set()
        self.closing_steps = 0
        self.start_z = {n: pose.position[2] for n, pose in self.poses().items()}
        self.last = self.evaluate(grip_closed=False, width=1.0, count=False)

    # ------------------------------------------------------------------ queries
    def touching(self) -> tuple[set[str], set[str]]:
        """Objects touched by any finger, and objects touched by both fingers (held)."""
        p, w = self._p, self.world
        sets = []
        for link in self.finger_links:
            pts = p.getContactPoints(bodyA=w.robot_id, linkIndexA=link, physicsClientId=w.client)
            sets.append({w.node_of[c[2]] for c in pts if c[2] in w.node_of})
        support = w.scene.graph.support_id
        anyf = set().union(*sets) - {support}
        both = set.intersection(*sets) - {support} if sets else set()
        return anyf, both

    def evaluate(self, grip_closed: bool, width: float, count: bool = True) -> StepReport:
        """Evaluate goals and failures after a step; with ``count``, update rewards and flags."""
        w = self.world
        poses = self.poses()
        touched, held = self.touching()
        goals_now = []
        for g in self.goals:
            ok = goal_holds(g, poses, self.extents, self.hulls)
            if ok and self.cfg.require_release:
                lin, _ = w.velocity(g.subject)
                ok = g.subject not in touched and float(np.linalg.norm(lin)) < self.cfg.rest_speed
            goals_now.append(ok)
        reward = 0.0
        newly_off = []
        for n in self.objects:
            if n not in self.knocked and poses[n].position[2] < self.table_z - self.cfg.knock_off_margin:
                newly_off.append(n)
        if count:
            for i, ok in enumerate(goals_now):
                if ok and not self.rewarded[i]:
                    self.rewarded[i] = True
                    reward += 1.0
            for n in newly_off:
                self.knocked.add(n)
                reward -= 1.0
                self.flags["knocked_off"] = True
            self._update_grasp_flags(poses, held, grip_closed, width)
        success = bool(goals_now) and all(goals_now)
        progress = float(np.mean(goals_now)) if goals_now else 0.0
        lost = any(g.subject in self.knocked for g in self.goals)
        return StepReport(reward, goals_now, success, progress, newly_off, lost)

    def _update_grasp_flags(self, poses: dict[str, Pose], held: set[str], grip_closed: bool, width: float) -> None:
        for n in held:
            if poses[n].position[2] > self.start_z[n] + 0.02:
                self.lifted.add(n)
                if n not in self.subjects:
                    self.flags["wrong_object"] = True
        if grip_closed:
            self.closing_steps += 1
            for n in self.held - held:
                if n in self.lifted:
                    self.flags["dropped"] = True
            if self.closing_steps >= 4 and not held and width < 0.004:
                self.flags["grasp_failed"] = True
        else:
            self.closing_steps = 0
            self.lifted &= held
        self.held = held if grip_closed else set()

    def info(self, report: StepReport) -> dict:
        """The ``info`` entries of a step."""
        return {"success": report.success, "is_success": report.success, "progress": report.progress,
                "goals": list(report.goals), **{k: bool(v) for k, v in self.flags.items()}}
