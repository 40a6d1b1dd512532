import math

import gymnasium as gym
import numpy as np
import pybullet as p
import pytest
from gymnasium.utils.env_checker import check_env

from rl.envs import ENV_ID, DRConfig, EnvConfig, PickPlaceEnv, SceneSet, make_vec
from scenegen.errors import ConfigError, StateError
from scenegen.graph import Goal
from scenegen.relations import Body, Contact
from scenegen.rotations import axis_angle_quat, down_quat, yaw_of
from scenegen.scene import Pose
from scenegen.sim.light_robot import light_robot
from scenegen.sim.views import unproject, voxel_downsample
from scenegen.tasks.tracker import goal_holds
from tests.helpers.rl_packs import pack as make_pack


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return make_pack(tmp_path_factory)


def rollout(env, seed, n=20, dr_seed=0):
    rng = np.random.default_rng(dr_seed)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    rewards = []
    for _ in range(n):
        obs, r, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        out.append(obs)
        rewards.append(r)
        if term or trunc:
            break
    return out, rewards


def same_obs(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], str):
            assert a[k] == b[k]
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# ---------------------------------------------------------------------- api
def test_env_checker_passes(pack):
    env = PickPlaceEnv(pack, image_size=32, image_keys=("front", "wrist"), render_mode="rgb_array")
    check_env(env, skip_render_check=False)
    env.close()


def test_observation_contents(pack):
    env = PickPlaceEnv(pack.root, image_size=48, image_keys=("front", "wrist"), pointcloud=True,
                       pointcloud_points=256)
    obs, info = env.reset(seed=1)
    assert obs["front"].shape == (48, 48, 3) and obs["front"].dtype == np.uint8
    assert obs["wrist"].shape == (48, 48, 3) and obs["front"].std() > 5
    assert obs["proprio"].shape == (17,) and obs["proprio"].dtype == np.float32
    assert obs["instruction"] == info["instruction"] == env.episode.instruction
    graph = env.world.scene.graph
    assert graph.instructions[0] == "put the banana in the bowl" and info["instruction"] in graph.instructions
    assert info["instruction"] == graph.instructions[info["instruction_index"]] and len(graph.instructions) >= 4
    assert info["scene_id"] in pack.scene_ids and info["progress"] == 0.0 and not info["success"]
    pts = obs["points"]
    assert pts.shape == (256, 3)
    ws = env.cfg.workspace
    assert np.all(pts[:, 0] >= ws[0]) and np.all(pts[:, 0] <= ws[3]) and np.all(pts[:, 2] >= -0.01)
    # proprio: the gripper opens fully at home, the end effector sits where FK says
    width = obs["proprio"][-1]
    assert width == pytest.approx(0.08, abs=1e-3)
    np.testing.assert_allclose(obs["proprio"][9:12], env.controller.ee_pose()[0], atol=1e-5)
    assert obs in env.observation_space
    env.close()


def test_no_images_means_no_rendering(pack, monkeypatch):
    env = PickPlaceEnv(pack, image_keys=())
    monkeypatch.setattr(p, "getCameraImage", lambda *a, **k: pytest.fail("rendered without image keys"))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.zeros(7, np.float32))
    assert set(obs) == {"proprio", "instruction"}
    env.close()


@pytest.mark.parametrize("bad", [[np.nan, 0, 0, 0, 0, 0, 0], [0, 0, 1.5, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, -2],
                                 [0, 0, 0, 0, 0], [0, 0, np.inf, 0, 0, 0, 0]])
def test_invalid_actions_raise(pack, bad):
    env = PickPlaceEnv(pack, image_keys=())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.asarray(bad, dtype=np.float32))
    env.close()


def test_step_before_reset_and_bad_config(pack):
    env = PickPlaceEnv(pack, image_keys=())
    with pytest.raises(StateError, match="reset"):
        env.step(np.zeros(7))
    with pytest.raises(ConfigError, match="image_keys"):
        EnvConfig(image_keys=("top",))
    with pytest.raises(ConfigError, match="unknown env option"):
        PickPlaceEnv(pack, image_size_px=64)
    with pytest.raises(ConfigError, match="scene id"):
        PickPlaceEnv(pack, scene_ids=("zzzzzz",))
    with pytest.raises(ConfigError, match="mass"):
        DRConfig(mass=0.6, weights={"mass": 2.0})


