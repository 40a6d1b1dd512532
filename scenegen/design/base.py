"""The Designer protocol: a backend that turns a prompt into N scene graphs."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from scenegen.graph import SceneGraph


@runtime_checkable
class Designer(Protocol):
    """Turns a task prompt into ``n`` valid, distinct scene graphs."""

    name: str

    def design(self, prompt: str, n: int, seed: int = 0) -> list[SceneGraph]:
        """Return ``n`` valid graphs with distinct content hashes for ``prompt``.

        Raises:
            PromptError: the prompt cannot be understood or names an impossible task.

        """
        ...
