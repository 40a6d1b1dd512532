"""Which scenes of an ablation's pool each arm trains on: nested prefixes of a seeded permutation.

Arm N takes the first N scene ids of the permutation (so the N=1 scene is among the N=5 ones), after
the ``instances`` and ``layouts`` knobs restrict the permutation to its first V task-object instance
sets or L start-quadrant patterns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scenegen.errors import ConfigError

ORDER_STREAM = 0x5CE4E
"""Seed stream of the pool's permutation (with the pool seed)."""


def nested_order(scene_ids: Sequence[str], seed: int) -> list[str]:
    """The pool's scene ids in a seeded permutation (of the sorted ids): arm N trains on a prefix of it."""
    ids = sorted(scene_ids)
    perm = np.random.default_rng([int(seed), ORDER_STREAM]).permutation(len(ids))
    return [ids[i] for i in perm]


def task_objects(scene: Any) -> list:
    """The objects the task names (no support, no distractor)."""
    support = scene.graph.support_id
    return [o for o in scene.graph.objects() if o.id != support and o.role != "distractor"]


def instance_key(scene: Any) -> tuple:
    """A scene's task-object instances: the sorted asset ids of the objects the task names."""
    return tuple(sorted(scene.assets[o.id] for o in task_objects(scene)))


def layout_key(scene: Any) -> tuple:
    """A scene's coarse layout: each task object's start quadrant around the table's centre."""
    poses = scene.settled or scene.poses
    cx, cy = poses[scene.graph.support_id].position[:2]
    return tuple(sorted((o.category, poses[o.id].position[0] >= cx, poses[o.id].position[1] >= cy)
                        for o in task_objects(scene)))


def restrict(order: Sequence[str], keys: dict[str, Any], limit: int) -> list[str]:
    """The ids of ``order`` whose key is among the first ``limit`` distinct keys met in that order (0: all)."""
    if not limit:
        return list(order)
    allowed: set = set()
    out = []
    for sid in order:
        if keys[sid] not in allowed and len(allowed) < limit:
            allowed.add(keys[sid])
        if keys[sid] in allowed:
            out.append(sid)
    return out


def training_ids(order: Sequence[str], scenes: dict[str, Any], arm: Any) -> list[str]:
    """The arm's training scenes: the first N of the (instance- and layout-restricted) permutation.

    Raises:
        ConfigError: fewer than N scenes pass the restrictions.

    """
    kept = restrict(order, {s: instance_key(scenes[s]) for s in order}, arm.instances)
    kept = restrict(kept, {s: layout_key(scenes[s]) for s in kept}, arm.layouts)
    if len(kept) < arm.n:
        raise ConfigError(f"arm {arm.name}: only {len(kept)} of the pool's {len(order)} scenes meet instances="
                          f"{arm.instances} layouts={arm.layouts}; generate a larger pool (--pool-size)")
    return kept[: arm.n]
