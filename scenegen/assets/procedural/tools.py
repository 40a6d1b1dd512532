"""Hand tools and cutlery lying along x: screwdriver, marker, hammer, wrench, spatula, spoon, fork.

Round tools are single lathes (a fluted handle, ferrule, shaft and flattened tip in
one profile). Flat tools are 2-D outlines (shapely) extruded; handles that rise off
the table are swept tubes unioned onto the flat head.
"""

from __future__ import annotations

import numpy as np
import trimesh
from shapely import affinity
from shapely.geometry import Point, Polygon
from shapely.geometry import box as sbox

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    lathe,
    rounded_rect2d,
    shell_profile,
    sweep,
    union,
)
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category

_TO_X = trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])   # lathe axis z -> +x


def _grasp(place, x: float, z: float, width: float) -> dict:
    p = place([x, 0.0, z])
    return {"mode": "top", "width": float(width), "height": p[2], "x": p[0]}


def _extrude_shape(shape, height: float) -> trimesh.Trimesh:
    shape = shape.buffer(0)
    if shape.geom_type != "Polygon":                         # keep the largest piece
        shape = max(shape.geoms, key=lambda g: g.area)
    return trimesh.creation.extrude_polygon(shape.simplify(1e-5), height)


def _rising_handle(x0: float, x1: float, z0: float, z1: float, width: float, thick: float,
                   taper: float, detail: float) -> trimesh.Trimesh:
    """Flat handle swept from (x0, z0) to (x1, z1), widening by ``taper`` towards its end."""
    t = np.linspace(0, 1, res(8, detail, lo=4, multiple=1))
    path = np.column_stack([x0 + (x1 - x0) * t, np.zeros_like(t), z0 + (z1 - z0) * t ** 1.5])
    sec = rounded_rect2d(thick, width, 0.45 * thick, res(4, detail, lo=2, multiple=1))
    scales = np.column_stack([np.ones_like(t), 1 + (taper - 1) * np.sin(np.pi * np.clip(t * 0.8, 0, 1) / 1.6)])
    return sweep(path, sec, scales)


