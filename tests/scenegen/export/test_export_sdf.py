from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pybullet as p
import pytest

from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.export import export
from scenegen.export._camera import x_forward
from scenegen.export._common import collision_shapes, pose_matrix, visual_texture
from scenegen.export._robot import parse_urdf
from scenegen.export.sdf import WORLD_JOINT, check_sdf, load_sdf, sdformat_library
from scenegen.geometry import link_pose
from scenegen.rotations import rpy_to_matrix
from scenegen.sim.camera import camera_world
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
def robot_sdf(settled, tmp_path_factory):
    scene, lookup = settled
    return export(scene, lookup, "sdf", tmp_path_factory.mktemp("sdf_robot"), with_robot=True)


@pytest.fixture
def client():
    c = p.connect(p.DIRECT)
    yield c
    p.disconnect(c)


def test_sdf_is_sdformat_17_with_relative_uris(settled, tmp_path):
    scene, lookup = settled
    path = export(scene, lookup, "sdf", tmp_path / "o")
    root = ET.parse(path).getroot()
    assert root.tag == "sdf" and float(root.get("version")) >= 1.7
    world = root.find("world")
    models = {m.get("name"): m for m in xml_children(world, "model")}
    fixed_cams = {f"camera_{c.name}" for c in scene.cameras if c.link is None}
    assert fixed_cams and set(models) == set(scene.assets) | {"ground_plane"} | fixed_cams
    for uri in root.iter("uri"):
        assert not uri.text.startswith("/") and (path.parent / uri.text).is_file()
    textured = 0
    for node, aid in scene.assets.items():
        a = lookup[aid]
        link = models[node].find("link")
        assert models[node].find("static").text == ("1" if node == "table" else "0")
        assert float(link.find("inertial/mass").text) == pytest.approx(a.mass, rel=1e-8)
        cols = xml_children(link, "collision")
        assert len(cols) == len(collision_shapes(a))
        for c in cols:  # friction in each form Gazebo reads: ODE/DART, torsional, Bullet with rolling
            fr = c.find("surface/friction")
            assert float(fr.findtext("ode/mu")) == float(fr.findtext("ode/mu2")) == pytest.approx(a.friction)
            assert float(fr.findtext("bullet/friction")) == pytest.approx(a.friction)
            assert float(fr.findtext("bullet/rolling_friction")) == pytest.approx(ROLLING_FRICTION)
            assert float(fr.findtext("torsional/coefficient")) == pytest.approx(SPINNING_FRICTION)
        albedo = link.findtext("visual/material/pbr/metal/albedo_map")
        if visual_texture(a):
            textured += 1
            assert albedo == f"assets/{aid}/{visual_texture(a)}" and (path.parent / albedo).is_file()
        else:
            assert albedo is None
    assert textured >= 2  # the table and the cereal box carry textures


def test_sdf_cameras_are_sensors_with_the_scene_view(settled, robot_sdf):
    scene, lookup = settled
    root = ET.parse(robot_sdf).getroot()
    sensors = {s.get("name"): s for s in root.iter("sensor")}
    assert set(sensors) == {c.name for c in scene.cameras}
    robot = next(m for m in root.iter("model") if m.get("name") == "robot")
    with World.build(scene, lookup) as world:
        for cam in scene.cameras:
            s = sensors[cam.name]
            assert s.get("type") == "camera"
            c = s.find("camera")
            assert (int(c.findtext("image/width")), int(c.findtext("image/height"))) == (cam.width, cam.height)
            hfov = 2 * np.arctan(np.tan(np.radians(cam.fov_deg) / 2) * cam.width / cam.height)
            assert float(c.findtext("horizontal_fov")) == pytest.approx(hfov)
            assert float(c.findtext("clip/near")) == pytest.approx(cam.near)
            vals = [float(v) for v in s.findtext("pose").split()]
            m = np.eye(4)
            m[:3, :3], m[:3, 3] = rpy_to_matrix(tuple(vals[3:])), vals[:3]
            if cam.link:  # in the link's frame; the world's robot is at home
                link = next(lk for lk in robot.findall("link") if lk.get("name") == cam.link)
                assert s in list(link)
                m = pose_matrix(world.link_pose(cam.link)) @ m
            eye, target, _ = camera_world(world, cam)
            assert np.allclose(m[:3, 3], eye, atol=1e-4)  # SDF cameras look along +x
            assert np.allclose(m[:3, 0], (target - eye) / np.linalg.norm(target - eye), atol=1e-4)
    assert np.allclose(x_forward(np.eye(4))[:3, 0], [0, 0, -1])


