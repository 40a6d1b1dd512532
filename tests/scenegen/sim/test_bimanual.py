"""The two-arm robot: its spec and composed URDF, loading, 14-D control, both wrist cameras, the layout's reach."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

from scenegen.errors import ConfigError
from scenegen.layout.compose import SceneConfig, build_scene
from scenegen.sim.camera import default_cameras
from scenegen.sim.control import check_action
from scenegen.sim.multi_arm import MultiArmController, make_controller
from scenegen.sim.robots import BIMANUAL_MOUNT_Y, PANDA, RobotSpec, get_robot, reaching_arms, robot_names
from scenegen.sim.views import Renderer
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig
from tests.helpers.export_scenes import golden_scene
from tests.helpers.scene_assets import cache_dir


@pytest.fixture(scope="module")
def spec() -> RobotSpec:
    return get_robot("bimanual_panda")


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    scene = replace(scene, robot="bimanual_panda", cameras=default_cameras(get_robot("bimanual_panda")))
    return scene, lookup


def test_spec_lists_both_arms_in_order(spec):
    assert "bimanual_panda" in robot_names() and [a.name for a in spec.arm_specs] == ["left", "right"]
    assert len(spec.arm_joints) == 14 and len(spec.finger_joints) == 4 and len(spec.home) == 18
    assert spec.arm_joints[:7] == tuple(f"left_panda_joint{i}" for i in range(1, 8))
    assert spec.arm_joints[7:] == tuple(f"right_panda_joint{i}" for i in range(1, 8))
    assert spec.home[:7] == spec.home[7:14] == PANDA.home_arm and spec.home[14:] == PANDA.home_fingers * 2
    left, right = spec.arms
    assert left.base_pose.position == (0.0, BIMANUAL_MOUNT_Y, 0.0) and right.base_pose.position[1] == -BIMANUAL_MOUNT_Y
    assert left.ee_link == "left_panda_grasptarget" and right.wrist_link == "right_panda_hand"
    assert PANDA.arm_specs == (PANDA,)  # the single arm is its own arm


def test_spec_must_list_its_arms_joints(spec):
    with pytest.raises(ConfigError, match="arm order"):
        replace(spec, arm_joints=spec.arm_joints[7:] + spec.arm_joints[:7])


def test_composed_urdf_is_one_tree_with_relative_meshes(spec):
    root = ET.parse(spec.urdf_path()).getroot()
    links = [lk.get("name") for lk in root.findall("link")]
    assert "bench" in links and sum(n.startswith("left_") for n in links) == sum(n.startswith("right_") for n in links)
    mounts = {j.get("name"): j.find("origin").get("xyz") for j in root.findall("joint")
              if j.get("name").endswith("mount")}
    assert mounts == {"left_mount": "0 0.3 0", "right_mount": "0 -0.3 0"}
    mimic = [j.find("mimic").get("joint") for j in root.findall("joint") if j.find("mimic") is not None]
    assert sorted(mimic) == ["left_panda_finger_joint1", "right_panda_finger_joint1"]
    for mesh in root.iter("mesh"):
        path = spec.urdf_path().parent / mesh.get("filename").removeprefix("package://")
        assert path.is_file(), path


def test_reaching_arms_nearest_first(spec):
    base = spec.base_pose
    assert reaching_arms(spec, base, (0.5, 0.2)) == [0, 1]
    assert reaching_arms(spec, base, (0.5, -0.2)) == [1, 0]
    assert reaching_arms(spec, base, (0.1, 0.3)) == [1]  # inside the left arm's inner radius
    assert reaching_arms(spec, base, (2.0, 0.0)) == []


def test_world_loads_both_arms_at_home(scene, spec):
    sc, lookup = scene
    with World.build(sc, lookup) as world:
        assert len(world.arms) == 2 and len(world.joint_positions()) == 18
        assert np.allclose(world.joint_positions(), spec.home, atol=1e-6)
        left = world.link_pose("left_panda_grasptarget").position
        right = world.link_pose("right_panda_grasptarget").position
        assert left[1] == pytest.approx(BIMANUAL_MOUNT_Y, abs=1e-3)
        assert right[1] == pytest.approx(-BIMANUAL_MOUNT_Y, abs=1e-3)
        assert left[0] == pytest.approx(right[0], abs=1e-6) and left[2] == pytest.approx(right[2], abs=1e-6)


def test_fourteen_d_action_moves_each_arm_alone(scene):
    sc, lookup = scene
    cfg = EpisodeConfig()
    with World.build(sc, lookup) as world:
        ctrl = make_controller(world, cfg)
        assert isinstance(ctrl, MultiArmController) and ctrl.dim == 14 and ctrl.names == ["left", "right"]
        start = [a.ee_pose()[0] for a in ctrl.arms]
        act = np.zeros(14)
        act[0] = 1.0  # left +x
        act[7 + 1] = -1.0  # right -y
        act[13] = 1.0  # right gripper closes
        for _ in range(15):
            ctrl.apply(check_action(act, cfg.action_mode, arms=2))
        end = [a.ee_pose()[0] for a in ctrl.arms]
        dl, dr = end[0] - start[0], end[1] - start[1]
        assert dl[0] > 0.15 and abs(dl[1]) < 0.01 and dr[1] < -0.15 and abs(dr[0]) < 0.01
        assert ctrl.arms[1].closed and not ctrl.arms[0].closed
        assert ctrl.arms[1].gripper_width() < 0.01 < ctrl.arms[0].gripper_width()


def test_fourteen_d_action_is_checked():
    with pytest.raises(ValueError, match=r"shape \(14,\)"):
        check_action(np.zeros(7), "ee7", arms=2)
    assert check_action(np.zeros(14), "ee7", arms=2).shape == (14,)


def test_both_wrist_cameras_render_their_own_view(scene):
    sc, lookup = scene
    assert [c.name for c in sc.cameras] == ["front", "wrist_left", "wrist_right"]
    with World.build(sc, lookup) as world:
        r = Renderer(world, 64)
        left, _ = r.render("wrist_left")
        right, _ = r.render("wrist_right")
        eye_l, eye_r = r.pose("wrist_left")[0], r.pose("wrist_right")[0]
    assert left.shape == right.shape == (64, 64, 3) and left.std() > 1 and right.std() > 1
    assert eye_l[1] - eye_r[1] == pytest.approx(2 * BIMANUAL_MOUNT_Y, abs=0.01)
    assert not np.array_equal(left, right)  # the objects differ left and right of the bench's centre


def test_layout_puts_targets_within_some_arms_reach(tmp_path_factory, scene):
    sc, lookup = scene
    spec = get_robot("bimanual_panda")
    by_node = {n: lookup[a] for n, a in sc.assets.items()}
    for seed in range(3):
        built = build_scene(sc.graph, by_node, seed=seed, config=SceneConfig(robot="bimanual_panda"))
        assert built.robot == "bimanual_panda" and [c.name for c in built.cameras][1:] == ["wrist_left", "wrist_right"]
        assert reaching_arms(spec, built.robot_base, built.poses["banana_1"].position[:2])  # the target
        for n in ("banana_1", "can_1", "cereal_box_1"):
            for arm in spec.arms:  # each arm's base kept clear
                d = np.linalg.norm(np.asarray(built.poses[n].position[:2]) - np.asarray(arm.base_pose.position[:2]))
                assert d > arm.base_clearance
