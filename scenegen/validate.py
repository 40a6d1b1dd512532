"""One way to validate a config value: numbers, integers and every numeric field of a dataclass.

Each helper raises :class:`~scenegen.errors.ConfigError` with a message that names the field
and shows the value, so a bad setting reads the same wherever it is made.
"""

from __future__ import annotations

import math
from dataclasses import fields

from scenegen.errors import ConfigError


def is_finite(value: object) -> bool:
    """True for an int or float (not a bool) that is finite."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def finite(name: str, value: object, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a float, checked to be a finite number in ``[low, high]`` (bools are refused).

    Raises:
        ConfigError: naming ``name`` and showing the value.

    """
    if not is_finite(value):
        raise ConfigError(f"{name} = {value!r} must be a finite number")
    if not low <= value <= high:
        raise ConfigError(f"{name} = {value!r} must be within [{low}, {high}]")
    return float(value)


def int_in(name: str, value: object, low: int, high: int) -> int:
    """``value`` checked to be an int (not a bool) in ``low..high``.

    Raises:
        ConfigError: naming ``name`` and showing the value.

    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{name} = {value!r} must be an int in {low}..{high}")
    return value


def require(name: str, value: object, ok: bool, what: str) -> None:
    """Raise ``ConfigError("{name} = {value!r} must be {what}")`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{name} = {value!r} must be {what}")


def finite_fields(obj: object, low: float = -math.inf, strict: bool = False) -> None:
    """Check that every int/float field of a dataclass instance is a finite number ``>= low``.

    Bools are skipped; so are other values unless ``strict``, where they are refused too.

    Raises:
        ConfigError: ``<Class>.<field> = <value> must be a finite number`` (``... >= <low>`` when a bound is set).

    """
    what = "a finite number" if low == -math.inf else f"a finite number >= {low:g}"
    for f in fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        if isinstance(v, bool) or not (strict or isinstance(v, (int, float))):
            continue
        require(f"{type(obj).__name__}.{f.name}", v, is_finite(v) and v >= low, what)  # type: ignore[operator]
