"""Settings of the layout solver: table, reach band, sampling budgets, margins and relation tolerances."""

from __future__ import annotations

from dataclasses import dataclass, field

from scenegen.errors import ConfigError
from scenegen.relations import RelationConfig
from scenegen.sim.camera import DEFAULT_TASK_ZONE
from scenegen.validate import is_finite


@dataclass(frozen=True)
class LayoutConfig:
    """Placement settings (metres, seconds)."""

    table_center_x: float = 0.55
    """x of the table centre (the robot base is at the origin, looking along +x)."""
    table_height: float = 0.0
    """z of the table top."""
    edge_margin: float = 0.03
    """Footprints stay this far inside the table edge."""
    margin: float = 0.015
    """Minimum gap between two footprints that do not rest on one another."""
    reach_min: float | None = None
    """Closest xy distance of a target's or receptacle's centre from the robot base (None: the robot's)."""
    reach_max: float | None = None
    """Farthest xy distance of a target's or receptacle's centre from the robot base (None: the robot's)."""
    task_zone: tuple[float, float, float, float] | None = DEFAULT_TASK_ZONE
    """``(xmin, ymin, xmax, ymax)``: where the centres of targets and receptacles go (inside the reach band
    too); the front camera frames it. None: anywhere in the reach band."""
    base_clearance: float | None = None
    """Radius around the robot base kept free of objects (None: the robot's)."""
    relations: RelationConfig = field(default_factory=RelationConfig)
    """Relation bands (near, far, directional cone); layout samples with their tightened copy."""
    random_yaw: bool = True
    """Draw each object's yaw uniformly; False keeps every object axis-aligned."""
    drop_gap: float = 0.002
    """Objects start this far above their support."""
    penetration_tol: float = 0.001
    """Largest collision-part penetration accepted by the 3D check."""
    check_3d: bool = True
    """Run the 3D collision check on the collision parts."""
    max_attempts: int = 150
    """Samples per object before the layout restarts."""
    max_restarts: int = 25
    """Layout restarts before giving up."""
    time_budget_s: float = 4.0
    """Wall-clock budget of one :func:`solve_layout` call."""
    max_fill: float = 0.55
    """Fail fast when footprints would cover more than this fraction of the free table top."""
    distractors: int | None = None
    """Distractors per scene instead of the prompt's count (None: the prompt's, else 1-3 at random); the
    designer adds them, so the instruction keeps the prompt's words (eval tiers set clutter this way)."""
    extra_distractors: int = 0
    """Distractors added to each scene's count (the clutter knob of a ``scenegen dr propose`` DR.json)."""

    def __post_init__(self) -> None:
        checks = {
            "table_center_x": is_finite(self.table_center_x),
            "table_height": is_finite(self.table_height),
            "edge_margin": 0 <= self.edge_margin < 0.5, "margin": 0 <= self.margin < 0.5,
            "drop_gap": 0 <= self.drop_gap < 0.05, "penetration_tol": 0 <= self.penetration_tol < 0.05,
            "max_attempts": isinstance(self.max_attempts, int) and self.max_attempts >= 1,
            "max_restarts": isinstance(self.max_restarts, int) and self.max_restarts >= 0,
            "time_budget_s": self.time_budget_s > 0, "max_fill": 0 < self.max_fill <= 1,
            "reach_min": self.reach_min is None or self.reach_min >= 0,
            "reach_max": self.reach_max is None or self.reach_max > 0,
            "base_clearance": self.base_clearance is None or self.base_clearance >= 0,
            "distractors": self.distractors is None or (isinstance(self.distractors, int)
                                                        and not isinstance(self.distractors, bool)
                                                        and 0 <= self.distractors <= 30),
            "extra_distractors": isinstance(self.extra_distractors, int) and not isinstance(self.extra_distractors,
                                                                                            bool)
            and 0 <= self.extra_distractors <= 30,
        }
        for name, ok in checks.items():
            if not ok:
                raise ConfigError(f"LayoutConfig.{name} = {getattr(self, name)!r} is out of range")
        if self.reach_min is not None and self.reach_max is not None and self.reach_min >= self.reach_max:
            raise ConfigError(f"LayoutConfig reach band [{self.reach_min}, {self.reach_max}] is empty")
        if self.task_zone is not None:
            zone = tuple(self.task_zone)
            if len(zone) != 4 or not all(is_finite(v) for v in zone) or not (zone[0] < zone[2] and zone[1] < zone[3]):
                raise ConfigError(f"LayoutConfig.task_zone = {self.task_zone!r} must be (xmin, ymin, xmax, ymax) "
                                  "with min < max, or None")
            object.__setattr__(self, "task_zone", tuple(float(v) for v in zone))
        if not isinstance(self.relations, RelationConfig):
            raise ConfigError(f"LayoutConfig.relations = {self.relations!r} must be a RelationConfig")
