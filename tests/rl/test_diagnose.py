"""Failure diagnosis on synthetic result tables with planted failure modes, and guided DR from a diagnosis."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from rl.diagnose import diagnose, episode_modes, markdown
from rl.envs import DRConfig, EnvConfig
from rl.guided_dr import dr_from_options, dr_summary, load_dr, propose, write_dr
from scenegen.errors import ConfigError

FLAGS = ("grasp_failed", "dropped", "knocked_off", "wrong_object", "timeout")


def table(n=400, seed=1, knock=lambda f: 0.04, grasp=lambda f: 0.08, timeout=lambda f: 0.0):
    """Synthetic episodes: each flag drawn with a probability that depends on the episode's factors."""
    rng = np.random.default_rng(seed)
    eps = []
    for i in range(n):
        f = {"tier": int(rng.integers(1, 6)), "target_category": str(rng.choice(["bottle", "mug", "can"])),
             "nn_distance": float(rng.uniform(0.03, 0.3)), "clutter": float(rng.uniform(0, 0.3)),
             "n_objects": int(rng.integers(2, 8)), "n_distractors": int(rng.integers(0, 6)),
             "light_diffuse": float(rng.uniform(0.4, 0.8)), "light_elevation_deg": float(rng.uniform(40, 80)),
             "camera_offset": float(rng.uniform(0, 0.05)), "target_friction_scale": float(rng.uniform(0.75, 1.25)),
             "target_mass_scale": float(rng.uniform(0.75, 1.25))}
        flags = dict.fromkeys(FLAGS, False)
        flags["knocked_off"] = bool(rng.random() < knock(f))
        flags["grasp_failed"] = bool(rng.random() < grasp(f))
        flags["timeout"] = bool(rng.random() < timeout(f))
        ok = not any(flags.values())
        eps.append({"config": f"c{i}", "tier": f["tier"], "success": ok, "flags": flags,
                    "failure": None if ok else next(k for k in FLAGS if flags[k]), "factors": f})
    return {"policy": "synthetic", "episodes": eps}


def mode(d, name):
    return next(m for m in d["modes"] if m["mode"] == name)


def test_planted_close_neighbours_mode_is_found_and_ranked():
    res = table(knock=lambda f: 0.5 if f["nn_distance"] < 0.07 else 0.03)
    d = diagnose(res)
    knocked = mode(d, "knocked_off")
    top = knocked["conditions"][0]
    assert top["factor"] == "nn_distance" and "<=" in top["condition"]
    thr = float(top["condition"].split("<=")[1].split()[0])
    assert 0.05 <= thr <= 0.1
    assert top["rate_in"] > 0.3 > 0.1 > top["rate_out"]
    assert top["p_adjusted"] < 1e-6 and top["rate_in_ci95"][0] > top["rate_out_ci95"][1]
    assert "knocked_off rises when nn_distance <=" in " ".join(knocked["summary"])
    # the uniform mode has no significant condition after the Holm adjustment
    assert mode(d, "grasp_failed")["conditions"] == []
    assert "| knocked_off |" in markdown(d)


def test_planted_tier_mode_and_ranking_by_frequency():
    res = table(timeout=lambda f: 0.6 if f["tier"] == 5 else 0.02, knock=lambda f: 0.0, grasp=lambda f: 0.02)
    d = diagnose(res)
    assert d["modes"][0]["mode"] == "timeout"  # the most frequent mode comes first
    conds = d["modes"][0]["conditions"]
    assert conds[0]["condition"] == "tier = 5"
    assert d["failure_by_level"]["tier"]["5"]["rate"] > 0.5 > d["failure_by_level"]["tier"]["1"]["rate"]
    counts = [m["count"] for m in d["modes"]]
    assert counts == sorted(counts, reverse=True)


def test_modes_of_an_episode():
    assert episode_modes({"success": True, "flags": {"grasp_failed": True}}) == set()
    assert episode_modes({"success": False, "flags": dict.fromkeys(FLAGS, False), "failure": "gave_up"}) == {"gave_up"}
    assert episode_modes({"success": False, "flags": dict.fromkeys(FLAGS, False), "failure": None}) == {"unfinished"}
    with pytest.raises(ConfigError):
        diagnose({"episodes": []})


