"""The LLM designer against endpoints that stall, trickle, echo secrets or send garbage (issue 12)."""

from __future__ import annotations

import base64
import json
import logging
import time

import pytest

from scenegen.cli import main
from scenegen.design.llm import LLMConfig, LLMDesigner
from scenegen.errors import BackendError, PromptError
from tests.helpers.bad_endpoints import BadEndpoint, echo_graph
from tests.scenegen.design.test_llm_designer import clean_env  # noqa: F401 - the autouse fixture

KEY = "sk-canary-5d41402abc4b2a76b9719d911017c592"
PASSWORD = "hunter2-canary"
PROMPT = "put the banana in the bowl"


def graph_text(headers: dict[str, str]) -> str:
    """A valid graph whose instruction quotes the request headers (a server that echoes them)."""
    return echo_graph(headers, PROMPT)


def secret_forms() -> list[str]:
    return [KEY, base64.b64encode(KEY.encode()).decode(), PASSWORD,
            base64.b64encode(f"user:{PASSWORD}".encode()).decode()]


def designer(url: str, **kw) -> LLMDesigner:
    cfg = {"base_url": url, "model": "m", "api_key": KEY, "timeout_s": 1.0, "max_retries": 0, "n_proposals": 1,
           "max_repair_rounds": 0, **kw}
    return LLMDesigner(LLMConfig(**cfg))


@pytest.mark.parametrize("mode", ["trickle", "stall"])
def test_a_trickling_or_stalled_endpoint_is_bounded_by_the_wall_clock(mode):
    with BadEndpoint(mode, graph_text, interval=0.3) as ep:
        start = time.monotonic()
        with pytest.raises(BackendError, match=r"did not answer within 1 s"):
            designer(ep.base_url, max_retries=1).design(PROMPT, 1)
        took = time.monotonic() - start
    assert took < 8.0, f"2 requests of 1 s took {took:.1f} s"  # unbounded, this ran past 175 s


def test_the_whole_design_call_has_a_deadline():
    with BadEndpoint("stall") as ep:
        start = time.monotonic()
        with pytest.raises(BackendError, match="deadline of 1.5 s"):
            designer(ep.base_url, timeout_s=1.0, max_retries=10, deadline_s=1.5).design(PROMPT, 1)
        assert time.monotonic() - start < 8.0


@pytest.mark.parametrize("mode", ["echo", "echo_error", "garbage", "error500"])
def test_no_secret_form_survives_in_graphs_errors_or_logs(mode, caplog, tmp_path, capsys):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with BadEndpoint(mode, graph_text) as ep:
        url = ep.base_url.replace("http://", f"http://user:{PASSWORD}@")
        try:
            graphs = designer(url).design(PROMPT, 2)
            seen += [g.to_json() for g in graphs]
            assert mode == "echo" and "***" in graphs[0].instruction
        except (BackendError, PromptError) as exc:
            seen.append(str(exc))
            assert mode != "echo"
        assert all("authorization" in h for h in ep.requests)
        assert all(PASSWORD not in json.dumps(h) for h in ep.requests), "URL credentials must not be sent"
    seen += [caplog.text]
    leaks = [form for form in secret_forms() for text in seen if form in text]
    assert not leaks, leaks
    assert "credentials" in caplog.text  # the stripped URL credentials are warned about


def test_design_cli_writes_no_echoed_key(tmp_path, monkeypatch, capsys):
    with BadEndpoint("echo", graph_text) as ep:
        monkeypatch.setenv("SCENEGEN_LLM_BASE_URL", ep.base_url)
        monkeypatch.setenv("SCENEGEN_LLM_MODEL", "m")
        monkeypatch.setenv("SCENEGEN_LLM_API_KEY", KEY)
        main(["design", PROMPT, "-n", "2", "--designer", "llm", "-o", str(tmp_path / "g")])
    files = list((tmp_path / "g").glob("*.json"))
    assert len(files) == 2
    text = "".join(f.read_text() for f in files) + "".join(capsys.readouterr())
    assert "***" in text and not [form for form in secret_forms() if form in text]


def test_a_huge_prompt_is_refused_before_any_request():
    with BadEndpoint("valid", graph_text({})) as ep:
        start = time.monotonic()
        with pytest.raises(PromptError, match="at most 2000"):
            designer(ep.base_url).design("put the banana in the bowl " * 4000, 1)
        assert time.monotonic() - start < 1.0 and not ep.requests
