from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

from scenegen.errors import ExportError
from scenegen.export import export
from scenegen.export._common import collision_shapes, inertia_matrix
from scenegen.export.usd import validate_usd
from tests.helpers.export_scenes import check_golden, golden_scene, settled_scene, text_files
from tests.helpers.scene_assets import cache_dir


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


@pytest.fixture(scope="module")
def stage_path(settled, tmp_path_factory):
    scene, lookup = settled
    out = tmp_path_factory.mktemp("usd") / "orig"
    path = export(scene, lookup, "usd", out)
    moved = out.parent / "moved"
    shutil.move(str(out), moved)
    assert not any(str(out) in f.read_text(errors="ignore") for f in text_files(moved))
    return moved / path.name


def test_usd_passes_usd_core_validation(stage_path):
    assert validate_usd(stage_path) == []


def test_usd_stage_units_bodies_mass_and_colliders(settled, stage_path):
    scene, lookup = settled
    stage = Usd.Stage.Open(str(stage_path))
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0 and UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert any(prim.IsA(UsdPhysics.Scene) for prim in stage.Traverse())
    for node, aid in scene.assets.items():
        a = lookup[aid]
        prim = stage.GetPrimAtPath(f"/World/{node}")
        xf = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        assert np.allclose(np.array(xf.ExtractTranslation()), scene.settled[node].position, atol=1e-6)
        assert prim.HasAPI(UsdPhysics.RigidBodyAPI) == (node != "table")
        if node != "table":
            mass = UsdPhysics.MassAPI(prim)
            assert mass.GetMassAttr().Get() == pytest.approx(a.mass, rel=1e-6)
            assert np.allclose(mass.GetCenterOfMassAttr().Get(), a.com, atol=1e-6)
            d = np.array(mass.GetDiagonalInertiaAttr().Get())
            r = np.array(Gf.Matrix3d(Gf.Rotation(mass.GetPrincipalAxesAttr().Get())).GetTranspose())
            assert np.allclose(r @ np.diag(d) @ r.T, inertia_matrix(a), rtol=1e-4, atol=1e-9)
        visual = UsdGeom.Mesh(stage.GetPrimAtPath(f"/World/{node}/visual"))
        assert len(visual.GetFaceVertexCountsAttr().Get()) > 0
        material, _ = UsdShade.MaterialBindingAPI(visual.GetPrim()).ComputeBoundMaterial()
        assert material
        colliders = [c for c in stage.GetPrimAtPath(f"/World/{node}/collision").GetChildren()]
        shapes = collision_shapes(a)
        assert len(colliders) == len(shapes)
        for c, shape in zip(colliders, shapes, strict=True):
            assert c.HasAPI(UsdPhysics.CollisionAPI)
            assert UsdGeom.Imageable(c).GetPurposeAttr().Get() == UsdGeom.Tokens.guide
            if shape.kind == "mesh":
                assert UsdPhysics.MeshCollisionAPI(c).GetApproximationAttr().Get() == UsdPhysics.Tokens.convexHull
            phys, _ = UsdShade.MaterialBindingAPI(c).ComputeBoundMaterial("physics")
            api = UsdPhysics.MaterialAPI(phys.GetPrim())
            assert api.GetStaticFrictionAttr().Get() == pytest.approx(a.friction)
            assert api.GetRestitutionAttr().Get() == pytest.approx(a.restitution)


def test_usd_textures_resolve(settled, stage_path):
    stage = Usd.Stage.Open(str(stage_path))
    files = [prim.GetAttribute("inputs:file").Get() for prim in stage.Traverse()
             if prim.GetAttribute("inputs:file").IsValid()]
    assert files, "the table asset is textured, so its material reads a texture"
    for f in files:
        assert f.resolvedPath and (stage_path.parent / f.path).resolve().is_file()


def test_usd_with_robot_is_valid(settled, tmp_path):
    scene, lookup = settled
    path = export(scene, lookup, "usd", tmp_path, with_robot=True)
    assert validate_usd(path) == []
    stage = Usd.Stage.Open(str(path))
    robot = stage.GetPrimAtPath("/World/Robot")
    meshes = [c for c in robot.GetChildren() if c.IsA(UsdGeom.Mesh)]
    assert len(meshes) == 11 and not robot.HasAPI(UsdPhysics.RigidBodyAPI)


def test_usd_without_usd_core_says_which_extra(settled, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pxr", None)
    scene, lookup = settled
    with pytest.raises(ExportError, match=r"pip install scenegen\[usd\]"):
        export(scene, lookup, "usd", tmp_path)


def test_usd_golden(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    path = export(scene, lookup, "usd", tmp_path_factory.mktemp("golden_usd"))
    stage = Usd.Stage.Open(str(path))
    summary = {str(prim.GetPath()): {"type": str(prim.GetTypeName()),
                                     "apis": sorted(str(s) for s in prim.GetAppliedSchemas()
                                                    if s.startswith(("Physics", "MaterialBinding")))}
               for prim in stage.Traverse()}
    check_golden("export_usd", summary, lookup)
