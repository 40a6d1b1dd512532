"""Task progress from the simulator's state: goals (via :mod:`scenegen.relations`), rewards, failure flags.

A goal ``subject predicate object`` holds when the relation predicate of
:mod:`scenegen.relations` holds on the current bodies (poses, hulls, centres of mass, cavities)
and the subject's contacts and speed (``upright``/``inverted``/``lying`` goals use the state
predicates). The env's success, QA's semantic check and the expert all judge goals here. With
``require_release`` the subject must also be at rest and untouched by the fingers. Rewards are
sparse: +1 the first time a goal holds in an episode, -1 for each object newly knocked off the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from scenegen.assets.base import Asset
from scenegen.geometry import asset_geometry
from scenegen.graph import Goal
from scenegen.relations import Body, Contact, RelationConfig, judge_relation, state_holds
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig

FAILURES = ("grasp_failed", "dropped", "knocked_off", "wrong_object", "timeout")
"""Failure flags reported in ``info``."""


CONTACT_DISTANCE = 0.003
"""Contact points farther apart than this (m) do not count as touching (Bullet keeps points up to ~2 cm)."""


def node_body(asset: Asset, pose: Pose, slot: str | None = None) -> Body:
    """The :class:`~scenegen.relations.Body` of an asset at a pose: extents, hull, centre of mass, cavity.

    A receptacle with compartments (``params["slots"]``: name -> ``[xmin, ymin, xmax, ymax]`` in the asset
    frame) gets them as its ``slots``; ``slot`` names the one its cavity is restricted to.
    """
    geom = asset_geometry(asset)
    slots = asset_slots(asset)
    cavity = None if slots or not geom.has_cavity else geom.inner
    return Body(pose, tuple(asset.extents), tuple(asset.com), geom.hull, cavity, slots or None).slot(slot)


def asset_slots(asset: Asset) -> dict[str, np.ndarray]:
    """An asset's compartments: name -> footprint rectangle (4 x 2, asset frame); empty when it has none."""
    out = {}
    for name, box in sorted(dict(asset.params.get("slots") or {}).items()):
        x0, y0, x1, y1 = (float(v) for v in box)
        out[str(name)] = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
    return out


def contact_graph(world: World) -> dict[str, set[str]]:
    """Node -> the nodes (objects and table, not the robot) it touches now, from one contact query."""
    p = world._p
    out: dict[str, set[str]] = {n: set() for n in world.body_of}
    for c in p.getContactPoints(physicsClientId=world.client):
        if c[8] > CONTACT_DISTANCE:
            continue
        a, b = world.node_of.get(c[1]), world.node_of.get(c[2])
        if a is not None and b is not None and a != b:
            out[a].add(b)
            out[b].add(a)
    return out


def contact_of(graph: dict[str, set[str]], subject: str, obj: str, table: str | None, speed: float) -> Contact:
    """The subject's :class:`~scenegen.relations.Contact` toward ``obj`` from a :func:`contact_graph`.

    The subject rests on ``obj`` when it touches it, or touches an object (not the table) that touches it.
    """
    near = graph.get(subject, set())
    parent = obj in near or any(obj in graph.get(m, set()) for m in near if m not in (table, obj))
    return Contact(parent, table in near, float(speed), obj == table)


def relation_in_world(world: World, subject: str, kind: str, obj: str, cfg: RelationConfig | None = None,
                      graph: dict[str, set[str]] | None = None, slot: str | None = None) -> tuple[bool, str]:
    """``subject kind obj`` in the world's current state: bodies, contacts and speed (no release condition).

    ``slot`` restricts an ``in`` to that compartment of ``obj``.
    """
    graph = contact_graph(world) if graph is None else graph
    lin, _ = world.velocity(subject)
    contact = contact_of(graph, subject, obj, world.scene.graph.support_id, float(np.linalg.norm(lin)))
    return judge_relation(kind, node_body(world.assets[subject], world.pose(subject)),
                          node_body(world.assets[obj], world.pose(obj), slot), cfg, contact)


def goal_check(goal: Goal, bodies: dict[str, Body], contact: Contact | None = None,
               cfg: RelationConfig | None = None) -> tuple[bool, str]:
    """Whether ``goal`` holds for these bodies (and the subject's contacts), and why not.

    State goals (``upright``, ``inverted``, ``lying``) read the subject's orientation only.
    """
    if goal.is_state:
        ok = state_holds(goal.predicate, bodies[goal.subject].pose, cfg)
        return ok, "" if ok else f"{goal.subject} is not {goal.predicate}"
    s, o = bodies[goal.subject], bodies[goal.object].slot(goal.slot)
    if goal.predicate in ("in", "on") and _far_apart(s, o):
        return False, "the subject is far from the object"
    return judge_relation(goal.predicate, s, o, cfg, contact)


def goal_holds(goal: Goal, bodies: dict[str, Body], contact: Contact | None = None,
               cfg: RelationConfig | None = None) -> bool:
    """True when ``goal`` holds (see :func:`goal_check`)."""
    return goal_check(goal, bodies, contact, cfg)[0]


