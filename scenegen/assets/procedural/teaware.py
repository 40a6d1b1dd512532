"""Kettle and teapot: closed lathed bodies with a swept spout and a handle to hold.

Both stand with their lid on (closed solids, no cavity). The spout leaves the body on +x;
the kettle's handle arches over the lid along x (a gripper closes on the bar across y,
from above), the teapot's is a vertical loop on -x (closed on across y, like a mug's).
Their collision parts are the body's and the knob's hulls and the segments of each swept tube.
"""

from __future__ import annotations

import numpy as np

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
    union,
)
from scenegen.assets.procedural._solids import solid
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.assets.procedural.revolved import swept_handle
from scenegen.catalog import Category


def _spout(x0: float, z0: float, reach: float, rise: float, r0: float, r1: float, detail: float) -> tuple:
    """A tapered round spout from inside the body at ``(x0, z0)`` curving out and up along +x, and its parts."""
    t = np.linspace(0, 1, res(8, detail, lo=4, multiple=1))
    path = np.column_stack([x0 + reach * t, np.zeros_like(t), z0 + rise * t ** 1.6])
    ang = np.linspace(0, 2 * np.pi, res(12, detail, lo=8), endpoint=False)
    sec = np.column_stack([np.cos(ang), np.sin(ang)])
    return swept_handle(path, sec, r0 + (r1 - r0) * t)


def _closed(pieces: list, target: np.ndarray, params: dict, grasp_at) -> ProceduralMesh:
    """Union of ``(mesh, parts)`` pieces placed in the asset frame, with each piece's convex parts.

    A lathed piece (the body, the knob) gives ``None`` as its parts and stands as its own hull.
    """
    mesh, place = finalize(union(*(m for m, _ in pieces)), target)

    def convex(tol: float) -> list:
        out = []
        for m, fn in pieces:
            out += [np.asarray(m.vertices)] if fn is None else fn(tol)
        return out

    return solid(mesh, params, grasp_at(place), place=place, parts=convex)


def _body(R: float, hb: float, belly: float, shoulder: float, neck: float, detail: float) -> np.ndarray:
    """Closed ``(r, z)`` profile: flat foot, round belly, shoulder up to a lid of radius ``neck * R``."""
    n = res(12, detail, lo=6, multiple=1)
    z = np.linspace(0.0, 1.0, n)
    r = R * (0.82 + 0.18 * np.sin(np.pi * np.clip(z / (2 * belly), 0, 0.5)) ** 0.7)
    sh = np.clip((z - shoulder) / (1 - shoulder), 0, 1)
    r = r * (1 - (1 - neck) * np.sin(0.5 * np.pi * sh))
    pts = np.column_stack([r, z * hb])[1:]
    lid = [(neck * R * 0.96, hb + 0.004), (0.6 * neck * R, hb + 0.008)]
    return np.array([(0.0, 0.0), (0.8 * R, 0.0), *pts, *lid, (0.0, hb + 0.009)])


@register("teaware", "kettle")
def build_kettle(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Stovetop kettle: wide body, spout on +x, a handle arching over the lid along x."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    d, h = float(ext[1]), float(ext[2])
    total = float(np.clip(ext[0], d + 0.035, max(cat.size_max[0], d + 0.035)))
    R = d / 2
    hb = float(rng.uniform(0.58, 0.66) * h)            # body height (lid included) / total height
    bar = float(np.clip(0.11 * d, 0.014, 0.02))         # handle bar width across y
    params = {"diameter": d, "height": h, "body_height": hb, "spout_reach": total - d, "bar_width": bar}

    def make(detail: float) -> ProceduralMesh:
        prof = _body(R, hb, 0.35, 0.55, 0.5, detail)
        body = (lathe(prof, res(40, detail)), None)
        spout = _spout(0.6 * R, 0.35 * hb, total - R - 0.6 * R - 0.007, 0.45 * hb, 0.016, 0.007, detail)
        thick = 0.011
        a = np.linspace(0, np.pi, res(14, detail, lo=6, multiple=2))
        span = 0.55 * R
        top = h - thick / 2
        z0 = 0.72 * hb
        path = np.column_stack([-span * np.cos(a), np.zeros_like(a), z0 + (top - z0) * np.sin(a) ** 0.6])
        sec = rounded_rect2d(thick, bar, 0.4 * thick, res(4, detail, lo=2, multiple=1))
        return _closed([body, spout, swept_handle(path, sec)], np.array([total, d, h]), params,
                       lambda place: {"mode": "top", "width": bar * float(place.scale[1]),
                                      "height": place([0, 0, top])[2], "x": place([0, 0, 0])[0]})

    return fit_budget(make, max_faces, cat.name)


@register("teaware", "teapot")
def build_teapot(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Teapot: round ceramic belly with a knobbed lid, spout on +x and a loop handle on -x."""
    fr = draw_fractions(rng, attributes)
    h = float(lerp_size(cat, fr)[2])
    d, total = handle_split(cat, float(fr[0]), k_pref=0.65, k_min=0.5)
    R = d / 2
    rest = total - d
    handle_reach = 0.4 * rest
    tube = float(np.clip(0.08 * d, 0.009, 0.013))      # handle thickness across y
    hb = 0.84 * h
    params = {"diameter": d, "height": h, "handle_reach": handle_reach, "spout_reach": rest - handle_reach,
              "handle_width": tube}

    def make(detail: float) -> ProceduralMesh:
        prof = _body(R, hb, 0.45, 0.62, 0.55, detail)
        body = (lathe(prof, res(40, detail)), None)
        kr = 0.12 * d
        knob = (lathe(np.array([(0.0, hb), (0.5 * kr, hb), (0.35 * kr, hb + 0.4 * (h - hb)),
                                (kr, hb + 0.75 * (h - hb)), (0.6 * kr, h), (0.0, h)]), res(16, detail)), None)
        spout = _spout(0.55 * R, 0.3 * hb, R + (rest - handle_reach) - 0.55 * R - 0.006, 0.5 * hb, 0.013,
                       0.006, detail)
        inset = 0.1 * R
        zt, zb = 0.72 * hb, 0.25 * hb                   # where the handle meets the body
        side = prof[1:-1]
        xt, xb = (-(float(np.interp(z, side[:, 1], side[:, 0])) - inset) for z in (zt, zb))
        phi = np.linspace(0, np.pi, res(16, detail, lo=8, multiple=2))
        s = phi / np.pi
        a = (xt + xb) / 2 + R + handle_reach - 0.65 * tube   # the loop's outer edge reaches -(R + reach)
        path = np.column_stack([xt + (xb - xt) * s - a * np.sin(phi), np.zeros_like(phi),
                                (zt + zb) / 2 + (zt - zb) / 2 * np.cos(phi)])
        sec = rounded_rect2d(tube, 1.3 * tube, 0.45 * tube, res(4, detail, lo=2, multiple=1))
        mid = path[len(path) // 2]
        loop = swept_handle(path, sec, up=(0.0, 1.0, 0.0))
        return _closed([body, knob, spout, loop], np.array([total, d, h]), params,
                       lambda place: {"mode": "top", "width": tube * float(place.scale[1]),
                                      "height": place(mid)[2], "x": place(mid)[0]})

    return fit_budget(make, max_faces, cat.name)
