"""Procedural meshes for every catalog category, offline.

The registry (:class:`~scenegen.assets.procedural.registry.ProceduralMesh`, ``register``,
``build_mesh``) is :mod:`scenegen.assets.procedural.registry`; importing this package
imports every shape-family module, and each registers its builders there:
:mod:`.boxes`, :mod:`.containers`, :mod:`.fruit`, :mod:`.hardware`, :mod:`.revolved`,
:mod:`.tools`, :mod:`.toys` (helpers shared by the builders: ``_build``, ``_geom``, ``_texture``).
"""

from __future__ import annotations

from scenegen.assets.procedural import boxes, containers, fruit, hardware, revolved, tools, toys  # noqa: F401
from scenegen.assets.procedural.registry import (
    GENERATOR_VERSION,
    GENERATORS,
    Builder,
    ProceduralMesh,
    build_mesh,
    register,
)

__all__ = ["GENERATOR_VERSION", "GENERATORS", "Builder", "ProceduralMesh", "build_mesh", "register"]
