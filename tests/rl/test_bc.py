"""Behaviour cloning and evaluation: a tiny FlowVLA overfits recorded episodes; runs resume; the CLI end to end."""

import json
import shutil

import numpy as np
import pytest

from rl.bc import BCConfig, lr_factor, train_bc
from rl.data.batches import AugmentConfig
from rl.data.demos import DemoDataset, record_demos
from rl.evaluate import evaluate
from rl.policies.configuration_flow_vla import FlowVLAConfig, VisionConfig
from rl.policies.modeling_flow_vla import load_policy
from scenegen.cli import main
from scenegen.errors import ConfigError
from tests.helpers.rl_packs import pack as make_pack

TINY = FlowVLAConfig(d_model=64, heads=4, obs_layers=1, expert_layers=2, chunk_size=8, n_action_steps=4,
                     time_distribution="uniform", vision=VisionConfig(channels=(16, 32, 32), grid=2))


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return make_pack(tmp_path_factory)


@pytest.fixture(scope="module")
def demos4(pack, tmp_path_factory):
    out = tmp_path_factory.mktemp("bc") / "ds4"
    record_demos(str(pack.root), 4, str(out), image_size=32, cameras=("front",), max_steps=300, progress=False)
    return out


def test_lr_schedule_warms_up_then_decays():
    cfg = BCConfig(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    f = [lr_factor(s, cfg) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0) and f[10] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(f[10:], f[11:], strict=False)) and f[-1] == pytest.approx(0.1, abs=1e-3)
    with pytest.raises(ConfigError, match="device"):
        BCConfig(device="tpu")


@pytest.mark.slow
@pytest.mark.timeout(1500)  # about 3 minutes on two idle cores; far longer on a loaded machine
def test_tiny_policy_overfits_four_episodes_and_reaches_their_goals(demos4, pack, tmp_path):
    """Loss falls 10x; closed-loop rollouts from each recorded episode's reset reach the goal.

    Each rollout resets like its recorded episode (scene, seed, so the same paraphrased instruction).
    The policy samples its chunks (K=10 from Gaussian noise), so each episode gets three rollouts with
    differently seeded noise: every episode must reach the goal in at least one, and half of all must.
    """
    cfg = BCConfig(steps=2000, batch_size=32, lr=2e-3, warmup_steps=50, log_every=100, checkpoint_every=10**6,
                   ema_decay=0.99, augment=AugmentConfig(enabled=False))
    s = train_bc(demos4, tmp_path / "run", TINY, cfg, progress=False)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert s["loss_first"] / lines[-1]["loss"] >= 10 and lines[0]["loss"] > lines[-1]["loss"], \
        (s["loss_first"], lines[0]["loss"], lines[-1]["loss"])
    ds = DemoDataset(demos4)
    wins = {}
    for e in ds.episodes_meta:
        wins[e["episode_index"]] = [
            evaluate(tmp_path / "run", pack.root, 1, seed=e["seed"], policy_seed=k, scene_ids=[e["scene_id"]])[
                "successes"] for k in (0, 1, 2)]
    assert all(any(w) for w in wins.values()) and sum(map(sum, wins.values())) >= 6, wins


