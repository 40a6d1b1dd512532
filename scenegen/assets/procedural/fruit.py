"""Fruit, vegetables and eggs: deformed spheres, a lathed carrot and a swept banana.

Round fruit start from an icosphere whose vertices move radially by smooth noise
(a few random low-frequency waves seeded from the instance) plus a shape rule
(apple dimples, tomato lobes, pear and avocado necks, lemon tips, the peach's crease,
the onion's pointed top, the egg's blunt and narrow ends). Stems are small cylinders
unioned on top. Every round fruit gets a small flat patch at the bottom, as real fruit
has where it grew or sat, so that it comes to rest on a table instead of rocking and
rolling; an egg keeps its smooth shell (it lies on its side, as eggs do).
"""

from __future__ import annotations

import functools

import numpy as np
import trimesh

from scenegen.assets.procedural._build import (
    draw_fractions,
    finalize,
    fit_budget,
    lerp_size,
    res,
    seed_from,
)
from scenegen.assets.procedural._geom import (
    lathe,
    sweep,
    union,
)
from scenegen.assets.procedural.registry import ProceduralMesh, register
from scenegen.catalog import Category


@functools.lru_cache(maxsize=4)
def _unit_sphere(subdiv: int) -> tuple[np.ndarray, np.ndarray]:
    s = trimesh.creation.icosphere(subdivisions=subdiv)
    return np.array(s.vertices), np.array(s.faces)


