"""The scripted expert of a multi-arm robot: each goal done by the arm that reaches it best.

:class:`MultiArmExpert` drives one single-arm expert (:class:`~scenegen.tasks.expert.ScriptedExpert`,
passed in as a factory, so this module stays below the expert) per arm, each over a view of the
episode in which the world's robot *is* that arm: its spec (gripper, reach band), its base
(``scene.robot_base``) and its controller. For each goal in order the arm is chosen whose base
is nearest the farther of the goal's subject and object (a point outside an arm's reach band
counts as far); that arm does the goal while every other arm waits at its parking spot (home
moved outward, away from the others) with its gripper open. Before another arm takes over, the
last one goes back to its parking spot, so the two never work in the same space (the arms of
one URDF body do not collide with each other in the simulation; keeping them apart is the
expert's job).

An ``upright`` goal of an inverted mug may be done by both arms together: a handover
(:mod:`scenegen.tasks.handover`; one arm lifts the mug by its handle and tilts it onto its side,
the other takes it by the rim and stands it up, each wrist turning 90 degrees where the one-arm
flip turns one wrist 180). ``handover`` picks when:

- ``"auto"`` (the default): the handover when its plan passes the IK twin's check for both arms
  (:func:`~scenegen.tasks.handover_plan.plan_handover`), else the one-arm flip, and the handover
  after all when that flip fails with the mug still inverted;
- ``"fallback"``: the nearer arm's one-arm flip first, the handover once it fails with the mug still inverted;
- ``"first"``: the handover for every inverted mug (the best plan even when none passes the check);
- ``"off"``: never.

On the "flip the mug upright" packs the handover stood more mugs up than the one-arm flip (see
``benchmarks/bimanual_handover.json``), hence ``auto``. After a handover the taker is not sent to its
parking spot before the next goal: it has risen above everything and parks while the next arm works.
:attr:`MultiArmExpert.handover_log` says when it was used, why, and how it ended.

The action is the arms' actions side by side (see :mod:`scenegen.sim.multi_arm`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from scenegen.errors import ConfigError
from scenegen.graph import Goal
from scenegen.sim.control import ArmController
from scenegen.sim.world import World
from scenegen.tasks.flip import flip_kind
from scenegen.tasks.handover import HandoverSkill
from scenegen.tasks.handover_plan import plan_handover

PARK_OUT = 0.15
"""An idle arm waits this far (m) outward of its home position (left arm: +y, right arm: -y)."""
HANDOVER_MODES = ("auto", "fallback", "first", "off")
"""When an inverted mug is handed over (see the module)."""


class _ArmScene:
    """A scene seen by one arm: ``robot_base`` is the arm's base; everything else is the scene's."""

    def __init__(self, scene: Any, base: Any) -> None:
        self._scene = scene
        self.robot_base = base

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scene, name)


class _ArmWorld:
    """A world seen by one arm: ``robot`` is the arm's spec and ``scene`` its :class:`_ArmScene`."""

    def __init__(self, world: World, arm: int) -> None:
        self._world = world
        self.robot = world.arms[arm].spec
        self.scene = _ArmScene(world.scene, world.arms[arm].base)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)


class ArmEpisode:
    """One arm's view of a multi-arm episode: the world as that arm, its controller, the shared task and config."""

    def __init__(self, env: Any, arm: int) -> None:
        self.world = _ArmWorld(env.world, arm)
        self.controller: ArmController = env.controller.arms[arm]
        self.task = env.task
        self.cfg = env.cfg


def arm_score(world: World, arm: int, goal: Goal) -> float:
    """How far (m) an arm must reach for a goal: its base to the farther of subject and object (+1 outside its band)."""
    a = world.arms[arm]
    base = np.asarray(a.base.position[:2], dtype=float)
    worst = 0.0
    for node in (goal.subject, goal.object):
        if node is None or node not in world.body_of:
            continue
        d = float(np.linalg.norm(np.asarray(world.pose(node).position[:2]) - base))
        if not a.spec.reach_min <= d <= a.spec.reach_max:
            d += 1.0
        worst = max(worst, d)
    return worst


def choose_arm(world: World, goal: Goal) -> int:
    """The arm that reaches a goal's subject and object best (ties: the first arm)."""
    scores = [arm_score(world, i, goal) for i in range(len(world.arms))]
    return int(np.argmin(scores))


