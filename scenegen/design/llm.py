"""The LLM designer: scene graphs from any OpenAI-compatible chat-completions endpoint.

Works with hosted APIs and local servers alike (vLLM, Ollama, LM Studio, llama.cpp),
configured by :class:`LLMConfig` or the environment (``SCENEGEN_LLM_BASE_URL``,
``SCENEGEN_LLM_MODEL``, ``SCENEGEN_LLM_API_KEY``; falling back to ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY``). The model is asked for structured output against the graph's JSON
Schema; its reply is parsed as data (never executed) and validated with
``SceneGraph.validate``; problems go back to the model for a bounded number of repair
rounds. Several proposals give diversity; the offline variation sampler fills the rest.

The API key is never written to a message, a log record or a graph's ``meta``: only the
endpoint's host is recorded. Every string the endpoint sends back (answers, error bodies) goes
through :class:`~scenegen.secrets.Scrubber` before it is parsed, stored or printed, so a server
that echoes the ``Authorization`` header leaks nothing; credentials in the base URL
(``user:secret@``) are stripped with a warning and never sent. Each request runs under a
wall-clock deadline (``timeout_s``, however slowly the server trickles bytes) and a whole
``design`` call under ``deadline_s``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from scenegen.catalog import Catalog, load_catalog
from scenegen.design import llm_prompt
from scenegen.design.lexicon import check_prompt_length
from scenegen.design.registry import register_designer
from scenegen.design.variation import variants
from scenegen.errors import BackendError, ConfigError, PromptError
from scenegen.graph import SceneGraph
from scenegen.secrets import Scrubber, call_with_deadline, split_credentials

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_NO_KEY = "no-key"  # sent to servers that need none (Ollama, vLLM, LM Studio ignore it)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def endpoint_host(url: str) -> str:
    """``host[:port]`` of a URL, without user info, path or query (safe to log)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "?"


def safe_url(url: str) -> str:
    """``scheme://host[:port]/path`` of a URL: user info, query and fragment removed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    return f"{parts.scheme}://{endpoint_host(url)}{parts.path}" if parts.scheme else "<URL without scheme>"


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to ask an OpenAI-compatible chat endpoint for scene graphs.

    Unset fields are read from the environment when the config is created.
    """

    base_url: str | None = None
    """API root, e.g. ``http://localhost:8000/v1``; None reads ``SCENEGEN_LLM_BASE_URL``, then
    ``OPENAI_BASE_URL``, then uses ``https://api.openai.com/v1``."""
    model: str | None = None
    """Model id served by the endpoint; None reads ``SCENEGEN_LLM_MODEL`` (required)."""
    api_key: str | None = field(default=None, repr=False)
    """Secret key; None reads ``SCENEGEN_LLM_API_KEY``, then ``OPENAI_API_KEY``; local servers need none."""
    temperature: float = 0.7
    """Sampling temperature, 0..2; higher gives more diverse proposals."""
    max_repair_rounds: int = 2
    """How many times the validation problems go back to the model before giving up (0..10)."""
    timeout_s: float = 120.0
    """Wall-clock seconds one HTTP request may take, however slowly the server sends its answer."""
    max_retries: int = 2
    """Retries of one request on connection errors, timeouts, 408/409/429 and 5xx (0..10)."""
    deadline_s: float = 900.0
    """Wall-clock seconds one ``design`` call may take: every proposal, repair round, retry and backoff."""
    n_proposals: int = 4
    """Most LLM proposals per ``design`` call (1..64); the offline sampler fills the rest of N."""
    use_response_format: bool = True
    """Send ``response_format`` (JSON Schema structured output); turned off automatically on HTTP 400."""

    def __post_init__(self) -> None:
        base = self.base_url or _env("SCENEGEN_LLM_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        base, userinfo = split_credentials(base.strip().rstrip("/"))
        object.__setattr__(self, "base_url", base)
        object.__setattr__(self, "_url_credentials", userinfo)
        if userinfo is not None:
            log.warning("LLM base URL carried credentials (user:password@); they were removed and are not sent. "
                        "Pass the key as api_key / SCENEGEN_LLM_API_KEY instead")
        object.__setattr__(self, "model", (self.model or _env("SCENEGEN_LLM_MODEL") or "").strip() or None)
        key = self.api_key if self.api_key is not None else _env("SCENEGEN_LLM_API_KEY", "OPENAI_API_KEY")
        object.__setattr__(self, "api_key", key.strip() if key and key.strip() else None)
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"base_url {safe_url(self.base_url)!r} is not an http(s) URL; use e.g. "
                              "http://localhost:8000/v1 (set SCENEGEN_LLM_BASE_URL)")
        if self.model is None:
            raise ConfigError("no LLM model configured (model=None); pass LLMConfig(model=...) or set "
                              "SCENEGEN_LLM_MODEL, e.g. 'qwen2.5:7b-instruct' for Ollama")
        checks = [("temperature", self.temperature, 0.0, 2.0), ("max_repair_rounds", self.max_repair_rounds, 0, 10),
                  ("max_retries", self.max_retries, 0, 10), ("n_proposals", self.n_proposals, 1, 64),
                  ("timeout_s", self.timeout_s, 1e-3, 3600.0), ("deadline_s", self.deadline_s, 1e-3, 86400.0)]
        for name, value, lo, hi in checks:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
                raise ConfigError(f"LLMConfig.{name}={value!r} is out of range; use a value in [{lo}, {hi}]")
        for name in ("max_repair_rounds", "max_retries", "n_proposals"):
            if not isinstance(getattr(self, name), int):
                raise ConfigError(f"LLMConfig.{name}={getattr(self, name)!r} must be an integer")

    @property
    def scrubber(self) -> Scrubber:
        """Masks this endpoint's key and URL credentials (and auth-looking tokens) in any text."""
        return Scrubber.for_endpoint(self.base_url, self.api_key, getattr(self, "_url_credentials", None))

    @property
    def host(self) -> str:
        """``host[:port]`` of the endpoint (what logs, errors and meta show)."""
        return endpoint_host(self.base_url or "")

    def __repr__(self) -> str:
        return (f"LLMConfig(base_url={safe_url(self.base_url or '')!r}, model={self.model!r}, "
                f"api_key={'***' if self.api_key else None}, temperature={self.temperature}, "
                f"max_repair_rounds={self.max_repair_rounds}, timeout_s={self.timeout_s}, "
                f"max_retries={self.max_retries}, deadline_s={self.deadline_s}, n_proposals={self.n_proposals}, "
                f"use_response_format={self.use_response_format})")


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise BackendError("the LLM designer needs the openai package; install the extra: "
                           "pip install scenegen[llm]") from None
    return openai


