"""``scenegen train rft``: collect kept rollouts mixed with demonstrations, then continue BC from the init run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scenegen.errors import ConfigError


def test_rft_config_is_validated_and_feeds_the_collector():
    from rl.rft import RFTConfig
    from rl.rft_cli import FINETUNE

    kw = RFTConfig(rollouts=3, rollout_seed=7).to_kwargs()
    assert kw["seed"] == 7 and kw["rollouts"] == 3 and "randomize" not in kw and "rollout_seed" not in kw
    with pytest.raises(ConfigError, match="keep"):
        RFTConfig(keep="all")
    with pytest.raises(ConfigError, match="demo_fraction"):
        RFTConfig(demo_fraction=1.0)
    bc = FINETUNE.to_config({"steps": 2000, "warmup_steps": 100})
    assert bc.steps == 2000 and bc.warmup_steps == 100


class _EvenSeedsExpert:
    """The scripted expert on even reset seeds; on odd ones it gives up after one step (a sure failure)."""

    def __init__(self, env):
        from rl.evalrun import ExpertPolicy

        self.expert = ExpertPolicy(env)
        self.odd = False
        self.steps = 0

    def reset(self, seed):
        self.expert.reset(seed)
        self.odd, self.steps = seed % 2 == 1, 0

    @property
    def done(self):
        return (self.odd and self.steps >= 1) or self.expert.done

    def __call__(self, obs):
        self.steps += 1
        return self.expert(obs)


def _weights(policy_dir):
    from safetensors.numpy import load_file

    return load_file(str(policy_dir / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_train_rft_keeps_only_successes_plus_demos_and_continues_from_the_init(tmp_path_factory, tmp_path,
                                                                             monkeypatch, capsys):
    import rl.evalrun
    from rl.bc import BCConfig, train_bc
    from rl.data.demos import record_demos
    from rl.data.reader import DemoDataset
    from rl.policies.configuration_flow_vla import FlowVLAConfig, VisionConfig
    from scenegen.cli import main
    from tests.helpers.rl_packs import pack as make_pack

    pack = make_pack(tmp_path_factory)
    demos = tmp_path / "demos"
    record_demos(str(pack.root), 2, str(demos), image_size=32, max_steps=300, progress=False)
    tiny = FlowVLAConfig(d_model=32, heads=2, obs_layers=0, expert_layers=1, chunk_size=4, n_action_steps=2,
                         vision=VisionConfig(channels=(8,), grid=1))
    train_bc(demos, tmp_path / "bc", tiny, BCConfig(steps=3, batch_size=4, warmup_steps=1, log_every=1, seed=1,
                                                    device="cpu"), progress=False)
    # The rollouts' policy: the expert on even seeds, a give-up on odd ones (the BC run is too small to succeed).
    monkeypatch.setattr(rl.evalrun, "make_policy", lambda spec, env: _EvenSeedsExpert(env))
    run = tmp_path / "rft"
    args = ["train", "rft", "--init", str(tmp_path / "bc"), "--pack", str(pack.root), "-o", str(run),
            "--rollouts", "4", "--rollout-seed", "10", "--demo-fraction", "0.5", "--max-episode-steps", "300",
            "--steps", "2", "--warmup-steps", "1", "--batch-size", "4", "--lr", "1e-8", "--ema-decay", "0",
            "--device", "cpu", "--no-progress"]
    main(args)

    rec = json.loads((run / "rft.json").read_text())
    c = rec["collect"]
    assert c["rollouts"] == 4 and sum(c["failures"].values()) == 4 - c["kept"] >= 2
    assert 1 <= c["successes"] == c["kept"] <= 2 and c["segments"] == 0
    ds = DemoDataset(run / "data")
    original = DemoDataset(demos)
    assert len(ds) == c["demo_episodes"] + c["kept"] and c["demo_episodes"] == c["kept"]
    seeds = [e["seed"] for e in ds.episodes_meta]
    demo_seeds = [e["seed"] for e in original.episodes_meta]
    rollout_seeds = seeds[c["demo_episodes"]:]
    assert all(s in (10, 12) for s in rollout_seeds), seeds  # only successes (even seeds) were kept
    assert seeds[:c["demo_episodes"]] == [demo_seeds[j % len(demo_seeds)] for j in range(c["demo_episodes"])]
    np.testing.assert_array_equal(ds[0].actions, original[0].actions)  # the originals, frame for frame
    assert ds.scenegen["env_config"]["image_size"] == 32 and ds.scenegen["pack"] == str(pack.root)

    # Fine-tuning continued from the init's weights (lr 1e-8: two steps leave them where they were).
    init_w, tuned_w = _weights(tmp_path / "bc" / "policy"), _weights(run / "policy")
    assert init_w.keys() == tuned_w.keys()
    assert max(float(np.abs(init_w[k] - tuned_w[k]).max()) for k in init_w) < 1e-5
    meta = json.loads((run / "run.json").read_text())
    assert meta["init"]["path"] == str((tmp_path / "bc").resolve()) and meta["init"]["step"] == 3
    fresh = tmp_path / "fresh"
    train_bc(run / "data", fresh, tiny, BCConfig(steps=2, batch_size=4, warmup_steps=1, lr=1e-8, ema_decay=0,
                                                 device="cpu"), progress=False)
    fresh_w = _weights(fresh / "policy")
    same = [k for k in init_w if init_w[k].shape == fresh_w[k].shape and init_w[k].size > 1]
    assert max(float(np.abs(init_w[k] - fresh_w[k]).max()) for k in same) > 1e-3  # a fresh model is elsewhere

    for extra, why in (([], "already holds an RFT run"), (["--rollouts", "5", "--resume"], "other settings")):
        with pytest.raises(SystemExit) as exit_info:
            main(args + extra)
        assert exit_info.value.code == 2 and why in capsys.readouterr().err


def test_rollout_dr_comes_from_a_dr_file_or_is_switched_off(tmp_path):
    from rl.diagnose import diagnose
    from rl.envs.config import DR_FACTORS
    from rl.guided_dr import propose, write_dr
    from rl.rft import RFTConfig
    from rl.rft_cli import _dr
    from tests.rl.test_diagnose import table

    doc = propose(diagnose(table(timeout=lambda f: 0.6 if f["camera_offset"] > 0.04 else 0.02)))
    path = write_dr(doc, tmp_path / "DR.json")
    assert dict(_dr(RFTConfig(), str(path)).weights) == doc["dr"]["weights"] != dict.fromkeys(DR_FACTORS, 1.0)
    assert set(dict(_dr(RFTConfig(randomize=False), None).weights).values()) == {0.0}
    with pytest.raises(ConfigError, match="--no-randomize"):
        _dr(RFTConfig(randomize=False), str(path))
