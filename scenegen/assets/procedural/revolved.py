"""Revolved (lathe) objects: bowl, plate, mug, cup, pan, colander, bottle, can, jar, vase.

Open vessels are solid shells: the outer profile is offset inwards into a wall of
real thickness, joined by a half-round rim, and revolved into one closed volume with
a cavity. Mug and pan handles are swept tubes unioned into the body.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.interpolate import PchipInterpolator

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    handle_split,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    lathe,
    rounded_rect2d,
    shell_curves,
    sweep,
    sweep_rings,
    union,
)
from scenegen.assets.procedural._parts import chain_parts, ring_parts, shell_parts
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category

_SECTIONS = 48


def _fillet(cx: float, cz: float, c: float, n: int) -> list[tuple[float, float]]:
    """Bottom-outer corner arc from (cx, cz - c) round to (cx + c, cz)."""
    return [(cx + c * np.sin(a), cz - c * np.cos(a)) for a in np.linspace(0, np.pi / 2, n)]


def dish_outer(R: float, h: float, rf: float, n: int) -> np.ndarray:
    """Flat foot of radius ``rf`` curving up to a vertical rim of radius ``R`` at height ``h``."""
    th = np.linspace(0, np.pi / 2, n)
    curve = np.column_stack([rf + (R - rf) * np.sin(th), h * (1 - np.cos(th))])
    return np.vstack([[0.0, 0.0], curve])


def tumbler_outer(rb: float, rt: float, h: float, c: float, n: int) -> np.ndarray:
    """Flat bottom, rounded bottom edge of radius ``c``, straight (tapered) side to the rim."""
    return np.array([(0.0, 0.0), *_fillet(rb - c, c, c, n), (rt, h)])


class Shell:
    """An open-top revolved shell: its curves, its mesh and its own convex parts.

    ``extra`` holds added solids (a foot ring, a handle) as ``(mesh, parts(tol) -> point sets)``.
    """

    def __init__(self, outer: np.ndarray, wall: float, floor: float, detail: float,
                 extra: list | None = None) -> None:
        self.curves = shell_curves(outer, wall, floor)
        self.fz = float(self.curves[1][0, 1])
        self.sections = res(_SECTIONS, detail)
        self.extra = extra or []

    def build(self, target: np.ndarray) -> tuple:
        """Lathe the shell, union the extra solids, then place it in the asset frame."""
        o, inner, rim = self.curves
        body = lathe(np.vstack([o, rim, inner[::-1]]), self.sections)
        mesh = union(body, *(m for m, _ in self.extra)) if self.extra else body
        return finalize(mesh, target)

    def parts(self, tol: float) -> list[np.ndarray]:
        """Floor disc and wall sectors of the shell, plus the extra solids' parts (build frame)."""
        out = shell_parts(*self.curves, self.sections, tol)
        for _, fn in self.extra:
            out += fn(tol)
        return out


def swept_handle(path: np.ndarray, sec: np.ndarray, scales: np.ndarray | None = None,
                 up: tuple = (0.0, 0.0, 1.0)) -> tuple:
    """A swept handle and its chain of convex segments."""
    rings = sweep_rings(path, sec, scales, up)
    return sweep(path, sec, scales, up=up), lambda tol: chain_parts(list(rings), path, tol)


def shell_result(shell: Shell, target: np.ndarray, params: dict, wall: float, grasp_fn: Callable,
                 axis_x: float = 0.0) -> ProceduralMesh:
    """The finished vessel of a shell: its mesh in the asset frame, cavity and wall points, grasps and parts.

    Args:
        shell: the vessel's shell.
        target: the asset's target extents.
        params: the builder's parameters (``floor``, ``wall``, ``cavity_point`` and ``wall_point`` are added).
        wall: wall thickness (m).
        grasp_fn: ``place -> grasps`` in the asset frame.
        axis_x: x of the cavity's axis in the build frame.

    """
    mesh, place = shell.build(target)
    floor = shell.fz
    params = dict(params, floor=float(place([0, 0, floor])[2]), wall=float(wall),
                  cavity_point=place([axis_x, 0.0, floor + 0.004]),
                  wall_point=place([axis_x, 0.0, floor / 2]))
    return ProceduralMesh(mesh, params, closed=True, cavity=True, primitive=None, grasp=grasp_fn(place),
                          parts=lambda tol: place.parts(shell.parts(tol)))


