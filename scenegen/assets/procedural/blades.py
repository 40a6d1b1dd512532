"""Knife and scissors lying flat along x: 2-D outlines (shapely) extruded and unioned.

The knife is a thin blade with a curved edge rising to the tip at +x and a thicker handle
at -x (what a gripper closes on, across y). The scissors are two closed blades meeting at
a pivot and two finger rings at -x; a gripper closes across the blades near the pivot.
"""

from __future__ import annotations

import numpy as np
import trimesh
from shapely.geometry import Point, Polygon

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    extrude,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural._solids import solid
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


def _solid(shape, height: float) -> trimesh.Trimesh:
    """Extrude the largest polygon of a shapely shape (holes kept) from z = 0 to ``height``."""
    shape = shape.buffer(0)
    if shape.geom_type != "Polygon":
        shape = max(shape.geoms, key=lambda g: g.area)
    return trimesh.creation.extrude_polygon(shape.simplify(1e-5), height)


@register("blades", "knife")
def build_knife(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Kitchen knife on its side: blade (2.5 mm) at +x, a rounded handle (full height) at -x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, H = (float(v) for v in ext)
    handle_l = float(rng.uniform(0.38, 0.45) * L)
    hw = float(min(0.7 * W, 0.024))                     # handle width across y
    blade_t = 0.0025
    params = {"length": L, "width": W, "height": H, "handle_length": handle_l, "handle_width": hw}

    def make(detail: float) -> ProceduralMesh:
        x0 = -L / 2 + handle_l                           # the bolster: handle meets blade
        t = np.linspace(0.0, 1.0, res(10, detail, lo=5, multiple=1))
        edge = -W / 2 + 0.85 * W * t ** 2.2               # the cutting edge curves up to meet the spine at the tip
        spine = W / 2 - 0.15 * W * t ** 3
        xs = x0 + (L / 2 - x0) * t
        blade = Polygon(np.vstack([np.column_stack([xs, edge]), np.column_stack([xs[::-1], spine[::-1]])[1:]]))
        blade = blade.union(Polygon([(x0 - 0.01, -W / 2), (x0 + 0.002, -W / 2), (x0 + 0.002, W / 2),
                                     (x0 - 0.01, W / 2)]))
        flat = _solid(blade, blade_t)
        n = res(5, detail, lo=2, multiple=1)
        handle = extrude(rounded_rect2d(handle_l, hw, 0.45 * hw, n), H)
        handle.apply_translation([-L / 2 + handle_l / 2, W / 2 - hw / 2 - 0.1 * (W - hw), 0.0])
        mesh, place = finalize(union(flat, handle), ext)
        g = place([-L / 2 + 0.45 * handle_l, 0.0, 0.6 * H])
        grasp = {"mode": "top", "width": hw * float(place.scale[1]), "height": g[2], "x": g[0]}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("blades", "scissors")
def build_scissors(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Closed scissors lying flat: blades from the pivot to the tip at +x, finger rings at -x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, T = (float(v) for v in ext)
    pivot = float(rng.uniform(-0.05, 0.05) * L)
    blade_w = float(min(0.3 * W, 0.02))                 # blade width at the pivot
    params = {"length": L, "width": W, "thickness": T, "pivot_x": pivot, "blade_width": blade_w}

    def make(detail: float) -> ProceduralMesh:
        q = res(8, detail, lo=4, multiple=1)
        blades = Polygon([(pivot - 0.01, -blade_w / 2), (pivot + 0.01, -blade_w / 2), (L / 2, -0.1 * blade_w),
                          (L / 2, 0.1 * blade_w), (pivot + 0.01, blade_w / 2), (pivot - 0.01, blade_w / 2)])
        ro = 0.25 * W                                    # finger ring outer radius
        shape = blades
        for side in (-1, 1):
            c = (-L / 2 + ro * (1.25 if side > 0 else 1.0), side * (W / 2 - ro))
            ring = Point(*c).buffer(ro, quad_segs=q).difference(Point(*c).buffer(0.62 * ro, quad_segs=q))
            shank = Polygon([(c[0] + 0.5 * ro, c[1] - side * 0.3 * ro), (c[0] + 0.8 * ro, c[1] + side * 0.2 * ro),
                             (pivot, side * 0.25 * blade_w), (pivot, -side * 0.25 * blade_w)])
            shape = shape.union(ring).union(shank)
        mesh, place = finalize(_solid(shape, T), ext)
        gx = pivot + 0.25 * (L / 2 - pivot)
        width = blade_w * (1 - 0.25 * 0.8) * float(place.scale[1])
        g = place([gx, 0.0, T / 2])
        grasp = {"mode": "top", "width": float(width), "height": g[2], "x": g[0]}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)