def test_sdf_loads_in_pybullet_with_masses_poses_friction(settled, tmp_path, client):
    scene, lookup = settled
    out = tmp_path / "orig"
    path = export(scene, lookup, "sdf", out)
    shutil.move(str(out), tmp_path / "moved")
    assert not any(str(out) in f.read_text(errors="ignore") for f in text_files(tmp_path / "moved"))
    bodies = load_sdf(tmp_path / "moved" / path.name, client)
    assert set(bodies) == set(scene.assets) | {"ground_plane"} | {f"camera_{c.name}" for c in scene.cameras
                                                                  if c.link is None}
    for node, aid in scene.assets.items():
        a, uid = lookup[aid], bodies[node]
        info = p.getDynamicsInfo(uid, -1, physicsClientId=client)
        assert info[0] == pytest.approx(0.0 if node == "table" else a.mass, rel=1e-6)
        assert info[1] == pytest.approx(a.friction)
        assert info[6] == pytest.approx(ROLLING_FRICTION) and info[7] == pytest.approx(SPINNING_FRICTION)
        assert p.getNumJoints(uid, physicsClientId=client) == 0
        got, want = link_pose(client, uid), scene.settled[node]
        assert np.allclose(got.position, want.position, atol=1e-6)
        assert quat_angle_deg(got.orientation, want.orientation) < 1e-3
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    for _ in range(120):
        p.stepSimulation(physicsClientId=client)
    for node in scene.assets:
        moved = np.subtract(link_pose(client, bodies[node]).position, scene.settled[node].position)
        assert np.linalg.norm(moved) < 0.005, node


def test_sdf_robot_matches_urdf_kinematics(settled, robot_sdf, client):
    scene, lookup = settled
    path = robot_sdf
    bodies = load_sdf(path, client)
    robot = bodies["robot"]
    ref = p.loadURDF(str(path.parent / "robot" / "panda.urdf"), scene.robot_base.position,
                     scene.robot_base.orientation, useFixedBase=True, physicsClientId=client)

    def links(body):
        return {p.getJointInfo(body, j, physicsClientId=client)[12].decode(): j
                for j in range(p.getNumJoints(body, physicsClientId=client))}

    sdf_links, ref_links = links(robot), links(ref)
    assert set(sdf_links) == set(ref_links) and len(ref_links) == 12
    for name, j in ref_links.items():  # the SDF robot came home via load_sdf; put the reference there too
        q = p.getJointState(robot, sdf_links[name], physicsClientId=client)[0]
        p.resetJointState(ref, j, q, physicsClientId=client)
    assert p.getJointState(robot, sdf_links["panda_link4"], physicsClientId=client)[0] == pytest.approx(-2.356)
    for name, j in ref_links.items():
        a = p.getLinkState(robot, sdf_links[name], computeForwardKinematics=True, physicsClientId=client)
        b = p.getLinkState(ref, j, computeForwardKinematics=True, physicsClientId=client)
        assert np.allclose(a[4], b[4], atol=1e-5), name
        assert quat_angle_deg(a[5], b[5]) < 1e-2, name


