"""Guided domain randomization: turn a failure diagnosis into DR weights and layout knobs aimed at the failures.

:func:`propose` reads a diagnosis (:func:`rl.diagnose.diagnose`) and raises only the knobs whose
conditions the diagnosis found significant, in proportion to how much the failure rate rises
there (the risk ratio ``rate_in / rate_out``, capped), and leaves every other factor as it was;
it is not a uniform widening:

========================================  ===========================================================
condition (failures rise when ...)        knob
========================================  ===========================================================
``camera_offset > t``                     DR weight ``camera_pose`` (wider eye/target offsets)
``light_diffuse`` (either side)           DR weight ``light_intensity``
``light_elevation_deg`` (either side)     DR weight ``light_direction``
``target_friction_scale`` (either side)   DR weight ``friction``
``target_mass_scale`` (either side)       DR weight ``mass``
``nn_distance <= t``                      layout ``margin_scale`` < 1 (objects packed closer)
``clutter``/``n_objects``/``n_distractors`` > t   layout ``extra_distractors``
``tier = K``                              layout ``tier_weights`` (more training scenes of tier K)
``target_category = C``                   layout ``category_weights``
========================================  ===========================================================

Tier and category weights are the smoothed failure rates per level (``(failures + 1) / (n + 2)``,
normalised), so more of the training mass goes where the policy fails. Relative DR factors stay
below a 90% change (the DRConfig limit is 100%). ``DR.json`` holds ``dr`` (DRConfig fields with
``weights``), ``layout`` and ``evidence`` (each change with the condition behind it);
:func:`load_dr` reads its ``dr`` part back as a :class:`~rl.envs.config.DRConfig`.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

from rl.envs.config import DR_FACTORS, RELATIVE_FACTORS, DRConfig
from scenegen.errors import ConfigError
from scenegen.fileio import canonical_json, read_json, write_atomic
from scenegen.layout.density import DR_SCHEMA

SCHEMA = DR_SCHEMA
"""Schema tag of ``DR.json`` (its ``layout`` part is read back by :mod:`scenegen.layout.density`)."""
DR_KNOBS = {"camera_offset": ("camera_pose", "above"), "light_diffuse": ("light_intensity", "either"),
            "light_elevation_deg": ("light_direction", "either"), "target_friction_scale": ("friction", "either"),
            "target_mass_scale": ("mass", "either")}
"""Diagnosis factor -> (DR factor, which side of the split must fail more for the knob to move)."""
DENSITY_FACTORS = ("clutter", "n_objects", "n_distractors")
MAX_GAIN = 3.0
"""Largest multiplication of one weight by one proposal."""


def _side(cond: dict) -> str:
    return "above" if " > " in cond["condition"] else "below" if " <= " in cond["condition"] else "level"


def _gain(cond: dict, strength: float) -> float:
    rr = cond["rate_in"] / max(cond["rate_out"], 0.02)
    return float(min(MAX_GAIN, 1.0 + strength * max(0.0, rr - 1.0)))


def _cap(base: DRConfig, factor: str, weight: float) -> float:
    base_amp = base.amplitude(factor) / max(base.weight(factor), 1e-12)
    if base_amp <= 0:
        return weight
    limit = 0.9 if factor in RELATIVE_FACTORS else 80.0 if factor == "light_direction" else None
    return weight if limit is None else min(weight, limit / base_amp)


def _level_weights(table: dict) -> dict[str, float]:
    raw = {k: (v["failures"] + 1) / (v["episodes"] + 2) for k, v in table.items()}
    total = sum(raw.values())
    return {k: round(v / total, 4) for k, v in raw.items()}


def propose(diagnosis: dict, base: DRConfig | None = None, strength: float = 0.5) -> dict:
    """DR weights and layout knobs that put more mass where the diagnosed policy fails.

    Args:
        diagnosis: the output of :func:`rl.diagnose.diagnose` (or its JSON).
        base: the DR the policy was trained with (default: :class:`DRConfig` defaults).
        strength: how far a weight moves per unit of risk ratio above 1 (each change is capped at x3).

    Returns:
        The ``DR.json`` document (see the module docstring).

    Raises:
        ConfigError: not a diagnosis, or a bad strength.

    """
    if not isinstance(diagnosis, dict) or "modes" not in diagnosis:
        raise ConfigError("dr propose needs a diagnosis (the JSON of scenegen diagnose RESULT --json)")
    if not 0 < strength <= 5:
        raise ConfigError(f"strength = {strength} must be in (0, 5]")
    base = base or DRConfig()
    weights = dict(base.weights)
    layout = {"margin_scale": 1.0, "extra_distractors": 0, "tier_weights": {}, "category_weights": {}}
    evidence = []
    for m in diagnosis["modes"]:
        for c in m["conditions"]:
            f, side, g = c["factor"], _side(c), _gain(c, strength)
            change = None
            if f in DR_KNOBS and (DR_KNOBS[f][1] == "either" or DR_KNOBS[f][1] == side):
                k = DR_KNOBS[f][0]
                new = _cap(base, k, max(weights[k], base.weight(k) * g))
                if new > weights[k]:
                    change = f"dr.weights.{k}: {weights[k]:.3g} -> {new:.3g}"
                    weights[k] = new
            elif f == "nn_distance" and side == "below":
                new = round(min(layout["margin_scale"], 1.0 / g), 3)
                if new < layout["margin_scale"]:
                    change = f"layout.margin_scale: {layout['margin_scale']} -> {new}"
                    layout["margin_scale"] = new
            elif f in DENSITY_FACTORS and side == "above":
                extra = max(layout["extra_distractors"], int(round(2 * (g - 1))) or 1)
                if extra > layout["extra_distractors"]:
                    change = f"layout.extra_distractors: {layout['extra_distractors']} -> {extra}"
                    layout["extra_distractors"] = extra
            evidence.append({"mode": m["mode"], "condition": c["condition"], "rate_in": c["rate_in"],
                             "rate_out": c["rate_out"], "p_adjusted": c["p_adjusted"],
                             "change": change or "none (no knob for this condition)"})
    levels = diagnosis.get("failure_by_level", {})
    if len(levels.get("tier", {})) > 1:
        layout["tier_weights"] = _level_weights(levels["tier"])
    if len(levels.get("target_category", {})) > 1:
        layout["category_weights"] = _level_weights(levels["target_category"])
    dr = DRConfig(**{f.name: getattr(base, f.name) for f in fields(base) if f.name != "weights"},
                  weights={k: round(v, 4) for k, v in weights.items()})
    return {"schema": SCHEMA, "dr": _dr_dict(dr), "layout": layout, "evidence": evidence,
            "source": {"policy": diagnosis.get("policy"), "set": diagnosis.get("set"),
                       "episodes": diagnosis.get("episodes"), "failures": diagnosis.get("failures")}}


def _dr_dict(dr: DRConfig) -> dict:
    d = {f.name: getattr(dr, f.name) for f in fields(dr) if f.name != "weights"}
    d["weights"] = dict(dr.weights)
    return d


def write_dr(doc: dict, out: str | os.PathLike) -> Path:
    """Write a ``DR.json`` document atomically."""
    return write_atomic(out, canonical_json(doc, float_digits=None, indent=1, separators=None), error=ConfigError)


def load_dr(path: str | os.PathLike) -> DRConfig:
    """The :class:`DRConfig` of a ``DR.json`` (its ``dr`` part; a bare dict of DRConfig fields works too).

    Raises:
        ConfigError: missing or unreadable, an unknown field or factor, or a value out of range.

    """
    data = read_json(path, "DR file", f"make one with scenegen dr propose DIAGNOSIS -o {path}")
    d = data.get("dr", data) if isinstance(data, dict) else None
    if not isinstance(d, dict):
        raise ConfigError(f"{path}: expected a JSON object with DRConfig fields (or a 'dr' object)")
    names = {f.name for f in fields(DRConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ConfigError(f"{path}: unknown DR field(s) {unknown}; valid: {', '.join(sorted(names))}")
    w = d.get("weights", {})
    if not isinstance(w, dict):
        raise ConfigError(f"{path}: weights must be an object of factor -> weight ({', '.join(DR_FACTORS)})")
    try:
        return DRConfig(**{**d, "weights": w})
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def dr_from_options(randomize: bool, dr_file: str | os.PathLike | None, off: DRConfig | None = None) -> DRConfig | None:
    """The domain randomization a command's ``--randomize/--no-randomize`` and ``--dr FILE`` options ask for.

    Args:
        randomize: DR on (the command's flag).
        dr_file: a ``DR.json`` (of ``scenegen dr propose``) whose weights replace the defaults, or None.
        off: what "no randomization" is for this command (None, or e.g. :meth:`DRConfig.off`).

    Returns:
        ``off`` without DR; the file's :class:`DRConfig`, else ``DRConfig()`` (the defaults), with it.

    Raises:
        ConfigError: ``--dr`` with ``--no-randomize``, or a bad DR file.

    """
    if not randomize:
        if dr_file:
            raise ConfigError("--dr with --no-randomize: drop one of them")
        return off
    return load_dr(dr_file) if dr_file else DRConfig()


def dr_summary(dr: DRConfig | None) -> dict | None:
    """A DR config as a JSON-ready dict (its fields and weights), for run records and dataset metadata."""
    return None if dr is None else _dr_dict(dr)

