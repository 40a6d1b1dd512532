"""Household things: an open cardboard box, a small package, a toolbox, soap, a scrub brush, a candle.

The open box and the toolbox are containers with a real cavity (straight walls cut out of a
solid, one closed volume); the box's flaps hang folded down outside its walls and it carries
the cardboard texture; the toolbox has a carrying bar on two posts across its length. Soap
is a pillow-shaped convex bar, the brush a wooden back over a block of bristle tufts, the
candle a lathed pillar with a melted dip and a wick. The small closed package reuses the
box builder of :mod:`.boxes`. The box (its slabs), the toolbox (floor, wall segments, posts,
bar) and the brush (its back and its bristle block) give their own convex collision parts.
"""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.assets.procedural import _texture as tex
from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
    seed_from,
)
from scenegen.assets.procedural._geom import (
    box,
    difference,
    extrude,
    lathe,
    rounded_rect2d,
    sweep,
    union,
)
from scenegen.assets.procedural._parts import wall_parts
from scenegen.assets.procedural._solids import round_size, rounded_hull, solid, vessel
from scenegen.assets.procedural.boxes import build_box
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category

register("box", "package")(build_box)


@register("household", "box")
def build_open_box(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Open cardboard box: thin straight walls, flaps folded down outside, a real cavity."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    wall, floor, flap_t = 0.004, 0.004, 0.003
    flap = float(min(rng.uniform(0.35, 0.5) * H, 0.3 * min(X, Y)))
    tseed = seed_from(rng)
    params = {"x": X, "y": Y, "z": H, "wall": wall, "flap": flap, "texture_seed": tseed}
    image = tex.cardboard(tseed)

    def make(detail: float) -> ProceduralMesh:
        bx, by = X - 2 * flap_t, Y - 2 * flap_t
        hw = H - floor
        slabs = [box((bx, by, floor), (0, 0, floor / 2))]                       # floor, then the walls
        slabs += [box((wall, by, hw), (s * (bx - wall) / 2, 0, floor + hw / 2)) for s in (-1, 1)]
        slabs += [box((bx - 2 * wall, wall, hw), (0, s * (by - wall) / 2, floor + hw / 2)) for s in (-1, 1)]
        o = flap_t + wall / 2                          # each flap sinks half a wall into its wall
        slabs += [box((o, 0.96 * by, flap), (s * (bx / 2 + flap_t / 2 - wall / 4), 0, H - flap / 2)) for s in (-1, 1)]
        slabs += [box((0.96 * bx, o, flap), (0, s * (by / 2 + flap_t / 2 - wall / 4), H - flap / 2)) for s in (-1, 1)]
        mesh, place = finalize(union(*slabs), ext)
        tex.apply_planar(mesh, image, (0, 2))
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": H, "x": float(X / 2 - flap_t - wall / 2)}
        return vessel(mesh, place, params, floor, wall, grasp, parts=[b.vertices for b in slabs])

    return fit_budget(make, max_faces, cat.name)


@register("household", "toolbox")
def build_toolbox(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Open tool tray: rounded walls and a carrying bar on two posts along x, over the cavity."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    wall, floor = 0.005, 0.006
    walls = float(rng.uniform(0.5, 0.62) * H)          # wall height; the bar rises above
    bar_w, bar_h = 0.024, 0.018
    corner = float(rng.uniform(0.08, 0.14) * Y)
    params = {"x": X, "y": Y, "z": H, "wall": wall, "wall_height": walls, "bar_width": bar_w}

    def make(detail: float) -> ProceduralMesh:
        n = res(5, detail, lo=2, multiple=1)
        ring_o = rounded_rect2d(X, Y, corner, n)
        ring_i = rounded_rect2d(X - 2 * wall, Y - 2 * wall, max(corner - wall, 0.004), n)
        inner = extrude(ring_i, walls)
        inner.apply_translation([0, 0, floor])
        tray = difference(extrude(ring_o, walls), inner)
        px = X / 2 - wall - 0.006
        posts = [box((0.016, 0.03, H - floor), (s * px, 0, floor / 2 + H / 2)) for s in (-1, 1)]
        t = np.linspace(-px - 0.006, px + 0.006, 4)
        path = np.column_stack([t, np.zeros_like(t), np.full_like(t, H - bar_h / 2)])
        bar = sweep(path, rounded_rect2d(bar_h, bar_w, 0.45 * bar_h, res(4, detail, lo=2, multiple=1)))
        mesh, place = finalize(union(tray, *posts, bar), ext)
        grasp = {"mode": "top", "width": bar_w, "height": float(H - bar_h / 2), "x": 0.0}

        def parts(tol: float) -> list[np.ndarray]:
            def at(ring: np.ndarray, z: float) -> np.ndarray:
                return np.column_stack([ring, np.full(len(ring), z)])
            out = [np.vstack([at(ring_o, 0.0), at(ring_o, floor)])]
            out += wall_parts([at(ring_o, floor), at(ring_o, walls)], [at(ring_i, floor), at(ring_i, walls)], tol)
            return out + [b.vertices for b in posts] + [bar.vertices]

        return vessel(mesh, place, params, floor, wall, grasp, cavity_xy=(0.0, Y / 4), parts=parts)

    return fit_budget(make, max_faces, cat.name)


@register("household", "soap")
def build_soap(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Bar of soap: a rounded rectangle swelling to a pillow, flat enough to lie still."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    swell = float(rng.uniform(0.08, 0.14))
    params = {"x": X, "y": Y, "z": H, "swell": swell}

    def make(detail: float) -> ProceduralMesh:
        n = res(6, detail, lo=3, multiple=1)
        rings = [(0.0, 0.6 * swell), (0.2, 0.12 * swell), (0.5, 0.0), (0.8, 0.15 * swell), (1.0, swell)]
        mesh, _ = finalize(rounded_hull(X, Y, H, rings, 0.3 * Y, n), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.6 * H), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("household", "scrub_brush")
def build_scrub_brush(cat: Category, rng: np.random.Generator, attributes: dict,
                      max_faces: int) -> ProceduralMesh:
    """Scrub brush resting on its bristles: a domed wooden back over a grid of bristle tufts."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    split = float(rng.uniform(0.4, 0.5))                # bristle height / height
    params = {"x": X, "y": Y, "z": H, "bristles": split}

    def make(detail: float) -> ProceduralMesh:
        n = res(5, detail, lo=2, multiple=1)
        hb = split * H
        back = rounded_hull(X, Y, H - hb + 0.002, [(0.0, 0.0), (0.6, 0.02), (1.0, 0.2)], 0.35 * Y, n)
        back.apply_translation([0, 0, hb - 0.002])
        tufts = extrude(rounded_rect2d(X - 0.008, Y - 0.008, 0.3 * Y, n), hb)
        gap, depth = 0.0025, 0.7 * hb
        nx, ny = max(3, int(round(X / 0.022))), max(2, int(round(Y / 0.02)))
        cuts = [box((gap, Y, 2 * depth), ((i / nx - 0.5) * (X - 0.008), 0, 0)) for i in range(1, nx)]
        cuts += [box((X, gap, 2 * depth), (0, (j / ny - 0.5) * (Y - 0.008), 0)) for j in range(1, ny)]
        mesh, place = finalize(union(back, difference(tufts, *cuts)), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.75 * H), "x": 0.0}
        # collision: the back and the whole bristle block (the grooves between tufts are too fine to matter)
        return solid(mesh, params, grasp, place=place, parts=[back.vertices, tufts.vertices])

    return fit_budget(make, max_faces, cat.name)


@register("household", "candle")
def build_candle(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Pillar candle: a wax cylinder with a rounded top edge, a melted dip and a wick."""
    d, h = round_size(cat, rng, attributes)
    R = d / 2
    dip = float(rng.uniform(0.004, 0.008))
    wick = 0.007
    params = {"diameter": d, "height": h, "dip": dip}

    def make(detail: float) -> ProceduralMesh:
        hw = h - wick                                    # height of the wax rim
        prof = np.array([(0.0, 0.0), (R - 0.002, 0.0), (R, 0.002), (R, hw - 0.003), (R - 0.0015, hw - 0.0005),
                         (R - 0.004, hw), (0.55 * R, hw - 0.7 * dip), (0.0, hw - dip)])
        body = lathe(prof, res(32, detail))
        w = trimesh.creation.cylinder(radius=0.0012, height=wick + dip + 0.002, sections=8)
        w.apply_translation([0, 0, hw - dip - 0.002 + (wick + dip + 0.002) / 2])
        mesh, _ = finalize(union(body, w), np.array([d, d, h]))
        grasp = {"mode": "side", "width": float(d), "height": float(0.5 * h), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)
