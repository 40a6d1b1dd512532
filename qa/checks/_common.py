"""Helpers shared by the checks: saving and restoring the simulator state, task objects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scenegen.scene import Scene
from scenegen.tasks.precheck import task_objects


@contextmanager
def preserved(world: Any) -> Iterator[None]:
    """Save the PyBullet state of ``world`` and restore it on exit (poses, velocities, joints)."""
    import pybullet as p

    state = p.saveState(physicsClientId=world.client)
    try:
        yield
    finally:
        p.restoreState(state, physicsClientId=world.client)
        p.removeState(state, physicsClientId=world.client)


def task_nodes(scene: Scene) -> tuple[list[str], list[str]]:
    """Targets and receptacles of a scene: their roles, plus the subjects and objects of its goals."""
    return task_objects(scene)


def join_failures(failures: list[str], limit: int = 4) -> str:
    """``"a; b; c"`` for up to ``limit`` failures, then how many more."""
    head = "; ".join(failures[:limit])
    return head + (f"; (+{len(failures) - limit} more)" if len(failures) > limit else "")