def _far_apart(s: Body, o: Body) -> bool:
    """Cheap sufficient test that ``on``/``in`` cannot hold (skips the polygon tests).

    True when the subject's origin lies farther from the object's origin than the two bodies'
    sizes reach, or the subject's origin is far above the object's.
    """
    s_size, o_size = float(np.linalg.norm(s.extents)), float(np.linalg.norm(o.extents))
    d = float(np.hypot(s.pose.position[0] - o.pose.position[0], s.pose.position[1] - o.pose.position[1]))
    return d > s_size + o_size + 0.01 or s.pose.position[2] - s_size > o.pose.position[2] + o_size + 0.1


def world_goal_check(world: World, goal: Goal, cfg: RelationConfig | None = None) -> tuple[bool, str]:
    """Whether ``goal`` holds in the world's current state (contacts and rest included, no release condition)."""
    if goal.is_state:
        body = Body(world.pose(goal.subject), tuple(world.assets[goal.subject].extents))
        return goal_check(goal, {goal.subject: body}, None, cfg)
    return relation_in_world(world, goal.subject, goal.predicate, goal.object, cfg, slot=goal.slot)


def world_goal_holds(world: World, goal: Goal, cfg: RelationConfig | None = None) -> bool:
    """True when ``goal`` holds in the world's current state (see :func:`world_goal_check`)."""
    return world_goal_check(world, goal, cfg)[0]


def flip_watch(world: World, goals: list[Goal], poses: dict[str, Pose]) -> list[str] | None:
    """For a flip task (every goal is ``upright``): the other objects of the goals' categories upright now.

    They must stay upright (a knocked-over one counts against :func:`flip_progress`). None for any
    other task.
    """
    if not goals or any(g.predicate != "upright" for g in goals):
        return None
    graph = world.scene.graph
    cats = {graph.object(g.subject).category for g in goals}
    subjects = {g.subject for g in goals}
    return sorted(n for n in world.objects() if n not in subjects and n in poses
                  and graph.object(n).category in cats and state_holds("upright", poses[n]))


def flip_progress(goals_now: list[bool], stay_upright: list[str], poses: dict[str, Pose]) -> float:
    """Mug progress: (turned upright - upright ones knocked over) / not upright at the start, floored at 0."""
    if not goals_now:
        return 0.0
    knocked = sum(not state_holds("upright", poses[n]) for n in stay_upright)
    return max(0.0, (sum(goals_now) - knocked) / len(goals_now))


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
        self.relations = RelationConfig(rest_speed=cfg.rest_speed)
        names = {n for g in self.goals for n in (g.subject, g.object) if n is not None}
        self._bodies = {n: node_body(world.assets[n], world.pose(n)) for n in sorted(names)}
        for g in self.goals:  # a goal naming a compartment its receptacle lacks fails here, not mid-episode
            if g.slot is not None:
                self._bodies[g.object].slot(g.slot)
        self.objects = world.objects()
        self.finger_links = list(world.finger_joints)
        self.arm_fingers = [list(a.finger_joints) for a in world.arms] or [self.finger_links]
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
        start = self.poses()
        self.start_z = {n: pose.position[2] for n, pose in start.items()}
        self.stay_upright = flip_watch(self.world, self.goals, start)
        self.last = self.evaluate(grip_closed=False, width=1.0, count=False)

    # ------------------------------------------------------------------ queries
    def touching(self) -> tuple[set[str], set[str]]:
        """Objects touched by any finger, and objects touched by both fingers of one arm (held)."""
        p, w = self._p, self.world
        support = w.scene.graph.support_id
        anyf: set[str] = set()
        both: set[str] = set()
        for links in self.arm_fingers:
            sets = []
            for link in links:
                pts = p.getContactPoints(bodyA=w.robot_id, linkIndexA=link, physicsClientId=w.client)
                sets.append({w.node_of[c[2]] for c in pts if c[2] in w.node_of})
            anyf |= set().union(*sets) - {support}
            both |= set.intersection(*sets) - {support} if sets else set()
        return anyf, both

    def evaluate(self, grip_closed: bool, width: float, count: bool = True) -> StepReport:
        """Evaluate goals and failures after a step; with ``count``, update rewards and flags."""
        w = self.world
        poses = self.poses()
        touched, held = self.touching()
        bodies = {n: replace(b, pose=poses[n]) for n, b in self._bodies.items()}
        graph = contact_graph(w) if any(not g.is_state for g in self.goals) else {}
        support = w.scene.graph.support_id
        goals_now = []
        for g in self.goals:
            speed = float(np.linalg.norm(w.velocity(g.subject)[0])) if self.cfg.require_release else 0.0
            contact = None if g.is_state else contact_of(graph, g.subject, g.object, support, speed)
            ok = goal_check(g, bodies, contact, self.relations)[0]
            if ok and self.cfg.require_release:
                ok = g.subject not in touched and speed < self.cfg.rest_speed
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
        if self.stay_upright is not None:  # a flip task: the blog's mug progress, knocked-over mugs count against it
            progress = flip_progress(goals_now, self.stay_upright, poses)
            success = progress >= 1.0
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
