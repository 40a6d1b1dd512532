from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

from scenegen.errors import ExportError
from scenegen.export import export
from scenegen.export._common import collision_shapes, inertia_matrix, pose_matrix, visual_texture
from scenegen.export._robot import DRIVE_STIFFNESS, parse_urdf
from scenegen.export.usd import validate_usd
from scenegen.sim.camera import camera_world
from scenegen.sim.robots import get_robot
from scenegen.sim.world import World
from tests.helpers.export_scenes import check_golden, golden_scene, settled_scene, text_files
from tests.helpers.scene_assets import cache_dir
from tests.scenegen.export import robot_paths


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
    scene, lookup = settled
    stage = Usd.Stage.Open(str(stage_path))
    files = [prim.GetAttribute("inputs:file").Get() for prim in stage.Traverse()
             if prim.GetAttribute("inputs:file").IsValid()]
    textured = [n for n, aid in scene.assets.items() if visual_texture(lookup[aid])]
    assert len(textured) >= 2 and len(files) == len({scene.assets[n] for n in textured})
    for f in files:
        assert f.resolvedPath and (stage_path.parent / f.path).resolve().is_file()


@pytest.fixture(scope="module")
def robot_stage(settled, tmp_path_factory):
    scene, lookup = settled
    path = export(scene, lookup, "usd", tmp_path_factory.mktemp("usd_robot"), with_robot=True)
    return path, Usd.Stage.Open(str(path))


def _world(stage, path) -> np.ndarray:
    m = UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return np.array(m).T


def _frame(joint, side: int) -> np.ndarray:
    pos = joint.GetLocalPos0Attr().Get() if side == 0 else joint.GetLocalPos1Attr().Get()
    rot = joint.GetLocalRot0Attr().Get() if side == 0 else joint.GetLocalRot1Attr().Get()
    m = np.eye(4)
    m[:3, :3] = np.array(Gf.Matrix3d(Gf.Rotation(Gf.Quatd(rot)))).T
    m[:3, 3] = list(pos)
    return m


def _axis_motion(angle: float, prismatic: bool) -> np.ndarray:
    m = np.eye(4)
    if prismatic:
        m[0, 3] = angle
    else:
        c, s = np.cos(angle), np.sin(angle)
        m[1:3, 1:3] = [[c, -s], [s, c]]
    return m


def test_usd_robot_is_a_valid_articulation(settled, robot_stage):
    """The robot's UsdPhysics structure: bodies with URDF masses, jointed with limits and drives, at home."""
    scene, _ = settled
    path, stage = robot_stage
    assert validate_usd(path) == []
    model = parse_urdf(get_robot(scene.robot).urdf_path())
    home = robot_paths.targets(scene, 0.0)
    robot = stage.GetPrimAtPath("/World/Robot")
    roots = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.ArticulationRootAPI)]
    assert roots == [robot] and not robot.HasAPI(UsdPhysics.RigidBodyAPI)
    assert np.allclose(_world(stage, "/World/Robot"), pose_matrix(scene.robot_base))
    bodies = {p.GetName(): p for p in robot.GetChildren() if p.HasAPI(UsdPhysics.RigidBodyAPI)}
    massive = {n for n, lk in model.links.items() if lk.mass > 0}
    assert set(bodies) == massive  # massless frame links (flange, grasp point) are Xforms in their body
    for name, prim in bodies.items():
        link = model.links[name]
        mass = UsdPhysics.MassAPI(prim)
        assert mass.GetMassAttr().Get() == pytest.approx(link.mass)
        assert np.allclose(mass.GetCenterOfMassAttr().Get(), link.inertial[:3, 3], atol=1e-6)
        assert sorted(mass.GetDiagonalInertiaAttr().Get()) == pytest.approx(sorted(np.linalg.eigvalsh(link.inertia)))
        colliders = [c for c in Usd.PrimRange(prim) if c.HasAPI(UsdPhysics.CollisionAPI)]
        assert len(colliders) == len(link.collisions)
        visuals = [c for c in Usd.PrimRange(prim) if c.IsA(UsdGeom.Mesh) and not c.HasAPI(UsdPhysics.CollisionAPI)]
        assert bool(visuals) == bool(link.visuals)
        for v in visuals:
            material, _ = UsdShade.MaterialBindingAPI(v).ComputeBoundMaterial()
            assert material
    assert stage.GetPrimAtPath("/World/Robot/panda_hand/panda_grasptarget").IsA(UsdGeom.Xform)
    joints = {p.GetName(): UsdPhysics.Joint(p) for p in stage.GetPrimAtPath("/World/Robot/joints").GetChildren()}
    world_joint = joints.pop("fixed_to_world")
    assert not world_joint.GetBody0Rel().GetTargets()
    assert world_joint.GetBody1Rel().GetTargets() == ["/World/Robot/panda_link0"]
    assert np.allclose(_frame(world_joint, 0), _world(stage, "/World/Robot/panda_link0"), atol=1e-6)
    expected = {j.name: j for j in model.joints if j.child in bodies}
    assert set(joints) == set(expected)
    for name, joint in joints.items():
        j = expected[name]
        prim = joint.GetPrim()
        kinds = {"revolute": UsdPhysics.RevoluteJoint, "prismatic": UsdPhysics.PrismaticJoint,
                 "fixed": UsdPhysics.FixedJoint}
        assert prim.IsA(kinds[j.type])
        b0, b1 = (str(r.GetTargets()[0]) for r in (joint.GetBody0Rel(), joint.GetBody1Rel()))
        f0 = _world(stage, b0) @ _frame(joint, 0)
        f1 = _world(stage, b1) @ _frame(joint, 1)
        if j.type == "fixed":
            assert np.allclose(f0, f1, atol=1e-6), name
            continue
        unit = 1.0 if j.type == "prismatic" else np.pi / 180
        typed = kinds[j.type](prim)
        assert typed.GetAxisAttr().Get() == "X"
        assert typed.GetLowerLimitAttr().Get() * unit == pytest.approx(j.lower, abs=1e-6)
        assert typed.GetUpperLimitAttr().Get() * unit == pytest.approx(j.upper, abs=1e-6)
        drive = UsdPhysics.DriveAPI(prim, "linear" if j.type == "prismatic" else "angular")
        assert drive.GetTargetPositionAttr().Get() * unit == pytest.approx(home[name], abs=1e-6)
        assert drive.GetStiffnessAttr().Get() / unit == pytest.approx(DRIVE_STIFFNESS[j.type])
        assert drive.GetMaxForceAttr().Get() == pytest.approx(j.effort)
        # the bodies sit at home: frame 1 is frame 0 moved by the home position along X
        assert np.allclose(f0 @ _axis_motion(home[name], j.type == "prismatic"), f1, atol=1e-5), name


