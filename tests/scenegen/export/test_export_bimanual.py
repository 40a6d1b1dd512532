"""Exports of a two-arm scene carry both arms, each at its home pose (URDF, MJCF, SDF, USD, glTF)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import mujoco
import numpy as np
import pybullet as p
import pytest
import trimesh

from scenegen.export import export
from scenegen.export._robot import parse_urdf
from scenegen.rotations import quat_matrix
from scenegen.sim.camera import default_cameras
from scenegen.sim.robots import get_robot
from scenegen.sim.world import World
from tests.helpers.export_scenes import golden_scene
from tests.helpers.scene_assets import cache_dir

HANDS = ("left_panda_hand", "right_panda_hand")


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    sc, lookup = golden_scene(cache_dir(tmp_path_factory))
    return replace(sc, robot="bimanual_panda", cameras=default_cameras(get_robot("bimanual_panda"))), lookup


@pytest.fixture(scope="module")
def home(scene) -> dict[str, np.ndarray]:
    """World 4x4 of each hand link at home, from the toolkit's own PyBullet world."""
    sc, lookup = scene
    out = {}
    with World.build(sc, lookup) as world:
        for link in HANDS:
            pose = world.link_pose(link)
            m = np.eye(4)
            m[:3, :3], m[:3, 3] = quat_matrix(pose.orientation), pose.position
            out[link] = m
    return out


def test_urdf_carries_both_arms_at_home(scene, home, tmp_path):
    sc, lookup = scene
    path = export(sc, lookup, "urdf", tmp_path, with_robot=True)
    urdf = next((path.parent / "robot").glob("*.urdf"))
    model = parse_urdf(urdf)
    moving = [j.name for j in model.joints if j.moving]
    assert len(moving) == 18 and {n.split("_", 1)[0] for n in moving} == {"left", "right"}
    c = p.connect(p.DIRECT)
    try:
        rid = p.loadURDF(str(urdf), useFixedBase=True, physicsClientId=c)
        names = {p.getJointInfo(rid, j, physicsClientId=c)[1].decode(): j
                 for j in range(p.getNumJoints(rid, physicsClientId=c))}
        spec = get_robot("bimanual_panda")
        for n, v in zip((*spec.arm_joints, *spec.finger_joints), spec.home, strict=True):
            p.resetJointState(rid, names[n], v, physicsClientId=c)
        for link in HANDS:
            idx = next(j for j in names.values() if p.getJointInfo(rid, j, physicsClientId=c)[12].decode() == link)
            got = p.getLinkState(rid, idx, computeForwardKinematics=True, physicsClientId=c)[4]
            assert np.allclose(got, home[link][:3, 3], atol=1e-4)
    finally:
        p.disconnect(c)


def test_mjcf_holds_both_arms_at_home(scene, home, tmp_path):
    sc, lookup = scene
    path = export(sc, lookup, "mjcf", tmp_path, with_robot=True)
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.nu == 18 and model.nkey == 1
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    for link in HANDS:
        assert np.allclose(data.xpos[model.body(f"robot/{link}").id], home[link][:3, 3], atol=1e-3)
    for _ in range(200):  # the drives hold both arms
        mujoco.mj_step(model, data)
    for link in HANDS:
        assert np.linalg.norm(data.xpos[model.body(f"robot/{link}").id] - home[link][:3, 3]) < 0.01


def test_sdf_names_both_arms_joints(scene, tmp_path):
    sc, lookup = scene
    path = export(sc, lookup, "sdf", tmp_path, with_robot=True)
    joints = {j.get("name") for j in ET.parse(path).getroot().iter("joint")}
    for side in ("left", "right"):
        assert {f"{side}_panda_joint{i}" for i in range(1, 8)} <= joints
        assert {f"{side}_panda_finger_joint1", f"{side}_panda_finger_joint2"} <= joints


def test_usd_places_both_hands_at_home(scene, home, tmp_path):
    from pxr import Usd, UsdGeom

    sc, lookup = scene
    path = export(sc, lookup, "usd", tmp_path, with_robot=True)
    stage = Usd.Stage.Open(str(path))
    prims = {pr.GetName(): pr for pr in stage.Traverse()}
    for link in HANDS:
        m = np.array(UsdGeom.Xformable(prims[link]).ComputeLocalToWorldTransform(Usd.TimeCode.Default())).T
        assert np.allclose(m[:3, 3], home[link][:3, 3], atol=1e-3)


def test_gltf_draws_both_hands_at_home(scene, home, tmp_path):
    sc, lookup = scene
    path = export(sc, lookup, "gltf", tmp_path, with_robot=True)
    loaded = trimesh.load(path)
    nodes = [n for n in loaded.graph.nodes_geometry if n.startswith("robot/")]
    assert len(nodes) == 22  # the single Panda's 11 visual meshes, twice
    for link in HANDS:
        transform, _ = loaded.graph.get(next(n for n in nodes if link in n))
        assert np.allclose(transform[:3, 3], home[link][:3, 3], atol=1e-3)