@register("tools", "screwdriver", "marker")
def build_round_tool(cat: Category, rng: np.random.Generator, attributes: dict,
                     max_faces: int) -> ProceduralMesh:
    """Screwdriver (fluted handle, shaft, flat tip) or marker (body and cap), one lathe along x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, R = float(ext[0]), float(max(ext[1], ext[2]) / 2)
    screwdriver = cat.name == "screwdriver"
    split = float(rng.uniform(0.4, 0.5) if screwdriver else rng.uniform(0.25, 0.35))
    params = {"length": L, "diameter": 2 * R, "handle_fraction" if screwdriver else "cap_fraction": split}

    def make(detail: float) -> ProceduralMesh:
        n = res(6, detail, lo=3, multiple=1)
        a = np.linspace(0, np.pi / 2, n)
        if screwdriver:
            hl, sr = split * L, max(0.0025, 0.13 * R)
            prof = [(0.0, 0.0), *[(0.8 * R + 0.2 * R * np.sin(x), 0.08 * hl * (1 - np.cos(x))) for x in a],
                    (R, 0.85 * hl), (0.75 * R, hl), (0.4 * R, hl), (0.4 * R, hl + 0.05 * L),
                    (sr, hl + 0.06 * L), (sr, 0.93 * L), (0.6 * sr, L), (0.0, L)]
        else:
            c, br = split * L, 0.92 * R
            end = [(br * np.sin(x), 0.04 * L * (1 - np.cos(x))) for x in a]
            cap = [(R * np.cos(x), L - c * 0.12 * (1 - np.sin(x))) for x in a]
            prof = [(0.0, 0.0), *end[1:], (br, L - c), (R, L - c + 0.002), *cap[:-1], (0.0, L)]
        m = lathe(np.array(prof), res(24, detail))
        v = m.vertices.copy()
        if screwdriver:
            th = np.arctan2(v[:, 1], v[:, 0])
            hz = (v[:, 2] > 0.1 * split * L) & (v[:, 2] < 0.85 * split * L)
            v[hz, :2] *= (1 - 0.07 * (1 + np.cos(6 * th[hz])) / 2)[:, None]
            tip = v[:, 2] > 0.95 * L
            v[tip, 1] *= 0.35
        m.vertices = v
        m.apply_transform(_TO_X)
        mesh, place = finalize(m, ext)
        if screwdriver:
            g = {"mode": "top", "width": 2 * R, "height": float(ext[2] / 2),
                 "x": place([split * L / 2, 0.0, 0.0])[0]}          # the handle's middle (the lathe axis is x now)
            prim = None
        else:
            g = {"mode": "top", "width": float(ext[1]), "height": float(ext[2] / 2), "x": 0.0}
            prim = {"type": "cylinder", "radius": R, "height": L, "axis": "x"}
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=prim, grasp=g)

    return fit_budget(make, max_faces, cat.name)


@register("tools", "hammer")
def build_hammer(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Hammer lying flat: oval handle along x, head across y with a round face and a claw."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, T = (float(v) for v in ext)
    head_w = float(rng.uniform(0.09, 0.12) * L)          # head size along x
    params = {"length": L, "head_length": W, "thickness": T, "head_width": head_w}

    def make(detail: float) -> ProceduralMesh:
        hs = T                                          # head square section
        cx = L / 2 - head_w / 2
        t = np.linspace(0, 1, res(8, detail, lo=3, multiple=1))
        path = np.column_stack([-L / 2 + (L - head_w) * t + 0.4 * head_w * t, np.zeros_like(t), np.zeros_like(t)])
        sec = rounded_rect2d(0.75 * T, 0.9 * T, 0.3 * T, res(4, detail, lo=2, multiple=1))
        handle = sweep(path, sec, np.column_stack([np.ones_like(t), 1.1 - 0.25 * t]))
        eye = trimesh.creation.box(extents=(head_w, 0.35 * W, hs))
        eye.apply_translation([cx, 0.0, 0.0])
        face = trimesh.creation.cylinder(radius=0.5 * min(head_w, hs) * 1.05, height=0.3 * W,
                                         sections=res(20, detail))
        face.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
        face.apply_translation([cx, -0.5 * W + 0.15 * W, 0.0])
        claw = trimesh.creation.box(extents=(head_w * 0.8, 0.4 * W, hs * 0.5))
        claw.apply_translation([cx - 0.05 * head_w, 0.3 * W, 0.0])
        v = claw.vertices.copy()
        v[v[:, 1] > 0.4 * W, 2] -= 0.2 * hs             # the claw bends down
        claw.vertices = v
        mesh, place = finalize(union(handle, eye, face, claw), ext)
        g = _grasp(place, -L / 4, 0.0, 0.9 * T)
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=None, grasp=g)

    return fit_budget(make, max_faces, cat.name)


@register("tools", "wrench")
def build_wrench(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Flat combination wrench: open jaw at +x, ring end with a 12-point hole at -x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, T = (float(v) for v in ext)
    jaw = float(rng.uniform(0.35, 0.45))                # jaw opening / head width
    params = {"length": L, "width": W, "thickness": T, "jaw": jaw}

    def make(detail: float) -> ProceduralMesh:
        q = res(6, detail, lo=3, multiple=1)
        rh, rr = W / 2, 0.42 * W
        head = Point(L / 2 - rh, 0).buffer(rh, quad_segs=q)
        slot = affinity.rotate(sbox(L / 2 - rh, -jaw * W / 2, L / 2 + rh, jaw * W / 2), 15,
                               origin=(L / 2 - rh, 0))
        ring = Point(-L / 2 + rr, 0).buffer(rr, quad_segs=q)
        k = np.arange(12) * np.pi / 6
        star = Polygon(np.column_stack([-L / 2 + rr + 0.5 * rr * np.cos(k) * (1 - 0.12 * (k % 2 == 0)),
                                        0.5 * rr * np.sin(k) * (1 - 0.12 * (k % 2 == 0))]))
        bar = Polygon([(-L / 2 + rr, -0.18 * W), (L / 2 - rh, -0.22 * W), (L / 2 - rh, 0.22 * W),
                       (-L / 2 + rr, 0.18 * W)])
        shape = head.union(ring).union(bar).difference(slot).difference(star)
        mesh, place = finalize(_extrude_shape(shape, T), ext)
        g = _grasp(place, 0.0, T / 2, 0.4 * W)
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=None, grasp=g)

    return fit_budget(make, max_faces, cat.name)


@register("tools", "spatula", "fork")
def build_flat_head(cat: Category, rng: np.random.Generator, attributes: dict,
                    max_faces: int) -> ProceduralMesh:
    """Spatula (wide flat blade) or fork (head with four tines): flat head, rising handle."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, H = (float(v) for v in ext)
    fork = cat.name == "fork"
    head = float(rng.uniform(0.28, 0.34) if fork else rng.uniform(0.35, 0.42)) * L
    plate = 0.0025 if fork else 0.003
    params = {"length": L, "width": W, "height": H, "head_length": head, "plate": plate}

    def make(detail: float) -> ProceduralMesh:
        q = res(4, detail, lo=2, multiple=1)
        x0 = L / 2 - head
        if fork:
            outline = Polygon([(x0 - 0.03 * L, -0.2 * W), (x0 + 0.25 * head, -W / 2), (L / 2, -W / 2),
                               (L / 2, W / 2), (x0 + 0.25 * head, W / 2), (x0 - 0.03 * L, 0.2 * W)])
            gap = W * 0.09
            for i in range(3):
                yc = -W / 2 + (i + 1) * W / 4
                outline = outline.difference(sbox(x0 + 0.45 * head, yc - gap / 2, L / 2 + 0.01, yc + gap / 2))
        else:
            outline = Polygon(rounded_rect2d(head, W, 0.2 * W, q) + [x0 + head / 2, 0.0])
            neck = Polygon([(x0 - 0.08 * L, -0.06 * W), (x0 + 0.05 * head, -0.3 * W),
                            (x0 + 0.05 * head, 0.3 * W), (x0 - 0.08 * L, 0.06 * W)])
            outline = outline.union(neck)
        flat = _extrude_shape(outline, plate)
        hw = (0.3 if fork else 0.28) * W
        thick = 0.0035 if fork else 0.009
        handle = _rising_handle(x0 - 0.02 * L, -L / 2, plate - thick / 2 + 0.0005, H - thick / 2, hw, thick,
                                1.3, detail)
        mesh, place = finalize(union(flat, handle), ext)
        g = _grasp(place, -0.3 * L, H * 0.7, hw * 1.3)
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=None, grasp=g)

    return fit_budget(make, max_faces, cat.name)


