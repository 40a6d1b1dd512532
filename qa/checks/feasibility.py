"""Feasibility check: the privileged scripted expert (``scenegen.tasks.expert.run_expert``) solves the task.

The expert (``scenegen.tasks.expert``) is imported only when this check runs; when it
cannot be imported the check is reported as skipped (``passed=True``, ``metrics["skipped"]``),
never as passed with evidence. The expert runs in its own world built from the scene's
assets, so the world being checked is not disturbed. That episode renders nothing, so its world
is built from the assets themselves (``render_max_faces=0``): no render-light copies are decimated
for it, and the geometry QA's earlier checks read from the assets is reused; physics is the same.
"""

from __future__ import annotations

from typing import Any

from qa.config import QAConfig
from qa.result import CheckResult
from scenegen.scene import Scene

NAME = "feasibility"


def _load_expert() -> tuple[Any, str]:
    try:
        from scenegen.tasks.expert import run_expert
    except ImportError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return run_expert, ""


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Run the scripted expert on a copy of the scene.

    Args:
        scene: the scene (settled poses included).
        world: the world; only its assets are used.
        cfg: QA settings (``cfg.feasibility``).

    Returns:
        A :class:`CheckResult` with the expert's success, progress, steps and failure in ``metrics``,
        or a skipped result when ``scenegen.tasks.expert`` is not available.

    """
    fc = cfg.feasibility
    run_expert, why = _load_expert()
    if run_expert is None:
        return CheckResult(NAME, True, 1.0, "skipped: expert not available",
                           {"skipped": True, "import_error": why[:300]})
    copy = Scene.from_dict(scene.to_dict())
    lookup = {a.id: a for a in world.assets.values()}
    res = run_expert(copy, lookup, fc.max_steps, fc.seed, render_max_faces=0)
    success = bool(getattr(res, "success", False))
    progress = float(getattr(res, "progress", 1.0 if success else 0.0))
    steps = int(getattr(res, "steps", 0))
    failure = getattr(res, "failure", None)
    metrics = {"skipped": False, "success": success, "progress": progress, "steps": steps, "failure": failure}
    ok = success or progress >= fc.min_progress
    reason = "" if ok else (f"expert failed: {failure or 'did not finish'} after {steps} steps "
                            f"(progress {progress:.0%})")
    return CheckResult(NAME, ok, progress, reason, metrics)