class MultiArmExpert:
    """Closed-loop scripted policy of a multi-arm robot (see the module); the interface of ``ScriptedExpert``.

    Args:
        env: a :class:`~scenegen.tasks.episode.TaskEpisode` (or its gym env) of a multi-arm robot.
        config: the single-arm expert's settings (an ``ExpertConfig``; None: its defaults).
        arm_expert: ``(arm view, config) -> single-arm expert`` (``ScriptedExpert``).
        handover: one of :data:`HANDOVER_MODES` (see the module).

    Raises:
        ConfigError: an unknown ``handover`` mode.

    """

    def __init__(self, env: Any, config: Any, arm_expert: Callable[[Any, Any], Any],
                 handover: str = "auto") -> None:
        if handover not in HANDOVER_MODES:
            raise ConfigError(f"handover mode {handover!r} is unknown; use one of {', '.join(HANDOVER_MODES)}")
        self.env = env.unwrapped if hasattr(env, "unwrapped") else env
        self.cfg = config
        self.mode = handover
        self._factory = arm_expert
        self.reset()

    def reset(self) -> None:
        """Start over (call after each env reset)."""
        self.goal_index = 0
        self.phase = "plan"
        self.failure: str | None = None
        self.active: int | None = None
        self.arm_log: list[tuple[int, str]] = []
        """``(goal index, arm label)`` of each goal handed to an arm, in order."""
        self.handover: HandoverSkill | None = None
        self.handover_log: list[dict] = []
        """One entry per handover started: goal index, giver and taker labels, why, and how it ended."""
        self._experts: list[Any] = []
        self._homing: int | None = None
        self._home_steps = 0
        self._world: World | None = None
        self._pending: str | None = None
        self._tried: set[int] = set()

    @property
    def done(self) -> bool:
        """Every goal was handled (or the expert gave up)."""
        return self.phase in ("done", "failed")

    def _arm_experts(self) -> list[Any]:
        world = self.env.world
        if self._world is not world or not self._experts:  # a new episode's world: new arm views
            self._world = world
            self._experts = [self._factory(ArmEpisode(self.env, i), self.cfg) for i in range(len(world.arms))]
        return self._experts

    def park(self, arm: int) -> np.ndarray:
        """Where an idle arm waits: its home position moved :data:`PARK_OUT` outward, away from the other arms."""
        w = self.env.world
        ctrl = self._experts[arm].env.controller
        centre = float(w.scene.robot_base.position[1])
        side = 1.0 if float(w.arms[arm].base.position[1]) >= centre else -1.0
        return np.clip(ctrl.home_pos + np.array([0.0, side * PARK_OUT, 0.0]), ctrl.low, ctrl.high)

    def _hold(self, arm: int) -> np.ndarray:
        """An idle arm's action: to its parking spot, pointing down, gripper open, then still."""
        e = self._experts[arm]
        ctrl = e.env.controller
        return e._move(self.park(arm), ctrl.home_yaw, False)

    def _go_home(self, arm: int) -> tuple[np.ndarray, bool]:
        """An arm's action toward its parking spot (gripper open, pointing down), and whether it is there."""
        e = self._experts[arm]
        ctrl = e.env.controller
        self._home_steps += 1
        there = e._reached(self.park(arm), ctrl.home_yaw) and not np.any(ctrl.target_swing)
        return self._hold(arm), there or self._home_steps > 80

    def _start(self, arm: int) -> None:
        """Hand the current goal to ``arm``."""
        self.active = arm
        e = self._experts[arm]
        e.reset()
        e.goal_index = self.goal_index
        self.arm_log.append((self.goal_index, self.env.world.arms[arm].spec.name))

    def _mug_flip(self, goal: Goal) -> bool:
        """The goal turns an inverted mug upright, a handover is allowed, and none was tried for it yet."""
        w = self.env.world
        return (self.mode != "off" and self.goal_index not in self._tried and goal.predicate == "upright"
                and goal.subject in w.body_of and flip_kind(w, goal.subject, goal) == "mug")

    def _start_handover(self, goal: Goal, why: str, checked: bool = False) -> bool:
        """Plan and start a handover of the current goal's mug; False when none fits.

        With ``checked``, False too when no plan passes the IK twin's check (the goal may then still be
        handed over after a failed one-arm flip). The nearer arm gives, unless only the other's plan passes.
        """
        w = self.env.world
        first = choose_arm(w, goal)
        ctrls = [e.env.controller for e in self._experts]
        plans = [plan_handover(w, ctrls, goal.subject, giver, self.env.cfg.yaw_limit)
                 for giver in (first, *(i for i in range(len(w.arms)) if i != first))]
        plans = [p for p in plans if p is not None]
        good = [p for p in plans if p.checked]
        if not plans or (checked and not good):
            if not checked:
                self._tried.add(self.goal_index)
            return False
        self._tried.add(self.goal_index)
        plan = good[0] if good else max(plans, key=lambda p: p.margin)
        self.handover = HandoverSkill(self.env, self._experts, plan, goal)
        label = f"{w.arms[plan.giver].spec.name}->{w.arms[plan.taker].spec.name}"
        self.arm_log.append((self.goal_index, label))
        self.handover_log.append({"goal": self.goal_index, "arms": label, "why": why, "failure": None})
        return True

    def _handover_step(self, goals: list[Goal], actions: list[np.ndarray | None]) -> None:
        """One step of the running handover; at its end, the next goal.

        The taker is not sent home first: it has risen above everything and parks while the next goal's arm works.
        """
        acts = self.handover.act()
        if acts is not None:
            actions[:] = acts
            return
        h, self.handover = self.handover, None
        if h.failure is not None:
            self.handover_log[-1]["failure"] = h.failure
            self.failure, self.phase = h.failure, "failed"
            return
        self.goal_index += 1
        if self.goal_index >= len(goals):
            self.phase = "done"
        # no homing of the taker: it rose above everything and goes to park while the next goal's arm works

    def act(self, obs: Any = None) -> np.ndarray:
        """The next action of every arm (``obs`` is ignored: the expert reads the simulator)."""
        experts = self._arm_experts()
        goals = list(self.env.world.scene.graph.goals)
        n = len(experts)
        actions: list[np.ndarray | None] = [None] * n
        if self._homing is not None:
            act, there = self._go_home(self._homing)
            actions[self._homing] = act
            if there:
                self._homing = None
                if self._pending is not None:
                    why, self._pending = self._pending, None
                    if not self._start_handover(goals[self.goal_index], why):
                        self.handover_log.append({"goal": self.goal_index, "arms": None, "why": why,
                                                  "failure": "no handover fits"})
        elif self.phase not in ("done", "failed"):
            if self.goal_index >= len(goals):
                self.phase = "done"
            elif self.handover is not None:
                self._handover_step(goals, actions)
            elif self.active is None and self.mode in ("first", "auto") and self._mug_flip(goals[self.goal_index]) \
                    and self._start_handover(goals[self.goal_index], self.mode, checked=self.mode == "auto"):
                self._handover_step(goals, actions)
            else:
                if self.active is None:
                    self._start(choose_arm(self.env.world, goals[self.goal_index]))
                e = experts[self.active]
                actions[self.active] = e.act(obs)
                if (e.tries > 0 or e.phase == "failed") and e.goal_index == self.goal_index and \
                        self._mug_flip(goals[self.goal_index]):
                    # the one-arm flip failed with the mug still inverted: that arm parks, then the handover
                    self._homing, self._home_steps, self.active = self.active, 0, None
                    self._pending = f"one-arm flip failed: {e.flip.failure if e.flip else e.failure}"
                elif e.phase == "failed":
                    self.failure, self.phase = e.failure, "failed"
                elif e.phase == "done" or e.goal_index != self.goal_index:
                    self.goal_index = max(e.goal_index, self.goal_index)
                    if self.goal_index >= len(goals):
                        self.phase = "done"
                    elif choose_arm(self.env.world, goals[self.goal_index]) != self.active:
                        self._homing, self._home_steps, self.active = self.active, 0, None
                    else:  # the same arm goes on with the next goal
                        self.arm_log.append((self.goal_index, self.env.world.arms[self.active].spec.name))
        out = [a if a is not None else self._hold(i) for i, a in enumerate(actions)]
        return np.concatenate(out).astype(np.float32)


def arm_gap(world: World) -> float:
    """Least distance (m) between any link of one arm and any link of another (inf for a single arm).

    The arms are one body whose links do not collide with each other in PyBullet, so this is how
    tests and benchmarks check that the expert keeps them apart.
    """
    import pybullet as p

    if len(world.arms) < 2:
        return math.inf
    c, r = world.client, world.robot_id
    groups = []
    for a in world.arms:
        links = set(a.arm_joints) | set(a.finger_joints) | {a.ee_link}
        groups.append(sorted(links))
    best = math.inf
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            for la in groups[i]:
                for lb in groups[j]:
                    pts = p.getClosestPoints(r, r, 0.3, la, lb, physicsClientId=c)
                    best = min([best, *(pt[8] for pt in pts)])
    return best
