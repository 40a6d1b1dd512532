from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from scenegen.export import export
from scenegen.export._common import collision_shapes, inertia_matrix
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


def test_mjcf_with_robot_holds_home(settled, tmp_path):
    scene, lookup = settled
    path = export(scene, lookup, "mjcf", tmp_path / "r", with_robot=True)
    assert (tmp_path / "r" / "robot" / "meshes").is_dir()
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.nu == 9 and model.nkey == 1
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    start = data.qpos.copy()
    for _ in range(200):
        mujoco.mj_step(model, data)
    arm = [model.jnt_qposadr[model.joint(f"robot/panda_joint{i}").id] for i in range(1, 8)]
    assert np.allclose(start[arm], [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    assert np.abs(data.qpos[arm] - start[arm]).max() < 0.02


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