def test_usd_robot_kinematics_follow_the_pybullet_trajectory(settled, robot_stage):
    """Same joint-position trajectory: the EE path composed from the USD joints equals PyBullet's kinematics."""
    import pybullet as p

    scene, lookup = settled
    _, stage = robot_stage
    joints = {p_.GetName(): UsdPhysics.Joint(p_) for p_ in stage.GetPrimAtPath("/World/Robot/joints").GetChildren()}
    ee = _world(stage, "/World/Robot/panda_hand/panda_grasptarget")
    hand = _world(stage, "/World/Robot/panda_hand")
    ee_in_hand = np.linalg.inv(hand) @ ee
    parent_of = {}
    for name, j in joints.items():
        if j.GetBody0Rel().GetTargets():
            parent_of[str(j.GetBody1Rel().GetTargets()[0])] = (name, str(j.GetBody0Rel().GetTargets()[0]))

    def body_pose(path: str, q: dict[str, float]) -> np.ndarray:
        if path not in parent_of:
            return _world(stage, path)
        name, parent = parent_of[path]
        j = joints[name]
        move = np.eye(4)
        if j.GetPrim().IsA(UsdPhysics.RevoluteJoint) or j.GetPrim().IsA(UsdPhysics.PrismaticJoint):
            move = _axis_motion(q[name], j.GetPrim().IsA(UsdPhysics.PrismaticJoint))
        return body_pose(parent, q) @ _frame(j, 0) @ move @ np.linalg.inv(_frame(j, 1))

    with World.build(scene, lookup) as world:
        c, uid = world.client, world.robot_id
        got, want = [], []
        for t in robot_paths.sample_times():
            q = robot_paths.targets(scene, t)
            for name, value in q.items():
                p.resetJointState(uid, world.joint_index[name], value, physicsClientId=c)
            want.append(world.link_pose("panda_grasptarget").position)
            got.append((body_pose("/World/Robot/panda_hand", q) @ ee_in_hand)[:3, 3])
    want, got = np.asarray(want), np.asarray(got)
    assert np.linalg.norm(want - want[0], axis=1).max() > 0.1
    assert robot_paths.path_gap(want, got) < 1e-4


def test_usd_cameras_have_the_scene_view(settled, robot_stage):
    scene, lookup = settled
    _, stage = robot_stage
    paths = {"front": "/World/Cameras/front", "wrist": "/World/Robot/panda_hand/wrist"}
    with World.build(scene, lookup) as world:
        for cam in scene.cameras:
            prim = stage.GetPrimAtPath(paths[cam.name])
            assert prim.IsA(UsdGeom.Camera)
            gf = UsdGeom.Camera(prim).GetCamera(Usd.TimeCode.Default())
            assert gf.GetFieldOfView(Gf.Camera.FOVVertical) == pytest.approx(cam.fov_deg, rel=1e-5)
            assert gf.aspectRatio == pytest.approx(cam.width / cam.height)
            assert (gf.clippingRange.min, gf.clippingRange.max) == pytest.approx((cam.near, cam.far))
            m = _world(stage, paths[cam.name])
            eye, target, up = camera_world(world, cam)
            assert np.allclose(m[:3, 3], eye, atol=1e-4)
            assert np.allclose(-m[:3, 2], (target - eye) / np.linalg.norm(target - eye), atol=1e-4)
            assert np.dot(m[:3, 1], up) > 0


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


def test_usd_validation_catches_a_broken_robot_joint(robot_stage, tmp_path):
    """The validators are real: a joint pointing at a missing body is reported."""
    path, _ = robot_stage
    shutil.copytree(path.parent, tmp_path / "copy")
    layer = Usd.Stage.Open(str(tmp_path / "copy" / "robot" / "robot.usdc"))
    UsdPhysics.Joint(layer.GetPrimAtPath("/Robot/joints/panda_joint3")).GetBody1Rel().SetTargets(["/Robot/missing"])
    layer.GetRootLayer().Save()
    errors = validate_usd(tmp_path / "copy" / path.name)
    assert any("panda_joint3" in e for e in errors)