def test_registered_with_gymnasium(pack):
    env = gym.make(ENV_ID, pack=pack, config=EnvConfig(image_keys=(), max_episode_steps=5))
    env.reset(seed=0)
    for _ in range(5):
        *_, term, trunc, info = env.step(np.zeros(7, np.float32))
    assert trunc and info["timeout"]
    env.close()


# ---------------------------------------------------------------------- determinism and reuse
def test_seeded_resets_repeat_exactly_with_randomization(pack):
    cfg = EnvConfig(image_size=32, dr=DRConfig())
    a, b = PickPlaceEnv(pack, cfg), PickPlaceEnv(pack, cfg)
    obs_a, rew_a = rollout(a, seed=7, n=50)  # long enough for resting objects to fall asleep
    rollout(a, seed=3, n=35)  # another episode in between must not leak into the next one
    obs_a2, rew_a2 = rollout(a, seed=7, n=50)
    obs_b, rew_b = rollout(b, seed=7, n=50)
    assert len(obs_a) == 51
    for x, y, z in zip(obs_a, obs_b, obs_a2, strict=True):
        same_obs(x, y)
        same_obs(x, z)
    assert rew_a == rew_b == rew_a2
    first_other, _ = rollout(b, seed=8, n=0)
    assert not np.array_equal(first_other[0]["front"], obs_a[0]["front"])
    a.close()
    b.close()


@pytest.mark.parametrize("fresh_worlds", [False, True])
def test_world_is_reused_and_restored(pack, fresh_worlds):
    """A used world is restored from its snapshot, or (``fresh_worlds``, the default) built again."""
    sid = pack.scene_ids[0]
    env = PickPlaceEnv(pack, image_keys=(), scene_ids=(sid[:10],), fresh_worlds=fresh_worlds)
    env.reset(seed=0)
    start = env.world.poses()
    q0 = env.world.joint_positions()
    for _ in range(10):
        env.step(np.array([1, 0, -1, 0.5, -0.5, 1, 1], np.float32))
    env.world.set_pose("banana_1", Pose((0.5, 0.0, 0.3)))
    env.reset(seed=1)
    assert env.cache.builds == 1 + fresh_worlds
    for n, pose in env.world.poses().items():
        np.testing.assert_allclose(pose.position, start[n].position, atol=1e-9)
    np.testing.assert_allclose(env.world.joint_positions(), q0, atol=1e-9)
    env.close()


def test_randomization_changes_dynamics_and_restores(pack):
    sid = pack.scene_ids[0]
    env = PickPlaceEnv(pack, image_keys=(), scene_ids=(sid,), dr=DRConfig(friction=0.5, mass=0.5))
    env.reset(seed=2)
    w = env.world
    body = w.body_of["banana_1"]
    nominal = env.cache.get(sid).nominal["banana_1"]
    fr = p.getDynamicsInfo(body, -1, physicsClientId=w.client)[1]
    assert fr != pytest.approx(nominal["friction"]) and abs(fr / nominal["friction"] - 1) <= 0.5
    off = PickPlaceEnv(pack, image_keys=(), scene_ids=(sid,), dr=DRConfig().with_weights(friction=0, mass=0))
    off.reset(seed=2)
    info = p.getDynamicsInfo(off.world.body_of["banana_1"], -1, physicsClientId=off.world.client)
    assert info[1] == pytest.approx(nominal["friction"]) and info[0] == pytest.approx(nominal["mass"])
    env.close()
    off.close()


def test_zero_weight_randomization_renders_the_nominal_scene(pack):
    """DR is centred on what nominal episodes show: at zero weights its images are the nominal ones.

    The table is drawn in its texture (tinted white); its asset colour once stood for its nominal colour,
    and every randomized episode tinted the texture with it (up to 212 grey levels off at 64 x 64).
    """
    sid = pack.scene_ids[0]
    images = []
    for dr in (None, DRConfig.off()):
        env = PickPlaceEnv(pack, image_size=48, scene_ids=(sid,), dr=dr)
        images.append(env.reset(seed=4)[0]["front"].copy())
        env.close()
    np.testing.assert_array_equal(images[0], images[1])