def test_runs_resume_and_stop_at_a_time_limit(demos4, tmp_path):
    small = FlowVLAConfig(d_model=32, heads=2, obs_layers=0, expert_layers=1, chunk_size=4, n_action_steps=2,
                          vision=VisionConfig(channels=(8,), grid=1))
    cfg = BCConfig(steps=6, batch_size=4, warmup_steps=1, log_every=1, checkpoint_every=2, time_limit_s=1e-9)
    s = train_bc(demos4, tmp_path / "run", small, cfg, progress=False)
    assert s["steps"] == 1 and not s["done"] and s["policy"] is None
    with pytest.raises(ConfigError, match="--resume"):
        train_bc(demos4, tmp_path / "run", small, cfg, progress=False)
    cfg = BCConfig(steps=6, batch_size=4, warmup_steps=1, log_every=1, checkpoint_every=2)
    s = train_bc(demos4, tmp_path / "run", small, cfg, resume=True, progress=False)
    assert s["steps"] == 6 and s["done"]
    steps = [json.loads(x)["step"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ConfigError, match="policy settings differ"):
        train_bc(demos4, tmp_path / "run", FlowVLAConfig(d_model=16, heads=2), cfg, resume=True, progress=False)
    policy = load_policy(tmp_path / "run")
    assert policy.provenance["dataset_hash"] == DemoDataset(demos4).content_hash()
    assert policy.provenance["step"] == 6 and policy.config.robot_type == "panda"


def test_dataset_of_another_robot_and_checkpoint_of_another_action_space(demos4, pack, tmp_path):
    other = tmp_path / "so100"
    shutil.copytree(demos4, other)
    info = json.loads((other / "meta" / "info.json").read_text())
    info["robot_type"] = "so100"
    (other / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(ConfigError, match="robot 'so100'"):
        train_bc(other, tmp_path / "r0", TINY, BCConfig(steps=1), progress=False)
    small = FlowVLAConfig(d_model=16, heads=2, obs_layers=0, expert_layers=1, chunk_size=2, n_action_steps=1,
                          vision=VisionConfig(channels=(8,), grid=1))
    train_bc(demos4, tmp_path / "r1", small, BCConfig(steps=1, batch_size=2, warmup_steps=0), progress=False)
    dim = load_policy(tmp_path / "r1").config.action_dim
    other_mode = "ee5" if dim == 7 else "ee7"
    with pytest.raises(ConfigError, match=f"{dim}-D action space") as e:
        evaluate(tmp_path / "r1", pack.root, 1, action_mode=other_mode)
    assert "\n" not in str(e.value)


def test_a_run_continued_from_an_init_keeps_its_policy_and_refuses_other_settings(demos4, tmp_path):
    small = FlowVLAConfig(d_model=16, heads=2, obs_layers=0, expert_layers=1, chunk_size=2, n_action_steps=1,
                          vision=VisionConfig(channels=(8,), grid=1))
    cfg = BCConfig(steps=1, batch_size=2, warmup_steps=0, device="cpu")
    train_bc(demos4, tmp_path / "a", small, cfg, progress=False)
    with pytest.raises(ConfigError, match="drop the policy options"):
        train_bc(demos4, tmp_path / "b", small, cfg, init=tmp_path / "a", progress=False)
    train_bc(demos4, tmp_path / "b", None, cfg, init=tmp_path / "a", progress=False)
    assert load_policy(tmp_path / "b").config == load_policy(tmp_path / "a").config
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    assert meta["init"]["step"] == 1 and meta["init"]["path"] == str((tmp_path / "a").resolve())
    assert load_policy(tmp_path / "b").provenance["init"]["step"] == 1
    with pytest.raises(ConfigError, match="another checkpoint"):
        train_bc(demos4, tmp_path / "b", None, BCConfig(steps=2, batch_size=2, warmup_steps=0, device="cpu"),
                 resume=True, progress=False)


@pytest.mark.slow
def test_cli_train_then_eval(demos4, pack, tmp_path, capsys):
    run = tmp_path / "run"
    main(["train", "bc", str(demos4), "-o", str(run), "--steps", "4", "--batch-size", "4", "--d-model", "32",
          "--heads", "2", "--obs-layers", "0", "--expert-layers", "1", "--chunk-size", "4", "--n-action-steps", "4",
          "--eval-every", "4", "--eval-episodes", "2", "--log-every", "2", "--no-progress", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "done: step 4" in out and "eval success" in out
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    ev = [x for x in lines if x["kind"] == "eval"]
    assert len(ev) == 1 and ev[0]["episodes"] == 2 and len(ev[0]["success_ci95"]) == 2
    assert all("samples_per_s" in x and "grad_norm" in x for x in lines if x["kind"] == "train")
    assert list((run / "tb").glob("events.*"))  # TensorBoard scalars (tensorboard is a dev dependency here)
    main(["eval", str(run), "--pack", str(pack.root), "-n", "2", "--json", "--video", str(tmp_path / "vid"),
          "--videos", "1", "--max-steps", "15", "--steps", "1"])
    rep = json.loads(capsys.readouterr().out)
    for key in ("success_rate", "success_ci95", "progress", "progress_ci95", "episodes", "failures"):
        assert key in rep
    assert rep["episodes"] == 2 and rep["num_inference_steps"] == 1 and rep["failures"]["timeout"] == 2
    assert rep["per_episode"][0]["steps"] == 15 and len(rep["videos"]) == 1
    import av

    with av.open(rep["videos"][0]) as c:
        assert sum(1 for _ in c.decode(video=0)) == 16 and np.isfinite(rep["progress_ci95"]).all()


def test_vector_rollouts_with_two_workers_match_one(pack, tmp_path):
    from rl.envs.config import EnvConfig
    from rl.evaluate import make_eval_vec, rollout_episodes

    resets = [{"seed": 7 + i, "scene_id": pack.scene_ids[i % 3]} for i in range(3)]

    out = {}
    for workers in (1, 2):
        vec = make_eval_vec(pack.root, workers, EnvConfig(image_keys=(), max_episode_steps=6))
        dim = vec.single_action_space.shape[0]
        try:
            out[workers] = rollout_episodes(lambda o, e, d=dim: np.zeros((len(e), d), np.float32), vec, resets)
        finally:
            vec.close()
    assert [r["episode"] for r in out[2]] == [0, 1, 2]
    assert [(r["scene_id"], r["steps"], r["flags"]["timeout"]) for r in out[1]] == \
        [(r["scene_id"], r["steps"], r["flags"]["timeout"]) for r in out[2]]
    assert [r["scene_id"] for r in out[1]] == [c["scene_id"] for c in resets]