def _waves(u: np.ndarray, rng: np.random.Generator, n: int, freq: tuple[float, float]) -> np.ndarray:
    """Smooth noise on unit directions ``u``: a sum of ``n`` random plane waves in [-1, 1]."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    f = rng.uniform(*freq, size=n)
    ph = rng.uniform(0, 2 * np.pi, size=n)
    return np.sin((u @ d.T) * f + ph).sum(axis=1) / np.sqrt(n)


def _smoothstep(a: float, b: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - a) / (b - a), 0.0, 1.0)
    return t * t * (3 - 2 * t)


def _stem(top: np.ndarray, length: float, radius: float, tilt: float) -> trimesh.Trimesh:
    """A short cylinder starting a little inside the fruit at ``top``, leaning by ``tilt`` radians."""
    c = trimesh.creation.cylinder(radius=radius, height=length, sections=8)
    c.apply_translation([0, 0, length / 2 - 0.35 * length])
    c.apply_transform(trimesh.transformations.rotation_matrix(tilt, [1, 0, 0]))
    c.apply_translation(top)
    return c


def _round_fruit(kind: str, seed: int, detail: float) -> trimesh.Trimesh:
    """Unit-sized fruit shape (roughly [-1, 1]^3) for the given kind."""
    rng = np.random.default_rng(seed)
    v, f = _unit_sphere(3 if detail >= 0.55 else 2)
    u = v.copy()
    z = u[:, 2]
    top = np.arccos(np.clip(z, -1, 1))                 # angle from the top pole
    bot = np.pi - top
    amp = {"apple": 0.03, "orange": 0.015, "tomato": 0.02, "lemon": 0.02, "pear": 0.025,
           "potato": 0.08, "peach": 0.02, "avocado": 0.03, "onion": 0.015, "egg": 0.004}.get(kind, 0.03)
    r = 1.0 + amp * _waves(u, rng, 6, (1.5, 3.5 if kind != "potato" else 5.0))
    p = u * r[:, None]
    stem = None
    if kind == "apple":
        r *= 1 - 0.16 * np.exp(-(top / 0.38) ** 2) - 0.08 * np.exp(-(bot / 0.35) ** 2)
        p = u * r[:, None]
        p[:, :2] *= (1 + 0.07 * z)[:, None]
        p[:, 2] *= 0.92
        stem = (0.3, 0.045)
    elif kind == "tomato":
        phi = np.arctan2(u[:, 1], u[:, 0])
        r *= 1 + 0.035 * np.cos(5 * phi + rng.uniform(0, 6.3)) * np.sin(top) ** 2
        r *= 1 - 0.1 * np.exp(-(top / 0.3) ** 2)
        p = u * r[:, None]
        p[:, 2] *= 0.8
        stem = (0.14, 0.06)
    elif kind in ("pear", "avocado"):
        p = u * r[:, None]
        p[:, 2] *= 1.45 if kind == "pear" else 1.3
        p[:, :2] *= (1 - (0.48 if kind == "pear" else 0.3) * _smoothstep(-0.35, 1.0, z))[:, None]
        stem = (0.35, 0.05) if kind == "pear" else (0.08, 0.06)
    elif kind == "peach":
        crease = np.exp(-(u[:, 0] / 0.12) ** 2) * _smoothstep(-0.6, 0.2, z)   # the suture down one side
        r *= 1 - 0.035 * crease - 0.1 * np.exp(-(top / 0.3) ** 2)
        p = u * r[:, None]
        p[:, 2] *= 0.95
        p[:, 2] += 0.06 * np.clip(z, 0.0, 1.0) ** 6                          # a faint point at the top
    elif kind == "onion":
        r *= 1 + 0.28 * _smoothstep(0.6, 1.0, z) ** 2 - 0.06 * np.exp(-(bot / 0.3) ** 2)
        p = u * r[:, None]
        p[:, :2] *= (1 - 0.55 * _smoothstep(0.6, 1.0, z))[:, None]           # the neck narrows to a tip
        p[:, 2] *= 0.9
    elif kind == "egg":
        p = u * r[:, None]
        p[:, 0] *= 1.3
        p[:, 1:] *= (1 - 0.1 * u[:, 0] - 0.04 * u[:, 0] ** 2)[:, None]       # blunt end at -x, narrow at +x
    elif kind == "lemon":
        p = u * r[:, None]
        ax = np.abs(p[:, 0])
        p[:, 0] *= 1 + 0.22 * ax ** 10
        p[:, 1:] *= (1 - 0.04 * ax ** 2)[:, None]
    elif kind == "potato":
        p = u * r[:, None]
        for _ in range(int(rng.integers(3, 7))):       # a few shallow eyes
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            ang = np.arccos(np.clip(u @ d, -1, 1))
            p *= (1 - 0.04 * np.exp(-(ang / 0.12) ** 2))[:, None]
        p *= np.array([1.3, 1.0, 0.85])
    else:                                              # orange and the fallback
        p[:, 2] *= 0.96
    if kind != "egg":
        p = _flat_base(p, FLAT_BASE.get(kind, 0.05))
    mesh = trimesh.Trimesh(p, f, process=True)
    if stem is not None:
        length, radius = stem
        tip = p[np.argmax(p[:, 2] - 0.2 * np.linalg.norm(p[:, :2], axis=1))]
        dimple_z = p[np.abs(p[:, 0]) + np.abs(p[:, 1]) < 0.05][:, 2].max() if kind != "pear" else tip[2]
        mesh = union(mesh, _stem(np.array([0.0, 0.0, dimple_z]), length + (tip[2] - dimple_z), radius,
                                 rng.uniform(-0.3, 0.3)))
    return mesh


FLAT_BASE = {"lemon": 0.07, "potato": 0.08, "pear": 0.035, "avocado": 0.04}
"""Height of the flat bottom patch as a fraction of the fruit's height (default 0.05: a patch
about 0.4 of the radius across on a round fruit)."""


def _flat_base(p: np.ndarray, frac: float) -> np.ndarray:
    """Lift every point below ``frac`` of the height onto one plane: a flat patch to stand on."""
    lo, hi = p[:, 2].min(), p[:, 2].max()
    out = p.copy()
    out[:, 2] = np.maximum(out[:, 2], lo + frac * (hi - lo))
    return out


def _result(mesh: trimesh.Trimesh, ext: np.ndarray, params: dict) -> ProceduralMesh:
    mesh, _ = finalize(mesh, ext)
    grasp = {"mode": "top", "width": float(ext[1]), "height": float(ext[2] / 2), "x": 0.0}
    return ProceduralMesh(mesh, params, closed=True, cavity=False, primitive=None, grasp=grasp)


_ROUND_IN_PLAN = ("apple", "orange", "tomato", "pear", "peach", "avocado", "onion")


@register("fruit", "apple", "orange", "lemon", "pear", "tomato", "potato", "peach", "avocado", "onion", "egg")
def build_round(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Apple, orange, lemon, pear, tomato, potato, peach, avocado, onion or egg: a noisy deformed sphere."""
    fr = draw_fractions(rng, attributes)
    if cat.name in _ROUND_IN_PLAN:                       # round in plan: same x and y
        fr[1] = fr[0]
    elif cat.name == "egg":                              # round across its long axis
        fr[2] = fr[1]
    ext = lerp_size(cat, fr)
    seed = seed_from(rng)
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "shape_seed": seed}
    return fit_budget(lambda d: _result(_round_fruit(cat.name, seed, d), ext, params), max_faces, cat.name)


