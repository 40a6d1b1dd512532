import numpy as np
import pytest
from PIL import Image

from scenegen.errors import AssetError, ConfigError
from scenegen.layout.compose import build_scene
from scenegen.relations import check_relation
from scenegen.scene import Pose, Scene
from scenegen.sim.camera import camera_world, make_preview, render_camera
from scenegen.sim.world import World, WorldConfig
from tests.helpers.scene_assets import cache_dir, full_assets, full_graph


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    return full_assets(cache_dir(tmp_path_factory))


@pytest.fixture(scope="session")
def lookup(assets):
    return {a.id: a for a in assets.values()}


@pytest.fixture(scope="session")
def scene(assets):
    return build_scene(full_graph(), assets, seed=0)


def fresh(scene: Scene) -> Scene:
    return Scene.from_dict(scene.to_dict())


def poses_list(poses: dict) -> dict:
    return {k: v.to_list() for k, v in sorted(poses.items())}


@pytest.mark.parametrize("seed", [0, 1])
def test_relations_hold_after_settling(assets, lookup, seed):
    scene = build_scene(full_graph(), assets, seed=seed)
    with World.build(scene, lookup) as world:
        depth, pair = world.max_penetration()
        assert depth < 0.002, f"interpenetration at spawn: {pair} {depth}"
        report = world.settle(max_seconds=2.0)
        assert report.at_rest and not report.moving
        assert report.steps < 2.0 / world.config.timestep
        assert report.kinetic_energy < 1e-3
        assert scene.settled is not None and set(scene.settled) == set(scene.poses)
        for r in scene.graph.relations():
            ok, why = check_relation(r.relation, scene.settled[r.subject], assets[r.subject].extents,
                                     scene.settled[r.object], assets[r.object].extents)
            assert ok, f"after settling: {r.subject} {r.relation} {r.object}: {why}"
        assert world.max_penetration()[0] < 0.003
        assert world.in_contact("lemon_1", "bowl_1")
        assert world.in_contact("apple_1", "cutting_board_1")
        assert not world.in_contact("can_1", "bottle_1")
        for n in world.objects():
            lin, ang = world.velocity(n)
            assert np.linalg.norm(lin) < 0.02 and np.linalg.norm(ang) < 0.2
            lo, hi = world.aabb(n)
            assert lo[2] > -0.01 and (hi > lo).all()
        assert report.to_dict()["max_displacement"]["lemon_1"] < 0.1


def test_settling_is_deterministic_and_worlds_do_not_interfere(scene, lookup, assets):
    with World.build(fresh(scene), lookup) as alone:
        alone.settle()
        ref = poses_list(alone.scene.settled)
    other_scene = build_scene(full_graph(), assets, seed=1)
    a, b = World.build(fresh(scene), lookup), World.build(other_scene, lookup)
    try:
        assert a.client != b.client
        b.set_pose("apple_1", Pose((0.5, 0.0, 0.5)))  # disturb the other world
        b.step(30)
        a.settle()
        b.settle()
        assert poses_list(a.scene.settled) == ref
        assert b.scene.settled["apple_1"].position[2] < 0.2
    finally:
        a.close()
        b.close()


def test_objects_knocked_off_the_table_reach_the_ground(scene, lookup):
    with World.build(fresh(scene), lookup, config=WorldConfig(ground_z=-0.5)) as world:
        world.set_pose("can_1", Pose((0.55, 0.9, 0.3)))  # beside the table
        world.settle(max_seconds=2.0)
        z = world.pose("can_1").position[2]
        assert -0.52 < z < -0.45
        assert world.scene.settled["can_1"].position[2] == pytest.approx(z)


def test_render_shapes_and_target_visible(scene, lookup):
    with World.build(fresh(scene), lookup) as world:
        world.settle(max_seconds=1.0)
        rgb, depth, seg = render_camera(world, "front", 96, 64)
        assert rgb.shape == (64, 96, 3) and rgb.dtype == np.uint8
        assert depth.shape == seg.shape == (64, 96)
        assert depth.dtype == np.float32 and seg.dtype == np.int32
        cam = next(c for c in scene.cameras if c.name == "front")
        assert (depth > cam.near - 1e-3).all() and (depth <= cam.far + 1e-3).all()
        # every label is a body of the world or the background (-1); the front camera frames the task zone,
        # so the table may fill the whole image
        assert set(np.unique(seg).tolist()) <= set(world.node_of) | {world.robot_id, -1}
        visible = {world.node_of[b] for b in np.unique(seg) if b in world.node_of}
        assert {"apple_1", "bowl_1", "table"} <= visible
        mask = world.node_mask(seg, "apple_1")
        assert mask.dtype == bool and 0 < mask.sum() < mask.size
        # depth at the apple is about its distance from the camera
        eye, _, _ = camera_world(world, cam)
        d = float(np.linalg.norm(np.asarray(world.pose("apple_1").position) - eye))
        assert abs(float(np.median(depth[mask])) - d) < 0.1
        rgb_w, depth_w, seg_w = render_camera(world, "wrist")
        assert rgb_w.shape == (128, 128, 3) and (seg_w == world.robot_id).any()  # fingers in view
        img = make_preview(world.scene, world)
        assert isinstance(img, Image.Image) and img.size == (256, 256)
        assert np.asarray(img).std() > 10
        with pytest.raises(ConfigError, match="no camera 'top'"):
            render_camera(world, "top")


def test_world_errors(scene, lookup):
    with pytest.raises(AssetError, match="not in the asset lookup"):
        World.build(fresh(scene), {})
    table_id = scene.assets["table"]
    with World.build(fresh(scene), lambda aid: lookup[aid]) as world:  # a callable lookup
        assert world.node_of[world.body_of["table"]] == "table"
        assert world.assets["table"].id == table_id
    with pytest.raises(ConfigError, match="timestep"):
        WorldConfig(timestep=0.5)
    with pytest.raises(ConfigError, match="max_seconds"):
        World.build(fresh(scene), lookup).settle(max_seconds=0)
