"""Typed errors. Every message says what was wrong and what to do about it.

The CLI catches :class:`ScenegenError`, prints its one-line message and exits with code 2.
"""

from __future__ import annotations


class ScenegenError(Exception):
    """Base class of every error the library raises on purpose."""

    def one_line(self) -> str:
        """Return the message collapsed to a single line for the CLI."""
        return " ".join(str(self).split())


class PromptError(ScenegenError):
    """A prompt could not be turned into a scene graph (unknown word, impossible task)."""


class GraphError(ScenegenError):
    """A scene graph is invalid; ``problems`` lists every problem found."""

    def __init__(self, message: str, problems: list | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [])


class CatalogError(ScenegenError):
    """The object catalog is malformed or a category is unknown."""


class GripperError(CatalogError):
    """A graspable catalog category does not fit the robot's gripper at some size it can be drawn at."""


class AssetError(ScenegenError):
    """An asset could not be generated or a user mesh is broken."""


class LayoutError(ScenegenError):
    """Objects could not be placed so that every relation holds."""


class PackError(ScenegenError):
    """A scene pack is malformed, unsafe (path escape) or could not be written."""


class ExportError(ScenegenError):
    """A pack could not be exported to the requested format."""


class ConfigError(ScenegenError):
    """A configuration value is out of range or inconsistent."""


class BackendError(ScenegenError):
    """An optional backend (LLM, VLM, diffusers, Ray) is missing or failed."""


class BudgetError(ScenegenError):
    """A stage ran out of its attempt or time budget before it produced what was asked."""


class StateError(ScenegenError):
    """An object was used in the wrong state (e.g. ``step()`` before ``reset()``)."""


class FamilyError(ConfigError):
    """A task-family file (``assets/tasks/*.json``) is malformed, or a task family or tier does not exist."""
