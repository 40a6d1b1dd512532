"""The designer registry: name -> factory, lazily imported backends, and :func:`design`.

``rules`` (offline) is built in; ``llm`` registers itself when :mod:`scenegen.design.llm` is
imported on first use. A third-party designer calls :func:`register_designer`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from scenegen.design.base import Designer
from scenegen.errors import BackendError, ConfigError
from scenegen.graph import SceneGraph

DesignerFactory = Callable[[], Designer]


def _rules_factory() -> Designer:
    from scenegen.design.rules import RulesDesigner

    return RulesDesigner()


DESIGNERS: dict[str, DesignerFactory] = {"rules": _rules_factory}
"""Designer name -> factory (no arguments) returning a :class:`Designer`."""
LAZY_DESIGNERS: dict[str, str] = {"llm": "scenegen.design.llm"}
"""Designer name -> module that calls :func:`register_designer` when imported."""


def register_designer(name: str, factory: DesignerFactory) -> None:
    """Register (or replace) a designer factory under ``name``."""
    DESIGNERS[name] = factory


def designer_names() -> list[str]:
    """Names of every designer, registered or loadable on demand."""
    return sorted(set(DESIGNERS) | set(LAZY_DESIGNERS))


def get_designer(name: str) -> Designer:
    """Return a new designer by name, importing lazily registered backends on first use.

    Raises:
        ConfigError: no designer has this name.
        BackendError: the designer's module is missing or failed to import.

    """
    if name not in DESIGNERS and name in LAZY_DESIGNERS:
        try:
            importlib.import_module(LAZY_DESIGNERS[name])
        except ImportError as exc:
            raise BackendError(f"designer {name!r} is not available ({exc}); install the matching extra, "
                               f"e.g. pip install 'scenegen[{name}]'") from None
        if name not in DESIGNERS:
            raise BackendError(f"module {LAZY_DESIGNERS[name]} did not register designer {name!r}; "
                               "it must call scenegen.design.registry.register_designer on import")
    if name not in DESIGNERS:
        raise ConfigError(f"unknown designer {name!r}; use one of {', '.join(designer_names())}")
    return DESIGNERS[name]()


def design(prompt: str, n: int, seed: int = 0, designer: str = "rules", *, clutter: int | None = None,
           extra_clutter: int = 0) -> list[SceneGraph]:
    """Turn a prompt into ``n`` valid scene graphs with distinct hashes.

    Args:
        prompt: An English task, e.g. ``"put the banana in the bowl"``.
        n: Number of graphs.
        seed: Seed; the same prompt and seed give the same graphs.
        designer: Backend name (``"rules"``, the offline default; ``"llm"`` when installed).
        clutter: Distractors per graph instead of the prompt's count (None: the prompt's, else the designer's).
        extra_clutter: Distractors added to each graph's count.

    Returns:
        ``n`` validated graphs.

    Raises:
        PromptError: the prompt cannot be understood or names an impossible task.
        ConfigError: bad ``n``, ``seed`` or designer name.

    """
    backend = get_designer(designer)
    if clutter is None and not extra_clutter:
        return backend.design(prompt, n, seed)
    if "clutter" not in inspect.signature(backend.design).parameters:
        raise ConfigError(f"designer {designer!r} takes no distractor count; drop --distractors/--dr clutter or use "
                          "the rules designer")
    return backend.design(prompt, n, seed, clutter=clutter, extra_clutter=extra_clutter)
