"""Open-top containers with solid walls and a real cavity: bin, tote, tray, basket, sorter.

Each is a tapered rounded-rectangle shell (outer loft minus inner loft, manifold3d),
with a rim lip, handle slots, wall slots or internal dividers depending on the kind.
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
    box,
    difference,
    extrude,
    loft,
    rounded_rect2d,
    union,
)
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category

# kind: (wall, floor, taper range, corner fraction of y, lip)
_STYLE = {
    "bin": (0.004, 0.004, (0.86, 0.94), (0.05, 0.12), True),
    "tote": (0.004, 0.005, (0.85, 0.92), (0.06, 0.1), True),
    "tray": (0.004, 0.003, (0.9, 0.96), (0.04, 0.1), False),
    "basket": (0.005, 0.005, (0.8, 0.9), (0.15, 0.25), True),
    "sorter": (0.004, 0.004, (0.97, 1.0), (0.03, 0.06), False),
}


def _loft(x0: float, y0: float, z0: float, x1: float, y1: float, z1: float, corner: float,
          n: int) -> trimesh.Trimesh:
    """Ruled loft between two rounded rectangles (bottom at z0, top at z1)."""
    return loft(rounded_rect2d(x0, y0, corner, n), z0, rounded_rect2d(x1, y1, corner, n), z1)


def _open_box(X: float, Y: float, H: float, wall: float, floor: float, corner: float, taper: float,
              n: int) -> trimesh.Trimesh:
    """Tapered rounded-rectangle shell, open at the top."""
    outer = _loft(X * taper, Y * taper, 0.0, X, Y, H, corner, n)

    def dims(z: float) -> tuple[float, float]:
        f = z / H
        return X * (taper + (1 - taper) * f) - 2 * wall, Y * (taper + (1 - taper) * f) - 2 * wall

    top = H + 0.01
    inner = _loft(*dims(floor), floor, *dims(top), top, max(corner - wall, 0.3 * corner), n)
    return difference(outer, inner)


def _lip(X: float, Y: float, H: float, wall: float, corner: float, out: float, taper: float,
         n: int) -> trimesh.Trimesh:
    """Flat rim flange around the top edge, reaching ``out`` beyond the wall.

    Its hole edge stays inside the wall material over the flange's whole height, so the
    union never has touching surfaces.
    """
    t = 1.5 * wall
    shrink = (1 - taper) * max(X, Y) * t / (2 * H)       # how much the wall moves in over t
    inset = (wall + shrink) / 2
    ring = extrude(rounded_rect2d(X + 2 * out, Y + 2 * out, corner + out, n), t,
                   [rounded_rect2d(X - 2 * inset, Y - 2 * inset, max(corner - inset, 0.002), n)[::-1]])
    ring.apply_translation([0, 0, H - t])
    return ring


@register("containers", "bin", "tote", "tray", "basket", "sorter")
def build_container(cat: Category, rng: np.random.Generator, attributes: dict,
                    max_faces: int) -> ProceduralMesh:
    """Bin, tote (handle slots), tray (shallow), basket (slotted walls) or sorter (compartments)."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    kind = cat.name if cat.name in _STYLE else "bin"
    wall, floor, taper_r, corner_r, lip = _STYLE[kind]
    taper = float(rng.uniform(*taper_r))
    corner = float(rng.uniform(*corner_r) * ext[1])
    nx = int(rng.integers(2, 4)) if kind == "sorter" else 1
    ny = int(rng.integers(1, 3)) if kind == "sorter" else 1
    X, Y, H = (float(v) for v in ext)
    lip_out = 0.006 if lip else 0.0
    bx, by = X - 2 * lip_out, Y - 2 * lip_out           # body size inside the lip
    params = {"x": X, "y": Y, "z": H, "wall": wall, "taper": taper, "corner": corner}
    if kind == "sorter":
        params.update(compartments_x=float(nx), compartments_y=float(ny))

    def make(detail: float) -> ProceduralMesh:
        n = res(5, detail, lo=2, multiple=1)
        if kind == "sorter":
            outer = _loft(bx * taper, by * taper, 0.0, bx, by, H, corner, n)
            cw, ch = (bx * taper - (nx + 1) * wall) / nx, (by * taper - (ny + 1) * wall) / ny
            pockets = []
            for i in range(nx):
                for j in range(ny):
                    cx = -bx * taper / 2 + wall + cw / 2 + i * (cw + wall)
                    cy = -by * taper / 2 + wall + ch / 2 + j * (ch + wall)
                    p = extrude(rounded_rect2d(cw, ch, min(0.006, 0.2 * min(cw, ch)), n), H)
                    p.apply_translation([cx, cy, floor])
                    pockets.append(p)
            mesh = difference(outer, *pockets)
            cav = (-bx * taper / 2 + wall + cw / 2, -by * taper / 2 + wall + ch / 2)
        else:
            mesh = _open_box(bx, by, H, wall, floor, corner, taper, n)
            cav = (0.0, 0.0)
            extra, cuts = [], []
            if lip:
                extra.append(_lip(bx, by, H, wall, corner, lip_out, taper, n))
            if kind == "tote":  # handle slots through both short walls
                sw, sh = 0.35 * by, min(0.025, 0.2 * H)
                for s in (-1, 1):
                    cuts.append(box((0.06, sw, sh), (s * bx / 2, 0.0, H - 2.2 * wall - sh / 2 - 0.006)))
            if kind == "basket":  # a row of slots along every wall
                sh, zc = min(0.012, 0.12 * H), 0.55 * H
                k = max(2, int(round(bx / 0.06)))
                for i in range(k):
                    xc = (i + 0.5) / k * bx * 0.8 - 0.4 * bx
                    cuts.append(box((0.5 * bx * 0.8 / k, by * 1.2, sh), (xc, 0.0, zc)))
                k = max(2, int(round(by / 0.06)))
                for i in range(k):
                    yc = (i + 0.5) / k * by * 0.7 - 0.35 * by
                    cuts.append(box((bx * 1.2, 0.5 * by * 0.7 / k, sh), (0.0, yc, zc)))
            if extra:
                mesh = union(mesh, *extra)
            if cuts:
                mesh = difference(mesh, *cuts)
        mesh, place = finalize(mesh, ext)
        p = dict(params, floor=float(place([0, 0, floor])[2]),
                 cavity_point=place([cav[0], cav[1], floor + 0.004]),
                 wall_point=place([cav[0], cav[1], floor / 2]))
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": H, "x": float(X / 2 - wall)}
        return ProceduralMesh(mesh, p, closed=True, cavity=True, primitive=None, grasp=grasp)

    return fit_budget(make, max_faces, cat.name)
