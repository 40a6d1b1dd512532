"""The gymnasium env over a two-arm robot: 14-D actions, both wrist cameras and both arms' proprio in its spaces."""

from __future__ import annotations

import numpy as np
import pytest

from rl.envs import PickPlaceEnv
from tests.helpers.rl_packs import bimanual_pack


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = PickPlaceEnv(bimanual_pack(tmp_path_factory), image_keys=("front", "wrist_left", "wrist_right"), image_size=32)
    yield e
    e.close()


def test_spaces_come_from_the_episode(env):
    assert env.action_space.shape == (14,)
    assert env.observation_space["proprio"].shape == (18 + 2 * 8,)
    assert set(env.observation_space.spaces) >= {"front", "wrist_left", "wrist_right", "proprio"}


def test_step_returns_observations_in_the_space(env):
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    a = np.zeros(14, np.float32)
    a[7 + 2] = 1.0  # the right arm rises
    z0 = obs["proprio"][18 + 8 + 2]
    for _ in range(5):
        obs, *_ = env.step(a)
    assert env.observation_space.contains(obs)
    assert obs["proprio"][18 + 8 + 2] > z0 + 0.005 or z0 > env.episode.controller.arms[1].high[2] - 0.01
    with pytest.raises(ValueError, match=r"\(14,\)"):
        env.step(np.zeros(7, np.float32))


@pytest.mark.slow
def test_demos_record_fourteen_d_actions(tmp_path_factory, tmp_path):
    import json

    import pyarrow.parquet as pq

    from rl.data.demos import record_demos

    pack = bimanual_pack(tmp_path_factory)
    s = record_demos(str(pack.root), 1, str(tmp_path / "demos"), cameras=("wrist_left", "wrist_right"), image_size=16,
                     progress=False, image_format="image")
    assert s["saved"] == 1
    feats = json.loads((tmp_path / "demos" / "meta" / "info.json").read_text())["features"]
    assert feats["action"]["shape"] == [14] and feats["action"]["names"][7] == "right_dx"
    assert feats["observation.state"]["shape"] == [34] and {"observation.images.wrist_left",
                                                           "observation.images.wrist_right"} <= set(feats)
    table = pq.read_table(next((tmp_path / "demos" / "data").rglob("*.parquet")))
    actions = np.stack(table.column("action").to_numpy(zero_copy_only=False))
    assert actions.shape[1] == 14 and np.abs(actions).max() <= 1.0
    assert np.abs(actions[:, :6]).max() > 0.1 or np.abs(actions[:, 7:13]).max() > 0.1  # some arm moved
