import numpy as np
import pytest

from scenegen.errors import ConfigError
from scenegen.layout.compose import SceneConfig, build_scene
from scenegen.scene import Pose
from scenegen.sim import robots
from scenegen.sim.camera import render_camera
from scenegen.sim.robots import PANDA, RobotSpec, get_robot, register_robot, robot_names
from scenegen.sim.world import World
from tests.helpers.scene_assets import asset, cache_dir, small_graph

TINY_URDF = """<?xml version="1.0"?>
<robot name="tiny">
  <link name="base"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
    <visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  {links}
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
  <joint name="hand_joint" type="fixed"><parent link="l2"/><child link="hand"/><origin xyz="0.3 0 0"/></joint>
  <joint name="f1" type="prismatic"><parent link="hand"/><child link="finger_a"/><origin xyz="0 0.01 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.03" effort="10" velocity="0.2"/></joint>
  <joint name="f2" type="prismatic"><parent link="hand"/><child link="finger_b"/><origin xyz="0 -0.01 -0.05"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.03" effort="10" velocity="0.2"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="hand"/><child link="tip"/><origin xyz="0 0 -0.08"/></joint>
</robot>
"""
LINK = ('<link name="{n}"><inertial><mass value="0.2"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" '
        'iyz="0" izz="1e-4"/></inertial><visual><geometry><box size="0.03 0.03 0.03"/></geometry></visual>'
        '<collision><geometry><box size="0.03 0.03 0.03"/></geometry></collision></link>')


def tiny_spec(path) -> RobotSpec:
    links = "\n".join(LINK.format(n=n) for n in ("l1", "l2", "hand", "finger_a", "finger_b", "tip"))
    path.write_text(TINY_URDF.format(links=links))
    return RobotSpec(name="tiny_arm", urdf=str(path), ee_link="tip", arm_joints=("j1", "j2"),
                     finger_joints=("f1", "f2"), home=(0.3, 0.4, 0.02, 0.02), max_opening=0.08,
                     reach_min=0.25, reach_max=0.7, camera_link="hand", wrist_target=(0.0, 0.0, -0.3))


@pytest.fixture
def registry(monkeypatch):
    """Keep the global registry untouched by the test."""
    monkeypatch.setattr(robots, "ROBOTS", dict(robots.ROBOTS))
    return robots.ROBOTS


def test_panda_is_the_default():
    spec = get_robot("panda")
    assert spec is PANDA and SceneConfig().robot == "panda"
    assert spec.urdf_path().is_file()
    assert len(spec.home) == len(spec.arm_joints) + len(spec.finger_joints) == 9
    assert spec.max_opening == pytest.approx(0.08)
    assert get_robot(spec) is spec


def test_unknown_robot_lists_the_registered_ones(registry):
    with pytest.raises(ConfigError, match=r"unknown robot 'ur5'.*panda"):
        get_robot("ur5")


def test_spec_validation():
    with pytest.raises(ConfigError, match="home has 1 values"):
        RobotSpec(name="bad", urdf="x.urdf", ee_link="e", arm_joints=("a", "b"), finger_joints=(),
                  home=(0.0,), max_opening=0.05)
    with pytest.raises(ConfigError, match="reach band"):
        RobotSpec(name="bad", urdf="x.urdf", ee_link="e", arm_joints=("a",), finger_joints=(),
                  home=(0.0,), max_opening=0.05, reach_min=0.9, reach_max=0.5)
    with pytest.raises(ConfigError, match="does not exist"):
        RobotSpec(name="ghost", urdf="/nonexistent/robot.urdf", ee_link="e", arm_joints=("a",),
                  finger_joints=(), home=(0.0,), max_opening=0.05).urdf_path()


def test_register_refuses_a_taken_name(registry, tmp_path):
    spec = tiny_spec(tmp_path / "tiny.urdf")
    register_robot(spec)
    assert "tiny_arm" in robot_names()
    other = RobotSpec(**{**spec.__dict__, "max_opening": 0.05})
    with pytest.raises(ConfigError, match="already registered"):
        register_robot(other)
    assert register_robot(other, overwrite=True).max_opening == 0.05


def test_user_robot_is_loaded_into_a_world(registry, tmp_path, tmp_path_factory):
    spec = register_robot(tiny_spec(tmp_path / "tiny.urdf"))
    cache = cache_dir(tmp_path_factory)
    assets = {"table": asset("table", cache), "banana_1": asset("banana", cache), "bowl_1": asset("bowl", cache)}
    scene = build_scene(small_graph(), assets, seed=0, config=SceneConfig(robot="tiny_arm"))
    assert scene.robot == "tiny_arm"
    assert next(c for c in scene.cameras if c.name == "wrist").link == "hand"
    with World.build(scene, {a.id: a for a in assets.values()}) as world:
        assert world.robot is spec
        assert sorted(world.arm_joints) == [world.joint_index["j1"], world.joint_index["j2"]]
        assert world.ee_link == world.link_index["tip"]
        world.settle(max_seconds=0.5)
        assert np.allclose(world.joint_positions(), spec.home, atol=0.02)
        rgb, depth, seg = render_camera(world, "wrist", 32, 24)
        assert rgb.shape == (24, 32, 3) and depth.shape == seg.shape == (24, 32)


def test_missing_joint_is_reported(registry, tmp_path, tmp_path_factory):
    spec = tiny_spec(tmp_path / "tiny.urdf")
    register_robot(RobotSpec(**{**spec.__dict__, "name": "broken_arm", "arm_joints": ("j1", "j9")}))
    cache = cache_dir(tmp_path_factory)
    assets = {"table": asset("table", cache), "banana_1": asset("banana", cache), "bowl_1": asset("bowl", cache)}
    scene = build_scene(small_graph(), assets, seed=0, config=SceneConfig(robot="broken_arm"))
    with pytest.raises(ConfigError, match="j9"):
        World.build(scene, {a.id: a for a in assets.values()})


def test_panda_holds_its_home_pose(tmp_path_factory):
    cache = cache_dir(tmp_path_factory)
    assets = {"table": asset("table", cache), "banana_1": asset("banana", cache), "bowl_1": asset("bowl", cache)}
    scene = build_scene(small_graph(), assets, seed=1)
    assert scene.robot_base == Pose((0.0, 0.0, 0.0))
    with World.build(scene, {a.id: a for a in assets.values()}) as world:
        world.settle(max_seconds=0.5)
        assert np.allclose(world.joint_positions(), PANDA.home, atol=0.02)
        hand = world.link_pose("panda_grasptarget")
        assert 0.2 < hand.position[0] < 0.7 and hand.position[2] > 0.1  # above the table, in front
