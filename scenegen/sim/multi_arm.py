"""Control of a multi-arm robot: one :class:`~scenegen.sim.control.ArmController` per arm, one action.

The action of an ``n``-arm robot is the arms' actions side by side, in arm order (for the
two-arm ``bimanual_panda`` in ``ee7`` mode: 14 numbers, ``left`` then ``right``, each
``(dx, dy, dz, droll, dpitch, dyaw, gripper)``). Each arm moves its own commanded pose; the
physics then steps once for all. :func:`make_controller` returns the plain single-arm
controller for a one-arm robot, so its behaviour is unchanged.
"""

from __future__ import annotations

import numpy as np

from scenegen.sim.control import ArmController, ControlSettings, IKTwin, action_dim
from scenegen.sim.world import World


class MultiArmController:
    """Commanded poses and grippers of every arm of a world's robot."""

    def __init__(self, world: World, cfg: ControlSettings, twin: IKTwin | None = None) -> None:
        self.world = world
        self.arms = [ArmController(world, cfg, twin, arm=i) for i in range(len(world.arms))]
        self.names = [a.spec.name for a in world.arms]
        """Arm labels (``left``, ``right``), in action order."""
        self.arm_dim = action_dim(getattr(cfg, "action_mode", "ee7"))
        self.dim = self.arm_dim * len(self.arms)
        self.substeps = cfg.substeps

    @property
    def closed(self) -> bool:
        """Any gripper is commanded closed."""
        return any(a.closed for a in self.arms)

    def gripper_width(self) -> float:
        """The narrowest opening among the closed grippers (of every gripper when none is closed)."""
        closed = [a.gripper_width() for a in self.arms if a.closed]
        return min(closed) if closed else min(a.gripper_width() for a in self.arms)

    def ee_pose(self) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """The first arm's end-effector pose (see :meth:`ee_poses` for every arm)."""
        return self.arms[0].ee_pose()

    def ee_poses(self) -> list[tuple[np.ndarray, tuple[float, float, float, float]]]:
        """Every arm's end-effector position and orientation, in arm order."""
        return [a.ee_pose() for a in self.arms]

    def reset(self) -> None:
        """Take every arm's commanded pose from its current (home) pose and open the grippers."""
        for a in self.arms:
            a.reset()

    def split(self, action: np.ndarray) -> list[np.ndarray]:
        """The per-arm actions of a validated multi-arm action."""
        return [action[i * self.arm_dim:(i + 1) * self.arm_dim] for i in range(len(self.arms))]

    def apply(self, action: np.ndarray) -> None:
        """Move every arm's commanded pose by its part of a validated action and simulate one control step."""
        for arm, a in zip(self.arms, self.split(np.asarray(action)), strict=True):
            arm.command(a)
        self.world.step(self.substeps)


def make_controller(world: World, cfg: ControlSettings,
                    twin: IKTwin | None = None) -> ArmController | MultiArmController:
    """The controller of a world's robot: an :class:`ArmController` for one arm, else a :class:`MultiArmController`."""
    if len(world.arms) == 1:
        return ArmController(world, cfg, twin)
    return MultiArmController(world, cfg, twin)
