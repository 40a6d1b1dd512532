"""UV projections that put a texture image on a mesh without splitting vertices.

Every vertex gets exactly one UV (a function of its position), so a watertight mesh
stays watertight and the physics and collision steps see the same closed volume. The
price is a seam: the one strip of triangles that wraps from ``u = 1`` back to ``u = 0``
is smeared, and surfaces the projection looks at edge-on (the top of a box under the
box wrap, the sides of a plate under the planar projection) take the colours of their
rim. The seam is placed at the back (``-x`` side for the cylinder, the ``+x, -y``
corner for the box wrap).

Projections:

- ``box``: the side walls are unwrapped around the bounding rectangle's perimeter
  (``u`` = arc length, undistorted on flat sides), ``v`` = height;
- ``cylindrical``: ``u`` = angle about the vertical axis, ``v`` = height;
- ``planar``: a top-down projection (``u``, ``v`` = x, y), for flat objects;
- ``auto``: planar when the object is flat (height under a quarter of its smaller
  horizontal extent), cylindrical when its plan is round (its 2-D hull fills less than
  90 % of its bounding rectangle; a disc fills 78.5 %), else box.
"""

from __future__ import annotations

import numpy as np
import trimesh
from PIL import Image

from scenegen.errors import AssetError

PROJECTIONS = ("auto", "box", "cylindrical", "planar")
"""Names accepted by :func:`apply_texture`."""
FLAT_RATIO = 0.25
"""``auto`` picks ``planar`` when height < FLAT_RATIO x the smaller horizontal extent."""
ROUND_FILL = 0.9
"""``auto`` picks ``cylindrical`` when the plan's hull fills less than this of its bounding rectangle."""


def plan_fill(mesh: trimesh.Trimesh) -> float:
    """Area of the 2-D convex hull of the vertices seen from above over its bounding rectangle's area."""
    from scipy.spatial import ConvexHull, QhullError

    xy = np.asarray(mesh.vertices)[:, :2]
    span = np.ptp(xy, axis=0)
    if len(xy) < 3 or span.min() <= 0:
        return 1.0
    try:
        area = ConvexHull(xy).volume  # in 2-D, 'volume' is the area
    except QhullError:
        return 1.0
    return float(area / (span[0] * span[1]))


def choose_projection(mesh: trimesh.Trimesh) -> str:
    """Pick ``planar``, ``cylindrical`` or ``box`` from the mesh's shape (see the module docstring)."""
    ext = np.asarray(mesh.extents, dtype=float)
    if ext[2] < FLAT_RATIO * min(ext[0], ext[1]):
        return "planar"
    return "cylindrical" if plan_fill(mesh) < ROUND_FILL else "box"


def _height(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (v[:, 2] - lo[2]) / max(hi[2] - lo[2], 1e-12)


def uv_cylindrical(mesh: trimesh.Trimesh) -> np.ndarray:
    """UVs from the angle about the vertical axis through the bbox centre and the height."""
    v = np.asarray(mesh.vertices)
    lo, hi = mesh.bounds
    c = (lo + hi) / 2
    angle = np.arctan2(v[:, 1] - c[1], v[:, 0] - c[0])  # -pi..pi, seam at -x
    return np.column_stack([(angle + np.pi) / (2 * np.pi), _height(v, lo, hi)])


def uv_box(mesh: trimesh.Trimesh) -> np.ndarray:
    """UVs unwrapping the side walls around the bounding rectangle (arc length) and the height."""
    v = np.asarray(mesh.vertices)
    lo, hi = mesh.bounds
    c = (lo + hi) / 2
    hx, hy = max((hi[0] - lo[0]) / 2, 1e-12), max((hi[1] - lo[1]) / 2, 1e-12)
    x, y = v[:, 0] - c[0], v[:, 1] - c[1]
    on_x = np.abs(x) / hx >= np.abs(y) / hy
    yc, xc = np.clip(y, -hy, hy), np.clip(x, -hx, hx)
    # counter-clockwise arc length from the (+x, -y) corner
    s = np.where(on_x & (x >= 0), yc + hy,
        np.where(~on_x & (y >= 0), 2 * hy + (hx - xc),
        np.where(on_x & (x < 0), 2 * hy + 2 * hx + (hy - yc),
                 4 * hy + 2 * hx + (xc + hx))))
    return np.column_stack([s / (4 * hx + 4 * hy), _height(v, lo, hi)])


def uv_planar(mesh: trimesh.Trimesh) -> np.ndarray:
    """UVs of a top-down projection over the bounding rectangle."""
    v = np.asarray(mesh.vertices)
    lo, hi = mesh.bounds
    span = np.maximum(hi - lo, 1e-12)
    return (v[:, :2] - lo[:2]) / span[:2]


_UV = {"box": uv_box, "cylindrical": uv_cylindrical, "planar": uv_planar}


def apply_texture(mesh: trimesh.Trimesh, image: Image.Image, projection: str = "auto") -> trimesh.Trimesh:
    """Return a copy of ``mesh`` carrying ``image`` as its texture, with generated UVs.

    The geometry (vertices and faces) is unchanged, so watertightness is kept; the OBJ
    export (``write_visual``) then writes ``visual.mtl`` and ``texture.png``.

    Args:
        mesh: the mesh, in the asset frame (+z up).
        image: the texture.
        projection: ``auto``, ``box``, ``cylindrical`` or ``planar``.

    Returns:
        The textured copy; ``out.metadata["uv_projection"]`` names the projection used.

    Raises:
        AssetError: unknown projection or an empty mesh.

    """
    if projection not in PROJECTIONS:
        raise AssetError(f"unknown UV projection {projection!r}; use one of {', '.join(PROJECTIONS)}")
    if mesh is None or len(mesh.faces) == 0:
        raise AssetError("cannot texture an empty mesh")
    kind = choose_projection(mesh) if projection == "auto" else projection
    uv = np.clip(_UV[kind](mesh), 0.0, 1.0)
    out = trimesh.Trimesh(np.array(mesh.vertices), np.array(mesh.faces), process=False)
    out.visual = trimesh.visual.TextureVisuals(uv=uv, image=image.convert("RGB"))
    out.metadata["uv_projection"] = kind
    return out
