"""Frozen eval sets: hashing, tamper refusal, versions, tiers, scores, compare; end to end with the expert."""

from __future__ import annotations

import csv
import json

import pytest

from rl.evalreport import compare, markdown, write_run
from rl.evalrun import score, score_group
from rl.evalset import CHANGED, SCHEMA, bump, freeze, load_evalset, rollout_seed
from rl.evalset_tiers import DEFAULT_TIERS, parse_tiers, tier_prompt
from rl.stats import wilson_interval
from scenegen.errors import ConfigError


def doc(configs=2, repeats=1):
    return {"schema": SCHEMA, "name": "synthetic", "version": 1, "parent_hash": None, "repeats": repeats,
            "episode": {"max_episode_steps": 50}, "dr": None, "packs": {}, "history": [],
            "configurations": [{"id": f"t1-{i:04d}", "tier": 1, "seed": 100 + i, "objects": []}
                               for i in range(configs)]}


def episode(conf, tier=1, success=True, progress=None, steps=40, cat="banana", repeat=0, failure=None):
    return {"config": conf, "tier": tier, "repeat": repeat, "success": success,
            "progress": float(success) if progress is None else progress, "steps": steps,
            "time_to_success_s": steps / 20 if success else None, "failure": None if success else failure or "timeout",
            "flags": {}, "factors": {"target_category": cat, "tier": tier}}


def test_parse_tiers():
    assert parse_tiers("1-5") == (1, 2, 3, 4, 5)
    assert parse_tiers("3,1, 2-3") == (1, 2, 3)
    for bad in ("0-2", "a", "3-1", ""):
        with pytest.raises(ConfigError):
            parse_tiers(bad)


def test_tier_prompts_add_clutter_and_density_without_rewording_the_prompt():
    from rl.evalset_tiers import tier_pipeline
    from scenegen.design.family_draw import design_run
    from scenegen.pipeline import PipelineConfig

    p1, k1 = tier_prompt("put the banana in the bowl", 1)
    p5, k5 = tier_prompt("put the banana in the bowl", 5)
    assert p1 == p5 == "put the banana in the bowl"
    assert k5["margin"] < k1["margin"] and k5["distractors"] == DEFAULT_TIERS[5].distractors > k1["distractors"]
    cfg = tier_pipeline(PipelineConfig(), k5)
    assert cfg.scene.layout.distractors == k5["distractors"] and cfg.scene.layout.margin == k5["margin"]
    graphs, _ = design_run(p5, 3, 0, cfg)  # the pipeline's design step: K distractors, the instruction as written
    assert all(len(g.objects("distractor")) == k5["distractors"] for g in graphs)
    assert all(g.instruction == p5 and "distractor" not in " ".join(g.instructions) for g in graphs)
    with pytest.raises(ConfigError, match="already sets its distractors"):
        tier_prompt("put the banana in the bowl with 3 distractors", 2)
    with pytest.raises(ConfigError, match="no recipe"):
        tier_prompt("put the banana in the bowl", 9)


def test_tampered_set_is_refused_and_bump_freezes_a_new_version(tmp_path):
    es = freeze(doc(), tmp_path / "set")
    assert load_evalset(tmp_path / "set").content_hash == es.content_hash
    f = tmp_path / "set" / "evalset.json"
    data = json.loads(f.read_text())
    data["configurations"][0]["seed"] = 7  # someone edits a configuration
    f.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=CHANGED):
        load_evalset(tmp_path / "set")
    v2 = bump(tmp_path / "set", repeats=3, note="reseeded one configuration")
    assert v2.version == 2 and v2.doc["parent_hash"] == es.content_hash and v2.repeats == 3
    again = load_evalset(tmp_path / "set")
    assert again.content_hash == v2.content_hash != es.content_hash
    assert again.doc["history"][-1]["note"] == "reseeded one configuration"
    assert len(again.episodes()) == 2 * 3
    # a new version elsewhere keeps the parent untouched
    v3 = bump(tmp_path / "set", tmp_path / "v3", max_episode_steps=80)
    assert v3.version == 3 and v3.episode["max_episode_steps"] == 80 and load_evalset(tmp_path / "set").version == 2