@dataclass
class _Answer:
    text: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


class LLMDesigner:
    """Designer backend over an OpenAI-compatible chat endpoint (see the module docstring).

    Args:
        config: endpoint and sampling settings; None reads the environment.
        catalog: object catalog (default: the project catalog).

    """

    name = "llm"

    def __init__(self, config: LLMConfig | None = None, catalog: Catalog | None = None) -> None:
        self.config = config or LLMConfig()
        self.catalog = catalog or load_catalog()
        self._client: Any = None
        self._openai: Any = None
        self._use_schema = self.config.use_response_format
        self._scrub = self.config.scrubber
        self._deadline = math.inf

    def __repr__(self) -> str:
        return f"LLMDesigner({self.config!r})"

    # ------------------------------------------------------------ public API
    def design(self, prompt: str, n: int, seed: int = 0) -> list[SceneGraph]:
        """Return ``n`` valid graphs with distinct content hashes for ``prompt``.

        Raises:
            PromptError: the model never produced a valid graph within the repair rounds.
            BackendError: the endpoint failed (HTTP error, timeout, unreachable, openai missing).

        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise PromptError("the prompt is empty; describe the task, e.g. 'put the banana in the bowl'")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"n={n!r} must be a positive integer (the number of graphs to design)")
        check_prompt_length(prompt)
        self._deadline = time.monotonic() + self.config.deadline_s
        graphs: list[SceneGraph] = []
        seen: set[str] = set()
        for i in range(min(n, self.config.n_proposals)):
            try:
                graph = self._propose(prompt, i, seed, graphs)
            except _OutOfTime as exc:
                if not graphs:
                    raise
                log.warning("LLM designer: %s; keeping the %d graphs proposed so far", exc.one_line(), len(graphs))
                break
            except PromptError:
                if not graphs:
                    raise
                log.warning("LLM designer: proposal %d gave no valid graph; keeping the %d earlier ones",
                            i, len(graphs))
                continue
            digest = graph.content_hash()
            if digest in seen:
                log.info("LLM designer: proposal %d duplicates an earlier graph; dropped", i)
                continue
            seen.add(digest)
            graphs.append(graph)
        if len(graphs) < n:
            graphs += self._fill(graphs, seen, n - len(graphs), prompt, seed)
        return graphs[:n]

    # ------------------------------------------------------------ proposals
    def _propose(self, prompt: str, index: int, seed: int, previous: list[SceneGraph]) -> SceneGraph:
        messages = [{"role": "system", "content": llm_prompt.system_prompt(self.catalog)},
                    {"role": "user", "content": llm_prompt.user_prompt(prompt, index, previous)}]
        tokens = [0, 0]
        latency = 0.0
        problems: list[str] = []
        for round_ in range(self.config.max_repair_rounds + 1):
            answer = self._chat(messages, seed + index)
            tokens[0] += answer.prompt_tokens
            tokens[1] += answer.completion_tokens
            latency += answer.latency_s
            graph, problems = llm_prompt.parse_reply(answer.text, self.catalog)
            if graph is not None and not problems:
                graph.meta = {
                    "designer": self.name, "source": "llm", "model": self.config.model, "host": self.config.host,
                    "prompt": prompt, "seed": seed, "proposal": index, "repair_rounds": round_,
                    "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                              "total_tokens": tokens[0] + tokens[1]},
                    "latency_s": round(latency, 4),
                }
                return graph
            log.info("LLM designer: proposal %d round %d has %d problem(s): %s", index, round_, len(problems),
                     self._redact("; ".join(problems[:3])))
            messages += [{"role": "assistant", "content": (answer.text or "")[:llm_prompt.MAX_REPLY_CHARS]},
                         {"role": "user", "content": llm_prompt.repair_prompt(problems)}]
        first = self._redact(" ".join("; ".join(problems[:3]).split()))[:600]
        raise PromptError(f"the LLM did not produce a valid scene graph after {self.config.max_repair_rounds} "
                          f"repair rounds: {first} (model {self.config.model!r} at {self.config.host}; try a "
                          "stronger model, a clearer prompt or more max_repair_rounds)")

    def _fill(self, graphs: list[SceneGraph], seen: set[str], need: int, prompt: str, seed: int) -> list[SceneGraph]:
        """Complete the set with offline variants of the first valid LLM graph."""
        base = graphs[0]
        out: list[SceneGraph] = []
        for g in variants(base, need + len(seen), seed, catalog=self.catalog):
            digest = g.content_hash()
            if digest in seen or g.validate(self.catalog):
                continue
            seen.add(digest)
            g.meta = {"designer": self.name, "source": "variation", "model": self.config.model,
                      "host": self.config.host, "prompt": prompt, "seed": seed, "variant": g.meta.get("variant"),
                      "variant_of": base.content_hash(), "repair_rounds": 0,
                      "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, "latency_s": 0.0}
            out.append(g)
            if len(out) == need:
                return out
        raise PromptError(f"only {len(graphs) + len(out)} distinct valid graphs could be made for {prompt!r} "
                          f"(LLM proposals + offline variation); ask for fewer graphs (n)")

    # ------------------------------------------------------------ transport
    def _get_client(self) -> Any:
        if self._client is None:
            self._openai = _import_openai()
            # retries are ours (each under a wall-clock deadline), so the client never retries by itself
            self._client = self._openai.OpenAI(base_url=self.config.base_url, api_key=self.config.api_key or _NO_KEY,
                                               timeout=self.config.timeout_s, max_retries=0)
        return self._client

    def _drop_client(self) -> None:
        """Close the client (its connections drop, so an abandoned request ends) and forget it."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _remaining(self) -> float:
        return self._deadline - time.monotonic()

    def _chat(self, messages: list[dict], seed: int) -> _Answer:
        """One chat completion: up to ``max_retries`` retries, each request under its wall-clock deadline."""
        cfg = self.config
        for attempt in range(cfg.max_retries + 1):
            if self._remaining() <= 0:
                raise _OutOfTime(f"the LLM designer spent its deadline of {cfg.deadline_s:g} s (stage: design, "
                                 f"endpoint {cfg.host}); raise deadline_s or use a faster model")
            try:
                return self._request(messages, seed)
            except _Retry as retry:
                if attempt == cfg.max_retries:
                    raise self._backend_error(retry.exc) from None
                wait = min(retry.after if retry.after is not None else 0.5 * 2 ** attempt, 8.0, self._remaining())
                log.info("LLM designer: request to %s failed (%s); retry %d in %.2f s", cfg.host,
                         type(retry.exc).__name__, attempt + 1, max(wait, 0.0))
                time.sleep(max(wait, 0.0))
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, messages: list[dict], seed: int) -> _Answer:
        client = self._get_client()
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "temperature": self.config.temperature, "seed": int(seed) % 2**31}
        if self._use_schema:
            kwargs["response_format"] = llm_prompt.response_format()
        start = time.perf_counter()
        limit = min(self.config.timeout_s, max(self._remaining(), 1e-3))
        try:
            resp = call_with_deadline(lambda: client.chat.completions.create(**kwargs), limit,
                                      what=f"LLM request to {self.config.host}", cancel=self._drop_client)
        except TimeoutError as exc:
            raise _Retry(exc) from None
        except openai.BadRequestError as exc:
            if not self._use_schema:
                raise self._backend_error(exc) from None
            log.warning("LLM designer: %s rejected the request with response_format (HTTP 400); retrying without "
                        "it (the schema stays in the system prompt)", self.config.host)
            self._use_schema = False
            return self._request(messages, seed)
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise _Retry(exc) from None
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                raise _Retry(exc, _retry_after(exc)) from None
            raise self._backend_error(exc) from None
        except openai.OpenAIError as exc:
            raise self._backend_error(exc) from None
        except ValueError:  # the HTTP body was not JSON
            raise BackendError(f"the LLM endpoint {self.config.host} answered with a body that is not JSON; "
                               "check that the base URL is the OpenAI-compatible API root (usually ending in /v1)"
                               ) from None
        latency = time.perf_counter() - start
        try:
            text = resp.choices[0].message.content
            if text is not None and not isinstance(text, str):
                raise TypeError("content is not text")
        except (AttributeError, IndexError, TypeError, KeyError):
            raise BackendError(f"the LLM endpoint {self.config.host} answered without a chat message "
                               "(no choices); check that it serves the chat-completions API") from None
        usage = getattr(resp, "usage", None)
        prompt_tokens = _count(getattr(usage, "prompt_tokens", 0))
        completion_tokens = _count(getattr(usage, "completion_tokens", 0))
        log.info("LLM designer: %s answered in %.2f s (%d+%d tokens)", self.config.host, latency,
                 prompt_tokens, completion_tokens)
        # the answer is data from the endpoint: scrubbed before it is parsed, stored or shown
        return _Answer(None if text is None else self._scrub.text(text), prompt_tokens, completion_tokens, latency)

    def _redact(self, text: str) -> str:
        """Mask the key, the URL credentials and any auth-looking token in a text."""
        return self._scrub.text(text)

    def _backend_error(self, exc: Exception) -> BackendError:
        """One-line BackendError naming the host (never the key) and what to check."""
        openai = self._openai
        host, cfg = self.config.host, self.config
        tries = f"after {cfg.max_retries} retr{'y' if cfg.max_retries == 1 else 'ies'}"
        if isinstance(exc, (TimeoutError, openai.APITimeoutError)):
            msg = (f"the LLM endpoint {host} did not answer within {cfg.timeout_s:g} s ({tries}); check that the "
                   "server is running and the model is loaded, or raise timeout_s")
        elif isinstance(exc, openai.APIConnectionError):
            msg = (f"could not connect to the LLM endpoint {host} ({tries}); check SCENEGEN_LLM_BASE_URL and "
                   "that the server is running")
        elif isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = " ".join(str(getattr(exc, "message", "") or "").split())[:200]
            hint = {401: "check SCENEGEN_LLM_API_KEY", 403: "check SCENEGEN_LLM_API_KEY and its permissions",
                    404: f"check SCENEGEN_LLM_MODEL ({cfg.model!r}) and that the base URL ends in /v1",
                    429: "the endpoint is rate-limiting; wait, lower n or raise max_retries"}.get(
                        status, "check the server logs")
            msg = f"the LLM endpoint {host} answered HTTP {status} ({tries}): {detail}; {hint}"
        else:
            msg = f"the LLM request to {host} failed ({type(exc).__name__}); check the endpoint settings"
        return BackendError(self._redact(msg))


class _Retry(Exception):
    """A request failure worth retrying (timeout, connection, 408/409/429/5xx)."""

    def __init__(self, exc: Exception, after: float | None = None) -> None:
        super().__init__(type(exc).__name__)
        self.exc = exc
        self.after = after


class _OutOfTime(BackendError):
    """The ``design`` call's wall-clock deadline is spent."""


def _retry_after(exc: Any) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` / ``retry-after``), if it said."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if 0 <= value < 3600:
            return value
    return None


def _count(value: Any) -> int:
    """A token count from an endpoint's ``usage`` block (0 unless a non-negative int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40 else 0


register_designer("llm", LLMDesigner)
