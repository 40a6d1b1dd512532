"""The VLM judge against endpoints that stall, trickle or echo the key (issue 12): bounded, unverified, no leak."""

from __future__ import annotations

import base64
import json
import logging
import time

import pytest

from qa.checks import vlm
from qa.config import QAConfig, VLMConfig
from qa.report import build_report, render_markdown
from tests.helpers.bad_endpoints import BadEndpoint
from tests.qa.test_qa_vlm import scene_world  # noqa: F401, F811 - the settled scene and world fixture

KEY = "sk-canary-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
PASSWORD = "s3cret-canary-pw"


def _cfg(url: str, **kw) -> QAConfig:
    base = {"base_url": url, "model": "judge", "api_key": KEY, "timeout_s": 1.0, "max_retries": 0,
            "backoff_s": 0.05, "image_size": 32, "views": ("front",)}
    return QAConfig(checks=("vlm",), vlm=VLMConfig(**{**base, **kw}))


@pytest.mark.parametrize("mode", ["trickle", "stall"])
def test_a_trickling_or_stalled_judge_is_unverified_within_the_deadline(scene_world, mode):  # noqa: F811
    scene, world = scene_world
    with BadEndpoint(mode, json.dumps({"pass": True, "score": 1.0, "problems": []}), interval=0.3) as ep:
        start = time.monotonic()
        res = vlm.check(scene, world, _cfg(ep.base_url, max_retries=1))
        took = time.monotonic() - start
    assert not res.passed and res.reason.startswith("unverified") and "deadline" in res.reason
    assert res.metrics["attempts"] == 2
    assert took < 6.0, f"two 1 s requests took {took:.1f} s"  # unbounded, this ran past 175 s


def test_an_echoed_key_reaches_no_result_or_report(scene_world, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)
    scene, world = scene_world

    def verdict(headers: dict[str, str]) -> str:
        echoed = f"{headers.get('authorization')} {json.dumps(headers)}"
        return json.dumps({"pass": False, "score": 0.1, "problems": [f"the header was {echoed}"]})

    results = []
    for mode in ("echo", "echo_error"):
        with BadEndpoint(mode, verdict) as ep:
            url = ep.base_url.replace("http://", f"http://user:{PASSWORD}@")
            results.append(vlm.check(scene, world, _cfg(url)))
            assert all(PASSWORD not in json.dumps(h) for h in ep.requests), "URL credentials must not be sent"
    assert results[0].reason.startswith("judge rejected") and "***" in results[0].reason
    assert results[1].reason.startswith("unverified")
    records = [{"scene_id": scene.id, "passed": False, "checks": [r.to_dict() for r in results], "failed": ["vlm"]}]
    report = build_report([], [{"id": scene.id, "attempt": 0, "reason": results[0].reason, "qa": records[0]}],
                          mode="recheck")
    text = json.dumps([r.to_dict() for r in results]) + json.dumps(report) + render_markdown(report) + caplog.text
    forms = [KEY, PASSWORD, base64.b64encode(f"user:{PASSWORD}".encode()).decode()]
    assert not [f for f in forms if f in text]
