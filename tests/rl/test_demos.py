import json

import numpy as np
import pytest

from rl.cli import record_demos
from rl.data.demos import DemoDataset, DemoWriter
from rl.envs import PickPlaceEnv
from scenegen.cli import main
from scenegen.errors import PackError
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


@pytest.mark.slow
def test_demos_round_trip(demos, pack):
    ds = DemoDataset(demos)
    info = json.loads((demos / "meta" / "info.json").read_text())
    assert len(ds) == 2 == info["total_episodes"] and ds.num_frames == info["total_frames"]
    assert info["features"]["observation.images.front"] == {"dtype": "uint8", "shape": [32, 32, 3]}
    assert info["features"]["action"]["shape"] == [5] and info["fps"] == 20.0
    tasks = [json.loads(x) for x in (demos / "meta" / "tasks.jsonl").read_text().splitlines()]
    assert tasks == [{"task_index": 0, "task": "put the banana in the bowl"}]
    for ep in ds:
        assert ep.scene_id in pack.scene_ids and ep.instruction == "put the banana in the bowl"
        t = len(ep)
        assert ep.observations["front"].shape == (t, 32, 32, 3) and ep.observations["wrist"].dtype == np.uint8
        assert ep.observations["proprio"].shape == (t, 17)
        assert np.all(np.abs(ep.actions) <= 1) and ep.actions.shape == (t, 5)
        assert ep.rewards.sum() >= 1.0 and ep.rewards[-1] == 1.0
    pairs = list(ds.pairs())
    assert len(pairs) == ds.num_frames
    obs, action = pairs[0]
    assert obs["instruction"] == "put the banana in the bowl" and obs["front"].shape == (32, 32, 3)
    assert action.shape == (5,)


def test_recorded_actions_replay_to_success(demos, pack):
    ds = DemoDataset(demos)
    meta = ds.episodes_meta[0]
    ep = ds[0]
    env = PickPlaceEnv(pack, image_size=32, image_keys=("front", "wrist"), max_episode_steps=300)
    obs, _ = env.reset(seed=meta["seed"], options={"scene_id": meta["scene_id"]})
    np.testing.assert_array_equal(obs["front"], ep.observations["front"][0])
    info = {}
    for a in ep.actions:
        obs, r, term, trunc, info = env.step(a)
    assert info["success"] and term
    env.close()


def test_existing_dataset_is_not_overwritten(demos, tmp_path):
    with pytest.raises(PackError, match="already holds"):
        DemoWriter(demos, 20)
    with pytest.raises(PackError, match="not a demonstration dataset"):
        DemoDataset(tmp_path)


def test_failures_are_counted_not_saved(pack, tmp_path):
    # a step budget too small for any success: every attempt fails and nothing is saved
    from scenegen.errors import ConfigError

    with pytest.raises(ConfigError, match="only 0/1"):
        record_demos(str(pack.root), 1, str(tmp_path / "none"), cameras=(), max_steps=5, max_attempts=2,
                     progress=False)
    info = json.loads((tmp_path / "none" / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 0 and info["failures"] == {"timeout": 2}
    assert not (tmp_path / "none" / "data").exists()
