"""Rejection fine-tuning data: rollouts under DR filtered by success (or lifted grasps), mixed with demonstrations."""

from __future__ import annotations

import pytest

from scenegen.errors import ConfigError


@pytest.mark.slow
def test_rft_dataset_mixes_kept_rollouts_with_demos(tmp_path_factory, tmp_path):
    from rl.data.demos import record_demos
    from rl.data.lerobot_format import check_dataset
    from rl.data.reader import DemoDataset
    from rl.rft import rft_dataset
    from tests.helpers.rl_packs import pack as make_pack

    pack = make_pack(tmp_path_factory)
    record_demos(str(pack.root), 2, str(tmp_path / "demos"), image_size=32, progress=False)
    s = rft_dataset("noisy-expert:0.6", pack.root, tmp_path / "demos", tmp_path / "rft", rollouts=4,
                    keep="grasp_segments", demo_fraction=0.5, max_episode_steps=150, progress=False)
    assert s["kept"] == s["successes"] + s["segments"] >= 1
    assert s["kept"] + sum(s["failures"].values()) == 4
    assert s["demo_episodes"] == s["kept"] and s["episodes"] == 2 * s["kept"]
    assert check_dataset(tmp_path / "rft") == []
    ds = DemoDataset(tmp_path / "rft")
    assert len(ds) == s["episodes"] and ds.cameras == ["front"] and ds.image_size == 32
    assert ds.scenegen["rft"]["successes"] == s["successes"]
    ep = ds[len(ds) - 1]
    assert ep.actions.shape[1] == ds.action_dim == DemoDataset(tmp_path / "demos").action_dim and len(ep) >= 10

    # two rollout processes: the same rollouts kept in the same order, the same dataset
    s2 = rft_dataset("noisy-expert:0.6", pack.root, tmp_path / "demos", tmp_path / "rft2", rollouts=4,
                     keep="grasp_segments", demo_fraction=0.5, max_episode_steps=150, progress=False, workers=2)
    assert {k: v for k, v in s2.items() if k != "out"} == {k: v for k, v in s.items() if k != "out"}
    ds2 = DemoDataset(tmp_path / "rft2")
    assert all((ds2[i].actions == ds[i].actions).all() for i in range(len(ds)))
    with pytest.raises(ConfigError, match="spec string"):
        rft_dataset(lambda env: None, pack.root, tmp_path / "demos", tmp_path / "y", workers=2, progress=False)

    with pytest.raises(ConfigError, match="nothing to fine-tune on"):
        rft_dataset("random", pack.root, tmp_path / "demos", tmp_path / "none", rollouts=1, max_episode_steps=5,
                    progress=False)
    with pytest.raises(ConfigError, match="keep"):
        rft_dataset("expert", pack.root, tmp_path / "demos", tmp_path / "x", keep="everything", progress=False)
