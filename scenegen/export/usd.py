"""USD export (``usd-core``): a stage per scene with UsdPhysics rigid bodies and colliders.

Stage layout (``scene.usda``; metersPerUnit 1, upAxis Z, default prim ``/World``)::

    /World/PhysicsScene                     UsdPhysics.Scene (gravity -z, 9.81)
    /World/Ground                           a large static box collider, top face at z = 0
    /World/<node>                           Xform at the pose; RigidBodyAPI + MassAPI (movable objects)
    /World/<node>/visual                    UsdGeom.Mesh (points, faces, normals, st) bound to a preview material
    /World/<node>/collision/part_000 ...    UsdGeom.Mesh, purpose guide, CollisionAPI + MeshCollisionAPI (convexHull)
    /World/Looks/<asset>_render|_physics    UsdPreviewSurface material; PhysicsMaterialAPI (friction, restitution)
    /World/Cameras/<name>                   UsdGeom.Camera per fixed scene camera (pose, field of view, clipping)
    /World/Robot                            (with_robot) the robot articulation, referenced from robot/robot.usdc
                                            (see :mod:`scenegen.export.usd_robot`)

The table carries colliders but no RigidBodyAPI, which makes it static in UsdPhysics. Mass
properties: ``mass``, ``centerOfMass``, ``diagonalInertia`` and ``principalAxes`` from the
eigendecomposition of the asset's inertia tensor. Physics materials are bound to the colliders
with the ``physics`` material purpose. Textures are referenced by relative asset paths.

With the robot, ``/World/Robot`` is a UsdPhysics articulation: rigid bodies with mass and
inertia per link, revolute / prismatic joints with limits and position drives, an articulation
root, a fixed joint to the world, the links at the home pose and the cameras riding on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.export._camera import export_cameras
from scenegen.export._common import (
    GROUND_BELOW_TABLE,
    CollisionShape,
    ExportObject,
    collision_shapes,
    copy_assets,
    prepare_out_dir,
    principal_inertia,
    safe_name,
    scene_objects,
    visual_texture,
)
from scenegen.export._robot import robot_info
from scenegen.export._usd_geom import define_camera, define_mesh, load_mesh, pxr
from scenegen.export.usd_robot import write_robot_layer
from scenegen.rotations import matrix_to_quat, quat_wxyz
from scenegen.scene import Scene


def _render_material(stage, looks: str, obj: ExportObject):
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    a = obj.asset
    mat = UsdShade.Material.Define(stage, f"{looks}/{safe_name('a_' + a.id)}_render")
    shader = UsdShade.Shader.Define(stage, f"{mat.GetPath()}/PreviewSurface")
    shader.CreateIdAttr("UsdPreviewSurface")
    shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(0.6)
    shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(0.0)
    opacity = float(a.rgba[3]) if len(a.rgba) > 3 else 1.0
    shader.CreateInput("opacity", Sdf.ValueTypeNames.Float).Set(opacity)
    diffuse = shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f)
    tex = visual_texture(a)
    if tex:
        reader = UsdShade.Shader.Define(stage, f"{mat.GetPath()}/stReader")
        reader.CreateIdAttr("UsdPrimvarReader_float2")
        st_name = mat.CreateInput("frame:stPrimvarName", Sdf.ValueTypeNames.String)
        st_name.Set("st")
        reader.CreateInput("varname", Sdf.ValueTypeNames.String).ConnectToSource(st_name)
        texture = UsdShade.Shader.Define(stage, f"{mat.GetPath()}/diffuseTexture")
        texture.CreateIdAttr("UsdUVTexture")
        texture.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(f"./{obj.asset_rel}/{tex}")
        texture.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(
            reader.ConnectableAPI(), "result")
        texture.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set("repeat")
        texture.CreateInput("wrapT", Sdf.ValueTypeNames.Token).Set("repeat")
        texture.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("sRGB")
        texture.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
        diffuse.ConnectToSource(texture.ConnectableAPI(), "rgb")
    else:
        diffuse.Set(Gf.Vec3f(*(float(c) for c in a.rgba[:3])))
    mat.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    return mat


def _physics_material(stage, looks: str, asset: Asset):
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    mat = UsdShade.Material.Define(stage, f"{looks}/{safe_name('a_' + asset.id)}_physics")
    api = UsdPhysics.MaterialAPI.Apply(mat.GetPrim())
    api.CreateStaticFrictionAttr(float(asset.friction))
    api.CreateDynamicFrictionAttr(float(asset.friction))
    api.CreateRestitutionAttr(float(asset.restitution))
    return mat


def _object(stage, obj: ExportObject, materials: dict[str, tuple]) -> None:
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    a = obj.asset
    xf = UsdGeom.Xform.Define(stage, f"/World/{obj.node}")
    xf.AddTranslateOp().Set(Gf.Vec3d(*map(float, obj.pose.position)))
    w, x, y, z = quat_wxyz(obj.pose.orientation)
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, x, y, z))
    prim = xf.GetPrim()
    if not obj.static:
        UsdPhysics.RigidBodyAPI.Apply(prim)
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(float(a.mass))
        mass.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, a.com)))
        moments, axes = principal_inertia(a)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, moments)))
        qx, qy, qz, qw = matrix_to_quat(axes)
        mass.CreatePrincipalAxesAttr(Gf.Quatf(qw, qx, qy, qz))
    render, physics = materials[a.id]
    visual = define_mesh(stage, f"{xf.GetPath()}/visual", load_mesh(a.file(a.visual)), with_uv=True)
    UsdShade.MaterialBindingAPI.Apply(visual.GetPrim()).Bind(render)
    UsdGeom.Scope.Define(stage, f"{xf.GetPath()}/collision")
    for k, shape in enumerate(collision_shapes(a)):
        _collider(stage, f"{xf.GetPath()}/collision/part_{k:03d}", obj, shape, physics)


def _collider(stage, path: str, obj: ExportObject, shape: CollisionShape, physics) -> None:
    """A collider prim: a convex mesh (convexHull approximation) or the URDF's native primitive."""
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    if shape.kind == "mesh":
        scale = np.diag([*shape.size, 1.0])
        geom = define_mesh(stage, path, load_mesh(obj.asset.file(shape.mesh)), with_uv=False,
                            transform=None if np.allclose(shape.origin @ scale, np.eye(4)) else shape.origin @ scale)
        UsdPhysics.MeshCollisionAPI.Apply(geom.GetPrim()).CreateApproximationAttr(UsdPhysics.Tokens.convexHull)
    else:
        if shape.kind == "box":
            geom = UsdGeom.Cube.Define(stage, path)
            geom.CreateSizeAttr(1.0)  # unit cube scaled to the box extents below
            half = [0.5, 0.5, 0.5]
        elif shape.kind == "cylinder":
            geom = UsdGeom.Cylinder.Define(stage, path)
            geom.CreateRadiusAttr(shape.size[0])
            geom.CreateHeightAttr(shape.size[1])
            geom.CreateAxisAttr(UsdGeom.Tokens.z)
            half = [shape.size[0], shape.size[0], shape.size[1] / 2]
        else:
            geom = UsdGeom.Sphere.Define(stage, path)
            geom.CreateRadiusAttr(shape.size[0])
            half = [shape.size[0]] * 3
        geom.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(*(-v for v in half)), Gf.Vec3f(*half)]))
        geom.AddTranslateOp().Set(Gf.Vec3d(*map(float, shape.origin[:3, 3])))
        qx, qy, qz, qw = matrix_to_quat(shape.origin[:3, :3])
        geom.AddOrientOp().Set(Gf.Quatf(qw, qx, qy, qz))
        if shape.kind == "box":
            geom.AddScaleOp().Set(Gf.Vec3f(*map(float, shape.size)))
    geom.CreatePurposeAttr(UsdGeom.Tokens.guide)
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    UsdShade.MaterialBindingAPI.Apply(geom.GetPrim()).Bind(
        physics, UsdShade.Tokens.weakerThanDescendants, "physics")