def test_propose_moves_only_the_implicated_knobs(tmp_path):
    res = table(knock=lambda f: 0.5 if f["camera_offset"] > 0.035 else 0.03,
                grasp=lambda f: 0.4 if f["nn_distance"] < 0.07 else 0.03)
    d = diagnose(res)
    doc = propose(d)
    w = doc["dr"]["weights"]
    assert w["camera_pose"] > 1.5
    assert all(w[k] == 1.0 for k in w if k != "camera_pose")  # not a uniform widening
    assert doc["layout"]["margin_scale"] < 1.0
    assert any(e["change"].startswith("dr.weights.camera_pose") for e in doc["evidence"])
    tw = doc["layout"]["tier_weights"]
    assert set(tw) == {"1", "2", "3", "4", "5"} and sum(tw.values()) == pytest.approx(1.0, abs=1e-3)
    path = write_dr(doc, tmp_path / "DR.json")
    cfg = load_dr(path)
    assert isinstance(cfg, DRConfig) and cfg.weight("camera_pose") == pytest.approx(w["camera_pose"])
    assert cfg.amplitude("camera_pose") > DRConfig().amplitude("camera_pose")
    EnvConfig(dr=cfg)  # the env accepts it


def test_proposed_relative_factors_stay_in_range():
    res = table(knock=lambda f: 0.9 if f["target_friction_scale"] < 0.85 else 0.01, grasp=lambda f: 0.0)
    doc = propose(diagnose(res), strength=5.0)
    cfg = DRConfig(**{**doc["dr"], "weights": doc["dr"]["weights"]})
    assert 0.25 < cfg.amplitude("friction") < 1.0


def test_tier_weights_follow_failures():
    res = table(timeout=lambda f: 0.7 if f["tier"] >= 4 else 0.05, knock=lambda f: 0.0, grasp=lambda f: 0.0)
    tw = propose(diagnose(res))["layout"]["tier_weights"]
    assert min(tw["4"], tw["5"]) > 2 * max(tw["1"], tw["2"], tw["3"])


def test_load_dr_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dr": {"wobble": 1}}))
    with pytest.raises(ConfigError, match="unknown DR field"):
        load_dr(bad)
    bad.write_text(json.dumps({"friction": 0.5, "weights": {"friction": 3.0}}))
    with pytest.raises(ConfigError, match="friction"):
        load_dr(bad)
    with pytest.raises(ConfigError, match="no DR file"):
        load_dr(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="diagnosis"):
        propose({"episodes": []})


def test_dr_from_options(tmp_path):
    f = tmp_path / "dr.json"
    f.write_text(json.dumps({"dr": {"weights": {"mass": 2.0, "friction": 0.0}}}))
    assert dr_from_options(False, None) is None
    assert dr_from_options(False, None, off=DRConfig.off()) == DRConfig.off()
    assert dr_from_options(True, None) == DRConfig()
    got = dr_from_options(True, f)
    assert got.weight("mass") == 2.0 and got.weight("friction") == 0.0 and got != DRConfig()
    assert dr_summary(got)["weights"]["mass"] == 2.0 and dr_summary(None) is None
    with pytest.raises(ConfigError, match="--dr with --no-randomize"):
        dr_from_options(False, f)
    with pytest.raises(ConfigError, match="no DR file"):
        dr_from_options(True, tmp_path / "missing.json")


def test_cli_diagnose_then_propose(tmp_path):
    from rl.eval_cli import diagnose as diag_cmd
    from rl.eval_cli import dr
    from rl.evalrun import RESULT_SCHEMA

    res = table(knock=lambda f: 0.5 if f["nn_distance"] < 0.07 else 0.03)
    res["schema"] = RESULT_SCHEMA
    (tmp_path / "result.json").write_text(json.dumps(res))
    out = CliRunner().invoke(diag_cmd, [str(tmp_path / "result.json"), "-o", str(tmp_path / "diag.json")])
    assert out.exit_code == 0, out.output
    assert "knocked_off rises when nn_distance" in out.output
    out = CliRunner().invoke(dr, ["propose", str(tmp_path / "diag.json"), "-o", str(tmp_path / "DR.json")])
    assert out.exit_code == 0, out.output
    assert "margin_scale" in out.output
    assert load_dr(tmp_path / "DR.json").weight("camera_pose") == 1.0
