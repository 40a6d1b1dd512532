"""Demonstrations as a LeRobot v3.0 dataset: the writer, a field-by-field check with pyarrow, the reader."""

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from rl.data.demos import DemoDataset, DemoWriter, record_demos
from rl.data.lerobot_format import check_dataset
from rl.envs import PickPlaceEnv
from scenegen.cli import main
from scenegen.errors import ConfigError, PackError
from tests.helpers.rl_packs import pack as make_pack


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return make_pack(tmp_path_factory)


@pytest.fixture(scope="module")
def demos(pack, tmp_path_factory):
    out = tmp_path_factory.mktemp("demos") / "ds"
    main(["demos", str(pack.root), "-n", "2", "-o", str(out), "--image-size", "32", "--cameras", "front,wrist",
          "--seed", "3"])
    return out


def test_dataset_passes_the_v3_check_field_by_field(demos, pack):
    assert check_dataset(demos) == []
    info = json.loads((demos / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["robot_type"] == "panda" and info["fps"] == 20
    assert info["total_episodes"] == 2 and info["splits"] == {"train": "0:2"} and info["chunks_size"] == 1000
    feats = info["features"]
    for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert feats[key]["shape"] == [1]
    from scenegen.sim.control import ACTION_MODES

    names = list(ACTION_MODES[json.loads((demos / "meta" / "scenegen.json").read_text())["env_config"]["action_mode"]])
    assert feats["action"] == {"dtype": "float32", "shape": [len(names)], "names": names}
    assert feats["observation.state"]["shape"] == [17] and feats["observation.state"]["names"][-1] == "gripper_width"
    front = feats["observation.images.front"]
    assert front["dtype"] == "video" and front["shape"] == [32, 32, 3]
    assert front["info"]["video.codec"] == "h264" and front["info"]["video.fps"] == 20
    assert feats["observation.environment_state"]["dtype"] == "float32" and feats["scene_id"]["dtype"] == "string"
    data = pq.read_table(demos / "data" / "chunk-000" / "file-000.parquet")
    assert data.num_rows == info["total_frames"]
    assert np.array_equal(data.column("index").to_numpy(), np.arange(data.num_rows))
    eps = pq.read_table(demos / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    said = [e["tasks"][0] for e in eps]  # the instruction each episode was given (paraphrases may differ)
    assert all(len(e["tasks"]) == 1 and e["tasks"][0].strip() for e in eps)
    order = list(dict.fromkeys(said))
    want = [order.index(t) for e, t in zip(eps, said, strict=True) for _ in range(e["length"])]
    assert data.column("task_index").to_pylist() == want
    assert eps[1]["dataset_from_index"] == eps[0]["dataset_to_index"] == eps[0]["length"]
    assert eps[1]["videos/observation.images.front/from_timestamp"] == pytest.approx(eps[0]["length"] / 20)
    assert {e["scene_id"] for e in eps} <= set(pack.scene_ids) and eps[0]["object_ids"][:2] == ["banana_1", "bowl_1"]
    tasks = pq.read_table(demos / "meta" / "tasks.parquet")
    assert tasks.column("task").to_pylist() == list(dict.fromkeys(said))
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]
    stats = json.loads((demos / "meta" / "stats.json").read_text())
    assert np.array(stats["observation.images.front"]["mean"]).shape == (3, 1, 1)
    assert stats["action"]["count"] == [info["total_frames"]] and len(stats["action"]["std"]) == len(names)


def test_the_check_finds_what_is_wrong(demos, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(demos, bad)
    table = pq.read_table(bad / "data" / "chunk-000" / "file-000.parquet")
    pq.write_table(table.drop(["frame_index"]), bad / "data" / "chunk-000" / "file-000.parquet")
    info = json.loads((bad / "meta" / "info.json").read_text())
    info["total_frames"] += 1
    (bad / "meta" / "info.json").write_text(json.dumps(info))
    (bad / "meta" / "stats.json").unlink()
    problems = " | ".join(check_dataset(bad))
    assert "column frame_index is missing" in problems and "total_frames" in problems
    assert "stats.json is missing" in problems


def test_reader_gives_episodes_and_decoded_frames_close_to_the_renders(demos, pack):
    ds = DemoDataset(demos)
    assert len(ds) == 2 and ds.cameras == ["front", "wrist"] and ds.state_dim == 17
    assert ds.action_dim == len(ds.features["action"]["names"])
    ep = ds[0]
    env = PickPlaceEnv(pack, image_size=32, image_keys=("front", "wrist"), max_episode_steps=300)
    obs, _ = env.reset(seed=ep.seed, options={"scene_id": ep.scene_id})
    mse = []
    info = {}
    for t, a in enumerate(ep.actions):
        np.testing.assert_array_equal(obs["proprio"], ep.observations["proprio"][t])
        mse.append(np.mean((obs["front"].astype(float) - ep.observations["front"][t]) ** 2))
        obs, _, term, _, info = env.step(a)
    env.close()
    assert info["success"] and term and ep.rewards[-1] == 1.0
    assert 10 * np.log10(255**2 / np.mean(mse)) > 35  # H.264 4:4:4 at crf 10: near-lossless
    env_state = ep.observations["environment_state"]
    slots = json.loads((demos / "meta" / "scenegen.json").read_text())["environment_state_slots"]
    assert env_state.shape == (len(ep), 7 * slots) and slots >= len(ep.object_ids)
    assert not env_state[:, 7 * len(ep.object_ids):].any()  # unused slots stay zero
    from rl.data.batches import ChunkDataset, FrameStore

    items = ChunkDataset(FrameStore(ds, ("front",)), chunk_size=8)
    assert len(items) == ds.num_frames
    last = items[len(ep) - 1]  # the last frame of episode 0: one real action, seven padded
    assert last["observation.images.front"].shape == (3, 32, 32) and last["action"].shape == (8, ds.action_dim)
    assert last["action_is_pad"].tolist() == [False] + [True] * 7
    np.testing.assert_array_equal(last["action"][0].numpy(), ep.actions[-1])
    obs0, action0 = next(ds.pairs())
    assert obs0["instruction"] == ds[0].instruction == ds.tasks[0] and action0.shape == (ds.action_dim,)


def test_image_features_are_lossless(pack, tmp_path):
    out = tmp_path / "img"
    record_demos(str(pack.root), 1, str(out), image_size=24, cameras=("front",), image_format="image",
                 progress=False)
    assert check_dataset(out) == []
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["features"]["observation.images.front"]["dtype"] == "image" and info["video_path"] is None
    ep = DemoDataset(out)[0]
    env = PickPlaceEnv(pack, image_size=24, image_keys=("front",), max_episode_steps=300)
    obs, _ = env.reset(seed=ep.seed, options={"scene_id": ep.scene_id})
    for t in (0, 1):
        np.testing.assert_array_equal(obs["front"], ep.observations["front"][t])
        obs, *_ = env.step(ep.actions[t])
    env.close()


def test_existing_dataset_is_not_overwritten(demos, tmp_path):
    with pytest.raises(PackError, match="already holds"):
        DemoWriter(demos, 20, robot_type="panda")
    with pytest.raises(PackError, match="not a LeRobot dataset"):
        DemoDataset(tmp_path)


def test_failures_are_counted_not_saved_and_an_empty_dataset_is_refused(pack, tmp_path, capsys):
    # a step budget too small for any success: every attempt fails and nothing is saved
    with pytest.raises(ConfigError, match="only 0/1"):
        record_demos(str(pack.root), 1, str(tmp_path / "none"), cameras=(), max_steps=5, max_attempts=2,
                     progress=False)
    own = json.loads((tmp_path / "none" / "meta" / "scenegen.json").read_text())
    assert own["saved"] == 0 and own["failures"] == {"timeout": 2}
    assert not (tmp_path / "none" / "data").exists()
    with pytest.raises(PackError, match="holds no episode"):
        DemoDataset(tmp_path / "none")
    with pytest.raises(SystemExit) as e:
        main(["train", "bc", str(tmp_path / "none"), "-o", str(tmp_path / "run"), "--steps", "1"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "holds no episode" in err and "\n" not in err


@pytest.mark.slow
def test_recording_in_worker_processes_gives_the_same_dataset(pack, tmp_path):
    kw = dict(image_size=24, cameras=("front",), progress=False)
    record_demos(str(pack.root), 2, str(tmp_path / "one"), **kw)
    record_demos(str(pack.root), 2, str(tmp_path / "two"), workers=2, **kw)
    for rel in ("data/chunk-000/file-000.parquet", "videos/observation.images.front/chunk-000/file-000.mp4",
                "meta/episodes/chunk-000/file-000.parquet", "meta/stats.json"):
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes(), rel


@pytest.mark.slow
def test_demos_record_under_a_dr_file_and_say_so(pack, tmp_path):
    f = tmp_path / "dr.json"
    f.write_text(json.dumps({"dr": {"weights": {"mass": 2.0, "camera_pose": 0.0}}}))
    main(["demos", str(pack.root), "-n", "1", "-o", str(tmp_path / "ds"), "--image-size", "24", "--cameras", "front",
          "--dr", str(f)])
    own = json.loads((tmp_path / "ds" / "meta" / "scenegen.json").read_text())
    assert own["randomized"] is True and own["dr"]["weights"]["mass"] == 2.0
    assert own["dr"]["weights"]["camera_pose"] == 0.0 and own["saved"] == 1


def test_dr_file_errors_are_one_line_and_exit_2(pack, tmp_path, capsys):
    missing = str(tmp_path / "nope.json")
    cases = [["demos", str(pack.root), "-n", "1", "-o", str(tmp_path / "ds"), "--dr", missing],
             ["train", "ppoflow", "--init", str(tmp_path), "--pack", str(pack.root), "-o", str(tmp_path / "r"),
              "--dr", missing],
             ["train", "ppoflow", "--init", str(tmp_path), "--pack", str(pack.root), "-o", str(tmp_path / "r"),
              "--dr", missing, "--no-randomize"],
             ["train", "bc", str(tmp_path), "-o", str(tmp_path / "bc"), "--eval-dr", missing]]
    for argv, want in zip(cases, ("no DR file", "no DR file", "--dr with --no-randomize", "no DR file"), strict=True):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and want in err and "\n" not in err, (argv, err)
    assert not (tmp_path / "ds").exists() and not (tmp_path / "r").exists() and not (tmp_path / "bc").exists()