def test_chunks_render_only_their_last_observation_and_change_nothing(pack, monkeypatch):
    from rl.rollout import ChunkEnv
    from scenegen.sim.views import Renderer

    calls = {"n": 0}
    real = Renderer.render

    def counting(self, *args, **kwargs):
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Renderer, "render", counting)
    results = {}
    for blind in (True, False):
        env = PickPlaceEnv(pack, image_size=32, scene_ids=(pack.scene_ids[0],), dr=DRConfig())
        if not blind:
            env.advance = None  # a plain env: every action's observation is rendered
        chunk_env = ChunkEnv(env, 6, 4, 0.99)
        chunk_env.reset(seed=5)
        calls["n"] = 0
        rng = np.random.default_rng(1)
        got = []
        for _ in range(3):
            obs, r, term, trunc, info = chunk_env.step(rng.uniform(-1, 1, (6, 7)).astype(np.float32))
            got.append((obs["front"].copy(), obs["proprio"].copy(), r, term, trunc, info["chunk_steps"]))
        results[blind] = (got, calls["n"])
        env.close()
    (blind_steps, blind_calls), (plain_steps, plain_calls) = results[True], results[False]
    assert blind_calls == 3 and plain_calls == 3 * 4  # one front frame per chunk instead of one per action
    for a, b in zip(blind_steps, plain_steps, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2:] == b[2:]


def test_the_privileged_state_is_observed_only_when_asked(pack):
    from scenegen.tasks.privileged import PRIVILEGED_DIM

    plain = PickPlaceEnv(pack, image_keys=())
    assert "privileged" not in plain.reset(seed=0)[0] and "privileged" not in plain.observation_space.spaces
    plain.close()
    env = PickPlaceEnv(pack, image_keys=(), privileged=True)
    obs, info = env.reset(seed=0)
    assert env.observation_space["privileged"].shape == (PRIVILEGED_DIM,) and env.observation_space.contains(obs)
    goal = env.scene.graph.goals[0]
    subject = np.asarray(env.world.pose(goal.subject).position)
    np.testing.assert_allclose(obs["privileged"][0:3], subject - env.controller.ee_pose()[0], atol=1e-5)
    assert obs["privileged"][7] == float(info["goals"][0])
    check_env(env, skip_render_check=True)
    env.close()


def test_make_vec_async_seeded(pack):
    vec = make_vec(pack, 2, image_size=32)
    try:
        o1, _ = vec.reset(seed=11)
        acts = np.zeros((2, 7), np.float32)
        acts[:, 2] = -1
        s1 = vec.step(acts)[0]
        o2, _ = vec.reset(seed=11)
        s2 = vec.step(acts)[0]
        np.testing.assert_array_equal(o1["front"], o2["front"])
        np.testing.assert_array_equal(s1["proprio"], s2["proprio"])
        assert o1["front"].shape == (2, 32, 32, 3) and tuple(o1["instruction"]) == tuple(o2["instruction"])
        texts = {t for sc in pack.scenes() for t in sc.graph.instructions}
        assert set(o1["instruction"]) <= texts
    finally:
        vec.close()
    sync = make_vec(pack, 2, mode="sync", image_keys=())
    o3, _ = sync.reset(seed=11)
    np.testing.assert_array_equal(o3["proprio"], o1["proprio"])
    sync.close()


