"""Open-top containers with solid walls and a real cavity: bin, tote, tray, basket, sorter.

Each is a tapered rounded-rectangle shell (outer loft minus inner loft, manifold3d),
with a rim lip, handle slots, wall slots or internal dividers depending on the kind.

A sorter is a grid of compartments (2 rows of 2 or 3, at least
:data:`~scenegen.graph_schema.COMPARTMENTS` of them, each at least :data:`SLOT_MIN` across) with inner
walls; its ``params["slots"]`` names them (:data:`~scenegen.graph_schema.SLOT_NAMES`, column by column
from -x, -y first) with each one's footprint ``[xmin, ymin, xmax, ymax]`` in the asset frame.
"""

from __future__ import annotations

from collections.abc import Callable

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
from scenegen.assets.procedural._parts import Part, concavity, runs, subtract_box, wall_parts
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category
from scenegen.graph_schema import SLOT_NAMES

# kind: (wall, floor, taper range, corner fraction of y, lip)
_STYLE = {
    "bin": (0.004, 0.004, (0.86, 0.94), (0.05, 0.12), True),
    "tote": (0.004, 0.005, (0.85, 0.92), (0.06, 0.1), True),
    "tray": (0.004, 0.003, (0.9, 0.96), (0.04, 0.1), False),
    "basket": (0.005, 0.005, (0.8, 0.9), (0.15, 0.25), True),
    "sorter": (0.004, 0.004, (0.97, 1.0), (0.03, 0.06), False),
}
SLOT_MIN = (0.09, 0.075)
"""Least compartment size (x, y; m) of a sorter: a bolt lies in it along x, a bearing ring fits either way."""


def _loft(x0: float, y0: float, z0: float, x1: float, y1: float, z1: float, corner: float,
          n: int) -> trimesh.Trimesh:
    """Ruled loft between two rounded rectangles (bottom at z0, top at z1)."""
    return loft(rounded_rect2d(x0, y0, corner, n), z0, rounded_rect2d(x1, y1, corner, n), z1)


def _ring3(w: float, h: float, corner: float, n: int, z: float) -> np.ndarray:
    """A rounded rectangle's outline (``rounded_rect2d``) at height ``z``."""
    r = rounded_rect2d(w, h, corner, n)
    return np.column_stack([r, np.full(len(r), z)])


def _open_box(X: float, Y: float, H: float, wall: float, floor: float, corner: float, taper: float,
              n: int) -> tuple[trimesh.Trimesh, Callable[[float], list[Part]]]:
    """Tapered rounded-rectangle shell, open at the top, and ``parts(tol)``: its floor slab and wall segments."""
    outer = _loft(X * taper, Y * taper, 0.0, X, Y, H, corner, n)

    def dims(z: float) -> tuple[float, float]:
        f = z / H
        return X * (taper + (1 - taper) * f) - 2 * wall, Y * (taper + (1 - taper) * f) - 2 * wall

    top = H + 0.01
    ci = max(corner - wall, 0.3 * corner)
    inner = _loft(*dims(floor), floor, *dims(top), top, ci, n)

    def parts(tol: float) -> list[Part]:
        o0, o1 = _ring3(X * taper, Y * taper, corner, n, 0.0), _ring3(X, Y, corner, n, H)
        slab = np.vstack([o0, o0 + (o1 - o0) * floor / H])
        return [slab] + wall_parts([o0, o1], [_ring3(*dims(floor), ci, n, floor), _ring3(*dims(H), ci, n, H)], tol)

    return difference(outer, inner), parts


def _pocket_fillets(w: float, h: float, r: float, n: int, z0: float, z1: float, tol: float) -> list[Part]:
    """The material a rounded pocket leaves in its four corners (a pocket cut as a box leaves none)."""
    ring = rounded_rect2d(w, h, r, n)
    out: list[Part] = []
    for k, (sx, sy) in enumerate(((1, 1), (-1, 1), (-1, -1), (1, -1))):
        arc = ring[k * n:(k + 1) * n]
        corner = np.array([sx * w / 2, sy * h / 2])
        for a, b in runs(len(arc), lambda a, b, arc=arc, corner=corner: concavity(np.vstack([corner, arc[a:b + 1]]))
                         <= tol):
            pts = np.vstack([corner, arc[a:b + 1]])
            out.append(np.vstack([np.column_stack([pts, np.full(len(pts), z)]) for z in (z0, z1)]))
    return out


