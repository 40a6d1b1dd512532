"""Hardware: hex nut (with its hole), bolt, washer, bearing ring.

Rings are built directly as four stitched rows (outer bottom, outer top, inner top,
inner bottom) sampled at the same angles, so they are watertight without booleans.
Hexagons are turned by 15 degrees so their bounding box is square.
"""

from __future__ import annotations

import numpy as np
import trimesh
from shapely.geometry import Polygon

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
)
from scenegen.assets.procedural._geom import (
    lathe,
    stitch_rows,
    union,
)
from scenegen.assets.procedural._parts import ring_parts, wall_parts
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category

_HEX_PHASE = np.pi / 12     # corners at 15 + 60k degrees: square bounding box


def _angles(n: int) -> np.ndarray:
    return _HEX_PHASE + np.linspace(0, 2 * np.pi, n, endpoint=False)


def _hex_radius(th: np.ndarray, corner_r: float) -> np.ndarray:
    """Distance from the centre to a regular hexagon's edge (corners at the phase + 60k)."""
    apothem = corner_r * np.cos(np.pi / 6)
    rel = np.mod(th - _HEX_PHASE, np.pi / 3) - np.pi / 6
    return apothem / np.cos(rel)


def _ring(outer_r: np.ndarray, inner_r: np.ndarray, th: np.ndarray, z0: float, z1: float) -> tuple:
    """Prism between an outer and an inner outline (radii per angle), from z0 to z1, and ``parts(tol)``."""
    c, s = np.cos(th), np.sin(th)

    def row(r: np.ndarray, z: float) -> np.ndarray:
        return np.column_stack([r * c, r * s, np.full(len(th), z)])

    mesh = stitch_rows([row(outer_r, z0), row(outer_r, z1), row(inner_r, z1), row(inner_r, z0)], loop=True)
    return mesh, lambda tol: wall_parts([row(outer_r, z0), row(outer_r, z1)], [row(inner_r, z0), row(inner_r, z1)], tol)


def _result(mesh: trimesh.Trimesh, ext: np.ndarray, params: dict, width: float, prim: dict | None = None,
            parts=None) -> ProceduralMesh:
    mesh, place = finalize(mesh, ext)
    grasp = {"mode": "top", "width": float(width), "height": float(ext[2] / 2), "x": 0.0}
    return ProceduralMesh(mesh, params, closed=True, cavity=False, primitive=prim, grasp=grasp,
                          parts=None if parts is None else (lambda tol: place.parts(parts(tol))))


@register("hardware", "hex_nut", "washer")
def build_flat_ring(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Hex nut (hexagonal prism with a round hole) or washer (flat annulus)."""
    fr = draw_fractions(rng, attributes)
    fr[1] = fr[0]
    ext = lerp_size(cat, fr)
    nut = cat.name == "hex_nut"
    hole = float(rng.uniform(0.3, 0.36) if nut else rng.uniform(0.25, 0.3))   # hole radius / width
    params = {"width": float(ext[0]), "thickness": float(ext[2]), "hole_radius": hole * float(ext[0])}

    def make(detail: float) -> ProceduralMesh:
        n = res(36, detail, lo=12, multiple=6)
        th = _angles(n)
        W = float(ext[0])
        if nut:
            outer = _hex_radius(th, W / (2 * np.cos(np.pi / 12)))
        else:
            outer = np.full(n, W / 2)
        mesh, parts = _ring(outer, np.full(n, hole * W), th, 0.0, float(ext[2]))
        return _result(mesh, ext, dict(params), (0.5 - hole) * W if not nut else W, parts=parts)

    return fit_budget(make, max_faces, cat.name)


@register("hardware", "bearing_ring")
def build_bearing(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Ball-bearing ring: outer and inner races with a seal groove on both faces."""
    fr = draw_fractions(rng, attributes)
    fr[1] = fr[0]
    ext = lerp_size(cat, fr)
    W, H = float(ext[0]), float(ext[2])
    bore = float(rng.uniform(0.45, 0.55))                # inner / outer diameter
    params = {"outer_diameter": W, "thickness": H, "bore_ratio": bore}

    def make(detail: float) -> ProceduralMesh:
        ro, ri = W / 2, bore * W / 2
        race = 0.22 * (ro - ri)
        c = 0.06 * (ro - ri)
        d = 0.18 * H
        a, b = ri + race, ro - race                     # the seal between the races
        prof = [(ri + c, 0.0), (a, 0.0), (a + c, d), (b - c, d), (b, 0.0), (ro - c, 0.0), (ro, c),
                (ro, H - c), (ro - c, H), (b, H), (b - c, H - d), (a + c, H - d), (a, H), (ri + c, H),
                (ri, H - c), (ri, c)]
        n = res(48, detail)
        mesh = lathe(np.array(prof), n, ring=True)
        races = [np.array(prof[:3] + [(a + c, H - d)] + prof[12:]),                  # inner race and chamfers
                 np.array([(b - c, d), *prof[4:11]]),                                  # outer race
                 np.array([(a + c, d), (b - c, d), (b - c, H - d), (a + c, H - d)])]   # the seal between
        return _result(mesh, ext, dict(params), H, parts=lambda tol: ring_parts(races, n, tol))

    return fit_budget(make, max_faces, cat.name)


@register("hardware", "bolt")
def build_bolt(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Hex bolt lying along x: hex head at -x, threaded shank to +x."""
    fr = draw_fractions(rng, attributes)
    fr[2] = fr[1]
    ext = lerp_size(cat, fr)
    L, W = float(ext[0]), float(ext[1])
    head_t = float(rng.uniform(0.55, 0.7) * W * 0.6)
    shank = float(rng.uniform(0.55, 0.65))              # shank diameter / head width
    params = {"length": L, "head_width": W, "head_thickness": head_t, "shank_ratio": shank}

    def make(detail: float) -> ProceduralMesh:
        head = _solid_hex(W, head_t)
        r = shank * W / 2
        pitch = max(0.0012, 0.15 * r * 2)
        z0, z1 = head_t * 0.5, L
        zs = [z0, head_t + 0.3 * (L - head_t)]
        prof = [(0.0, z0), (r, z0), (r, zs[1])]
        z = zs[1] + pitch / 2
        while z < z1 - pitch:
            prof += [(0.86 * r, z), (r, z + pitch / 2)]
            z += pitch
        prof += [(0.86 * r, z1), (0.0, z1)]
        shaft = lathe(np.array(prof), res(20, detail))
        mesh = union(head, shaft)
        mesh.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))
        return _result(mesh, ext, dict(params), W)

    return fit_budget(make, max_faces, cat.name)


def _solid_hex(W: float, t: float) -> trimesh.Trimesh:
    """Solid hexagonal prism of bounding width ``W`` (square bbox) from z = 0 to ``t``."""
    th = _angles(6)
    corner = W / (2 * np.cos(np.pi / 12))
    pts = np.column_stack([corner * np.cos(th), corner * np.sin(th)])
    return trimesh.creation.extrude_polygon(Polygon(pts), t)