@register("revolved", "bowl", "plate", "colander")
def build_dish(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Bowl, plate or colander: a flat foot curving up to the rim, with a real cavity."""
    fr = draw_fractions(rng, attributes)
    ext = lerp_size(cat, fr)
    d, h = float(ext[0]), float(ext[2])
    R = d / 2
    kind = cat.name
    if kind == "plate":
        foot, wall, floor = rng.uniform(0.55, 0.7), min(0.004, 0.3 * h), min(0.005, 0.35 * h)
    elif kind == "colander":
        foot, wall, floor = rng.uniform(0.3, 0.4), 0.0025, 0.003
    else:
        foot, wall, floor = rng.uniform(0.38, 0.55), float(np.clip(0.05 * R, 0.003, 0.0055)), 0.006
    foot_h = 0.12 * h if kind == "colander" else 0.0
    params = {"diameter": d, "height": h, "foot": float(foot), "wall": wall}

    def make(detail: float) -> ProceduralMesh:
        outer = dish_outer(R, h - foot_h, foot * R, res(20, detail, lo=6, multiple=1))
        extra = []
        if kind == "colander":  # a ring foot under the bowl
            r0, r1 = 0.8 * foot * R, 0.95 * foot * R
            ring = np.array([(r0, -foot_h), (r1, -foot_h), (r1, floor / 2), (r0, floor / 2)])
            n = res(_SECTIONS, detail)
            extra.append((lathe(ring, n, ring=True), lambda tol: ring_parts([ring], n, tol)))
        shell = Shell(outer, wall, floor, detail, extra)
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": float(h), "x": float(R - wall / 2)}
        return shell_result(shell, np.array([d, d, h]), params, wall, lambda place: grasp)

    return fit_budget(make, max_faces, cat.name)


@register("revolved", "mug", "cup")
def build_tumbler(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Mug (with a handle on +x) or cup (tapered, thin walled)."""
    fr = draw_fractions(rng, attributes)
    ext = lerp_size(cat, fr)
    h = float(ext[2])
    mug = cat.name == "mug"
    if mug:
        d, total = handle_split(cat, float(fr[0]), k_pref=0.3, k_min=0.15)
        taper, wall, floor = rng.uniform(0.92, 1.0), 0.0045, 0.007
    else:
        d = total = float(ext[0])
        taper, wall, floor = rng.uniform(0.65, 0.8), 0.0022, 0.003
    R = d / 2
    params = {"diameter": d, "height": h, "taper": float(taper), "wall": wall}
    if mug:
        params["handle_reach"] = total - d
    target = np.array([total, d, h])

    def make(detail: float) -> ProceduralMesh:
        c = min(0.006, 0.3 * R)
        outer = tumbler_outer(R * taper, R, h, c, res(6, detail, lo=3, multiple=1))
        extra = []
        if mug:
            reach = total - d
            tr = float(np.clip(0.28 * reach, 0.003, 0.0055))       # tube radius
            inset = wall * 0.5
            a = reach + inset - tr                                  # how far the loop's centre line reaches
            b = 0.3 * h
            phi = np.linspace(0, np.pi, res(20, detail, lo=8, multiple=2))
            x0 = R - inset
            path = np.column_stack([x0 + a * np.sin(phi), np.zeros_like(phi), 0.55 * h + b * np.cos(phi)])
            sec = rounded_rect2d(2 * tr, 2.6 * tr, 0.9 * tr, res(4, detail, lo=2, multiple=1))
            extra.append(swept_handle(path, sec, up=(0.0, 1.0, 0.0)))

        def grasp(place) -> dict:
            if mug:
                return {"mode": "side", "width": float(d), "height": float(0.5 * h), "x": place([0, 0, 0])[0]}
            return {"mode": "side", "width": float(d * (1 + taper) / 2), "height": float(0.5 * h), "x": 0.0}

        return shell_result(Shell(outer, wall, floor, detail, extra), target, params, wall, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("revolved", "pan")
def build_pan(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Frying pan: shallow flared body and a long handle along +x."""
    fr = draw_fractions(rng, attributes)
    h = float(lerp_size(cat, fr)[2])
    d, total = handle_split(cat, float(fr[0]), k_pref=0.8, k_min=0.25)
    R, wall, floor = d / 2, 0.003, 0.0045
    flare = rng.uniform(0.82, 0.92)
    params = {"diameter": d, "height": h, "flare": float(flare), "handle_reach": total - d, "wall": wall}

    def make(detail: float) -> ProceduralMesh:
        outer = tumbler_outer(R * flare, R, h, min(0.012, 0.4 * h), res(6, detail, lo=3, multiple=1))
        reach = total - d
        hw, hh = 0.022, min(0.012, 0.3 * h)
        z0 = 0.75 * h - hh / 2
        x0 = R - 0.6 * wall
        t = np.linspace(0, 1, 6)
        path = np.column_stack([x0 + t * (reach + 0.6 * wall), np.zeros_like(t), z0 + 0.08 * reach * t])
        sec = rounded_rect2d(hh, hw, 0.4 * hh, res(4, detail, lo=2, multiple=1))
        scales = np.column_stack([np.ones_like(t), 0.75 + 0.25 * t])
        shell = Shell(outer, wall, floor, detail, [swept_handle(path, sec, scales)])

        def grasp(place) -> dict:
            hx = place([x0 + 0.7 * reach, 0, 0])[0]
            return {"mode": "top", "width": float(hw), "height": place([0, 0, z0 + 0.06 * reach])[2], "x": hx}

        return shell_result(shell, np.array([total, d, h]), params, wall, grasp)

    return fit_budget(make, max_faces, cat.name)


@register("revolved", "jar", "vase")
def build_jar(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Open jar (shoulder and neck) or vase (belly, narrow neck, flared lip)."""
    fr = draw_fractions(rng, attributes)
    ext = lerp_size(cat, fr)
    d, h = float(ext[0]), float(ext[2])
    R = d / 2
    if cat.name == "jar":
        neck, shoulder, wall, floor = rng.uniform(0.72, 0.88), rng.uniform(0.65, 0.78), 0.0035, 0.006
        belly = lip = 0.0
    else:
        neck, shoulder, wall, floor = rng.uniform(0.38, 0.5), 0.78, 0.0035, 0.008
        belly, lip = rng.uniform(0.3, 0.45), rng.uniform(0.55, 0.7)
    params = {"diameter": d, "height": h, "neck": float(neck), "shoulder": float(shoulder),
              "belly": float(belly), "lip": float(lip), "wall": wall}

    def make(detail: float) -> ProceduralMesh:
        c = min(0.006, 0.2 * R)
        n = res(16, detail, lo=6, multiple=1)
        if cat.name == "jar":
            s = np.linspace(0, 1, n)
            zs, zn = shoulder * h, (shoulder + 0.12) * h
            sh = np.column_stack([R * neck + R * (1 - neck) * (1 + np.cos(np.pi * s)) / 2, zs + (zn - zs) * s])
            outer = np.array([(0.0, 0.0), *_fillet(R - c, c, c, 4), *sh, (R * neck, h)])
        else:
            rb = 0.7 * R
            f = PchipInterpolator([c, belly * h, shoulder * h, h], [rb, R, neck * R, lip * R])
            z = np.linspace(c, h, n + 6)
            outer = np.vstack([[(0.0, 0.0), *_fillet(rb - c, c, c, 4)[:-1]], np.column_stack([f(z), z])])
        if cat.name == "jar":
            grasp = {"mode": "side", "width": d, "height": float(0.45 * h), "x": 0.0}
        else:                                           # a vase is held by its neck
            grasp = {"mode": "side", "width": float(neck * d), "height": float(shoulder * h), "x": 0.0}
        return shell_result(Shell(outer, wall, floor, detail), np.array([d, d, h]), params, wall,
                            lambda place: grasp)

    return fit_budget(make, max_faces, cat.name)


@register("revolved", "bottle", "can")
def build_solid(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Closed bottle (shoulder, neck and cap) or drink can (bevels and a recessed lid)."""
    fr = draw_fractions(rng, attributes)
    ext = lerp_size(cat, fr)
    d, h = float(ext[0]), float(ext[2])
    R = d / 2
    bottle = cat.name == "bottle"
    neck = rng.uniform(0.28, 0.38) if bottle else 0.0
    shoulder = rng.uniform(0.55, 0.68) if bottle else 0.0
    params = {"diameter": d, "height": h, "neck": float(neck), "shoulder": float(shoulder)}

    def make(detail: float) -> ProceduralMesh:
        if bottle:
            c, n = 0.006, res(12, detail, lo=5, multiple=1)
            s = np.linspace(0, 1, n)
            zs, zn, cap = shoulder * h, (shoulder + 0.2) * h, 0.07 * h
            rn, rc = neck * R, neck * R * 1.18
            sh = np.column_stack([rn + (R - rn) * (1 + np.cos(np.pi * s)) / 2, zs + (zn - zs) * s])
            prof = np.array([(0.0, 0.0), *_fillet(R - c, c, c, 4), *sh, (rn, h - cap), (rc, h - cap),
                             (rc, h - 0.002), (rc - 0.002, h), (0.0, h)])
        else:
            dip = min(0.004, 0.05 * h)
            prof = np.array([(0.0, 0.0), (0.86 * R, 0.0), (R, 0.06 * h), (R, 0.94 * h), (0.94 * R, h),
                             (0.89 * R, h), (0.87 * R, h - dip), (0.0, h - dip)])
        mesh, _ = finalize(lathe(prof, res(_SECTIONS, detail)), np.array([d, d, h]))
        prim = None if bottle else {"type": "cylinder", "radius": R, "height": h, "axis": "z"}
        grasp = {"mode": "side", "width": float(d), "height": float((0.35 if bottle else 0.5) * h), "x": 0.0}
        return ProceduralMesh(mesh, dict(params), closed=True, cavity=False, primitive=prim, grasp=grasp)

    return fit_budget(make, max_faces, cat.name)


