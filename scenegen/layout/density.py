"""Layout density knobs of a ``DR.json`` (``scenegen dr propose``) applied to the layout settings.

A ``DR.json`` holds ``dr`` (domain randomization, read by the learning side), ``layout`` and
``evidence``. Its ``layout`` part names how scenes should be generated to put more training
mass where a policy fails:

=======================  ==================================================================
``margin_scale``         multiplies :attr:`LayoutConfig.margin` (below 1 packs objects closer)
``extra_distractors``    adds to :attr:`LayoutConfig.extra_distractors` (more clutter per scene)
``tier_weights``         how an eval-set-shaped training mix should weigh tiers (not one run's knob)
``category_weights``     how it should weigh target categories (not one run's knob)
=======================  ==================================================================

``scenegen generate --dr DR.json`` applies the first two (:func:`apply_layout_knobs`) and names
the weights it does not apply. The JSON is data: every value is checked before it is used.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from scenegen.errors import ConfigError
from scenegen.fileio import read_json
from scenegen.layout.config import LayoutConfig

DR_SCHEMA = "scenegen.dr/1"
"""Schema tag of a ``DR.json``."""
MAX_EXTRA = 30
"""Most distractors a DR.json may add."""
_WEIGHTS = ("tier_weights", "category_weights")


def read_layout_knobs(path: str | os.PathLike) -> dict[str, Any]:
    """The checked ``layout`` part of a ``DR.json``: ``margin_scale``, ``extra_distractors`` and the weights.

    Raises:
        ConfigError: missing or unreadable, another schema, an unknown knob, or a value out of range.

    """
    doc = read_json(path, "DR file", f"make one with scenegen dr propose DIAGNOSIS -o {path}")
    if not isinstance(doc, dict) or doc.get("schema", DR_SCHEMA) != DR_SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ConfigError(f"{path}: not a DR file (schema {got!r}, expected {DR_SCHEMA!r}); write it with "
                          "scenegen dr propose")
    layout = doc.get("layout", {})
    if not isinstance(layout, dict):
        raise ConfigError(f"{path}: layout must be an object of margin_scale, extra_distractors and weights")
    unknown = sorted(set(layout) - {"margin_scale", "extra_distractors", *_WEIGHTS})
    if unknown:
        raise ConfigError(f"{path}: unknown layout knob(s) {unknown}; valid: margin_scale, extra_distractors, "
                          + ", ".join(_WEIGHTS))
    scale = layout.get("margin_scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale)
                                                                               and 0 < scale <= 4):
        raise ConfigError(f"{path}: layout.margin_scale = {scale!r} must be a number in (0, 4]")
    extra = layout.get("extra_distractors", 0)
    if isinstance(extra, bool) or not isinstance(extra, int) or not 0 <= extra <= MAX_EXTRA:
        raise ConfigError(f"{path}: layout.extra_distractors = {extra!r} must be an int in 0..{MAX_EXTRA}")
    weights = {}
    for name in _WEIGHTS:
        w = layout.get(name, {})
        if not isinstance(w, dict) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                          or not (math.isfinite(v) and v >= 0) for v in w.values()):
            raise ConfigError(f"{path}: layout.{name} must be an object of level -> weight >= 0")
        weights[name] = {str(k): float(v) for k, v in w.items()}
    return {"margin_scale": float(scale), "extra_distractors": extra, **weights}


def apply_layout_knobs(layout: LayoutConfig, knobs: dict[str, Any]) -> tuple[LayoutConfig, list[str]]:
    """``layout`` with a DR file's margin scale and extra distractors applied, and what was not applied.

    Returns:
        The new layout config, and one line per knob it leaves alone (the tier and category weights,
        which shape a mix of runs rather than one run).

    """
    new = replace(layout, margin=layout.margin * knobs["margin_scale"],
                  extra_distractors=min(MAX_EXTRA, layout.extra_distractors + knobs["extra_distractors"]))
    skipped = [f"{name} ({', '.join(f'{k}: {v:g}' for k, v in sorted(knobs[name].items()))}) shape a mix of runs, "
               "not one generate run: generate one pack per level with -n in these proportions"
               for name in _WEIGHTS if knobs.get(name)]
    return new, skipped
