"""Play things: a tennis ball with its seam and a rubber duck.

The tennis ball is an icosphere with the two-lobed seam pressed in as a shallow groove
(its collision shape stays a sphere). The duck is a body, a head and a beak, each a
scaled sphere, unioned; its body's bottom is flat so that it sits upright, and the three
are its collision parts.
"""

from __future__ import annotations

import numpy as np
import trimesh

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
)
from scenegen.assets.procedural._geom import union
from scenegen.assets.procedural._solids import solid
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


def _seam(n: int = 400) -> np.ndarray:
    """Unit points along a tennis ball's seam (two interlocking lobes)."""
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    a, b = 0.75, 0.25
    p = np.column_stack([a * np.cos(t) + b * np.cos(3 * t), a * np.sin(t) - b * np.sin(3 * t),
                         2 * np.sqrt(a * b) * np.sin(2 * t)])
    return p / np.linalg.norm(p, axis=1, keepdims=True)


@register("play", "tennis_ball")
def build_tennis_ball(cat: Category, rng: np.random.Generator, attributes: dict,
                      max_faces: int) -> ProceduralMesh:
    """Tennis ball: a sphere with its seam as a shallow groove, turned at random."""
    fr = draw_fractions(rng, attributes)
    d = float(lerp_size(cat, np.full(3, fr[0])).min())
    turn = [float(x) for x in rng.uniform(0, 2 * np.pi, 3)]
    params = {"diameter": d, "seam_turn": turn}

    def make(detail: float) -> ProceduralMesh:
        s = trimesh.creation.icosphere(subdivisions=3 if detail >= 0.55 else 2)
        u = np.asarray(s.vertices)
        rot = trimesh.transformations.euler_matrix(*turn)[:3, :3]
        seam = _seam() @ rot.T
        ang = np.arccos(np.clip(u @ seam.T, -1, 1)).min(axis=1)    # angle to the nearest seam point
        v = u * (1 - 0.02 * np.exp(-(ang / 0.05) ** 2))[:, None]
        mesh, _ = finalize(trimesh.Trimesh(v, s.faces, process=True), np.full(3, d))
        return solid(mesh, params, {"mode": "top", "width": d, "height": d / 2, "x": 0.0},
                     {"type": "sphere", "radius": d / 2})

    return fit_budget(make, max_faces, cat.name)


def _blob(center, radii, subdiv: int) -> trimesh.Trimesh:
    s = trimesh.creation.icosphere(subdivisions=subdiv)
    s.vertices = np.asarray(s.vertices) * np.asarray(radii) + np.asarray(center)
    return s


@register("play", "rubber_duck")
def build_duck(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Rubber duck facing +x: a flat-bottomed body with a raised tail, a round head and a beak."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    X, Y, H = (float(v) for v in ext)
    head = float(rng.uniform(0.3, 0.36))                # head radius / length
    params = {"x": X, "y": Y, "z": H, "head": head}

    def make(detail: float) -> ProceduralMesh:
        sub = 3 if detail >= 0.75 else 2
        body = _blob((0.0, 0.0, 0.28), (0.5, 0.42, 0.3), sub)
        v = body.vertices.copy()
        v[:, 2] = np.maximum(v[:, 2], 0.06)                       # flat bottom
        tail = np.clip(-v[:, 0] - 0.2, 0, None)
        v[:, 2] += 0.5 * tail ** 1.5 * (v[:, 2] > 0.3)          # the tail turns up at -x
        body.vertices = v
        hc = (0.22, 0.0, 0.58 + head * 0.6)
        parts = [body, _blob(hc, (head, head * 0.95, head), sub),
                 _blob((hc[0] + 0.85 * head, 0.0, hc[2] - 0.25 * head), (0.28 * head, 0.36 * head, 0.12 * head), 1)]
        mesh, place = finalize(union(*parts), ext)
        grasp = {"mode": "top", "width": float(Y), "height": float(0.3 * H), "x": 0.0}
        return solid(mesh, params, grasp, place=place, parts=[m.vertices for m in parts])

    return fit_budget(make, max_faces, cat.name)
