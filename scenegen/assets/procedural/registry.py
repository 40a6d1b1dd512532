"""The procedural builder registry: :class:`ProceduralMesh`, :func:`register`, :func:`build_mesh`.

One module per shape family (imported by :mod:`scenegen.assets.procedural`) registers its
builders in :data:`GENERATORS` (family name from the catalog's ``generator`` field -> builder).
A builder draws instance parameters inside the category's size range and returns a
:class:`ProceduralMesh` in the asset frame (metres, +z up, origin at the bottom centre of
the bounding box, +x the long horizontal axis).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import trimesh

from scenegen.catalog import Category
from scenegen.errors import AssetError

GENERATOR_VERSION = "1"
"""Bump when any builder's output changes: it is part of the asset cache key."""


@dataclass
class ProceduralMesh:
    """A generated mesh plus what later stages need to know about it."""

    mesh: trimesh.Trimesh
    """Visual mesh in the asset frame (may carry UVs and a texture in ``mesh.visual``)."""
    params: dict[str, Any]
    """Instance parameters actually used (JSON-serialisable numbers and strings)."""
    closed: bool = True
    """The real object is closed, so the mesh must be watertight."""
    cavity: bool = False
    """The object has a real cavity (container) that collision proxies must keep."""
    primitive: dict | None = None
    """A primitive collision proxy when the shape is simple: ``{"type": "box", "extents": [x, y, z]}``,
    ``{"type": "cylinder", "radius": r, "height": h, "axis": "x"|"y"|"z"}`` (axis defaults to
    ``"z"``; a marker lying on the table has ``"x"``) or ``{"type": "sphere", "radius": r}``,
    centred on the bounding-box centre."""
    grasp: dict = field(default_factory=dict)
    """Grasp hint: ``{"mode": "top"|"side"|"rim", "width": metres across the jaws, "height": grasp z,
    "x": grasp x in the asset frame}`` (``rim``: close on the wall at the top edge)."""
    parts: Callable[[float], list[trimesh.Trimesh]] | None = None
    """The builder's own convex decomposition: given a tolerance (m, the largest bridge a part may
    make over a concave stretch), the convex parts in the asset frame (see ``procedural._parts``).
    None: the collision stage decomposes the mesh itself (CoACD)."""


Builder = Callable[[Category, np.random.Generator, dict, int], ProceduralMesh]
GENERATORS: dict[str, dict[str, Builder]] = {}
"""family -> {category name or "*" -> builder}."""


def register(family: str, *categories: str) -> Callable[[Builder], Builder]:
    """Decorator registering a builder for a family (for given categories, or all with ``"*"``)."""
    def deco(fn: Builder) -> Builder:
        for c in categories or ("*",):
            GENERATORS.setdefault(family, {})[c] = fn
        return fn
    return deco


def build_mesh(category: Category, rng: np.random.Generator, attributes: dict | None = None,
               max_faces: int = 5000) -> ProceduralMesh:
    """Build the mesh of one instance of ``category``.

    Args:
        category: catalog category (its ``generator`` picks the family).
        rng: random generator the instance parameters are drawn from.
        attributes: ``color``, ``material``, ``size`` (small/medium/large) or ``scale`` (0..1).
        max_faces: triangle budget of the visual mesh.

    Raises:
        AssetError: no builder exists for the category.

    """
    fam = GENERATORS.get(category.generator, {})
    fn = fam.get(category.name) or fam.get("*")
    if fn is None:
        raise AssetError(f"no procedural builder for category {category.name!r} (family "
                         f"{category.generator!r}); add one in scenegen/assets/procedural/")
    return fn(category, rng, dict(attributes or {}), max_faces)