def test_sdf_robot_is_fixed_to_the_world_at_home(settled, robot_sdf, client):
    scene, _ = settled
    root = ET.parse(robot_sdf).getroot()
    robot = next(m for m in root.iter("model") if m.get("name") == "robot")
    model = parse_urdf(robot_sdf.parent / "robot" / "panda.urdf")
    fixed = [j for j in robot.findall("joint") if j.get("name") == WORLD_JOINT]
    assert len(fixed) == 1 and fixed[0].get("type") == "fixed"
    assert (fixed[0].findtext("parent"), fixed[0].findtext("child")) == ("world", model.root)
    home = dict(robot_paths.targets(scene, 0.0))
    initial = {j.get("name"): float(j.findtext("axis/initial_position")) for j in robot.findall("joint")
               if j.find("axis/initial_position") is not None}
    assert initial == pytest.approx({j.name: home[j.name] for j in model.joints if j.moving})
    controllers = {pl.findtext("joint_name"): pl for pl in robot.findall("plugin")}
    assert set(controllers) == set(initial)
    for name, pl in controllers.items():  # Gazebo Sim's joint controllers start and hold the home pose
        assert pl.get("name") == "gz::sim::systems::JointPositionController"
        assert float(pl.findtext("initial_position")) == pytest.approx(initial[name])
        assert float(pl.findtext("p_gain")) > 0 and float(pl.findtext("d_gain")) > 0
    bodies = load_sdf(robot_sdf, client)
    uid = bodies["robot"]
    start = p.getBasePositionAndOrientation(uid, physicsClientId=client)
    p.applyExternalForce(uid, -1, [0, 0, -2000.0], [0, 0, 0], p.LINK_FRAME, physicsClientId=client)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    for _ in range(240):
        p.stepSimulation(physicsClientId=client)
    end = p.getBasePositionAndOrientation(uid, physicsClientId=client)
    assert np.allclose(start[0], end[0], atol=1e-9) and np.allclose(start[1], end[1], atol=1e-9)


@pytest.mark.slow
@pytest.mark.skipif(sdformat_library() is None, reason="libsdformat is not installed (Debian: libsdformat12-12)")
def test_sdf_passes_libsdformat_check(settled, robot_sdf, tmp_path):
    """libsdformat's own checker (what ``gz sdf -k`` runs) accepts the export and rejects a broken copy."""
    scene, lookup = settled
    assert check_sdf(robot_sdf) == []
    assert check_sdf(export(scene, lookup, "sdf", tmp_path / "plain")) == []
    broken = robot_sdf.parent / "broken.sdf"
    broken.write_text(robot_sdf.read_text().replace("<child>panda_link1</child>", "<child>no_link</child>"))
    errors = check_sdf(broken)
    broken.unlink()
    assert errors and any("no_link" in e for e in errors)


def test_sdf_robot_follows_the_pybullet_path(settled, robot_sdf, client):
    """Same joint-position trajectory in the toolkit's PyBullet world and in the SDF robot: EE paths within 1 cm."""
    scene, lookup = settled
    ref = robot_paths.reference_path(scene, lookup)
    uid = load_sdf(robot_sdf, client)["robot"]
    got = robot_paths.pybullet_path(client, uid, scene, "panda_grasptarget")
    assert np.linalg.norm(ref - ref[0], axis=1).max() > 0.1
    assert robot_paths.path_gap(ref, got) < robot_paths.PATH_TOL


def test_sdf_golden(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    path = export(scene, lookup, "sdf", tmp_path_factory.mktemp("golden_sdf"))
    root = ET.parse(path).getroot()
    summary = {"version": root.get("version"), "models": {}}
    for m in root.iter("model"):
        link = m.find("link")
        summary["models"][m.get("name")] = {
            "static": m.findtext("static"),
            "collisions": [next(iter(c.find("geometry"))).tag for c in xml_children(link, "collision")],
            "visual_uris": [v.findtext("geometry/mesh/uri") for v in xml_children(link, "visual")
                            if v.find("geometry/mesh") is not None],
            "has_inertial": link.find("inertial") is not None,
        }
    check_golden("export_sdf", summary, lookup)