def test_rollout_seeds_differ_per_repeat():
    seeds = {rollout_seed(100, r) for r in range(5)}
    assert len(seeds) == 5 and rollout_seed(100, 0) == 100


def test_scores_per_tier_and_category():
    eps = [episode("a", 1), episode("b", 1, success=False, progress=0.5), episode("c", 2, cat="mug"),
           episode("d", 2, success=False, cat="mug", failure="knocked_off"), episode("e", 2, cat="mug")]
    s = score(eps)
    o = s["overall"]
    assert o["successes"] == 3 and o["episodes"] == 5 and o["success_ci95"] == list(wilson_interval(3, 5))
    assert o["progress"]["mean"] == pytest.approx((1 + 0.5 + 1 + 0 + 1) / 5)
    assert s["per_tier"]["1"]["success_rate"] == 0.5 and s["per_tier"]["2"]["success_rate"] == pytest.approx(2 / 3)
    assert set(s["per_category"]) == {"banana", "mug"}
    assert o["failures"] == {"timeout": 1, "knocked_off": 1}
    assert o["time_to_success_s"]["n"] == 3
    assert o["success_ci95_by_configuration"] is None  # one episode per configuration
    rep = score_group([episode("a", repeat=0), episode("a", repeat=1, success=False), episode("b"), episode("b")])
    assert rep["configurations"] == 2 and rep["success_ci95_by_configuration"] is not None
    with pytest.raises(ConfigError):
        score([])


def fake_run(policy, succ, set_hash="h" * 64):
    eps = [episode(f"c{i}", success=bool(v)) for i, v in enumerate(succ)]
    return {"policy": policy, "set": {"content_hash": set_hash, "version": 1, "name": "s", "repeats": 1,
                                      "episode_steps": 50}, "episodes": eps, "scores": score(eps)}


def test_compare_tests_against_the_first_and_refuses_other_sets():
    a = fake_run("a", [1] * 18 + [0] * 2)
    b = fake_run("b", [1] * 6 + [0] * 14)
    cmp = compare([a, b])
    t = cmp["tests"][0]
    assert t["two_proportion"]["diff"] == pytest.approx(-0.6) and t["two_proportion"]["p_value"] < 0.001
    assert t["paired_bootstrap_success"]["diff"] == pytest.approx(-0.6)
    assert t["paired_bootstrap_success"]["diff_ci95"][1] < 0
    same = compare([a, fake_run("a2", [1] * 18 + [0] * 2)])["tests"][0]
    assert same["two_proportion"]["p_value"] == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="one frozen set"):
        compare([a, fake_run("c", [1] * 20, set_hash="x" * 64)])
    with pytest.raises(ConfigError):
        compare([a])


