"""The VLM judge against a local OpenAI-compatible server, through the real openai client."""

from __future__ import annotations

import base64
import io
import json
import logging

import pytest
from PIL import Image

from qa.checks import vlm
from qa.config import QAConfig, VLMConfig
from qa.loop import run_checks
from tests.helpers.fake_openai_server import FakeOpenAIServer, Reply
from tests.helpers.qa_scenes import GOOD, make_assets, place, settled, stack_graph

KEY = "sk-test-SECRET-0123456789"
GOOD_VERDICT = {"pass": True, "score": 0.9, "problems": []}


@pytest.fixture(scope="module")
def scene_world(tmp_path_factory):
    graph = stack_graph()
    assets = make_assets(graph, tmp_path_factory.mktemp("qa_vlm_assets"))
    scene = place(graph, assets, GOOD)
    world = settled(scene, assets)
    yield scene, world
    world.close()


def _cfg(srv, **kw) -> QAConfig:
    base = {"base_url": srv.base_url, "model": "judge-1", "api_key": KEY, "timeout_s": 5.0, "max_retries": 2,
            "backoff_s": 0.01, "image_size": 64}
    base.update(kw)
    return QAConfig(checks=("vlm",), vlm=VLMConfig(**base))


def _run(scene_world, srv, caplog=None, **kw):
    scene, world = scene_world
    res = vlm.check(scene, world, _cfg(srv, **kw))
    dumped = json.dumps(res.to_dict())
    assert KEY not in dumped and KEY not in res.reason
    if caplog is not None:
        assert KEY not in caplog.text
    return res


def test_good_verdict_passes_and_sends_views_and_task(scene_world, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer([Reply.json_content(GOOD_VERDICT, usage={"prompt_tokens": 700, "completion_tokens": 20,
                                                                   "total_tokens": 720})]) as srv:
        res = _run(scene_world, srv, caplog)
        req = srv.completions[0]
    assert res.passed and res.score == pytest.approx(0.9) and res.reason == ""
    assert res.metrics["attempts"] == 1 and res.metrics["tokens"]["total_tokens"] == 720
    assert res.metrics["latency_s"] > 0 and res.metrics["verdict"]["pass"] is True
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.json["model"] == "judge-1" and req.json["response_format"] == {"type": "json_object"}
    parts = req.messages[1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 2 and res.metrics["views"] == ["front", "side"]
    for url in images:
        assert url.startswith("data:image/png;base64,")
        img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert img.size == (64, 64) and img.format == "PNG"
    assert "stack the red block on the blue block" in req.text and "block_1 left of block_2" in req.text
    assert '"pass"' in req.text


def test_bad_verdict_fails_with_the_judges_problems(scene_world):
    bad = {"pass": False, "score": 0.2, "problems": ["the red block is not left of the blue block"]}
    with FakeOpenAIServer([Reply.json_content(bad)]) as srv:
        res = _run(scene_world, srv)
    assert not res.passed and res.score == pytest.approx(0.2)
    assert res.reason == "judge rejected: the red block is not left of the blue block"


def test_low_score_fails_even_with_pass_true(scene_world):
    with FakeOpenAIServer([Reply.json_content({"pass": True, "score": 0.3, "problems": []})]) as srv:
        res = _run(scene_world, srv)
    assert not res.passed and res.reason.startswith("judge score too low")


def test_http_500_is_retried_then_unverified(scene_world, caplog):
    with FakeOpenAIServer([Reply.error(500)]) as srv:
        res = _run(scene_world, srv, caplog)
        calls = len(srv.completions)
    assert not res.passed and res.score == 0.0
    assert res.reason.startswith("unverified: no verdict after 3 request(s)") and "HTTP 500" in res.reason
    assert calls == 3 and res.metrics["attempts"] == 3 and res.metrics["errors"] == ["HTTP 500"] * 3


def test_http_500_then_verdict_passes_after_backoff(scene_world):
    with FakeOpenAIServer([Reply.error(500), Reply.json_content(GOOD_VERDICT)]) as srv:
        res = _run(scene_world, srv)
    assert res.passed and res.metrics["attempts"] == 2 and res.metrics["errors"] == ["HTTP 500"]


def test_timeout_is_unverified(scene_world):
    with FakeOpenAIServer([Reply.sleep(3.0, json.dumps(GOOD_VERDICT))]) as srv:
        res = _run(scene_world, srv, timeout_s=0.3, max_retries=1)
    assert not res.passed and res.reason.startswith("unverified") and "timeout" in res.reason
    assert res.metrics["attempts"] == 2


@pytest.mark.parametrize("reply", [
    Reply(content="Looks fine to me! {{not json"),
    Reply.json_content({"pass": "yes", "score": 3}),
    Reply.garbage(),
], ids=["garbage-content", "wrong-schema", "garbage-body"])
def test_unparsable_answers_are_unverified(scene_world, reply):
    with FakeOpenAIServer([reply]) as srv:
        res = _run(scene_world, srv, max_retries=1)
    assert not res.passed and res.reason.startswith("unverified: no verdict after 2 request(s)")
    assert res.metrics["verdict"] is None


def test_http_400_retries_without_json_mode(scene_world):
    with FakeOpenAIServer([Reply.error(400, "response_format not supported"), Reply.json_content(GOOD_VERDICT)]) as srv:
        res = _run(scene_world, srv)
        reqs = srv.completions
    assert res.passed
    assert "response_format" in reqs[0].json and "response_format" not in reqs[1].json


def test_endpoint_from_environment_and_missing_endpoint(scene_world, monkeypatch):
    scene, world = scene_world
    for k in ("SCENEGEN_VLM_BASE_URL", "SCENEGEN_VLM_MODEL", "SCENEGEN_VLM_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    res = vlm.check(scene, world, QAConfig(checks=("vlm",)))
    assert not res.passed and res.reason.startswith("unverified: no VLM endpoint configured")
    with FakeOpenAIServer([Reply.json_content(GOOD_VERDICT)]) as srv:
        monkeypatch.setenv("SCENEGEN_VLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("SCENEGEN_VLM_MODEL", "env-model")
        monkeypatch.setenv("SCENEGEN_VLM_API_KEY", KEY)
        report = run_checks(scene, world, QAConfig(checks=("vlm",), vlm=VLMConfig(backoff_s=0.01, image_size=48)))
        req = srv.completions[0]
    assert report.passed and req.json["model"] == "env-model" and req.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(report.to_dict())


def test_key_is_not_in_config_repr_or_dict():
    cfg = QAConfig(vlm=VLMConfig(base_url="http://x/v1", model="m", api_key=KEY))
    assert KEY not in repr(cfg) and KEY not in json.dumps(cfg.to_dict())
