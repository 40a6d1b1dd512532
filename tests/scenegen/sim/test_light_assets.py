"""Render meshes must look like the object: the light copy's rendered mask against the full mesh's, per category.

The env draws an object whose visual mesh has more than ``render_max_faces`` (600) triangles
from a decimated copy (:func:`scenegen.sim.light_assets.render_mesh`). Each catalog category is
built at its smallest and largest size, both meshes are rendered by the TinyRenderer (the
renderer the env uses) from 8 views around and above the object, at 96 x 96 pixels with the
object filling most of the frame, and compared:

- silhouette IoU >= 0.9 in *every* view. The object spans about 60-80 pixels here, against 10-40
  pixels of a 128 x 128 front-camera image; an IoU of 0.9 at this size is a boundary that moves by
  about one pixel on average (a 70-pixel disc whose radius grows by 1.5 pixels keeps an IoU of
  0.92), that is a fraction of a pixel in the env's image. A hole (the colander's checkerboard) or a
  lost handle or a collapsed plate costs far more (vertex clustering gave plates 0.17-0.2, bowls
  0.5-0.6 and pans 0.3-0.5);
- mean colour difference <= 16 / 255 inside both masks, in every view: turned-over or coincident
  triangles shade visibly differently (a clustered bearing ring reached 19.7).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pybullet as p
import pytest
import trimesh

from scenegen.assets.procedural.registry import build_mesh
from scenegen.catalog import load_catalog
from scenegen.sim.light_assets import FIDELITY, deviation, render_mesh, write_obj

_NAMES = itertools.count()
BUDGET = 600
"""The env's default ``render_max_faces``."""
SIZE = 96
MIN_IOU = 0.9
MAX_RGB = 16.0


def _views(ext: np.ndarray) -> list[tuple[list[float], list[float]]]:
    r = float(np.linalg.norm(ext))
    target = [0.0, 0.0, float(ext[2]) / 2]
    out = []
    for az in (0, 90, 200, 300):
        for el in (30, 65):
            a, e = math.radians(az), math.radians(el)
            eye = [2 * r * math.cos(e) * math.cos(a), 2 * r * math.cos(e) * math.sin(a),
                   target[2] + 2 * r * math.sin(e)]
            out.append((eye, target))
    return out


def _render(path, ext) -> list[tuple[np.ndarray, np.ndarray]]:
    c = p.connect(p.DIRECT)
    try:
        vs = p.createVisualShape(p.GEOM_MESH, fileName=str(path), rgbaColor=[0.8, 0.5, 0.3, 1], physicsClientId=c)
        body = p.createMultiBody(0, -1, vs, physicsClientId=c)
        proj = p.computeProjectionMatrixFOV(35, 1, 0.01, 10, physicsClientId=c)
        out = []
        for eye, target in _views(ext):
            view = p.computeViewMatrix(eye, target, [0, 0, 1], physicsClientId=c)
            img = p.getCameraImage(SIZE, SIZE, view, proj, renderer=p.ER_TINY_RENDERER, physicsClientId=c)
            seg = np.asarray(img[4]).reshape(SIZE, SIZE) == body
            rgb = np.asarray(img[2], dtype=np.uint8).reshape(SIZE, SIZE, 4)[..., :3].astype(float)
            out.append((seg, rgb))
        return out
    finally:
        p.disconnect(c)


def compare(mesh: trimesh.Trimesh, v: np.ndarray, f: np.ndarray, folder) -> tuple[float, float]:
    """Smallest silhouette IoU and largest in-mask mean colour difference over the views."""
    # PyBullet caches meshes by file name within a process: every file gets a new name
    full_obj, light_obj = (folder / f"{next(_NAMES)}.obj" for _ in range(2))
    write_obj(full_obj, mesh.vertices, mesh.faces)
    write_obj(light_obj, v, f)
    ext = np.asarray(mesh.extents)
    full, light = _render(full_obj, ext), _render(light_obj, ext)
    ious, diffs = [], []
    for (ma, ra), (mb, rb) in zip(full, light, strict=True):
        ious.append((ma & mb).sum() / max(1, (ma | mb).sum()))
        both = ma & mb
        diffs.append(float(np.abs(ra - rb)[both].mean()) if both.any() else 255.0)
    return float(min(ious)), float(max(diffs))


CATEGORIES = sorted(c.name for c in load_catalog() if c.name != "table")


@pytest.mark.slow
@pytest.mark.parametrize("category", CATEGORIES)
def test_render_mesh_looks_like_the_object(category, tmp_path):
    cat = load_catalog().get(category)
    for scale in (0.0, 1.0):
        mesh = build_mesh(cat, np.random.default_rng(0), {"scale": scale}, 5000).mesh
        mesh = trimesh.Trimesh(mesh.vertices - mesh.bounds[0] * [0, 0, 1], mesh.faces, process=False)
        copy = render_mesh(mesh, BUDGET) if len(mesh.faces) > BUDGET else None
        if copy is None:  # within budget, or no faithful copy: the env draws the mesh itself
            continue
        iou, diff = compare(mesh, *copy, tmp_path)
        assert iou >= MIN_IOU, f"{category} at scale {scale}: silhouette IoU {iou:.3f} < {MIN_IOU}"
        assert diff <= MAX_RGB, f"{category} at scale {scale}: colour differs by {diff:.1f} > {MAX_RGB}"


def test_a_thin_plate_collapsed_into_one_sheet_is_refused(tmp_path):
    from scenegen.assets.mesh.simplify import simplify

    ring = trimesh.creation.annulus(r_min=0.06, r_max=0.1, height=0.004, sections=400)  # a 4 mm thick ring
    assert len(ring.faces) > 1000
    # quadric decimation to 300 triangles flattens it into a single sheet, within 2 mm of both faces:
    # close enough by distance alone, but seen from below it vanishes
    flat, _ = simplify(ring, 300)
    assert deviation(ring, flat.vertices, flat.faces) <= max(FIDELITY[0], FIDELITY[1] * 0.2)
    assert compare(ring, flat.vertices, flat.faces, tmp_path)[0] < 0.5
    v, f = render_mesh(ring, 300)
    assert len(f) <= 300
    iou, diff = compare(ring, v, f, tmp_path)
    assert iou >= MIN_IOU and diff <= MAX_RGB


def test_a_mesh_no_copy_can_follow_is_kept():
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=0.05)  # 5120 faces
    assert render_mesh(sphere, 600) is not None
    assert render_mesh(sphere, 8) is None  # no 8-to-32-triangle copy stays within 1.5 mm of a sphere