def _ground(stage, z: float) -> None:
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    ground = UsdGeom.Cube.Define(stage, "/World/Ground")
    ground.CreateSizeAttr(1.0)
    ground.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, z - 0.05))
    ground.AddScaleOp().Set(Gf.Vec3f(20.0, 20.0, 0.1))
    ground.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(-0.5, -0.5, -0.5), Gf.Vec3f(0.5, 0.5, 0.5)]))
    ground.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(0.75, 0.75, 0.75)]))
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())


def _cameras(stage, scene: Scene) -> None:
    """The scene's fixed cameras under ``/World/Cameras`` (those riding on the robot live in its layer)."""
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    cams = export_cameras(scene, with_robot=False)
    if cams:
        UsdGeom.Scope.Define(stage, "/World/Cameras")
    for cam in cams:
        define_camera(stage, f"/World/Cameras/{safe_name(cam.name)}", cam, cam.pose)


def export_usd(scene: Scene, assets: Mapping[str, Asset], out_dir: str | Path, with_robot: bool = False) -> Path:
    """Export a scene as a USD stage ``scene.usda`` with UsdPhysics bodies, colliders and materials.

    Args:
        scene: the scene (settled poses used when present).
        assets: asset id -> Asset with its folder on disk.
        out_dir: folder to write.
        with_robot: add the robot's visual meshes at the home pose (static geometry).

    Returns:
        Path of ``scene.usda``.

    """
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    out = prepare_out_dir(out_dir)
    objects = scene_objects(scene, assets)
    copy_assets(objects, out)
    path = out / "scene.usda"
    if path.exists():
        path.unlink()
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    stage.SetMetadata("comment", f"scenegen scene {scene.id}: {scene.graph.instruction}")
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    physics_scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    physics_scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    physics_scene.CreateGravityMagnitudeAttr(9.81)
    _ground(stage, scene.table_height - GROUND_BELOW_TABLE)
    UsdGeom.Scope.Define(stage, "/World/Looks")
    materials: dict[str, tuple] = {}
    for obj in objects:
        if obj.asset.id not in materials:
            materials[obj.asset.id] = (_render_material(stage, "/World/Looks", obj),
                                       _physics_material(stage, "/World/Looks", obj.asset))
        _object(stage, obj, materials)
    _cameras(stage, scene)
    if with_robot:
        layer = write_robot_layer(out, robot_info(scene), [c for c in export_cameras(scene, True) if c.link])
        stage.DefinePrim("/World/Robot", "Xform").GetReferences().AddReference(f"./{layer}")
    stage.GetRootLayer().Save()
    return path


def validate_usd(path: str | Path) -> list[str]:
    """Run every validator registered in usd-core (``pxr.UsdValidation``) on a stage.

    usd-core releases without ``UsdValidation`` (before 24.11) use ``UsdUtils.ComplianceChecker``.

    Returns:
        The error messages (warnings are left out); an empty list means the stage passed.

    """
    Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt = pxr()
    try:
        from pxr import UsdValidation
    except ImportError:
        from pxr import UsdUtils

        checker = UsdUtils.ComplianceChecker()
        checker.CheckCompliance(str(path))
        return [*checker.GetErrors(), *checker.GetFailedChecks()]
    stage = Usd.Stage.Open(str(path))
    if stage is None:
        return [f"usd-core cannot open {path}"]
    validators = UsdValidation.ValidationRegistry().GetOrLoadAllValidators()
    errors = UsdValidation.ValidationContext(validators).Validate(stage)
    return [f"{e.GetName()}: {e.GetMessage()}" for e in errors
            if e.GetType() == UsdValidation.ValidationErrorType.Error]