@register("tools", "spoon")
def build_spoon(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Spoon: a shallow oval bowl (thin shell) at +x and a handle rising towards -x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    L, W, H = (float(v) for v in ext)
    bowl_l = float(rng.uniform(0.3, 0.36) * L)
    depth = float(min(0.5 * H, rng.uniform(0.008, 0.012)))
    params = {"length": L, "width": W, "height": H, "bowl_length": bowl_l, "bowl_depth": depth}

    def make(detail: float) -> ProceduralMesh:
        th = np.linspace(0, np.pi / 2, res(8, detail, lo=4, multiple=1))
        rb = W / 2
        outer = np.vstack([[0.0, 0.0], np.column_stack([0.3 * rb + 0.7 * rb * np.sin(th), depth * (1 - np.cos(th))])])
        prof, _ = shell_profile(outer, 0.0015, 0.0015, rim_points=2)
        bowl = lathe(prof, res(24, detail))
        bowl.vertices[:, 0] *= bowl_l / W
        bowl.apply_translation([L / 2 - bowl_l / 2, 0.0, 0.0])
        thick = 0.003
        rim_z = bowl.bounds[1][2] - thick / 2
        handle = _rising_handle(L / 2 - bowl_l + 0.002, -L / 2, rim_z, H - thick / 2, 0.22 * W, thick, 1.4, detail)
        mesh, place = finalize(union(bowl, handle), ext)
        g = _grasp(place, -0.3 * L, H * 0.8, 0.3 * W)
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=None, grasp=g)

    return fit_budget(make, max_faces, cat.name)


