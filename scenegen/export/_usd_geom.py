"""USD building blocks shared by the scene and robot parts of the USD exporter (``usd-core``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scenegen.errors import ExportError
from scenegen.export._camera import ExportCamera


def pxr():
    """Import the usd-core modules the exporter uses, or raise the one-line install hint."""
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt
    except ImportError:
        raise ExportError("the usd exporter needs usd-core; install the extra: pip install scenegen[usd]") from None
    return Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt


def load_mesh(path: Path):
    """Load a mesh file with trimesh (no processing), raising ExportError when unreadable or empty."""
    import trimesh

    try:
        mesh = trimesh.load(str(path), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for broken files
        raise ExportError(f"cannot read mesh {path} ({exc}); regenerate the asset") from None
    if len(mesh.faces) == 0:
        raise ExportError(f"mesh {path} has no faces; regenerate the asset")
    return mesh


def define_mesh(stage, path: str, mesh, with_uv: bool, transform: np.ndarray | None = None):
    """Define a ``UsdGeom.Mesh`` of triangles (normals and ``st`` when ``with_uv``) at ``transform``."""
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    geom = UsdGeom.Mesh.Define(stage, path)
    v = np.asarray(mesh.vertices, dtype=float)
    geom.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(v.astype(np.float32)))
    geom.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(mesh.faces), 3, dtype=np.int32)))
    geom.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.asarray(mesh.faces, dtype=np.int32).ravel()))
    geom.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    lo, hi = v.min(axis=0), v.max(axis=0)
    geom.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(*map(float, lo)), Gf.Vec3f(*map(float, hi))]))
    if with_uv:
        normals = np.asarray(mesh.vertex_normals, dtype=np.float32)
        geom.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(normals))
        geom.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        uv = getattr(mesh.visual, "uv", None)
        if uv is not None and len(uv) == len(v):
            st = UsdGeom.PrimvarsAPI(geom).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray,
                                                         UsdGeom.Tokens.vertex)
            st.Set(Vt.Vec2fArray.FromNumpy(np.asarray(uv, dtype=np.float32)))
    if transform is not None:
        geom.AddTransformOp().Set(Gf.Matrix4d(*transform.T.ravel().tolist()))
    return geom


def set_transform(xformable, m: np.ndarray) -> None:
    """Author a rigid 4x4 transform as translate + orient ops (what physics engines expect on bodies)."""
    from scenegen.rotations import matrix_to_quat

    Gf = pxr()[0]
    xformable.AddTranslateOp().Set(Gf.Vec3d(*map(float, m[:3, 3])))
    qx, qy, qz, qw = matrix_to_quat(m[:3, :3])
    xformable.AddOrientOp(pxr()[3].XformOp.PrecisionDouble).Set(Gf.Quatd(qw, qx, qy, qz))


def color_material(stage, path: str, rgba):
    """A ``UsdPreviewSurface`` material of one colour (opacity from alpha)."""
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    mat = UsdShade.Material.Define(stage, path)
    shader = UsdShade.Shader.Define(stage, f"{path}/PreviewSurface")
    shader.CreateIdAttr("UsdPreviewSurface")
    shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set(Gf.Vec3f(*(float(c) for c in rgba[:3])))
    shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(0.5)
    shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(0.0)
    shader.CreateInput("opacity", Sdf.ValueTypeNames.Float).Set(float(rgba[3]) if len(rgba) > 3 else 1.0)
    mat.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    return mat


def define_camera(stage, path: str, cam: ExportCamera, transform: np.ndarray):
    """A ``UsdGeom.Camera`` with the camera's vertical field of view, aspect and clipping range.

    USD cameras look along -z with +y up, as :attr:`ExportCamera.pose`; the aperture is derived
    from a 24 mm focal length so that ``Gf.Camera``'s vertical field of view is the camera's.
    """
    import math

    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    camera = UsdGeom.Camera.Define(stage, path)
    focal = 24.0
    vertical = 2.0 * focal * math.tan(math.radians(cam.fovy_deg) / 2.0)
    camera.CreateProjectionAttr(UsdGeom.Tokens.perspective)
    camera.CreateFocalLengthAttr(focal)
    camera.CreateVerticalApertureAttr(vertical)
    camera.CreateHorizontalApertureAttr(vertical * cam.aspect)
    camera.CreateClippingRangeAttr(Gf.Vec2f(cam.near, cam.far))
    set_transform(camera, transform)
    prim = camera.GetPrim()
    prim.SetCustomDataByKey("scenegen:resolution", Gf.Vec2i(cam.width, cam.height))
    return camera
