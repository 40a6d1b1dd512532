"""URDF and mesh files of an asset folder.

One link, ``base``: an ``<inertial>`` with the mass, the centre of mass as origin and the
full inertia tensor; a ``<visual>`` referencing ``visual.obj`` with the asset colour; one
``<collision>`` per convex part (or the native primitive); and PyBullet's ``<contact>``
extension (lateral, rolling and spinning friction, restitution) so PyBullet uses the
catalog's friction.

Load with ``flags=p.URDF_USE_INERTIA_FROM_FILE``: without it PyBullet recomputes the
inertia from the collision shapes and ignores the tensor written here.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import trimesh

from scenegen.assets.collision.primitives import AXIS_RPY
from scenegen.assets.physics import PhysicsProps

ROLLING_FRICTION = 0.003
"""Rolling friction written to every URDF (Bullet's rolling-resistance length, m). 0.001 lets a
rounded convex object (an apple, a potato) rock for over a second after a 5 cm drop; 0.003
settles it well within one, and still lets a ball roll."""
SPINNING_FRICTION = 0.001
"""Spinning (torsional) friction written to every URDF."""
CREASE_DEG = 35.0
"""Edges sharper than this stay sharp in the visual's normals."""


def _f(x: float) -> str:
    return f"{float(x):.9g}"


def _vec(v) -> str:
    return " ".join(_f(x) for x in v)


def corner_normals(mesh: trimesh.Trimesh, crease_deg: float = CREASE_DEG, chunk: int = 20000) -> np.ndarray:
    """Per-corner normals, smoothed across edges flatter than ``crease_deg`` (shape ``(F, 3, 3)``).

    Curved surfaces shade smoothly while box edges and rims stay sharp, without splitting
    the mesh's shared vertices.
    """
    faces = np.asarray(mesh.faces)
    fn = np.asarray(mesh.face_normals, dtype=float)
    area = np.asarray(mesh.area_faces, dtype=float)
    vf = np.asarray(mesh.vertex_faces)
    cos = np.cos(np.radians(crease_deg))
    out = np.empty((len(faces), 3, 3))
    for a in range(0, len(faces), chunk):
        b = min(a + chunk, len(faces))
        nb = vf[faces[a:b]]  # (n, 3, D) neighbouring faces of each corner, -1 padded
        valid = nb >= 0
        nbn = fn[np.where(valid, nb, 0)]
        dot = np.einsum("ncdk,nk->ncd", nbn, fn[a:b])
        w = np.where(valid & (dot >= cos), area[np.where(valid, nb, 0)], 0.0)
        n = np.einsum("ncd,ncdk->nck", w, nbn)
        length = np.linalg.norm(n, axis=2, keepdims=True)
        flat = np.broadcast_to(fn[a:b, None, :], n.shape)
        out[a:b] = np.where(length > 1e-12, n / np.maximum(length, 1e-12), flat)
    return out


def _rows(fmt: str, values: np.ndarray) -> str:
    """``fmt`` applied to each row of ``values``, one line each (one ``%`` call over the whole array)."""
    values = np.asarray(values)
    if not len(values):
        return ""
    return ((fmt + "\n") * len(values) % tuple(values.ravel().tolist()))[:-1]


def obj_text(mesh: trimesh.Trimesh, uv: np.ndarray | None = None, *, normals: bool = True,
             material: str | None = None) -> str:
    """OBJ text of a mesh: shared vertices, optional per-vertex UVs, crease-aware normals."""
    v = np.asarray(mesh.vertices, dtype=float)
    f = np.asarray(mesh.faces, dtype=np.int64) + 1
    out = []
    if material:
        out.append("mtllib visual.mtl")
    out.append(_rows("v %.8f %.8f %.8f", v))
    if uv is not None:
        out.append(_rows("vt %.6f %.6f", np.asarray(uv, dtype=float)[:, :2]))
    if normals and len(f):
        cn = corner_normals(mesh).reshape(-1, 3)
        uniq, inv = np.unique(np.round(cn, 5), axis=0, return_inverse=True)
        out.append(_rows("vn %.5f %.5f %.5f", uniq))
        ni = inv.reshape(-1, 3) + 1
    if material:
        out.append(f"usemtl {material}")
    if normals and len(f):
        if uv is not None:  # a/a/na b/b/nb c/c/nc
            cols = np.stack([f[:, 0], f[:, 0], ni[:, 0], f[:, 1], f[:, 1], ni[:, 1], f[:, 2], f[:, 2], ni[:, 2]], 1)
            out.append(_rows("f %d/%d/%d %d/%d/%d %d/%d/%d", cols))
        else:
            out.append(_rows("f %d//%d %d//%d %d//%d", np.stack([f[:, 0], ni[:, 0], f[:, 1], ni[:, 1], f[:, 2],
                                                                  ni[:, 2]], 1)))
    elif uv is not None:
        out.append(_rows("f %d/%d %d/%d %d/%d", np.repeat(f, 2, axis=1)))
    else:
        out.append(_rows("f %d %d %d", f))
    return "\n".join(x for x in out if x) + "\n"


def texture_of(mesh: trimesh.Trimesh) -> tuple[np.ndarray | None, object]:
    """``(uv, PIL image)`` of a textured mesh, or ``(None, None)``."""
    visual = getattr(mesh, "visual", None)
    if not isinstance(visual, trimesh.visual.TextureVisuals) or visual.uv is None:
        return None, None
    uv = np.asarray(visual.uv, dtype=float)
    if len(uv) != len(mesh.vertices):
        return None, None
    mat = visual.material
    image = getattr(mat, "image", None)
    if image is None:
        image = getattr(mat, "baseColorTexture", None)
    return (uv, image) if image is not None else (None, None)


def write_visual(mesh: trimesh.Trimesh, folder: Path, rgba: tuple[float, float, float, float]) -> list[str]:
    """Write ``visual.obj`` with ``visual.mtl`` (and ``texture.png`` when the mesh has one).

    Returns:
        The relative names of the files written.

    """
    folder.mkdir(parents=True, exist_ok=True)
    uv, image = texture_of(mesh)
    (folder / "visual.obj").write_text(obj_text(mesh, uv, material="material_0"))
    kd = (1.0, 1.0, 1.0) if image is not None else rgba[:3]
    mtl = ["newmtl material_0", "Ka 0.2 0.2 0.2", f"Kd {_vec(kd)}", "Ks 0.1 0.1 0.1", "Ns 10",
           f"d {_f(rgba[3])}", "illum 2"]
    if image is not None:
        image.convert("RGB").save(folder / "texture.png")
        mtl.append("map_Kd texture.png")
    (folder / "visual.mtl").write_text("\n".join(mtl) + "\n")
    return ["visual.obj", "visual.mtl"] + (["texture.png"] if image is not None else [])


def write_parts(parts: list[trimesh.Trimesh], folder: Path) -> list[str]:
    """Write each convex part as ``collision/part_000.obj``...; return the relative paths."""
    (folder / "collision").mkdir(parents=True, exist_ok=True)
    rels = []
    for i, part in enumerate(parts):
        rel = f"collision/part_{i:03d}.obj"
        (folder / rel).write_text(obj_text(part, normals=False))
        rels.append(rel)
    return rels


def _primitive_geometry(spec: dict) -> str:
    kind = spec["type"]
    if kind == "box":
        return f'<box size="{_vec(spec["extents"])}"/>'
    if kind == "cylinder":
        return f'<cylinder radius="{_f(spec["radius"])}" length="{_f(spec["height"])}"/>'
    return f'<sphere radius="{_f(spec["radius"])}"/>'


def urdf_text(name: str, physics: PhysicsProps, rgba: tuple[float, float, float, float],
              collision: list[str], *, visual: str = "visual.obj", textured: bool = False,
              primitive: dict | None = None, primitive_center: tuple[float, float, float] | None = None) -> str:
    """Return the URDF document of one single-link asset.

    Args:
        name: robot name (the asset id or category).
        physics: mass properties and contact parameters.
        rgba: visual colour (white is written when the visual carries a texture).
        collision: relative paths of the convex collision parts.
        visual: relative path of the visual mesh.
        textured: the visual mesh has a texture (its colours come from ``texture.png``).
        primitive: a native primitive to use as the collision geometry instead of the parts.
        primitive_center: where the primitive's centre sits in the asset frame.

    """
    inertia = np.asarray(physics.inertia, dtype=float)
    colour = (1.0, 1.0, 1.0, rgba[3]) if textured else rgba
    out = [
        '<?xml version="1.0"?>',
        f"<robot name={quoteattr(name)}>",
        '  <link name="base">',
        "    <contact>",
        f'      <lateral_friction value="{_f(physics.friction)}"/>',
        f'      <rolling_friction value="{_f(ROLLING_FRICTION)}"/>',
        f'      <spinning_friction value="{_f(SPINNING_FRICTION)}"/>',
        f'      <restitution value="{_f(physics.restitution)}"/>',
        "    </contact>",
        "    <inertial>",
        f'      <origin xyz="{_vec(physics.com)}" rpy="0 0 0"/>',
        f'      <mass value="{_f(physics.mass)}"/>',
        f'      <inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" ixz="{_f(inertia[0, 2])}"'
        f' iyy="{_f(inertia[1, 1])}" iyz="{_f(inertia[1, 2])}" izz="{_f(inertia[2, 2])}"/>',
        "    </inertial>",
        "    <visual>",
        '      <origin xyz="0 0 0" rpy="0 0 0"/>',
        f'      <geometry><mesh filename={quoteattr(visual)} scale="1 1 1"/></geometry>',
        f'      <material name="base_colour"><color rgba="{_vec(colour)}"/></material>',
        "    </visual>",
    ]
    if primitive is not None:
        center = primitive_center or (0.0, 0.0, 0.0)
        rpy = AXIS_RPY[primitive.get("axis", "z")] if primitive["type"] == "cylinder" else (0.0, 0.0, 0.0)
        out += ["    <collision>", f'      <origin xyz="{_vec(center)}" rpy="{_vec(rpy)}"/>',
                f"      <geometry>{_primitive_geometry(primitive)}</geometry>", "    </collision>"]
    else:
        for rel in collision:
            out += ["    <collision>", '      <origin xyz="0 0 0" rpy="0 0 0"/>',
                    f'      <geometry><mesh filename={quoteattr(rel)} scale="1 1 1"/></geometry>',
                    "    </collision>"]
    out += ["  </link>", "</robot>", ""]
    return "\n".join(out)


def write_urdf(path: Path, name: str, physics: PhysicsProps, rgba: tuple[float, float, float, float],
               collision: list[str], **kwargs) -> Path:
    """Write :func:`urdf_text` to ``path`` and return it (keyword arguments pass through)."""
    path.write_text(urdf_text(name, physics, rgba, collision, **kwargs))
    return path
