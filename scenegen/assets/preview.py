"""Small offline renders: a URDF thumbnail (PyBullet TinyRenderer, no GL) and contact sheets."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from scenegen.errors import AssetError

BACKGROUND = (245, 245, 242)
"""Thumbnail and sheet background colour."""


def render_urdf_thumbnail(urdf_path: str | os.PathLike, size: int = 256, *, yaw: float = 35.0,
                          pitch: float = -30.0) -> Image.Image:
    """Render one URDF on a plain background from a three-quarter view.

    Args:
        urdf_path: the URDF to load (in a private PyBullet DIRECT client).
        size: image width and height in pixels.
        yaw: camera yaw in degrees.
        pitch: camera pitch in degrees (negative looks down).

    Returns:
        An RGB image.

    Raises:
        AssetError: the URDF does not load.

    """
    import pybullet as p

    cid = p.connect(p.DIRECT)
    try:
        try:
            body = p.loadURDF(str(urdf_path), useFixedBase=True, physicsClientId=cid)
        except p.error as exc:
            raise AssetError(f"cannot load {urdf_path} in PyBullet ({exc}); regenerate the asset") from None
        lo, hi = (np.array(v) for v in p.getAABB(body, physicsClientId=cid))
        target = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        fov = 40.0
        dist = radius / math.sin(math.radians(fov / 2)) * 1.05
        view = p.computeViewMatrixFromYawPitchRoll(target.tolist(), dist, yaw, pitch, 0, 2,
                                                   physicsClientId=cid)
        proj = p.computeProjectionMatrixFOV(fov, 1.0, dist * 0.05, dist * 4, physicsClientId=cid)
        _, _, rgb, _, seg = p.getCameraImage(size, size, view, proj, renderer=p.ER_TINY_RENDERER,
                                             lightDirection=[0.4, -0.6, 1.0], shadow=0,
                                             physicsClientId=cid)
    finally:
        p.disconnect(cid)
    rgb = np.reshape(np.asarray(rgb, dtype=np.uint8), (size, size, 4))[:, :, :3].copy()
    seg = np.reshape(np.asarray(seg), (size, size))
    rgb[seg < 0] = BACKGROUND
    return Image.fromarray(rgb, "RGB")


def contact_sheet(images: Sequence[Image.Image], labels: Sequence[str] | None = None,
                  cols: int | None = None, *, label_height: int = 18) -> Image.Image:
    """Tile images in a grid, each with its label underneath.

    Args:
        images: tiles (resized to the first one's size).
        labels: one caption per image (or None).
        cols: columns (default: about square).
        label_height: pixels reserved under each tile for its caption.

    Returns:
        The sheet as an RGB image.

    """
    if not images:
        raise AssetError("contact sheet needs at least one image")
    labels = list(labels) if labels is not None else [""] * len(images)
    if len(labels) != len(images):
        raise AssetError(f"contact sheet got {len(images)} images but {len(labels)} labels")
    cols = cols or max(1, math.ceil(math.sqrt(len(images))))
    rows = math.ceil(len(images) / cols)
    w, h = images[0].size
    lh = label_height if any(labels) else 0
    sheet = Image.new("RGB", (cols * w, rows * (h + lh)), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for i, (img, text) in enumerate(zip(images, labels, strict=True)):
        x, y = (i % cols) * w, (i // cols) * (h + lh)
        tile = img.convert("RGB")
        if tile.size != (w, h):
            tile = tile.resize((w, h))
        sheet.paste(tile, (x, y))
        if text:
            tw = draw.textlength(text, font=font)
            draw.text((x + max(0, (w - tw) / 2), y + h + 2), text, fill=(30, 30, 30), font=font)
    return sheet