@register("fruit", "carrot")
def build_carrot(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Carrot lying along x: rounded shoulder tapering to a tip, with faint growth rings."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    seed = seed_from(rng)
    power = float(rng.uniform(0.7, 1.0))
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "taper": power, "shape_seed": seed}

    def make(detail: float) -> ProceduralMesh:
        g = np.random.default_rng(seed)
        n = res(40, detail, lo=12, multiple=1)
        t = np.linspace(0, 1, n)[1:-1]
        shoulder = np.sqrt(np.clip(t / 0.06, 0, 1))
        ridges = 1 + 0.025 * np.sin(t * g.uniform(50, 70) + g.uniform(0, 6.3))
        r = shoulder * (1 - t) ** power * ridges + 0.02 * (1 - t)
        prof = np.vstack([[0.0, 0.0], np.column_stack([r, t * 10]), [0.0, 10.0]])
        m = lathe(prof, res(20, detail, lo=8))
        m.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))
        return _result(m, ext, params)

    return fit_budget(make, max_faces, cat.name)


@register("fruit", "banana")
def build_banana(cat: Category, rng: np.random.Generator, attributes: dict, max_faces: int) -> ProceduralMesh:
    """Banana lying on its side: a rounded-pentagon section swept along an arc, tapered."""
    ext = lerp_size(cat, draw_fractions(rng, attributes))
    bend = float(rng.uniform(0.7, 1.1))                 # arc angle in radians
    params = {"x": float(ext[0]), "y": float(ext[1]), "z": float(ext[2]), "bend": bend}

    def make(detail: float) -> ProceduralMesh:
        n = res(40, detail, lo=12, multiple=1)
        t = np.linspace(0, 1, n)
        ang = (t - 0.5) * bend
        rad = 1.0 / bend                                # unit chord-ish length
        path = np.column_stack([rad * np.sin(ang), rad * (1 - np.cos(ang)), np.zeros(n)])
        body = np.sin(np.pi * np.clip(t, 0.0, 1.0)) ** 0.6
        stalk = np.where(t < 0.12, 0.22 + 0.78 * _smoothstep(0.04, 0.12, t), 1.0)
        scale = np.maximum(body, 0.18) * stalk * 0.11
        ang_s = np.linspace(0, 2 * np.pi, res(15, detail, lo=10, multiple=5), endpoint=False)
        rr = 1 + 0.06 * np.cos(5 * ang_s)               # rounded pentagon
        sec = np.column_stack([rr * np.cos(ang_s), rr * np.sin(ang_s)])
        return _result(sweep(path, sec, scale), ext, params)

    return fit_budget(make, max_faces, cat.name)
