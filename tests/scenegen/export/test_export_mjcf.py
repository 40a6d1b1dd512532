from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from scenegen.export import export
from scenegen.export._camera import camera_pose
from scenegen.export._common import collision_shapes, inertia_matrix
from scenegen.export._robot import parse_urdf
from scenegen.export._robot_mesh import visual_parts
from scenegen.sim.camera import camera_world, render_camera
from scenegen.sim.robots import get_robot
from scenegen.sim.world import World
from tests.helpers.export_scenes import (
    check_golden,
    golden_scene,
    quat_angle_deg,
    settled_scene,
    text_files,
    xml_children,
)
from tests.helpers.scene_assets import cache_dir
from tests.scenegen.export import robot_paths


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


@pytest.fixture(scope="module")
def settled_model(settled, tmp_path_factory):
    scene, lookup = settled
    out = tmp_path_factory.mktemp("mjcf") / "orig"
    path = export(scene, lookup, "mjcf", out)
    moved = out.parent / "moved"
    shutil.move(str(out), moved)  # self-contained: loads from anywhere
    return scene, lookup, moved / path.name


def test_mjcf_loads_with_mass_inertia_friction_and_geoms(settled_model):
    scene, lookup, path = settled_model
    assert not any(str(path.parent.parent) in p.read_text(errors="ignore") for p in text_files(path.parent))
    model = mujoco.MjModel.from_xml_path(str(path))
    for node, aid in scene.assets.items():
        a = lookup[aid]
        body = model.body(node)
        geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body.id]
        visual = [g for g in geoms if model.geom_group[g] == 1]
        colliders = [g for g in geoms if model.geom_group[g] == 3]
        assert len(visual) == 1 and model.geom_contype[visual[0]] == 0 and model.geom_conaffinity[visual[0]] == 0
        shapes = collision_shapes(a)
        assert len(colliders) == len(shapes) >= 1
        kinds = {"mesh": mujoco.mjtGeom.mjGEOM_MESH, "box": mujoco.mjtGeom.mjGEOM_BOX,
                 "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER, "sphere": mujoco.mjtGeom.mjGEOM_SPHERE}
        assert [model.geom_type[g] for g in colliders] == [kinds[s.kind] for s in shapes]
        assert np.allclose(model.geom_friction[colliders, 0], a.friction)
        if node == "table":
            assert body.jntnum[0] == 0  # static
            continue
        assert model.jnt_type[body.jntadr[0]] == mujoco.mjtJoint.mjJNT_FREE
        assert model.body_mass[body.id] == pytest.approx(a.mass, rel=1e-6)
        assert np.allclose(model.body_ipos[body.id], a.com, atol=1e-7)
        assert np.allclose(np.sort(model.body_inertia[body.id]), np.linalg.eigvalsh(inertia_matrix(a)), rtol=1e-5)
        assert np.allclose(model.body_pos[body.id], scene.settled[node].position, atol=1e-9)


def test_mjcf_agrees_with_pybullet_after_one_second(settled_model):
    """Cross-simulator agreement: objects settled in PyBullet stay put for 1 s of MuJoCo."""
    scene, _, path = settled_model
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    for _ in range(round(1.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    assert data.time == pytest.approx(1.0)
    for node, pose in scene.settled.items():
        if node == "table":
            continue
        b = model.body(node).id
        w, x, y, z = data.xquat[b]
        dist = float(np.linalg.norm(data.xpos[b] - np.asarray(pose.position)))
        angle = quat_angle_deg((x, y, z, w), pose.orientation)
        assert dist < 0.005, f"{node} moved {dist * 1000:.2f} mm in MuJoCo"
        assert angle < 2.0, f"{node} turned {angle:.2f} deg in MuJoCo"


@pytest.fixture(scope="module")
def robot_model(settled, tmp_path_factory):
    scene, lookup = settled
    path = export(scene, lookup, "mjcf", tmp_path_factory.mktemp("mjcf_robot"), with_robot=True)
    return path, mujoco.MjModel.from_xml_path(str(path))


def test_mjcf_with_robot_holds_home(robot_model):
    path, model = robot_model
    assert (path.parent / "robot" / "meshes").is_dir()
    assert model.nu == 9 and model.nkey == 1
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    start = data.qpos.copy()
    for _ in range(200):
        mujoco.mj_step(model, data)
    arm = [model.jnt_qposadr[model.joint(f"robot/panda_joint{i}").id] for i in range(1, 8)]
    assert np.allclose(start[arm], [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    assert np.abs(data.qpos[arm] - start[arm]).max() < 0.02


def _robot_geoms(model, group):
    return [g for g in range(model.ngeom) if model.body(model.geom_bodyid[g]).name.startswith("robot/")
            and model.geom_group[g] == group]


def test_mjcf_robot_draws_visual_meshes_with_materials(settled, robot_model):
    _, model = robot_model
    scene, _ = settled
    parts = visual_parts(parse_urdf(get_robot(scene.robot).urdf_path()))
    visual, hidden = _robot_geoms(model, 1), _robot_geoms(model, 3)
    assert len(visual) == len(parts) > 11 and hidden  # one geom per material part; colliders hidden in group 3
    assert not _robot_geoms(model, 0)
    for g, part in zip(visual, parts, strict=True):
        assert model.geom(g).name == f"robot/{part.name}"
        assert model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0
        assert model.body(model.geom_bodyid[g]).name == f"robot/{part.link}"
        assert np.allclose(model.mat_rgba[model.geom_matid[g]], part.rgba, atol=1e-6)
    assert len({tuple(model.mat_rgba[model.geom_matid[g]]) for g in visual}) > 3  # white, dark grey, accents
    for g in hidden:
        assert model.geom_contype[g] == 1 and model.geom_conaffinity[g] == 1


def test_mjcf_cameras_have_the_scene_intrinsics_and_pose(settled, robot_model):
    scene, lookup = settled
    _, model = robot_model
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    with World.build(scene, lookup) as world:
        for cam in scene.cameras:
            mc = model.camera(cam.name)
            assert mc.fovy[0] == pytest.approx(cam.fov_deg)
            assert list(model.cam_resolution[mc.id]) == [cam.width, cam.height]
            eye, target, up = camera_world(world, cam)
            assert np.allclose(data.cam_xpos[mc.id], eye, atol=1e-4)
            look = -data.cam_xmat[mc.id].reshape(3, 3)[:, 2]
            assert np.allclose(look, (target - eye) / np.linalg.norm(target - eye), atol=1e-4)
            assert np.dot(data.cam_xmat[mc.id].reshape(3, 3)[:, 1], up / np.linalg.norm(up)) > 0
    front = next(c for c in scene.cameras if c.link is None)
    assert np.allclose(model.cam_pos0[model.camera(front.name).id], camera_pose(front)[:3, 3])


def _masks_mujoco(model, name: str, size: int) -> dict[str, np.ndarray]:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    renderer = mujoco.Renderer(model, size, size)
    try:
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, name)
        seg = renderer.render()
    finally:
        renderer.close()
    geom = np.where(seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM, seg[..., 0], -1)
    body = np.where(geom >= 0, model.geom_bodyid[np.maximum(geom, 0)], -1)
    robot = [b for b in range(model.nbody) if model.body(b).name.startswith("robot/")]
    out = {model.body(b).name: body == b for b in range(1, model.nbody) if b not in robot}
    out["robot"] = np.isin(body, robot)
    return out


@pytest.mark.slow
def test_mjcf_camera_views_match_the_pybullet_preview(settled, robot_model):
    """mujoco.Renderer from the export's cameras sees what the pack's PyBullet preview sees.

    The preview is PyBullet's TinyRenderer of the settled world (``make_preview``); both are
    rendered at 512 px (PyBullet samples pixels half a pixel off MuJoCo, which costs small
    objects a few points of overlap at the preview's 256 px) and every object's mask must
    overlap (intersection over union) by at least 90 %.
    """
    scene, lookup = settled
    _, model = robot_model
    size, compared = 512, set()
    with World.build(scene, lookup) as world:
        for node, pose in scene.settled.items():
            world.set_pose(node, pose)
        for cam in scene.cameras:
            _, _, seg = render_camera(world, cam.name, size, size)
            pb = {n: seg == b for n, b in world.body_of.items()} | {"robot": seg == world.robot_id}
            mj = _masks_mujoco(model, cam.name, size)
            seen = [n for n in pb if pb[n].sum() >= 100]
            assert len(seen) >= 3, f"{cam.name} sees only {seen}"
            for n in seen:
                iou = (pb[n] & mj[n]).sum() / (pb[n] | mj[n]).sum()
                assert iou >= 0.9, f"{cam.name}: {n} masks overlap {iou:.3f}"
            compared |= {(cam.name, n) for n in seen}
    assert {"front", "wrist"} <= {c for c, _ in compared} and any(n == "robot" for _, n in compared)


@pytest.mark.slow
def test_mjcf_robot_follows_the_pybullet_path(settled, robot_model):
    """Same joint-position trajectory in PyBullet (the toolkit's world) and in MuJoCo: EE paths within 1 cm."""
    scene, lookup = settled
    _, model = robot_model
    ref = robot_paths.reference_path(scene, lookup)
    got = robot_paths.mujoco_path(model, scene)
    assert np.linalg.norm(ref - ref[0], axis=1).max() > 0.1  # the hand really moves
    assert robot_paths.path_gap(ref, got) < robot_paths.PATH_TOL


def _summary(path) -> dict:
    root = ET.parse(path).getroot()
    world = root.find("worldbody")
    bodies = {}
    for b in xml_children(world, "body"):
        bodies[b.get("name")] = {
            "free": b.find("freejoint") is not None,
            "inertial": b.find("inertial") is not None,
            "geoms": sorted(f"{g.get('class')}:{g.get('type')}" for g in xml_children(b, "geom")),
        }
    return {"model": root.get("model")[:6], "option": root.find("option").attrib,
            "meshes": sorted(m.get("file") for m in root.iter("mesh")),
            "textures": sorted(t.get("file", t.get("builtin")) for t in root.iter("texture")),
            "world_geoms": [g.get("name") for g in xml_children(world, "geom")], "bodies": bodies}


def test_mjcf_golden(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    path = export(scene, lookup, "mjcf", tmp_path_factory.mktemp("golden_mjcf"))
    check_golden("export_mjcf", _summary(path), lookup)
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.nbody == 1 + len(scene.assets)
