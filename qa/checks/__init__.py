"""The QA checks: one module each, each a ``check(scene, world, cfg) -> CheckResult``.

:data:`CHECKS` maps a check name to its function, in the order they run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qa.checks import feasibility, geometry, physics, reachability, semantic, visibility, vlm
from qa.config import CHECK_ORDER, QAConfig
from qa.result import CheckResult
from scenegen.scene import Scene

Check = Callable[[Scene, Any, QAConfig], CheckResult]

CHECKS: dict[str, Check] = {
    "geometry": geometry.check,
    "physics": physics.check,
    "semantic": semantic.check,
    "visibility": visibility.check,
    "reachability": reachability.check,
    "feasibility": feasibility.check,
    "vlm": vlm.check,
}
"""Check name -> check function."""

assert tuple(CHECKS) == CHECK_ORDER

__all__ = ["CHECKS", "Check"]
