"""Procedural meshes for every catalog category, offline.

The registry (:class:`~scenegen.assets.procedural.registry.ProceduralMesh`, ``register``,
``build_mesh``) is :mod:`scenegen.assets.procedural.registry`; importing this package
imports every shape-family module, and each registers its builders there:
:mod:`.blades`, :mod:`.boxes`, :mod:`.containers`, :mod:`.fruit`, :mod:`.hardware`,
:mod:`.household`, :mod:`.kitchen`, :mod:`.office`, :mod:`.play`, :mod:`.revolved`, :mod:`.teaware`,
:mod:`.tools`, :mod:`.toys` (helpers shared by the builders: ``_build``, ``_geom``, ``_parts``, ``_texture``).
"""

from __future__ import annotations

from scenegen.assets.procedural import (  # noqa: F401
    blades,
    boxes,
    containers,
    fruit,
    hardware,
    household,
    kitchen,
    office,
    play,
    revolved,
    teaware,
    tools,
    toys,
)
from scenegen.assets.procedural.registry import (
    GENERATOR_VERSION,
    GENERATORS,
    Builder,
    ProceduralMesh,
    build_mesh,
    register,
)

__all__ = ["GENERATOR_VERSION", "GENERATORS", "Builder", "ProceduralMesh", "build_mesh", "register"]