# ---------------------------------------------------------------------- rewards and predicates
def test_placing_rewards_once_and_knocking_off_penalises(pack):
    from scenegen.tasks.plan import place_target
    from scenegen.tasks.tracker import world_goal_holds

    scene = pack.scenes()[0]
    env = PickPlaceEnv(SceneSet([scene], pack.asset_lookup), image_keys=(), terminate_on_success=False)
    env.reset(seed=0)
    w = env.world
    reach = (w.robot.reach_min, w.robot.reach_max)
    goal = next(Goal("banana_1", rel, "bowl_1") for rel in ("right_of", "left_of", "in_front_of", "behind")
                if place_target(w, Goal("banana_1", rel, "bowl_1"), reach) is not None
                and not world_goal_holds(w, Goal("banana_1", rel, "bowl_1")))
    scene.graph.goals = [goal]
    env.close()
    env = PickPlaceEnv(SceneSet([scene], pack.asset_lookup), image_keys=(), terminate_on_success=False)
    _, info = env.reset(seed=0)
    assert not info["success"] and info["progress"] == 0.0
    w = env.world
    target = place_target(w, goal, reach)
    pose = w.pose("banana_1")
    w.set_pose("banana_1", Pose((float(target.xy[0]), float(target.xy[1]), target.release_z), pose.orientation))
    rewards, infos = [], []
    for _ in range(15):
        _, r, term, _, info = env.step(np.zeros(7, np.float32))
        rewards.append(r)
        infos.append(info)
    assert sum(rewards) == 1.0 and infos[-1]["success"] and infos[-1]["progress"] == 1.0
    other = next(n for n in w.objects() if n not in ("banana_1", "bowl_1"))
    w.set_pose(other, Pose((0.5, 0.6, -0.4)))
    _, r, *_, info = env.step(np.zeros(7, np.float32))
    assert r == -1.0 and info["knocked_off"]
    w.set_pose("banana_1", Pose((0.5, -0.6, -0.4)))
    _, r, term, _, info = env.step(np.zeros(7, np.float32))
    assert r == -1.0 and term and not info["success"]  # the goal's subject is gone: the episode ends
    env.close()


def _bodies(poses, ext, **extra):
    return {n: Body(p, ext[n], **extra.get(n, {})) for n, p in poses.items()}


def test_success_predicates_from_hand_placed_poses():
    bowl_ext, banana_ext, plate_ext = (0.16, 0.16, 0.07), (0.18, 0.045, 0.04), (0.2, 0.2, 0.02)
    poses = {"bowl": Pose((0.5, 0.0, 0.0)), "plate": Pose((0.5, 0.3, 0.0))}
    ext = {"bowl": bowl_ext, "banana": banana_ext, "plate": plate_ext}
    inside = {**poses, "banana": Pose((0.5, 0.01, 0.012))}
    beside = {**poses, "banana": Pose((0.5, -0.2, 0.0))}
    on_plate = {**poses, "banana": Pose((0.52, 0.3, 0.021))}
    floating = {**poses, "banana": Pose((0.52, 0.3, 0.2))}
    resting = Contact(parent=True, table=False)
    assert goal_holds(Goal("banana", "in", "bowl"), _bodies(inside, ext), resting)
    assert not goal_holds(Goal("banana", "in", "bowl"), _bodies(inside, ext), Contact(parent=False, table=False))
    assert not goal_holds(Goal("banana", "in", "bowl"), _bodies(beside, ext))
    assert goal_holds(Goal("banana", "on", "plate"), _bodies(on_plate, ext), resting)
    assert not goal_holds(Goal("banana", "on", "plate"), _bodies(on_plate, ext), Contact(True, False, speed=0.5))
    assert not goal_holds(Goal("banana", "on", "plate"), _bodies(floating, ext))
    assert goal_holds(Goal("banana", "right_of", "bowl"), _bodies(beside, ext))
    flipped = {"banana": Pose((0.5, 0.0, 0.04), axis_angle_quat((1.0, 0.0, 0.0), math.pi))}
    tilted = {"banana": Pose((0.5, 0.0, 0.04), axis_angle_quat((1.0, 0.0, 0.0), 0.3))}
    assert goal_holds(Goal("banana", "inverted"), _bodies(flipped, ext))
    assert not goal_holds(Goal("banana", "upright"), _bodies(flipped, ext))
    assert goal_holds(Goal("banana", "upright"), _bodies(tilted, ext))


def test_rolled_subject_is_judged_by_its_hull():
    # a ball rolled by 45 degrees resting on a thin plate: its posed box dips below the plate, its hull does not
    r, top, a = 0.04, 0.004, math.pi / 4
    ang = np.linspace(0, 2 * np.pi, 24)
    hull = np.array([[r * np.cos(u) * np.sin(v), r * np.sin(u) * np.sin(v), r + r * np.cos(v)]
                     for u in ang for v in np.linspace(0, np.pi, 12)])
    origin = (0.5, r * math.sin(a), top + r - r * math.cos(a))
    poses = {"ball": Pose(origin, axis_angle_quat((1.0, 0.0, 0.0), a)), "plate": Pose((0.5, 0.0, 0.0))}
    ext = {"ball": (0.08, 0.08, 0.08), "plate": (0.2, 0.2, top)}
    goal = Goal("ball", "on", "plate")
    assert not goal_holds(goal, _bodies(poses, ext))
    assert goal_holds(goal, _bodies(poses, ext, ball={"hull": hull, "com": (0.0, 0.0, r)}))


