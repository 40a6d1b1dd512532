"""QA records: :class:`CheckResult` (one check on one scene) and :class:`QAReport` (all checks on one scene).

A check that could not run (the expert is not installed, say) reports ``passed=True``
with ``metrics["skipped"] = True``: it never rejects a scene, and reports count it apart
from the checks that passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


def _plain(v: Any) -> Any:
    """Numpy scalars and arrays, tuples and non-finite floats made JSON-ready."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "tolist") and callable(v.tolist):
        return _plain(v.tolist())
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if hasattr(v, "item") and callable(v.item):
        return _plain(v.item())
    return str(v)


@dataclass
class CheckResult:
    """The outcome of one check on one scene."""

    name: str
    """Check name (``physics``, ``semantic``...)."""
    passed: bool
    """True when the scene passes (or the check was skipped)."""
    score: float
    """How well it passes, in [0, 1] (1 = perfect)."""
    reason: str = ""
    """Why it failed (``"<kind>: <details>"``, kinds first), or why it was skipped; empty on a clean pass."""
    metrics: dict = field(default_factory=dict)
    """Measured values (per object, per relation...); ``skipped: true`` when the check did not run."""
    seconds: float = 0.0
    """Wall time the check took."""

    @property
    def skipped(self) -> bool:
        """True when the check did not run (it then passes without evidence)."""
        return bool(self.metrics.get("skipped"))

    @property
    def kind(self) -> str:
        """Short failure kind: the reason's first clause (``"floating"``), empty when passed."""
        if self.passed:
            return ""
        return self.reason.split(":")[0].split(";")[0].strip() or "failed"

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {"name": self.name, "passed": bool(self.passed), "skipped": self.skipped,
                "score": round(float(self.score), 6) if math.isfinite(self.score) else 0.0,
                "reason": self.reason, "seconds": round(float(self.seconds), 6), "metrics": _plain(self.metrics)}

    @classmethod
    def from_dict(cls, d: dict) -> CheckResult:
        """Inverse of :meth:`to_dict`."""
        return cls(d["name"], bool(d["passed"]), float(d.get("score") or 0.0), d.get("reason", ""),
                   dict(d.get("metrics") or {}), float(d.get("seconds") or 0.0))


@dataclass
class QAReport:
    """Every check's result on one scene."""

    scene_id: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check passed (skipped checks do not reject)."""
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[str]:
        """Names of the checks that failed."""
        return [r.name for r in self.results if not r.passed]

    @property
    def skipped(self) -> list[str]:
        """Names of the checks that were skipped."""
        return [r.name for r in self.results if r.skipped]

    @property
    def score(self) -> float:
        """Mean score of the checks that ran (1.0 when none ran)."""
        ran = [r.score for r in self.results if not r.skipped]
        return float(sum(ran) / len(ran)) if ran else 1.0

    @property
    def reason(self) -> str:
        """``"<check>: <reason>"`` of the first failing check (+ how many more failed), empty when passed."""
        bad = [r for r in self.results if not r.passed]
        if not bad:
            return ""
        more = f" (+{len(bad) - 1} more failing check{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        return f"{bad[0].name}: {bad[0].reason}{more}"

    @property
    def seconds(self) -> float:
        """Total wall time of the checks."""
        return float(sum(r.seconds for r in self.results))

    def result(self, name: str) -> CheckResult | None:
        """The result of check ``name``, or None when it did not run."""
        return next((r for r in self.results if r.name == name), None)

    def to_dict(self) -> dict:
        """A JSON-ready dict: also the ``qa.json`` of a scene (the pack reads ``passed``, ``score``, ``checks``)."""
        return {"scene_id": self.scene_id, "passed": self.passed, "score": round(self.score, 6),
                "reason": self.reason, "failed": self.failed, "skipped": self.skipped,
                "seconds": round(self.seconds, 6), "checks": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, d: dict) -> QAReport:
        """Inverse of :meth:`to_dict`."""
        return cls(str(d.get("scene_id", "")), [CheckResult.from_dict(c) for c in d.get("checks", [])])
