"""Kitchen vessels turned on a lathe: drinking glass, salt shaker, cooking pot, pot lid, colander.

The open ones (glass, pot, colander) are solid shells with a real cavity, built like the
vessels of :mod:`.revolved` (outer profile offset into a wall, half-round rim); the pot has
two loop handles, the colander a ring foot and rows of drain holes cut through its wall and
floor. The shaker and the lid are closed solids: a shaker body under a domed cap, and a thin
dome with a rim and a knob on top (the lid's knob is what a gripper holds).

The vessels give their own convex collision parts (a floor disc, wall sectors, handle
segments; the colander's drain holes are left out of them: nothing on a table is small
enough to fall through), the lid its dome and knob as two solids.
"""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    handle_split,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    difference,
    lathe,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural._parts import ring_parts
from scenegen.assets.procedural._solids import round_size, solid, vessel
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.assets.procedural.revolved import Shell, dish_outer, shell_result, swept_handle, tumbler_outer
from scenegen.catalog import Category

_SECTIONS = 48


@register("kitchen", "glass")
def build_glass(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Drinking glass: a nearly straight thin wall on a thick base, with a real cavity."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    d, h = float(ext[0]), float(ext[2])
    R = d / 2
    taper = float(rng.uniform(0.84, 0.95))
    wall, floor = 0.0025, float(rng.uniform(0.008, 0.013))
    params = {"diameter": d, "height": h, "taper": taper, "wall": wall, "base": floor}

    def make(detail: float) -> ProceduralMesh:
        outer = tumbler_outer(R * taper, R, h, min(0.004, 0.2 * R), res(5, detail, lo=3, multiple=1))
        at = 0.45                                        # grasp height / height
        width = d * (taper + (1 - taper) * at)
        grasp = {"mode": "side", "width": float(width), "height": float(at * h), "x": 0.0}
        return shell_result(Shell(outer, wall, floor, detail), np.array([d, d, h]), params, wall,
                            lambda place: grasp)

    return fit_budget(make, max_faces, cat.name)


@register("kitchen", "salt_shaker")
def build_shaker(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Salt or pepper shaker: a slightly waisted body under a domed cap with a seam."""
    d, h = round_size(cat, rng, attributes)
    R = d / 2
    cap = float(rng.uniform(0.2, 0.28))                 # cap height / height
    waist = float(rng.uniform(0.86, 0.95))
    params = {"diameter": d, "height": h, "cap": cap, "waist": waist}

    def make(detail: float) -> ProceduralMesh:
        n = res(10, detail, lo=5, multiple=1)
        zb = (1 - cap) * h
        z = np.linspace(0.004, zb, n)
        body = R * (1 - (1 - waist) * np.sin(np.pi * z / zb) ** 2)
        a = np.linspace(0, np.pi / 2, res(6, detail, lo=3, multiple=1))
        dome = [(0.97 * R * np.cos(t), zb + 0.003 + (h - zb - 0.003) * np.sin(t)) for t in a]
        prof = np.array([(0.0, 0.0), (R - 0.004, 0.0), *zip(body, z, strict=True), (0.94 * R, zb),
                         (0.94 * R, zb + 0.003), *dome[:-1], (0.0, h)])
        mesh, _ = finalize(lathe(prof, res(32, detail)), np.array([d, d, h]))
        grasp = {"mode": "side", "width": float(d), "height": float(0.4 * h), "x": 0.0}
        return solid(mesh, params, grasp)

    return fit_budget(make, max_faces, cat.name)


def _loop_handle(r_wall: float, outer_x: float, half: float, z: float, tube: float, side: float,
                 detail: float) -> tuple:
    """A horizontal loop handle on the ``side`` (+-1) of a round wall of radius ``r_wall``, and its parts.

    Its two ends sit in the wall at ``y = +-half``; the loop reaches ``outer_x`` from the axis.
    """
    x0 = float(np.sqrt(r_wall ** 2 - half ** 2))
    reach = outer_x - x0 - 0.5 * tube
    phi = np.linspace(0, np.pi, res(12, detail, lo=6, multiple=2))
    path = np.column_stack([side * (x0 + reach * np.sin(phi)), half * np.cos(phi), np.full_like(phi, z)])
    sec = rounded_rect2d(1.6 * tube, tube, 0.45 * tube, res(4, detail, lo=2, multiple=1))
    return swept_handle(path, sec)


@register("kitchen", "pot")
def build_pot(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Cooking pot: straight-walled shell with a real cavity and two loop handles along x."""
    fr = draw_fractions(rng, attributes)
    h = float(lerp_size(cat, fr)[2])
    d, total = handle_split(cat, float(fr[0]), k_pref=0.3, k_min=0.15)
    R, wall, floor = d / 2, 0.003, 0.005
    reach = (total - d) / 2
    taper = float(rng.uniform(0.95, 1.0))
    params = {"diameter": d, "height": h, "handle_reach": reach, "taper": taper, "wall": wall}

    def make(detail: float) -> ProceduralMesh:
        outer = tumbler_outer(R * taper, R, h, min(0.012, 0.15 * h), res(5, detail, lo=3, multiple=1))
        tube = 0.008
        handles = [_loop_handle(R - 0.6 * wall, total / 2, 0.3 * R, h - 0.022, tube, s, detail) for s in (-1, 1)]
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": float(h), "x": float(R - wall / 2)}
        return shell_result(Shell(outer, wall, floor, detail, handles), np.array([total, d, h]), params, wall,
                            lambda place: grasp)

    return fit_budget(make, max_faces, cat.name)


@register("kitchen", "lid")
def build_lid(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Pot lid resting on its rim: a thin dome, hollow underneath, with a knob to hold on top."""
    d, h = round_size(cat, rng, attributes)
    R = d / 2
    knob_d = float(np.clip(0.15 * d, 0.024, 0.036))
    knob_h = float(rng.uniform(0.018, 0.024))
    dome = h - knob_h                                    # height of the dome under the knob
    t = 0.0025
    params = {"diameter": d, "height": h, "knob_diameter": knob_d, "knob_height": knob_h, "thickness": t}

    def make(detail: float) -> ProceduralMesh:
        a = np.linspace(0, np.pi / 2, res(10, detail, lo=5, multiple=1))
        outer = [(R * np.cos(x), dome * np.sin(x)) for x in a]                        # rim -> apex
        inner = [((R - t) * np.cos(x), (dome - t) * np.sin(x)) for x in a[::-1]]      # apex -> rim
        prof = np.array([(0.0, dome - t), *inner[1:], (R - t, 0.0), *outer[:-1], (0.0, dome)])
        shell = lathe(prof, res(_SECTIONS, detail))
        kr = knob_d / 2
        b = np.linspace(0, np.pi / 2, res(4, detail, lo=2, multiple=1))
        top = [(kr * np.cos(x), dome + knob_h - 0.3 * kr * (1 - np.sin(x))) for x in b]
        knob = lathe(np.array([(0.0, dome - 0.5 * t), (0.55 * kr, dome - 0.5 * t), (0.6 * kr, dome + 0.3 * knob_h),
                               *top[:-1], (0.0, dome + knob_h)]), res(20, detail))
        mesh, place = finalize(union(shell, knob), np.array([d, d, h]))
        grasp = {"mode": "top", "width": knob_d * float(place.scale[1]),
                 "height": place([0, 0, dome + 0.6 * knob_h])[2], "x": 0.0}
        # collision: the dome as a solid (nothing goes under a lid) and the knob
        return solid(mesh, params, grasp, place=place, parts=[shell.vertices, knob.vertices])

    return fit_budget(make, max_faces, cat.name)


def _holes(R: float, foot: float, h: float, wall: float, detail: float) -> list[trimesh.Trimesh]:
    """Radial drain holes in two rows around the bowl wall and a ring of holes in its floor."""
    rh = float(np.clip(0.025 * R, 0.0022, 0.0035))
    sides = res(8, detail, lo=6, multiple=2)
    out = []
    rf = foot * R
    for frac, count in ((0.45, 14), (0.7, 18)):
        z = frac * h
        th = np.arccos(1 - frac)                          # on the dish curve: z = h (1 - cos th)
        rw = rf + (R - rf) * np.sin(th)
        for k in range(count):
            ang = 2 * np.pi * (k + 0.5 * (frac > 0.5) + 0.137) / count   # off the lathe's meridians
            c = trimesh.creation.cylinder(radius=rh, height=6 * wall + 0.01, sections=sides)
            c.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))
            c.apply_translation([rw, 0.0, z])
            c.apply_transform(trimesh.transformations.rotation_matrix(ang, [0, 0, 1]))
            out.append(c)
    for k in range(8):                                    # floor ring, clear of the axis
        ang = 2 * np.pi * (k + 0.137) / 8
        c = trimesh.creation.cylinder(radius=rh, height=0.03, sections=sides)
        c.apply_translation([0.5 * rf * np.cos(ang), 0.5 * rf * np.sin(ang), 0.0])
        out.append(c)
    return out


@register("kitchen", "colander")
def build_colander(cat: Category, rng: np.random.Generator, attributes: dict,
                   max_faces: int) -> ProceduralMesh:
    """Colander: a bowl shell on a ring foot, drained by rows of holes through wall and floor."""
    d, h = round_size(cat, rng, attributes)
    R = d / 2
    foot, wall, floor = float(rng.uniform(0.3, 0.4)), 0.0025, 0.003
    foot_h = 0.12 * h
    params = {"diameter": d, "height": h, "foot": foot, "wall": wall}

    def make(detail: float) -> ProceduralMesh:
        hb = h - foot_h
        outer = dish_outer(R, hb, foot * R, res(16, detail, lo=6, multiple=1))
        n = res(_SECTIONS, detail)
        r0, r1 = 0.8 * foot * R, 0.95 * foot * R
        foot_rz = np.array([(r0, -foot_h), (r1, -foot_h), (r1, floor / 2), (r0, floor / 2)])
        ring = (lathe(foot_rz, n, ring=True), lambda tol: ring_parts([foot_rz], n, tol))
        shell = Shell(outer, wall, floor, detail, [ring])
        o, inner, rim = shell.curves
        bowl = difference(lathe(np.vstack([o, rim, inner[::-1]]), n), *_holes(R, foot, hb, wall, detail))
        mesh, place = finalize(union(bowl, ring[0]), np.array([d, d, h]))
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": float(h), "x": float(R - wall / 2)}
        pm = vessel(mesh, place, params, shell.fz, wall, grasp)
        pm.parts = lambda tol: place.parts(shell.parts(tol))   # the drain holes are too small to matter
        return pm

    return fit_budget(make, max_faces, cat.name)
