"""Small helpers shared by the household-object builders (kitchen, teaware, household, office, blades, play).

A round-in-plan size draw, the two kinds of result (a closed solid, an open vessel with its
cavity probes), the builder's own convex collision parts mapped into the asset frame (see
:mod:`._parts`), and the convex rounded slab that soap, phones and remotes are made of.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import trimesh

from scenegen.assets.procedural._build import Placement, draw_fractions, lerp_size
from scenegen.assets.procedural._geom import rounded_rect2d
from scenegen.assets.procedural.registry import ProceduralMesh
from scenegen.catalog import Category


def round_size(cat: Category, rng: np.random.Generator, attributes: dict) -> tuple[float, float]:
    """Diameter and height of an instance that is round in plan (x and y drawn equal)."""
    fr = draw_fractions(rng, attributes)
    fr[1] = fr[0]
    ext = lerp_size(cat, fr)
    return float(ext[0]), float(ext[2])


Parts = Callable[[float], list[np.ndarray]] | Sequence[np.ndarray]
"""Convex parts in the build frame: point sets, or ``tolerance -> point sets`` (see :mod:`._parts`)."""


def framed(place: Placement, parts: Parts | None) -> Callable[[float], list[trimesh.Trimesh]] | None:
    """The builder's convex parts as ``tolerance -> hull meshes`` in the asset frame (None: none)."""
    if parts is None:
        return None
    fn = parts if callable(parts) else (lambda tol: [np.asarray(p, dtype=float) for p in parts])
    return lambda tol: place.parts(fn(tol))


def solid(mesh: trimesh.Trimesh, params: dict, grasp: dict, primitive: dict | None = None,
          place: Placement | None = None, parts: Parts | None = None) -> ProceduralMesh:
    """The result of a closed object without a cavity (with its own convex parts when given)."""
    return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=primitive, grasp=grasp,
                          parts=framed(place, parts) if place is not None else None)


def vessel(mesh: trimesh.Trimesh, place: Placement, params: dict, floor: float, wall: float, grasp: dict,
           cavity_xy: tuple[float, float] = (0.0, 0.0), parts: Parts | None = None) -> ProceduralMesh:
    """The result of an open vessel: its floor height, a point in its cavity and one inside its floor.

    ``floor``, ``cavity_xy`` and ``parts`` are in the build frame; ``place`` maps them to the asset frame.
    """
    x, y = cavity_xy
    params = dict(params, floor=float(place([x, y, floor])[2]), wall=float(wall),
                  cavity_point=place([x, y, floor + 0.004]), wall_point=place([x, y, floor / 2]))
    return ProceduralMesh(mesh, params, closed=True, cavity=True, primitive=None, grasp=grasp,
                          parts=framed(place, parts))


def rounded_hull(x: float, y: float, h: float, rings: list[tuple[float, float]], corner: float,
                 n: int) -> trimesh.Trimesh:
    """Convex solid through rounded rectangles: ``rings`` holds (height fraction, inset as a fraction of y)."""
    pts = []
    for zf, inset in rings:
        d = inset * y
        ring = rounded_rect2d(x - 2 * d, y - 2 * d, max(corner - d, 0.3 * corner), n)
        pts.append(np.column_stack([ring, np.full(len(ring), zf * h)]))
    return trimesh.convex.convex_hull(np.vstack(pts))
