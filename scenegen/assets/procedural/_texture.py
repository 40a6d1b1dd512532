"""Small procedural textures (Pillow) and planar UV mapping.

Textures are mostly light luminance patterns: the material writer multiplies them by
the asset's base colour (``Asset.rgba``), so a wood texture tinted brown shows grain
and a cover tinted red shows a red book. Every image is drawn from a seed only, so the
same seed gives the same pixels.
"""

from __future__ import annotations

import numpy as np
import trimesh
from PIL import Image, ImageDraw

SIZE = 128


def _smooth_noise(rng: np.random.Generator, size: int, cells: tuple[int, int]) -> np.ndarray:
    """Value noise in [0, 1]: a coarse random grid upsampled bicubically."""
    g = (rng.random(cells) * 255).astype(np.uint8)
    img = Image.fromarray(g).resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(img, dtype=float) / 255.0


def _to_image(rgb: np.ndarray) -> Image.Image:
    return Image.fromarray((np.clip(rgb, 0.0, 1.0) * 255).astype(np.uint8))


def wood(seed: int, size: int = SIZE) -> Image.Image:
    """Wood grain running along the image's u (horizontal) axis."""
    rng = np.random.default_rng(seed)
    v = np.linspace(0, 1, size)[:, None] * np.ones((1, size))
    warp = _smooth_noise(rng, size, (4, 3)) * 0.35 + _smooth_noise(rng, size, (12, 6)) * 0.05
    freq = rng.uniform(7, 12)
    rings = 0.5 + 0.5 * np.sin(2 * np.pi * (freq * (v + warp)))
    fibre = _smooth_noise(rng, size, (size // 2, 6))
    lum = 0.78 + 0.14 * rings ** 3 + 0.08 * fibre
    return _to_image(np.stack([lum, lum * 0.96, lum * 0.9], axis=-1))


def cardboard(seed: int, size: int = SIZE) -> Image.Image:
    """Corrugated cardboard: fine fibres, a tape strip and a printed mark."""
    rng = np.random.default_rng(seed)
    fib = rng.random((size, size)) * 0.05 + _smooth_noise(rng, size, (8, 8)) * 0.06
    lum = 0.86 + fib
    img = _to_image(np.stack([lum, lum * 0.97, lum * 0.92], axis=-1))
    d = ImageDraw.Draw(img)
    w = int(size * rng.uniform(0.14, 0.2))
    d.rectangle([0, size // 2 - w // 2, size, size // 2 + w // 2], fill=(238, 232, 220))
    x0 = int(size * rng.uniform(0.08, 0.5))
    y0 = int(size * 0.72)
    for k in range(2):  # "this side up" arrows
        cx = x0 + k * size // 7
        d.polygon([(cx, y0), (cx - 6, y0 + 8), (cx + 6, y0 + 8)], fill=(60, 55, 50))
        d.rectangle([cx - 2, y0 + 8, cx + 2, y0 + 18], fill=(60, 55, 50))
    return img


def cereal_label(seed: int, size: int = SIZE) -> Image.Image:
    """Cereal box front: title band, a bowl picture and text blocks."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), (245, 245, 240))
    d = ImageDraw.Draw(img)
    hue = rng.uniform(0.0, 1.0, size=3)
    accent = tuple(int(60 + 160 * h) for h in hue)
    top = int(size * rng.uniform(0.12, 0.2))
    d.rectangle([0, 0, size, top + 4], fill=accent)          # image top = v 1 = top of the box
    for _ in range(3):                                        # title letters
        x = int(rng.uniform(0.1, 0.8) * size)
        d.rectangle([x, 6, x + size // 10, top - 2], fill=(250, 250, 250))
    cx, cy, r = size * rng.uniform(0.4, 0.6), size * 0.55, size * rng.uniform(0.2, 0.27)
    d.ellipse([cx - r, cy - r * 0.55, cx + r, cy + r * 0.55], fill=(225, 225, 230), outline=(90, 90, 90))
    for _ in range(int(rng.integers(8, 14))):                # cereal pieces
        px, py = cx + rng.uniform(-0.7, 0.7) * r, cy + rng.uniform(-0.45, 0.1) * r
        d.ellipse([px - 4, py - 3, px + 4, py + 3], fill=(200, 150, 70))
    for k in range(3):                                        # small print
        y = int(size * (0.8 + 0.05 * k))
        d.rectangle([int(size * 0.1), y, int(size * rng.uniform(0.4, 0.9)), y + 2], fill=(120, 120, 120))
    return img


def book_cover(seed: int, size: int = SIZE) -> Image.Image:
    """Book cover: frame, title and author bands, spine stripe along the left edge."""
    rng = np.random.default_rng(seed)
    base = 0.82 + 0.05 * _smooth_noise(rng, size, (6, 6))
    img = _to_image(np.stack([base] * 3, axis=-1))
    d = ImageDraw.Draw(img)
    spine = int(size * rng.uniform(0.08, 0.12))
    d.rectangle([0, 0, spine, size], fill=(150, 150, 150))
    m = int(size * 0.1)
    d.rectangle([spine + m // 2, m // 2, size - m // 2, size - m // 2], outline=(245, 245, 240), width=2)
    y = int(size * rng.uniform(0.55, 0.7))
    d.rectangle([spine + m, y, size - m, y + size // 9], fill=(250, 248, 235))
    d.rectangle([spine + 2 * m, int(size * 0.2), size - 2 * m, int(size * 0.24)], fill=(235, 235, 230))
    return img


def apply_planar(mesh: trimesh.Trimesh, image: Image.Image, axes: tuple[int, int]) -> trimesh.Trimesh:
    """Give ``mesh`` planar-projected UVs along two axes and the texture image.

    Each vertex gets one UV (a function of its position), so no vertex is split and the
    mesh stays watertight. Returns the same mesh.
    """
    lo, hi = mesh.bounds
    span = np.maximum(hi - lo, 1e-12)
    uv = (mesh.vertices[:, list(axes)] - lo[list(axes)]) / span[list(axes)]
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv, image=image)
    return mesh
