"""Box-like objects: table slab, box, cereal box, book, sponge, cutting board, block.

Each is sized exactly to the drawn extents. Textures (wood grain, cardboard, cereal
label, book cover) are planar-projected so the meshes stay watertight.
"""

from __future__ import annotations

import itertools

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
    circle2d,
    extrude,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


def _grasp(ext: np.ndarray) -> dict:
    """Top grasp across the shorter horizontal side for low objects, side grasp for tall ones."""
    tall = ext[2] > 1.5 * min(ext[0], ext[1])
    return {"mode": "side" if tall else "top", "width": float(min(ext[0], ext[1])),
            "height": float(ext[2] * (0.5 if tall else 0.6)), "x": 0.0}


def _boxed(mesh: trimesh.Trimesh, ext: np.ndarray, params: dict, image=None,
           axes: tuple[int, int] = (0, 1)) -> ProceduralMesh:
    mesh, _ = finalize(mesh, ext)
    if image is not None:
        tex.apply_planar(mesh, image, axes)
    prim = {"type": "box", "extents": [float(x) for x in ext]}
    return ProceduralMesh(mesh, params, closed=True, cavity=False, primitive=prim, grasp=_grasp(ext))


def _chamfered(ext: np.ndarray, bevel: float) -> trimesh.Trimesh:
    """A box with its edges and corners cut by ``bevel`` (convex hull of 24 points)."""
    h = ext / 2
    pts = []
    for sx, sy, sz in itertools.product((-1, 1), repeat=3):
        c = np.array([sx * h[0], sy * h[1], sz * h[2]])
        for ax in range(3):
            p = c.copy()
            p[ax] -= np.sign(c[ax]) * bevel
            pts.append(p)
    return trimesh.convex.convex_hull(np.array(pts))


@register("box", "table", "box", "cereal_box")
def build_box(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Plain textured box: a wooden table slab, a cardboard box or a cereal box."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    tseed = seed_from(rng)
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "texture_seed": tseed}
    if cat.name == "table":
        image, axes = tex.wood(tseed), (0, 1)
    elif cat.name == "cereal_box":
        image, axes = tex.cereal_label(tseed), (0, 2)
    else:
        image, axes = tex.cardboard(tseed), (0, 1)
    return fit_budget(lambda detail: _boxed(box(ext), ext, params, image, axes), max_faces, cat.name)


@register("box", "block", "sponge")
def build_block(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Toy block (chamfered cube) or kitchen sponge (rounded corners)."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    if cat.name == "block":
        bevel = float(rng.uniform(0.04, 0.08) * ext.min())
    else:
        bevel = float(rng.uniform(0.1, 0.2) * min(ext[0], ext[1]))
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "bevel": bevel}

    def make(detail: float) -> ProceduralMesh:
        if cat.name == "block":
            mesh = _chamfered(ext, bevel)
        else:
            mesh = extrude(rounded_rect2d(ext[0], ext[1], bevel, res(5, detail, lo=2, multiple=1)), ext[2])
        return _boxed(mesh, ext, params)

    return fit_budget(make, max_faces, cat.name)


@register("box", "cutting_board")
def build_cutting_board(cat: Category, rng: np.random.Generator, attributes: dict,
                        max_faces: int) -> ProceduralMesh:
    """Wooden board with rounded corners and a hanging hole near the +x end."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    corner = float(rng.uniform(0.08, 0.16) * ext[1])
    hole = float(rng.uniform(0.05, 0.08) * ext[1])
    tseed = seed_from(rng)
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "corner": corner,
              "hole": hole, "texture_seed": tseed}
    image = tex.wood(tseed)

    def make(detail: float) -> ProceduralMesh:
        outline = rounded_rect2d(ext[0], ext[1], corner, res(6, detail, lo=2, multiple=1))
        ring = circle2d(res(16, detail, lo=8), hole) + [ext[0] / 2 - 2.2 * hole, 0.0]
        return _boxed(extrude(outline, ext[2], [ring[::-1]]), ext, params, image, (0, 1))

    return fit_budget(make, max_faces, cat.name)


@register("box", "book")
def build_book(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Closed book lying flat: covers and spine, page block recessed on three sides."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    cover = float(min(0.003, 0.15 * ext[2]))
    inset = float(rng.uniform(0.002, 0.004))
    tseed = seed_from(rng)
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "cover": cover,
              "inset": inset, "texture_seed": tseed}
    image = tex.book_cover(tseed)
    ex, ey, ez = (float(v) for v in ext)

    def make(detail: float) -> ProceduralMesh:
        parts = [box((ex, ey, cover), (0, 0, cover / 2)),
                 box((ex, ey, cover), (0, 0, ez - cover / 2)),
                 box((ex, cover * 1.5, ez), (0, -ey / 2 + cover * 0.75, ez / 2)),
                 box((ex - 2 * inset, ey - inset, ez - cover), (0, -inset / 2, ez / 2))]
        # texture: u along the spine (x), v across (y); spine stripe at v = 0 (y = -ey/2)
        return _boxed(union(*parts), ext, params, image, (1, 0))

    return fit_budget(make, max_faces, cat.name)
