"""Toys: a ball and a toy car."""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    loft,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


@register("toys", "ball")
def build_ball(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Round ball (icosphere)."""
    fr = draw_fractions(rng, attributes)
    ext = lerp_size(cat, np.full(3, fr[0]))
    d = float(ext.min())
    params = {"diameter": d}

    def make(detail: float) -> ProceduralMesh:
        mesh, _ = finalize(trimesh.creation.icosphere(subdivisions=3 if detail >= 0.55 else 2), np.full(3, d))
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False,
                              primitive={"type": "sphere", "radius": d / 2},
                              grasp={"mode": "top", "width": d, "height": d / 2, "x": 0.0})

    return fit_budget(make, max_faces, cat.name)


@register("toys", "toy_car")
def build_toy_car(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Toy car: rounded body, a tapered cabin on top and four wheels, one closed mesh."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, H = (float(v) for v in ext)
    wheel_r = float(rng.uniform(0.26, 0.32) * H)
    cabin = float(rng.uniform(0.42, 0.55))              # cabin length / body length
    cabin_x = float(rng.uniform(-0.12, 0.02) * L)       # cabin shift towards the back
    params = {"length": L, "width": W, "height": H, "wheel_radius": wheel_r, "cabin": cabin,
              "cabin_x": cabin_x}

    def make(detail: float) -> ProceduralMesh:
        n = res(4, detail, lo=2, multiple=1)
        clear = 0.45 * wheel_r
        body_h = 0.5 * H
        bw = 0.84 * W
        body = loft(rounded_rect2d(0.96 * L, bw, 0.12 * bw, n), clear,
                    rounded_rect2d(L, bw, 0.15 * bw, n), clear + body_h)
        top = clear + body_h
        cab = loft(rounded_rect2d(cabin * L, 0.8 * bw, 0.1 * bw, n), top - 0.002,
                   rounded_rect2d(0.7 * cabin * L, 0.66 * bw, 0.1 * bw, n), H)
        cab.apply_translation([cabin_x, 0.0, 0.0])
        parts = [body, cab]
        for sx in (-1, 1):
            for sy in (-1, 1):
                w = trimesh.creation.cylinder(radius=wheel_r, height=(W - bw) / 2 + 0.004,
                                              sections=res(16, detail))
                w.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
                w.apply_translation([sx * 0.3 * L, sy * (W / 2 - ((W - bw) / 2 + 0.004) / 2), wheel_r])
                parts.append(w)
        mesh, _ = finalize(union(*parts), ext)
        grasp = {"mode": "top", "width": float(W), "height": float(H * 0.5), "x": 0.0}
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=None, grasp=grasp)

    return fit_budget(make, max_faces, cat.name)