# ---------------------------------------------------------------------- pieces
def test_controller_tracks_commands_to_a_millimetre(pack):
    env = PickPlaceEnv(pack, image_keys=())
    env.reset(seed=0)
    c = env.controller
    for target in ([0.45, 0.2, 0.15], [0.7, -0.25, 0.05]):
        for _ in range(40):
            d = np.clip((np.asarray(target) - c.target_pos) / env.cfg.max_delta, -1, 1)
            env.step(np.r_[d, 0.0, 0.0, 0.5, -1].astype(np.float32))
        pos, orn = c.ee_pose()
        np.testing.assert_allclose(pos, target, atol=2e-3)
        assert abs(yaw_of(orn) - c.target_yaw) < 0.02 and c.target_tilt == 0.0
    env.close()


def test_ee7_action_tilts_the_gripper_and_ee5_keeps_it_down(pack):
    from scenegen.rotations import quat_matrix

    env = PickPlaceEnv(pack, image_keys=())
    assert env.action_space.shape == (7,) and env.cfg.action_mode == "ee7"
    env.reset(seed=0)
    c = env.controller
    for _ in range(6):  # pitch by 6 x 0.2 rad about the world y axis, no translation
        env.step(np.array([0, 0, 0, 0, 1, 0, -1], np.float32))
    assert c.target_tilt == pytest.approx(1.2, abs=1e-6)
    approach = quat_matrix(c.ee_pose()[1])[:, 2]
    want = c.target_rotation[:, 2]
    assert float(approach @ want) > math.cos(0.05)  # the arm follows within 3 degrees
    assert float(approach @ np.array([0.0, 0.0, -1.0])) == pytest.approx(math.cos(1.2), abs=0.05)
    for _ in range(20):  # the tilt is clipped at max_tilt
        env.step(np.array([0, 0, 0, 0, 1, 0, -1], np.float32))
    assert c.target_tilt == pytest.approx(env.cfg.max_tilt, abs=1e-6)
    env.reset(seed=0)
    assert env.controller.target_tilt == 0.0  # a new episode's controller (of its world, built again)
    env.close()
    five = PickPlaceEnv(pack, image_keys=(), action_mode="ee5")
    assert five.action_space.shape == (5,)
    five.reset(seed=0)
    for _ in range(5):
        five.step(np.array([0, 0, 0, 1, -1], np.float32))
    assert five.controller.target_tilt == 0.0 and five.controller.target_yaw == pytest.approx(
        five.controller.home_yaw + 1.0, abs=1e-3)
    with pytest.raises(ValueError, match="action_mode"):
        five.step(np.zeros(7, np.float32))
    five.close()
    with pytest.raises(ConfigError, match="action_mode"):
        EnvConfig(action_mode="ee6")


def test_instructions_are_drawn_per_episode_and_seeded(pack):
    env = PickPlaceEnv(pack, image_keys=(), scene_ids=(pack.scene_ids[0],))
    drawn = [env.reset(seed=s)[1]["instruction"] for s in range(12)]
    assert drawn == [env.reset(seed=s)[1]["instruction"] for s in range(12)]
    assert len(set(drawn)) >= 2 and set(drawn) <= set(env.world.scene.graph.instructions)
    env.close()
    fixed = PickPlaceEnv(pack, image_keys=(), paraphrase=False)
    assert {fixed.reset(seed=s)[1]["instruction"] for s in range(5)} == {"put the banana in the bowl"}
    fixed.close()


def test_down_quat_points_the_gripper_down():
    for yaw in (-1.0, 0.0, 0.7):
        q = down_quat(yaw)
        assert yaw_of(q) == pytest.approx(yaw)
        z = p.getMatrixFromQuaternion(q)[8]
        assert z == pytest.approx(-1.0)


def test_light_robot_keeps_joints_and_drops_triangles():
    spec = light_robot("panda")
    assert spec.name == "panda_light" and spec.arm_joints == light_robot("panda").arm_joints
    text = spec.urdf_path().read_text()
    assert "meshes/visual" not in text and "hull_" in text
    faces = sum(sum(1 for line in open(f) if line.startswith("f "))
                for f in {line.split('"')[1] for line in text.splitlines() if "filename=" in line and "hull_" in line})
    assert faces < 1000


