"""The LLM designer against a local OpenAI-compatible server, through the real openai client."""

from __future__ import annotations

import json
import logging
import socket
import sys
import time

import pytest

from scenegen.design import llm_prompt
from scenegen.design.base import Designer
from scenegen.design.llm import LLMConfig, LLMDesigner, endpoint_host
from scenegen.errors import BackendError, ConfigError, PromptError
from scenegen.graph import SceneGraph
from tests.helpers.fake_openai_server import FakeOpenAIServer, Reply

KEY = "sk-test-SECRET-7f3a9c1e5b"
PROMPT = "put the banana in the bowl"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("SCENEGEN_LLM_BASE_URL", "SCENEGEN_LLM_MODEL", "SCENEGEN_LLM_API_KEY",
                 "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def graph_dict(distractors=(("mug", "red"),), bowl="bowl") -> dict:
    objects = [{"id": "table", "category": "table", "role": "support"},
               {"id": "banana_1", "category": "banana", "role": "target", "attributes": {"color": "yellow"}},
               {"id": "bowl_1", "category": bowl, "role": "receptacle", "attributes": {"color": "blue"}}]
    relations = [{"subject": "banana_1", "relation": "on", "object": "table"},
                 {"subject": "bowl_1", "relation": "on", "object": "table"}]
    for i, (cat, color) in enumerate(distractors):
        objects.append({"id": f"d_{i}", "category": cat, "role": "distractor", "attributes": {"color": color}})
        relations.append({"subject": f"d_{i}", "relation": "on", "object": "table"})
    return {"schema_version": 1, "instruction": PROMPT, "objects": objects, "relations": relations,
            "goals": [{"subject": "banana_1", "predicate": "in", "object": "bowl_1"}]}


def make(server: FakeOpenAIServer, **kw) -> LLMDesigner:
    cfg = {"base_url": server.base_url, "model": "fake-model", "api_key": KEY, "timeout_s": 5.0, "max_retries": 0,
           "n_proposals": 1, **kw}
    return LLMDesigner(LLMConfig(**cfg))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- good answers
def test_good_graph_and_request_shape():
    with FakeOpenAIServer([Reply.json_content(graph_dict(), usage={"prompt_tokens": 900, "completion_tokens": 120,
                                                                     "total_tokens": 1020})]) as srv:
        designer = make(srv, temperature=0.3)
        (g,) = designer.design(PROMPT, 1, seed=7)
    assert isinstance(designer, Designer)
    assert g.validate() == [] and g.content_hash() == SceneGraph.from_dict(graph_dict()).content_hash()
    m = g.meta
    assert (m["designer"], m["source"], m["model"], m["repair_rounds"], m["proposal"]) == ("llm", "llm",
                                                                                           "fake-model", 0, 0)
    assert m["host"] == f"127.0.0.1:{srv.port}" and m["latency_s"] >= 0
    assert m["usage"] == {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}
    (req,) = srv.completions
    body = req.json
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == "fake-model" and body["temperature"] == 0.3 and body["seed"] == 7
    assert not {"tools", "functions", "tool_choice"} & set(body)  # output is data: no tool calls
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "scene_graph"
    assert rf["json_schema"]["strict"] is False and "objects" in rf["json_schema"]["schema"]["properties"]
    system = body["messages"][0]["content"]
    for word in ("cutting_board", "left_of", "receptacle", "inverted", "purple", '"additionalProperties"'):
        assert word in system
    assert PROMPT in body["messages"][1]["content"]


def test_fenced_reply_with_prose_and_synonyms_is_accepted():
    d = graph_dict(distractors=(("cutting board", "wood"),))
    d["meta"] = {"injected": "by the model"}
    reply = "Sure! Here is the scene:\n```json\n" + json.dumps(d, indent=2) + "\n```\nEnjoy."
    with FakeOpenAIServer([reply]) as srv:
        (g,) = make(srv).design(PROMPT, 1)
    assert [o.category for o in g.objects("distractor")] == ["cutting_board"]
    assert "injected" not in g.meta and g.meta["repair_rounds"] == 0


def test_example_in_system_prompt_is_valid(catalog):
    assert SceneGraph.from_dict(llm_prompt.EXAMPLE).validate(catalog) == []
    graph, problems = llm_prompt.parse_reply("[1, 2]", catalog)
    assert graph is None and "not an object" in problems[0]


# ---------------------------------------------------------------- repair rounds
def test_invalid_graph_repaired_in_second_round():
    bad = graph_dict(bowl="bowll")
    with FakeOpenAIServer([Reply.json_content(bad), Reply.json_content(graph_dict())]) as srv:
        (g,) = make(srv).design(PROMPT, 1)
    assert g.validate() == [] and g.meta["repair_rounds"] == 1
    assert len(srv.completions) == 2
    second = srv.completions[1].json["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert json.loads(second[2]["content"]) == bad
    assert "unknown category 'bowll'" in second[3]["content"] and "Problems" in second[3]["content"]
    assert g.meta["usage"]["total_tokens"] > 0


def test_invalid_graph_never_repaired_raises_prompt_error():
    bad = graph_dict()
    bad["goals"] = [{"subject": "banana_1", "predicate": "on", "object": "table"}]  # already true
    with FakeOpenAIServer([Reply.json_content(bad)]) as srv:
        with pytest.raises(PromptError, match=r"did not produce a valid scene graph after 2 repair rounds: "
                                              r"\[goal_already_true\]"):
            make(srv, max_repair_rounds=2).design(PROMPT, 1)
    assert len(srv.completions) == 3
    assert "goal_already_true" in srv.completions[2].json["messages"][-1]["content"]


def test_garbage_content_goes_back_then_fails():
    with FakeOpenAIServer(["I am sorry {{{ not json", Reply(content=None), "```json\n[oops\n```"]) as srv:
        with pytest.raises(PromptError, match="not valid JSON"):
            make(srv, max_repair_rounds=2).design(PROMPT, 1)
    texts = [r.json["messages"][-1]["content"] for r in srv.completions]
    assert "not valid JSON" in texts[1] and "empty" in texts[2]


def test_schema_mismatch_is_a_problem_not_a_crash():
    d = graph_dict()
    d["objects"][1]["role"] = "hero"
    d["relations"].append({"subject": "ghost", "relation": "on", "object": "table"})
    with FakeOpenAIServer([Reply.json_content(d), Reply.json_content(graph_dict())]) as srv:
        (g,) = make(srv).design(PROMPT, 1)
    assert g.meta["repair_rounds"] == 1
    assert "does not match the schema" in srv.completions[1].json["messages"][-1]["content"]


# ---------------------------------------------------------------- transport errors
def test_http_500_after_retries_is_backend_error():
    with FakeOpenAIServer([Reply.error(500, "model crashed")]) as srv:
        with pytest.raises(BackendError, match=rf"127\.0\.0\.1:{srv.port} answered HTTP 500 \(after 2 retries\)"):
            make(srv, max_retries=2).design(PROMPT, 1)
    assert len(srv.completions) == 3


def test_http_429_names_rate_limit():
    with FakeOpenAIServer([Reply.error(429, "slow down")]) as srv:
        with pytest.raises(BackendError, match="HTTP 429.*rate-limiting"):
            make(srv, max_retries=1).design(PROMPT, 1)
    assert len(srv.completions) == 2


def test_timeout_is_backend_error_and_bounded():
    with FakeOpenAIServer([Reply.sleep(10, json.dumps(graph_dict()))]) as srv:
        start = time.monotonic()
        with pytest.raises(BackendError, match=r"did not answer within 0\.3 s.*raise timeout_s"):
            make(srv, timeout_s=0.3, max_retries=0).design(PROMPT, 1)
        assert time.monotonic() - start < 3.0


def test_connection_refused_is_backend_error():
    port = closed_port()
    cfg = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, timeout_s=2)
    with pytest.raises(BackendError, match=rf"could not connect to the LLM endpoint 127\.0\.0\.1:{port}"):
        LLMDesigner(cfg).design(PROMPT, 1)


def test_non_json_http_body_and_missing_choices():
    with FakeOpenAIServer([Reply.garbage()]) as srv:
        with pytest.raises(BackendError, match="body that is not JSON"):
            make(srv).design(PROMPT, 1)
    with FakeOpenAIServer([Reply(body={"object": "something else"})]) as srv:
        with pytest.raises(BackendError, match="without a chat message"):
            make(srv).design(PROMPT, 1)


def test_http_400_on_response_format_falls_back_to_prompt_only():
    def script(req):
        return Reply.error(400, "response_format not supported") if "response_format" in req.json else \
            Reply.json_content(graph_dict(distractors=((["mug", "apple", "can"][len(srv.completions) % 3], "red"),)))

    with FakeOpenAIServer(script) as srv:
        graphs = make(srv, n_proposals=2).design(PROMPT, 2)
    assert len(graphs) == 2
    assert ["response_format" in r.json for r in srv.completions] == [True, False, False]


def test_openai_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(BackendError, match=r"pip install scenegen\[llm\]"):
        LLMDesigner(cfg).design(PROMPT, 1)


# ---------------------------------------------------------------- diversity
def test_proposals_are_diverse_and_deterministic():
    palette = [(("mug", "red"),), (("apple", "green"),), (("can", "silver"), ("book", "blue"))]

    def script(req):
        return Reply.json_content(graph_dict(distractors=palette[(req.json["seed"] - 3) % 3]))

    runs = []
    for _ in range(2):
        with FakeOpenAIServer(script) as srv:
            graphs = make(srv, n_proposals=3).design(PROMPT, 3, seed=3)
        runs.append([g.content_hash() for g in graphs])
        assert [r.json["seed"] for r in srv.completions] == [3, 4, 5]
    assert runs[0] == runs[1] and len(set(runs[0])) == 3
    assert [g.meta["source"] for g in graphs] == ["llm"] * 3
    third = srv.completions[2].json["messages"][1]["content"]
    assert "proposal 3" in third and "[red mug]" in third and "[green apple]" in third


def test_duplicates_dropped_and_offline_sampler_fills():
    with FakeOpenAIServer([Reply.json_content(graph_dict())]) as srv:
        graphs = make(srv, n_proposals=3).design(PROMPT, 6, seed=1)
    assert len(srv.completions) == 3
    hashes = [g.content_hash() for g in graphs]
    assert len(graphs) == 6 and len(set(hashes)) == 6
    assert all(g.validate() == [] for g in graphs)
    assert [g.meta["source"] for g in graphs] == ["llm"] + ["variation"] * 5
    assert all(g.meta["designer"] == "llm" and g.meta["variant_of"] == hashes[0] for g in graphs[1:])
    assert all(any(o.role == "target" for o in g.objects()) for g in graphs)


def test_later_failed_proposal_is_tolerated():
    with FakeOpenAIServer([Reply.json_content(graph_dict()), "nonsense", "nonsense"]) as srv:
        graphs = make(srv, n_proposals=2, max_repair_rounds=1).design(PROMPT, 2)
    assert [g.meta["source"] for g in graphs] == ["llm", "variation"]


# ---------------------------------------------------------------- secrets and config
def test_api_key_never_leaks(caplog):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    errors: list[str] = []
    with FakeOpenAIServer([Reply.json_content(graph_dict())]) as srv:
        designer = make(srv)
        graphs = designer.design(PROMPT, 1)
        seen += [g.to_json() for g in graphs] + [repr(designer), repr(designer.config), str(designer.config)]
    for reply in (Reply.error(401, f"invalid api key {KEY}"), Reply.error(500, f"boom {KEY}"),
                  Reply.sleep(5), Reply.json_content({"objects": KEY})):
        with FakeOpenAIServer([reply]) as srv:
            with pytest.raises((BackendError, PromptError)) as info:
                make(srv, timeout_s=0.3, max_repair_rounds=0).design(PROMPT, 1)
            errors.append(str(info.value))
            assert srv.completions[0].headers["authorization"] == f"Bearer {KEY}"
    refused = LLMConfig(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m", api_key=KEY, max_retries=0)
    with pytest.raises(BackendError) as info:
        LLMDesigner(refused).design(PROMPT, 1)
    errors.append(str(info.value))
    assert "HTTP 401" in errors[0] and "SCENEGEN_LLM_API_KEY" in errors[0] and "***" in errors[0]
    seen += errors + [repr(refused), caplog.text] + [r.getMessage() for r in caplog.records]
    assert len(caplog.records) > 3 and all(KEY not in s for s in seen)


def test_meta_keeps_only_the_host_of_a_url_with_secrets():
    with FakeOpenAIServer([Reply.json_content(graph_dict())]) as srv:
        url = srv.base_url.replace("http://", "http://user:hunter2@")
        (g,) = LLMDesigner(LLMConfig(base_url=url, model="m", api_key=KEY, max_retries=0)).design(PROMPT, 1)
    assert g.meta["host"] == f"127.0.0.1:{srv.port}" and "hunter2" not in g.to_json()


def test_config_reads_environment_and_validates(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://fallback:1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "fallback-key")
    monkeypatch.setenv("SCENEGEN_LLM_MODEL", "qwen")
    cfg = LLMConfig()
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.host) == ("http://fallback:1/v1", "qwen", "fallback-key",
                                                                  "fallback:1")
    monkeypatch.setenv("SCENEGEN_LLM_BASE_URL", "http://localhost:11434/v1/")
    monkeypatch.setenv("SCENEGEN_LLM_API_KEY", "primary-key")
    cfg = LLMConfig()
    assert (cfg.base_url, cfg.api_key) == ("http://localhost:11434/v1", "primary-key")
    assert "primary-key" not in repr(cfg) and "api_key=***" in repr(cfg)
    assert LLMConfig(model="x", api_key="explicit").api_key == "explicit"
    monkeypatch.delenv("SCENEGEN_LLM_MODEL")
    with pytest.raises(ConfigError, match="SCENEGEN_LLM_MODEL"):
        LLMConfig()
    with pytest.raises(ConfigError, match=r"temperature=3\.5"):
        LLMConfig(model="m", temperature=3.5)
    with pytest.raises(ConfigError, match="n_proposals=0"):
        LLMConfig(model="m", n_proposals=0)
    with pytest.raises(ConfigError, match="ftp://host/v1") as info:
        LLMConfig(model="m", base_url="ftp://user:hunter2@host/v1?token=abc")
    assert "hunter2" not in str(info.value) and "abc" not in str(info.value)
    assert endpoint_host("https://user:pw@api.example.com/v1?token=t") == "api.example.com"


def test_empty_prompt_and_bad_n():
    with FakeOpenAIServer(["{}"]) as srv:
        designer = make(srv)
        with pytest.raises(PromptError, match="empty"):
            designer.design("  ", 1)
        with pytest.raises(ConfigError, match="n=0"):
            designer.design(PROMPT, 0)
    assert srv.completions == []


def test_fake_server_models_route_and_repeat_last():
    import openai

    with FakeOpenAIServer(["a", "b"], models=("m1", "m2")) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
        assert [m.id for m in client.models.list()] == ["m1", "m2"]
        got = [client.chat.completions.create(model="m1", messages=[{"role": "user", "content": str(i)}])
               .choices[0].message.content for i in range(3)]
    assert got == ["a", "b", "b"] and [r.text for r in srv.completions] == ["0", "1", "2"]
    assert srv.requests[0].method == "GET"


# ---------------------------------------------------------------- registry and CLI
def test_registry_and_cli_use_the_llm_designer(monkeypatch, capsys):
    from scenegen.cli import main
    from scenegen.design.registry import design, get_designer

    with FakeOpenAIServer([Reply.json_content(graph_dict())]) as srv:
        monkeypatch.setenv("SCENEGEN_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("SCENEGEN_LLM_MODEL", "env-model")
        monkeypatch.setenv("SCENEGEN_LLM_API_KEY", KEY)
        assert isinstance(get_designer("llm"), LLMDesigner)
        graphs = design(PROMPT, 2, seed=0, designer="llm")
        assert [g.meta["model"] for g in graphs] == ["env-model"] * 2
        main(["design", PROMPT, "-n", "2", "--designer", "llm", "--json"])
        printed = json.loads(capsys.readouterr().out)
    assert [d["meta"]["designer"] for d in printed] == ["llm", "llm"]
    assert len(srv.completions) == 4 and KEY not in json.dumps(printed)
    monkeypatch.setenv("SCENEGEN_LLM_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(SystemExit) as info:
        main(["design", PROMPT, "--designer", "llm"])
    assert info.value.code == 2 and "could not connect" in capsys.readouterr().err
