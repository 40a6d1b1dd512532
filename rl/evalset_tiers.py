"""Difficulty tiers of an eval set: recipes of generation knobs per tier, and the hook for task families.

A plain prompt's tier ``K`` is a :class:`TierRecipe` (distractor count and layout margin: more
objects, packed closer, as ``K`` rises), applied through the pipeline's layout knobs
(``LayoutConfig.distractors``, ``LayoutConfig.margin``), so the prompt and its instructions stay
as written. A task family (issue 19: "bottles in the bin" tier 1 one bottle ... tier 5 four to
five) registers its own recipes with :func:`register_tier_family`, and
``scenegen evalset make FAMILY --tiers 1-5`` then uses them. Every family file under
``assets/tasks/`` (:mod:`scenegen.design.families`) is registered under its name on import; its
tier plan hands the pipeline the family's prompt and ``tier`` (the pipeline draws that tier's
scenes: target counts, start states, distractors, layout margin).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from scenegen.errors import ConfigError


@dataclass(frozen=True)
class TierRecipe:
    """Generation knobs of one difficulty tier of a plain prompt (no task family)."""

    tier: int
    """Tier number (1 = easiest)."""
    distractors: int
    """Distractor objects per scene (set as ``LayoutConfig.distractors``; the prompt is not reworded)."""
    margin: float
    """Layout's minimum gap (m) between footprints: smaller packs objects closer together."""

    def __post_init__(self) -> None:
        if not (isinstance(self.tier, int) and 1 <= self.tier <= 99):
            raise ConfigError(f"TierRecipe.tier = {self.tier!r} must be an int in 1..99")
        if not (isinstance(self.distractors, int) and 0 <= self.distractors <= 30):
            raise ConfigError(f"TierRecipe.distractors = {self.distractors!r} must be an int in 0..30")
        if not (isinstance(self.margin, (int, float)) and 0.0 <= self.margin < 0.2):
            raise ConfigError(f"TierRecipe.margin = {self.margin!r} must be in [0, 0.2) m")


DEFAULT_TIERS: dict[int, TierRecipe] = {
    1: TierRecipe(1, 0, 0.03), 2: TierRecipe(2, 2, 0.025), 3: TierRecipe(3, 4, 0.02),
    4: TierRecipe(4, 6, 0.015), 5: TierRecipe(5, 8, 0.01)}
"""Plain-prompt tiers: more distractors, packed closer, as the tier rises."""

TierPlan = Callable[[int], tuple[str, dict]]
"""A task family's tiers: ``tier -> (prompt, knobs)``; knobs may hold ``margin`` and any notes to record."""
TIER_FAMILIES: dict[str, TierPlan] = {}
"""Task-family name -> its tier plan (issue 19's families register here)."""


def register_tier_family(name: str, plan: TierPlan) -> None:
    """Make ``scenegen evalset make NAME --tiers 1-5`` use a task family's own tier recipes."""
    TIER_FAMILIES[name] = plan


def family_plan(name: str) -> TierPlan:
    """The tier plan of the family file ``NAME.json`` (read when a tier is first asked for).

    The plan of tier ``K`` is the family's prompt and the knobs ``tier`` (the pipeline's
    :attr:`~scenegen.pipeline.PipelineConfig.tier`), ``margin``, ``count``, ``types``, ``states``,
    ``distractors`` and ``note``, recorded in the eval set.
    """

    def plan(tier: int) -> tuple[str, dict]:
        from scenegen.design.families import families
        from scenegen.errors import FamilyError

        fam = families().get(name)
        if fam is None:
            raise FamilyError(f"task family {name!r} has no file in assets/tasks/ any more; restore {name}.json")
        spec = fam.tier(tier)
        return fam.prompt, spec.to_dict()

    return plan


def register_seed_families() -> list[str]:
    """Register every family file of the tasks folder (``assets/tasks/*.json``) by its name; return the names."""
    from scenegen.design.families import tasks_dir

    names = sorted(f.stem for f in tasks_dir().glob("*.json"))
    for name in names:
        if name not in TIER_FAMILIES:
            register_tier_family(name, family_plan(name))
    return names


register_seed_families()


def parse_tiers(text: str | Sequence[int] | None) -> tuple[int, ...]:
    """``"1-5"``, ``"1,3,5"`` or a list -> sorted distinct tiers.

    Raises:
        ConfigError: unreadable text or a tier outside 1..99.

    """
    if text is None:
        return ()
    if not isinstance(text, str):
        vals = list(text)
    else:
        vals = []
        for part in (p.strip() for p in text.split(",") if p.strip()):
            m = re.fullmatch(r"(\d+)\s*-\s*(\d+)|(\d+)", part)
            if not m:
                raise ConfigError(f"--tiers {text!r}: write tiers as 1-5 or 1,3,5")
            lo, hi = (int(m.group(1)), int(m.group(2))) if m.group(3) is None else (int(m.group(3)),) * 2
            if lo > hi:
                raise ConfigError(f"--tiers {text!r}: range {part} runs backwards")
            vals.extend(range(lo, hi + 1))
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 99 for v in vals):
        raise ConfigError(f"--tiers {text!r} must name tiers in 1..99")
    return tuple(sorted(set(vals)))


def tier_prompt(source: str, tier: int) -> tuple[str, dict]:
    """The prompt and knobs (``margin``, ``distractors``...) of one tier of a prompt or task family.

    A plain prompt comes back unchanged: its tier lives in the knobs, which :func:`tier_pipeline` applies.

    Raises:
        ConfigError: a plain prompt that already asks for distractors, or a tier without a recipe.

    """
    if source not in TIER_FAMILIES:
        from scenegen.design.families import find_family

        fam = find_family(source)   # a family's prompt or alias names it too
        source = fam.name if fam is not None and fam.name in TIER_FAMILIES else source
    if source in TIER_FAMILIES:
        prompt, knobs = TIER_FAMILIES[source](tier)
        return prompt, {"family": source, **knobs}
    if tier not in DEFAULT_TIERS:
        raise ConfigError(f"tier {tier} has no recipe for a plain prompt; use tiers {sorted(DEFAULT_TIERS)}")
    from scenegen.design.lexicon import extract_clutter, normalize

    if extract_clutter(normalize(source))[1] is not None:
        raise ConfigError(f"prompt {source!r} already sets its distractors; tiers set them, so drop that part")
    return source, asdict(DEFAULT_TIERS[tier])


def tier_pipeline(cfg: Any, knobs: dict) -> Any:
    """A pipeline config with a tier's layout knobs applied: ``margin``, and a plain prompt's ``distractors``.

    A task family's knobs are notes of its own draws (its ``distractors`` is a range the pipeline draws from).
    """
    keys = ("margin",) if "family" in knobs else ("margin", "distractors")
    changes = {k: (float(v) if k == "margin" else int(v)) for k, v in knobs.items() if k in keys}
    if not changes:
        return cfg
    return replace(cfg, scene=replace(cfg.scene, layout=replace(cfg.scene.layout, **changes)))