@pytest.mark.slow
def test_make_run_export_and_refuse_end_to_end(tmp_path_factory, tmp_path):
    from rl.envs import DRConfig
    from rl.evalrun import run_evalset
    from rl.evalset import make_evalset
    from rl.evalset_export import export_layouts
    from scenegen.cli import main
    from tests.helpers.rl_packs import pack as make_pack

    pack = make_pack(tmp_path_factory)
    kw = {"packs": [pack.root], "dr": DRConfig(), "repeats": 2, "max_episode_steps": 200, "seed": 3, "name": "b"}
    es = make_evalset(None, tmp_path / "set", 3, **kw)
    again = make_evalset(None, tmp_path / "set2", 3, **kw)
    assert es.content_hash == again.content_hash  # same pack, seed and settings: same set
    conf = es.configurations[0]
    assert {"objects", "robot", "dr_draw", "factors", "seed", "episode_steps", "scene_id"} <= set(conf)
    assert conf["dr_draw"]["friction"] and conf["factors"]["target_category"] == "banana"
    assert es.doc["packs"]["tier-1"]["content_hash"] == pack.content_hash

    expert, clips = run_evalset(es, "expert", image_keys=(), image_size=32, videos=1, progress=False)
    rand, _ = run_evalset(es, "random", image_keys=(), image_size=32, progress=False)
    eo, ro = expert["scores"]["overall"], rand["scores"]["overall"]
    assert eo["episodes"] == ro["episodes"] == 6 and eo["configurations"] == 3
    assert eo["successes"] >= 4 and eo["successes"] > ro["successes"]
    assert all(e["steps"] <= 200 for e in expert["episodes"] + rand["episodes"])
    assert [e["seed"] for e in expert["episodes"]] == [e["seed"] for e in rand["episodes"]]
    root = write_run(tmp_path / "run", expert, clips)
    assert (root / "tiers.png").exists() and (root / "videos").is_dir() and "tier 1" in markdown(expert)

    out = export_layouts(es, tmp_path / "export")
    rows = list(csv.DictReader((tmp_path / "export" / "layouts.csv").open()))
    assert len(rows) == out["rows"] == sum(len(c["objects"]) for c in es.configurations)
    assert out["pictures"] == 3 and (tmp_path / "export" / "topdown" / f"{conf['id']}.png").stat().st_size > 5000

    # a re-frozen set whose recorded pose no longer matches what the env resets to is refused at run time
    f = tmp_path / "set" / "evalset.json"
    data = json.loads(f.read_text())
    data["configurations"][0]["objects"][0]["position"][0] += 0.05
    f.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exc:
        main(["evalset", "show", str(tmp_path / "set")])
    assert exc.value.code == 2
    moved = bump(tmp_path / "set")
    with pytest.raises(ConfigError, match="differs from the frozen eval set"):
        run_evalset(moved, "expert", image_keys=(), progress=False)


@pytest.mark.slow
def test_a_flowvla_checkpoint_runs_on_a_set(tmp_path_factory, tmp_path):
    import torch

    from rl.envs import PickPlaceEnv
    from rl.evalrun import run_evalset
    from rl.evalset import make_evalset
    from rl.policies.base import STATE
    from rl.policies.configuration_flow_vla import FlowVLAConfig, TextConfig, VisionConfig, resolve
    from rl.policies.modeling_flow_vla import FlowVLA
    from tests.helpers.rl_packs import pack as make_pack

    pack = make_pack(tmp_path_factory)
    es = make_evalset(None, tmp_path / "set", 2, packs=[pack.root], max_episode_steps=6)
    env = PickPlaceEnv(pack.root, image_keys=())
    a_dim, s_dim = env.action_space.shape[0], env.observation_space["proprio"].shape[0]
    env.close()
    words = sorted(set(es.configurations[0]["instruction"].split()))
    cfg = resolve(FlowVLAConfig(chunk_size=4, n_action_steps=2, num_inference_steps=2, d_model=16, heads=2,
                                obs_layers=1, expert_layers=1, ff_mult=2, vision=VisionConfig(channels=(8, 16), grid=2),
                                text=TextConfig(layers=0, vocab=("<pad>", "<unk>", *words))),
                  action_dim=a_dim, state_dim=s_dim, cameras=("front",), robot_type="panda", tasks=words)
    torch.manual_seed(0)
    stats = {STATE: {"mean": [0.0] * s_dim, "std": [1.0] * s_dim},
             "action": {"mean": [0.0] * a_dim, "std": [0.5] * a_dim}}
    FlowVLA(cfg, stats).save(tmp_path / "ckpt")
    res, _ = run_evalset(es, str(tmp_path / "ckpt"), image_keys=("front",), image_size=32, progress=False)
    assert [e["steps"] for e in res["episodes"]] == [6, 6]
    assert res["scores"]["overall"]["episodes"] == 2
    with pytest.raises(ConfigError, match="cameras"):
        run_evalset(es, str(tmp_path / "ckpt"), image_keys=(), progress=False)