def test_pointcloud_helpers_roundtrip():
    eye, target, up = np.array([1.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
    depth = np.full((8, 8), math.sqrt(2.0), np.float32)
    pts = unproject(depth, eye, target, up, 60.0, far=5.0)
    assert pts.shape == (64, 3)
    centre = pts[np.argmin(np.linalg.norm(pts - pts.mean(0), axis=1))]
    assert np.linalg.norm(centre) < 0.2
    dense = np.random.default_rng(0).uniform(0, 0.1, (1000, 3))
    down = voxel_downsample(dense, 0.05)
    assert len(down) == 8 and np.all(down > 0) and np.all(down < 0.1)


def test_scene_set_source_and_scene_option(pack):
    scenes = pack.scenes()
    env = PickPlaceEnv(SceneSet(scenes, pack.asset_lookup), image_keys=())
    _, info = env.reset(seed=0, options={"scene_id": scenes[1].id})
    assert info["scene_id"] == scenes[1].id
    env.close()


def test_closing_on_nothing_flags_a_failed_grasp(pack):
    env = PickPlaceEnv(pack, image_keys=())
    env.reset(seed=0)
    info = {}
    for _ in range(6):
        *_, info = env.step(np.array([0, 0, 0, 0, 0, 0, 1], np.float32))
    assert info["grasp_failed"] and not info["dropped"] and not info["wrong_object"]
    assert env.controller.gripper_width() < 0.004
    _, info = env.reset(seed=0)
    assert not info["grasp_failed"]
    env.close()


def test_light_assets_keep_physics_and_cut_triangles(pack):
    import re
    from pathlib import Path

    from scenegen.sim.light_assets import cluster_decimate, light_asset

    big = max((pack.asset(a) for a in pack.asset_ids), key=lambda a: a.visual_faces)
    assert big.visual_faces > 600
    light = light_asset(big, 600)
    assert light.id == big.id and light.path == big.path and light.extents == big.extents
    text = Path(light.urdf_path).read_text()
    files = re.findall(r'filename="([^"]+)"', text)
    assert files and all(Path(f).is_absolute() and Path(f).is_file() for f in files)
    visual = next(f for f in files if f.endswith("visual.obj"))
    faces = sum(1 for line in open(visual) if line.startswith("f "))
    assert faces <= 4 * 600 and faces < big.visual_faces  # the budget, doubled at most twice to keep the look
    original = Path(big.urdf_path).read_text()
    inertial = re.compile(r"<inertial>.*?</inertial>", re.S)
    assert inertial.findall(text) == inertial.findall(original)
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=4, radius=0.05)
    v2, f2 = cluster_decimate(sphere.vertices, sphere.faces, 300)
    assert len(sphere.faces) > 5000 and 50 < len(f2) <= 300
    np.testing.assert_allclose(v2.max(axis=0), 0.05, atol=0.006)


def test_a_light_copy_follows_its_source_files(pack, tmp_path):
    """A pack regenerated at the same path with other collision parts gets a new copy, not a stale one."""
    import shutil
    from dataclasses import replace
    from pathlib import Path

    from scenegen.sim.light_assets import light_asset

    big = max((pack.asset(a) for a in pack.asset_ids), key=lambda a: a.visual_faces)
    folder = tmp_path / "asset"
    shutil.copytree(big.path, folder)
    src = replace(big, path=folder)
    first = light_asset(src, 600)
    assert Path(first.urdf_path).parent != Path(big.urdf_path).parent
    urdf = src.urdf_path
    text = urdf.read_text()
    part = next(r for r in (m.split('"')[0] for m in text.split('filename="')[1:]) if r.startswith("collision/"))
    urdf.write_text(text.replace(f'filename="{part}"', 'filename="collision/renamed.obj"', 1))
    (folder / part).rename(folder / "collision" / "renamed.obj")
    second = light_asset(src, 600)
    assert second.urdf_path != first.urdf_path
    refs = [r.split('"')[0] for r in Path(second.urdf_path).read_text().split('filename="')[1:]]
    assert all(Path(r).is_file() for r in refs), refs
