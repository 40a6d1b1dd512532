"""Desk things: a phone and a remote lying flat, a stapler, a glue stick standing up.

The phone is a convex rounded slab with eased edges (its box is its collision shape); the
remote a tapered rounded bar with a few raised buttons; the stapler a base and a hinged top
arm over it; the glue stick a lathed tube with its cap.
"""

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
    extrude,
    lathe,
    loft,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural._solids import round_size, rounded_hull, solid
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


@register("office", "phone")
def build_phone(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Smartphone lying screen up: a rounded rectangle slab with eased top and bottom edges."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    corner = float(rng.uniform(0.1, 0.16) * Y)
    params = {"x": X, "y": Y, "z": H, "corner": corner}

    def make(detail: float) -> ProceduralMesh:
        n = res(6, detail, lo=3, multiple=1)
        ease = 0.25 * H / Y                              # inset of the eased edges, as a fraction of y
        rings = [(0.0, ease), (0.25, 0.0), (0.75, 0.0), (1.0, ease)]
        mesh, _ = finalize(rounded_hull(X, Y, H, rings, corner, n), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.5 * H), "x": 0.0}
        prim = {"type": "box", "extents": [X, Y, H]}
        return solid(mesh, params, grasp, prim)

    return fit_budget(make, max_faces, cat.name)


@register("office", "remote")
def build_remote(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """TV remote: a bar narrowing towards its foot, rounded on top, with rows of raised buttons."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    rows = int(rng.integers(4, 7))
    params = {"x": X, "y": Y, "z": H, "button_rows": float(rows)}

    def make(detail: float) -> ProceduralMesh:
        n = res(5, detail, lo=2, multiple=1)
        hb = H - 0.0015                                  # body height under the buttons
        body = rounded_hull(X, Y, hb, [(0.0, 0.08), (0.35, 0.0), (0.8, 0.02), (1.0, 0.12)], 0.3 * Y, n)
        buttons = []
        sections = res(12, detail, lo=8)
        for i in range(rows):
            for j in (-1, 0, 1):
                b = trimesh.creation.cylinder(radius=0.11 * Y, height=0.004, sections=sections)
                b.apply_translation([X * (0.3 - 0.55 * i / max(rows - 1, 1)), j * 0.27 * Y, H - 0.002])
                buttons.append(b)
        power = trimesh.creation.cylinder(radius=0.13 * Y, height=0.004, sections=sections)
        power.apply_translation([0.4 * X, 0.0, H - 0.002])
        mesh, _ = finalize(union(body, power, *buttons), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.55 * H), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("office", "stapler")
def build_stapler(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Stapler: a flat base and a top arm sloping down from the hinge block at -x to the nose at +x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    gap = float(rng.uniform(0.12, 0.2) * H)             # opening between base and arm at the nose
    params = {"x": X, "y": Y, "z": H, "gap": gap}

    def make(detail: float) -> ProceduralMesh:
        n = res(4, detail, lo=2, multiple=1)
        base_h = 0.22 * H
        base = extrude(rounded_rect2d(X, 0.9 * Y, 0.3 * Y, n), base_h)
        hinge = extrude(rounded_rect2d(0.22 * X, 0.8 * Y, 0.2 * Y, n), H * 0.8)
        hinge.apply_translation([-0.39 * X, 0, 0.5 * base_h])
        a0 = rounded_rect2d(0.96 * X, Y, 0.35 * Y, n)
        a1 = rounded_rect2d(0.9 * X, 0.8 * Y, 0.3 * Y, n)
        arm = loft(a0, 0.0, a1, H - base_h - gap)
        v = arm.vertices.copy()                          # tilt: full height at the hinge, lower at the nose
        v[:, 2] = base_h + gap + v[:, 2] * (1.0 - 0.25 * (v[:, 0] / X + 0.5))
        arm.vertices = v
        mesh, _ = finalize(union(base, hinge, arm), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.6 * H), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("office", "glue_stick")
def build_glue_stick(cat: Category, rng: np.random.Generator, attributes: dict,
                     max_faces: int) -> ProceduralMesh:
    """Glue stick standing on its twist end: a tube, a seam and a slightly wider cap on top."""
    d, h = round_size(cat, rng, attributes)
    R = d / 2
    cap = float(rng.uniform(0.3, 0.38))
    params = {"diameter": d, "height": h, "cap": cap}

    def make(detail: float) -> ProceduralMesh:
        zc = (1 - cap) * h
        prof = np.array([(0.0, 0.0), (0.9 * R, 0.0), (0.92 * R, 0.08 * h), (0.95 * R, 0.09 * h), (0.95 * R, zc),
                         (R, zc + 0.001), (R, h - 0.003), (R - 0.003, h), (0.0, h)])
        mesh, _ = finalize(lathe(prof, res(24, detail)), np.array([d, d, h]))
        grasp = {"mode": "side", "width": float(d), "height": float(0.45 * h), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)
