"""Visibility check: targets and receptacles cover enough of the front camera, and are not hidden.

Each task object's pixels are counted in the camera's segmentation, then again with
every other object and the robot moved far away (the object "rendered alone"); the
occlusion ratio is ``1 - visible / alone``. The simulator state is restored afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qa.checks._common import join_failures, preserved, task_nodes
from qa.config import QAConfig
from qa.result import CheckResult
from scenegen.scene import Pose, Scene
from scenegen.sim.camera import render_camera

NAME = "visibility"
_FAR = 1000.0
"""Objects are parked this far (m) from the scene to hide them."""


def _render_seg(world: Any, camera: str, size: int) -> np.ndarray:
    _, _, seg = render_camera(world, camera, size or None, size or None)
    return seg


def _alone(world: Any, node: str, camera: str, size: int) -> int:
    """Pixels of ``node`` with every other object and the robot parked far away."""
    with preserved(world):
        support = world.scene.graph.support_id
        for i, other in enumerate(world.objects()):
            if other not in (node, support):
                world.set_pose(other, Pose((_FAR + 3.0 * i, _FAR, _FAR)))
        world._p.resetBasePositionAndOrientation(world.robot_id, (-_FAR, -_FAR, _FAR), (0, 0, 0, 1),
                                                 physicsClientId=world.client)
        seg = _render_seg(world, camera, size)
        return int(world.node_mask(seg, node).sum())


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Measure how much of each target and receptacle the camera sees.

    Args:
        scene: the scene (roles and goals name the task objects).
        world: the settled world; restored after the renders.
        cfg: QA settings (``cfg.visibility``).

    Returns:
        A :class:`CheckResult`; ``metrics["objects"]`` holds, per task object, its pixels, image
        fraction, pixels when rendered alone and occlusion ratio; score = mean visible share.

    """
    vc = cfg.visibility
    targets, receptacles = task_nodes(scene)
    nodes = [n for n in targets + receptacles if n in world.body_of]
    seg = _render_seg(world, vc.camera, vc.render_size)
    total = int(seg.size)
    failures: list[str] = []
    per: dict[str, dict] = {}
    shares = []
    for n in nodes:
        visible = int(world.node_mask(seg, n).sum())
        alone = _alone(world, n, vc.camera, vc.render_size)
        frac = visible / total
        occ = 1.0 - visible / alone if alone > 0 else 1.0
        role = "target" if n in targets else "receptacle"
        per[n] = {"role": role, "pixels": visible, "fraction": frac, "pixels_alone": alone,
                  "occlusion": max(0.0, occ)}
        shares.append(visible / alone if alone > 0 else 0.0)
        if alone == 0:
            failures.append(f"out of view: {role} {n} is outside the {vc.camera} camera's view")
        elif occ > vc.max_occlusion:
            failures.append(f"occluded: {role} {n} is {occ:.0%} hidden in the {vc.camera} camera "
                            f"(max {vc.max_occlusion:.0%})")
        elif frac < vc.min_fraction:
            failures.append(f"not visible: {role} {n} covers {frac:.3%} of the {vc.camera} image "
                            f"(min {vc.min_fraction:.3%})")
    score = float(np.mean(shares)) if shares else 1.0
    return CheckResult(NAME, not failures, min(1.0, score), join_failures(failures),
                       {"camera": vc.camera, "image_pixels": total, "objects": per})
