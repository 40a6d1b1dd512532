from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pybullet as p
import pytest

from scenegen.errors import ExportError
from scenegen.export import export
from scenegen.export.urdf import load_scene
from scenegen.geometry import link_pose
from tests.helpers.export_scenes import check_golden, golden_scene, quat_angle_deg, settled_scene, text_files
from tests.helpers.scene_assets import cache_dir
from tests.scenegen.export import robot_paths


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


@pytest.fixture
def client():
    c = p.connect(p.DIRECT)
    yield c
    p.disconnect(c)


def test_urdf_scene_file_loads_every_object(settled, tmp_path, client):
    scene, lookup = settled
    out = tmp_path / "orig"
    path = export(scene, lookup, "urdf", out)
    shutil.move(str(out), tmp_path / "moved")
    moved = tmp_path / "moved"
    assert not any(str(out) in f.read_text(errors="ignore") for f in text_files(moved))
    data = json.loads((moved / path.name).read_text())
    assert data["poses"] == "settled" and data["robot"] is None
    for o in data["objects"]:  # one URDF per object, relative to the scene file
        assert not o["urdf"].startswith("/") and (moved / o["urdf"]).is_file()
    bodies = load_scene(moved / path.name, client)
    assert set(bodies) == set(scene.assets)
    for node, aid in scene.assets.items():
        uid = bodies[node]
        mass = p.getDynamicsInfo(uid, -1, physicsClientId=client)[0]
        assert mass == pytest.approx(0.0 if node == "table" else lookup[aid].mass, rel=1e-6)
        got, want = link_pose(client, uid), scene.settled[node]
        assert np.allclose(got.position, want.position, atol=1e-6)
        assert quat_angle_deg(got.orientation, want.orientation) < 1e-3


def test_single_scene_urdf_is_a_static_snapshot(settled, tmp_path, client):
    scene, lookup = settled
    export(scene, lookup, "urdf", tmp_path)
    uid = p.loadURDF(str(tmp_path / "scene.urdf"), useFixedBase=True, physicsClientId=client)
    links = {}
    for j in range(p.getNumJoints(uid, physicsClientId=client)):
        info = p.getJointInfo(uid, j, physicsClientId=client)
        assert info[2] == p.JOINT_FIXED
        links[info[12].decode()] = j
    assert set(links) == {f"{n}__base" for n in scene.assets}
    for node in scene.assets:
        st = p.getLinkState(uid, links[f"{node}__base"], computeForwardKinematics=True, physicsClientId=client)
        assert np.allclose(st[4], scene.settled[node].position, atol=1e-6)
        assert quat_angle_deg(st[5], scene.settled[node].orientation) < 1e-3


def test_urdf_with_robot_at_home(settled, tmp_path, client):
    scene, lookup = settled
    path = export(scene, lookup, "urdf", tmp_path, with_robot=True)
    bodies = load_scene(path, client, ground=True)
    assert p.getBasePositionAndOrientation(bodies["ground"], physicsClientId=client)[0][2] == pytest.approx(
        scene.table_height - 0.75)
    robot = bodies["robot"]
    q = {}
    for j in range(p.getNumJoints(robot, physicsClientId=client)):
        q[p.getJointInfo(robot, j, physicsClientId=client)[1].decode()] = p.getJointState(
            robot, j, physicsClientId=client)[0]
    assert q["panda_joint4"] == pytest.approx(-2.356) and q["panda_finger_joint1"] == pytest.approx(0.04)
    # the whole-scene URDF carries the robot too, its joints still movable
    uid = p.loadURDF(str(tmp_path / "scene.urdf"), useFixedBase=True, physicsClientId=client)
    kinds = [p.getJointInfo(uid, j, physicsClientId=client)[2]
             for j in range(p.getNumJoints(uid, physicsClientId=client))]
    assert kinds.count(p.JOINT_REVOLUTE) == 7 and kinds.count(p.JOINT_PRISMATIC) == 2


def test_urdf_robot_follows_the_pybullet_path(settled, tmp_path, client):
    """Same joint-position trajectory in the toolkit's world and in the exported URDF robot: EE paths within 1 cm."""
    scene, lookup = settled
    ref = robot_paths.reference_path(scene, lookup)
    bodies = load_scene(export(scene, lookup, "urdf", tmp_path, with_robot=True), client, ground=True)
    got = robot_paths.pybullet_path(client, bodies["robot"], scene, "panda_grasptarget")
    assert np.linalg.norm(ref - ref[0], axis=1).max() > 0.1
    assert robot_paths.path_gap(ref, got) < robot_paths.PATH_TOL


def test_load_scene_rejects_other_files(tmp_path, client):
    (tmp_path / "x.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ExportError, match="not a scenegen URDF scene file"):
        load_scene(tmp_path / "x.json", client)


def test_urdf_golden(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    out = tmp_path_factory.mktemp("golden_urdf")
    path = export(scene, lookup, "urdf", out)
    data = json.loads(path.read_text())
    root = ET.parse(out / data["single_urdf"]).getroot()
    summary = {
        "poses": data["poses"],
        "objects": {o["name"]: {"urdf": o["urdf"], "fixed": o["fixed"], "category": o["category"]}
                    for o in data["objects"]},
        "single_links": [lk.get("name") for lk in root.findall("link")],
        "single_joints": {j.get("name"): j.get("type") for j in root.findall("joint")},
        "meshes": [m.get("filename") for m in root.iter("mesh")],
    }
    check_golden("export_urdf", summary, lookup)
