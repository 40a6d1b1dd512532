"""The generate -> check -> retry loop, the reports and the ``scenegen qa`` / ``generate --qa`` commands."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from qa.checks import feasibility
from qa.config import QAConfig, VisibilityConfig
from qa.loop import QAChecker, generate_with_qa
from qa.recheck import recheck_pack
from qa.report import build_report, render_markdown
from scenegen.cli import cli
from scenegen.pack.reader import load_pack
from scenegen.pipeline import PipelineConfig

PROMPT = "stack the red block on the blue block with no distractors"
FAST = PipelineConfig(preview_size=64, settle_seconds=1.0, attempts_per_scene=6.0)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("qa_loop_assets")


@pytest.fixture(scope="module")
def no_expert():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(feasibility, "_load_expert", lambda: (None, "ModuleNotFoundError: no expert in this test"))
        yield


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, cache, no_expert):
    out = tmp_path_factory.mktemp("qa_loop") / "pack"
    run = generate_with_qa(PROMPT, 2, out, seed=0, config=FAST, qa_cfg=QAConfig(), keep_rejected=True,
                           cache_dir=cache, progress=False)
    return run, out


def test_loop_accepts_n_scenes_within_budget(good_run):
    run, out = good_run
    assert run.complete and run.accepted == 2 and run.requested == 2
    assert run.message.startswith("2/2 scenes passed QA in")
    pack = load_pack(out)
    assert len(pack) == 2 and pack.verify() == []
    assert pack.manifest["qa"] == {"passed": 2, "failed": 0, "unchecked": 0}
    for sid in pack.scene_ids:
        qa = pack.qa(sid)
        assert qa["passed"] and qa["scene_id"] == sid and qa["skipped"] == ["feasibility"]
        assert [c["name"] for c in qa["checks"]] == ["geometry", "physics", "semantic", "visibility",
                                                      "reachability", "feasibility"]
    report = json.loads((out / "qa_report.json").read_text())
    assert report["mode"] == "generate" and report["accepted"] == 2 and report["scenes_passed"] >= 2
    assert report["checks"]["feasibility"]["skipped"] == report["checks"]["feasibility"]["run"]
    assert report["checks"]["feasibility"]["pass_rate"] is None
    assert report["checks"]["physics"]["seconds_mean"] > 0 and report["cost_per_scene_s"] > 0
    assert pack.manifest["summary"]["qa"]["scenes_passed"] == report["scenes_passed"]
    assert "| feasibility |" in (out / "qa_report.md").read_text()
    assert sum(run.reasons.values()) == run.attempts - 2


def test_budget_exhausted_gives_reasons_histogram(tmp_path, cache, no_expert):
    strict = QAConfig(checks=("physics", "visibility"), visibility=VisibilityConfig(min_fraction=0.5))
    cfg = PipelineConfig(preview_size=64, settle_seconds=1.0, attempts_per_scene=1.0)
    run = generate_with_qa(PROMPT, 1, tmp_path / "p", seed=1, config=cfg, qa_cfg=strict, keep_rejected=True,
                           cache_dir=cache, progress=False)
    assert not run.complete and run.accepted == 0 and run.attempts == 5
    assert run.message.startswith("only 0/1 scenes passed QA in 5 attempts (attempt budget of 5 graphs spent)")
    assert run.reasons.get("qa: visibility", 0) >= 1
    assert run.qa_failures["visibility: not visible"] == run.reasons["qa: visibility"]
    assert f"qa: visibility x{run.reasons['qa: visibility']}" in run.message
    assert "visibility: not visible x" in run.message
    kept = [d for d in (tmp_path / "p" / "rejected").iterdir()]
    assert len(kept) == sum(run.reasons.get(k, 0) for k in run.reasons if not k.startswith("LayoutError"))
    qa_kept = [json.loads((d / "qa.json").read_text()) for d in kept]
    assert all((d / "preview.png").is_file() and (d / "scene.json").is_file() for d in kept)
    assert any(q["rejected_because"].startswith("qa: visibility: not visible") for q in qa_kept)
    md = (tmp_path / "p" / "qa_report.md").read_text()
    assert '<img src="rejected/' in md and "not visible" in md


def test_recheck_cli_keeps_pack_content(good_run):
    _, out = good_run
    before = load_pack(out).content_hash
    res = CliRunner().invoke(cli, ["qa", str(out), "--checks", "physics,semantic", "--json", "--quiet"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["mode"] == "recheck" and report["scenes_checked"] == 2 and report["scenes_passed"] == 2
    assert set(report["checks"]) == {"physics", "semantic"} and report["checks"]["semantic"]["pass_rate"] == 1.0
    pack = load_pack(out)
    assert pack.content_hash == before and pack.verify() == []
    assert json.loads((out / "qa_report.json").read_text())["mode"] == "recheck"


def test_recheck_reports_failing_scenes_and_strict_exit(good_run, monkeypatch):
    _, out = good_run
    report = recheck_pack(out, QAConfig(checks=("visibility",), visibility=VisibilityConfig(min_fraction=0.5)),
                          progress=False, write=False)
    assert report["scenes_passed"] == 0 and report["checks"]["visibility"]["failed"] == 2
    assert all(r["preview"].startswith("scenes/") for r in report["rejected"])
    assert report["reasons"] == {"qa: visibility": 2}
    for k in ("SCENEGEN_VLM_BASE_URL", "SCENEGEN_VLM_MODEL"):
        monkeypatch.delenv(k, raising=False)
    res = CliRunner().invoke(cli, ["qa", str(out), "--checks", "semantic", "--vlm", "--strict", "--quiet",
                                   "--no-write"])
    assert res.exit_code != 0
    assert "0/2 scenes pass" in res.output and "vlm: unverified x2" in res.output


def test_generate_cli_runs_qa_inline(tmp_path, cache, no_expert):
    out = tmp_path / "cli_pack"
    res = CliRunner().invoke(cli, ["generate", PROMPT, "-n", "1", "-o", str(out), "--seed", "3", "--quiet",
                                   "--cache-dir", str(cache), "--checks", "physics,semantic,reachability"])
    assert res.exit_code == 0, res.output
    assert "1/1 scenes passed QA" in res.output and (out / "qa_report.md").is_file()
    pack = load_pack(out)
    assert [c["name"] for c in pack.qa(pack.scene_ids[0])["checks"]] == ["physics", "semantic", "reachability"]
    res = CliRunner().invoke(cli, ["generate", PROMPT, "-n", "1", "-o", str(tmp_path / "raw"), "--seed", "3",
                                   "--quiet", "--cache-dir", str(cache), "--no-qa"])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "raw" / "qa_report.json").exists()


def test_audit_mode_records_without_rejecting():
    checker = QAChecker(QAConfig(checks=("semantic",), enforce=False))
    from scenegen.scene import Scene
    from tests.helpers.qa_scenes import stack_graph

    scene = Scene(id="x", graph=stack_graph(), assets={}, poses={})

    class World:
        assets: dict = {}

        def poses(self):
            return {}

    data = checker(scene, World())
    assert data["passed"] is True and data["qa_passed"] is False and data["enforced"] is False
    assert data["checks"][0]["passed"] is False


def test_report_counts_skipped_apart_and_histograms():
    def rec(sid, **checks):
        out = []
        for name, (ok, reason, secs) in checks.items():
            out.append({"name": name, "passed": ok, "skipped": reason.startswith("skipped"), "reason": reason,
                        "seconds": secs, "score": 1.0 if ok else 0.0, "metrics": {}})
        return {"scene_id": sid, "passed": all(c["passed"] for c in out), "seconds": sum(c["seconds"] for c in out),
                "checks": out}

    accepted = [rec("a", physics=(True, "", 0.1), feasibility=(True, "skipped: expert not available", 0.0))]
    rejected = [{"id": "b", "attempt": 3, "reason": "qa: physics: floating: x", "preview": "rejected/b/preview.png",
                 "qa": rec("b", physics=(False, "floating: x touches nothing", 0.3),
                           feasibility=(True, "skipped: expert not available", 0.0))},
                {"id": "attempt-00004", "attempt": 4, "reason": "LayoutError: could not place", "qa": None}]
    report = build_report(accepted, rejected, run={"requested": 1, "attempts": 3,
                                                   "reasons": {"qa: physics": 1, "LayoutError": 1}},
                          accepted=[{"id": "a"}], prompt="p")
    assert report["checks"]["physics"] == {"run": 2, "passed": 1, "failed": 1, "skipped": 0, "seconds_total": 0.4,
                                           "pass_rate": 0.5, "seconds_mean": 0.2}
    assert report["checks"]["feasibility"]["skipped"] == 2 and report["checks"]["feasibility"]["pass_rate"] is None
    assert report["qa_failures"] == {"physics: floating": 1}
    assert report["reasons"] == {"LayoutError": 1, "qa: physics": 1}
    assert report["scenes_checked"] == 2 and report["scenes_passed"] == 1 and report["cost_per_scene_s"] == 0.2
    md = render_markdown(report)
    assert '<img src="rejected/b/preview.png" width="128">' in md and "(no preview)" in md
    assert "| physics | 2 | 1 | 1 | 0 | 50.0% | 0.200 |" in md
