from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pybullet as p
import pytest

from scenegen.export import export
from scenegen.export._common import collision_shapes
from scenegen.export.sdf import load_sdf
from scenegen.geometry import link_pose
from tests.helpers.export_scenes import (
    check_golden,
    golden_scene,
    quat_angle_deg,
    settled_scene,
    text_files,
    xml_children,
)
from tests.helpers.scene_assets import cache_dir


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


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
    assert set(models) == set(scene.assets) | {"ground_plane"}
    for uri in root.iter("uri"):
        assert not uri.text.startswith("/") and (path.parent / uri.text).is_file()
    for node, aid in scene.assets.items():
        link = models[node].find("link")
        assert models[node].find("static").text == ("1" if node == "table" else "0")
        assert float(link.find("inertial/mass").text) == pytest.approx(lookup[aid].mass, rel=1e-8)
        cols = xml_children(link, "collision")
        assert len(cols) == len(collision_shapes(lookup[aid]))
        assert all(float(c.find("surface/friction/ode/mu").text) == pytest.approx(lookup[aid].friction) for c in cols)


def test_sdf_loads_in_pybullet_with_masses_poses_friction(settled, tmp_path, client):
    scene, lookup = settled
    out = tmp_path / "orig"
    path = export(scene, lookup, "sdf", out)
    shutil.move(str(out), tmp_path / "moved")
    assert not any(str(out) in f.read_text(errors="ignore") for f in text_files(tmp_path / "moved"))
    bodies = load_sdf(tmp_path / "moved" / path.name, client)
    assert set(bodies) == set(scene.assets) | {"ground_plane"}
    for node, aid in scene.assets.items():
        a, uid = lookup[aid], bodies[node]
        info = p.getDynamicsInfo(uid, -1, physicsClientId=client)
        assert info[0] == pytest.approx(0.0 if node == "table" else a.mass, rel=1e-6)
        assert info[1] == pytest.approx(a.friction)
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


def test_sdf_robot_matches_urdf_kinematics(settled, tmp_path, client):
    scene, lookup = settled
    path = export(scene, lookup, "sdf", tmp_path / "r", with_robot=True)
    bodies = load_sdf(path, client)
    robot = bodies["robot"]
    ref = p.loadURDF(str(tmp_path / "r" / "robot" / "panda.urdf"), scene.robot_base.position,
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