def _lip(X: float, Y: float, H: float, wall: float, corner: float, out: float, taper: float,
         n: int) -> tuple[trimesh.Trimesh, Callable[[float], list[Part]]]:
    """Flat rim flange around the top edge, reaching ``out`` beyond the wall, and ``parts(tol)``.

    Its hole edge stays inside the wall material over the flange's whole height, so the
    union never has touching surfaces.
    """
    t = 1.5 * wall
    shrink = (1 - taper) * max(X, Y) * t / (2 * H)       # how much the wall moves in over t
    inset = (wall + shrink) / 2
    dims_out = (X + 2 * out, Y + 2 * out, corner + out)
    dims_in = (X - 2 * inset, Y - 2 * inset, max(corner - inset, 0.002))
    ring = extrude(rounded_rect2d(*dims_out, n), t, [rounded_rect2d(*dims_in, n)[::-1]])
    ring.apply_translation([0, 0, H - t])

    def parts(tol: float) -> list[Part]:
        # the flange's hole edge lies inside the wall: a chord may bridge that much more before it reaches air
        return wall_parts([_ring3(*dims_out, n, z) for z in (H - t, H)], [_ring3(*dims_in, n, z) for z in (H - t, H)],
                          tol + max(0.0, wall - inset))

    return ring, parts


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
    ny = 2 if kind == "sorter" else 1
    X, Y, H = (float(v) for v in ext)
    if kind == "sorter":  # as many columns as keep every compartment SLOT_MIN wide (2 rows of at least 2)
        nx = max(2, min(nx, int((X * taper - wall) // (SLOT_MIN[0] + wall))))
        ext[1] = Y = max(Y, (ny * (SLOT_MIN[1] + wall) + wall) / taper)
    lip_out = 0.006 if lip else 0.0
    bx, by = X - 2 * lip_out, Y - 2 * lip_out           # body size inside the lip
    params = {"x": X, "y": Y, "z": H, "wall": wall, "taper": taper, "corner": corner}
    if kind == "sorter":
        params.update(compartments_x=float(nx), compartments_y=float(ny))

    def make(detail: float) -> ProceduralMesh:
        n = res(5, detail, lo=2, multiple=1)
        cuts: list[tuple[tuple, tuple]] = []                # boxes cut out: (extents, centre)
        if kind == "sorter":
            outer = _loft(bx * taper, by * taper, 0.0, bx, by, H, corner, n)
            cw, ch = (bx * taper - (nx + 1) * wall) / nx, (by * taper - (ny + 1) * wall) / ny
            pr = min(0.006, 0.2 * min(cw, ch))
            pockets, centres = [], []
            for i in range(nx):
                for j in range(ny):
                    cx = -bx * taper / 2 + wall + cw / 2 + i * (cw + wall)
                    cy = -by * taper / 2 + wall + ch / 2 + j * (ch + wall)
                    p = extrude(rounded_rect2d(cw, ch, pr, n), H)
                    p.apply_translation([cx, cy, floor])
                    pockets.append(p)
                    centres.append((cx, cy))
            mesh = difference(outer, *pockets)
            cav = (-bx * taper / 2 + wall + cw / 2, -by * taper / 2 + wall + ch / 2)
            pocket_boxes = [(cx - cw / 2, cy - ch / 2, cx + cw / 2, cy + ch / 2) for cx, cy in centres]

            def parts(tol: float) -> list[Part]:
                out = [np.asarray(outer.vertices, dtype=float)]
                for cx, cy in centres:
                    out = subtract_box(out, (cx, cy, floor + H / 2), (cw, ch, H))
                for cx, cy in centres:
                    out += [q + [cx, cy, 0.0] for q in _pocket_fillets(cw, ch, pr, n, floor, H, tol)]
                return out
        else:
            mesh, body_parts = _open_box(bx, by, H, wall, floor, corner, taper, n)
            cav = (0.0, 0.0)
            extra, extra_parts = [], []
            if lip:
                ring, ring_parts = _lip(bx, by, H, wall, corner, lip_out, taper, n)
                extra.append(ring)
                extra_parts.append(ring_parts)
            if kind == "tote":  # handle slots through both short walls
                sw, sh = 0.35 * by, min(0.025, 0.2 * H)
                for s in (-1, 1):
                    cuts.append(((0.06, sw, sh), (s * bx / 2, 0.0, H - 2.2 * wall - sh / 2 - 0.006)))
            if kind == "basket":  # a row of slots along every wall
                sh, zc = min(0.012, 0.12 * H), 0.55 * H
                k = max(2, int(round(bx / 0.06)))
                for i in range(k):
                    xc = (i + 0.5) / k * bx * 0.8 - 0.4 * bx
                    cuts.append(((0.5 * bx * 0.8 / k, by * 1.2, sh), (xc, 0.0, zc)))
                k = max(2, int(round(by / 0.06)))
                for i in range(k):
                    yc = (i + 0.5) / k * by * 0.7 - 0.35 * by
                    cuts.append(((bx * 1.2, 0.5 * by * 0.7 / k, sh), (0.0, yc, zc)))
            if extra:
                mesh = union(mesh, *extra)
            if cuts:
                mesh = difference(mesh, *(box(e, c) for e, c in cuts))

            def parts(tol: float) -> list[Part]:
                out = body_parts(tol)
                for fn in extra_parts:
                    out += fn(tol)
                for e, c in cuts:                       # the slots stay open in the parts too
                    out = subtract_box(out, c, e)
                return out
        mesh, place = finalize(mesh, ext)
        p = dict(params, floor=float(place([0, 0, floor])[2]),
                 cavity_point=place([cav[0], cav[1], floor + 0.004]),
                 wall_point=place([cav[0], cav[1], floor / 2]))
        if kind == "sorter":
            p["slots"] = {name: [round(float(v), 6) for v in (*place([x0, y0, 0])[:2], *place([x1, y1, 0])[:2])]
                          for name, (x0, y0, x1, y1) in zip(SLOT_NAMES, pocket_boxes, strict=False)}
        grasp = {"mode": "rim", "width": float(wall * 1.5), "height": H, "x": float(X / 2 - wall)}
        return ProceduralMesh(mesh, p, closed=True, cavity=True, primitive=None, grasp=grasp,
                              parts=lambda tol: place.parts(parts(tol)))

    return fit_budget(make, max_faces, cat.name)
