"""A local HTTP server that speaks the OpenAI chat-completions protocol, for tests.

It runs on ``127.0.0.1`` at a random port in a background thread and answers
``POST <prefix>/chat/completions`` (and ``GET <prefix>/models``) from a script:

* a list of replies, served in order (the last one repeats once the list runs out), or
* a callable ``fn(request: RecordedRequest) -> reply`` for replies that depend on the request.

A reply is a :class:`Reply`, or a shortcut: a ``str`` (the assistant's message content),
a ``dict`` with a ``"choices"`` key (sent verbatim as the JSON body) or any other ``dict``
(JSON-encoded and sent as the message content). :class:`Reply` also scripts HTTP errors
(500, 429...), a delay (to sleep past a client timeout) and raw garbage bodies.

Every request is recorded (method, path, headers, raw body, parsed JSON) in
``server.requests``, so a test can assert what the client sent::

    with FakeOpenAIServer(["hello", Reply.error(500)]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="k")
        ...
        assert srv.requests[0].json["model"] == "m"
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Reply", "completion_body"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    """HTTP method (``GET``/``POST``)."""
    path: str
    """Request path including any query string, e.g. ``/v1/chat/completions``."""
    headers: dict[str, str]
    """Request headers, names lower-cased."""
    body: bytes
    """The raw request body."""
    json: Any
    """The body parsed as JSON, or None when it is not JSON."""

    @property
    def messages(self) -> list[dict]:
        """The chat ``messages`` of the request (empty if none)."""
        return list((self.json or {}).get("messages") or []) if isinstance(self.json, dict) else []

    @property
    def text(self) -> str:
        """All text of all messages joined by newlines (string and ``text`` parts)."""
        out: list[str] = []
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(out)


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the server."""

    content: str | list[str] | None = ""
    """Assistant message content (a list gives one choice per item)."""
    status: int = 200
    """HTTP status code."""
    delay_s: float = 0.0
    """Seconds to wait before answering (interrupted when the server stops)."""
    body: bytes | str | dict | None = None
    """Raw body to send instead of a chat completion (a dict is JSON-encoded)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers."""
    usage: dict[str, int] | None = None
    """``usage`` block of the completion; None computes a rough token count."""
    finish_reason: str = "stop"
    """``finish_reason`` of every choice."""

    @classmethod
    def json_content(cls, obj: Any, **kw: Any) -> Reply:
        """A completion whose content is ``obj`` encoded as JSON."""
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def error(cls, status: int = 500, message: str = "internal error", retry_after_ms: int | None = 5) -> Reply:
        """An OpenAI-style error body with ``status``; ``retry-after-ms`` keeps client retries fast."""
        headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
        body = {"error": {"message": message, "type": "server_error", "code": status}}
        return cls(status=status, body=body, headers=headers)

    @classmethod
    def sleep(cls, seconds: float, content: str = "") -> Reply:
        """Answer ``content`` only after ``seconds`` (use to trigger a client timeout)."""
        return cls(content=content, delay_s=seconds)

    @classmethod
    def garbage(cls, data: bytes = b"\x00\xffthis is <not> json{{", status: int = 200) -> Reply:
        """A body that is not JSON at all, sent with a JSON content type."""
        return cls(status=status, body=data)


ReplyLike = Reply | str | dict
Script = Sequence[ReplyLike] | Callable[[RecordedRequest], ReplyLike]


def completion_body(contents: Sequence[str | None], model: str, index: int, usage: dict | None = None,
                    finish_reason: str = "stop") -> dict:
    """Build a ``chat.completion`` JSON body with one choice per content."""
    if usage is None:
        completion = sum(len(c or "") for c in contents) // 4 + 1
        usage = {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}
    return {
        "id": f"chatcmpl-fake-{index}", "object": "chat.completion", "created": 1700000000 + index,
        "model": model, "system_fingerprint": "fake",
        "choices": [{"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": finish_reason,
                     "logprobs": None} for i, c in enumerate(contents)],
        "usage": usage,
    }


def _as_reply(item: ReplyLike) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(content=item)
    if isinstance(item, dict):
        return Reply(body=item) if "choices" in item else Reply.json_content(item)
    raise TypeError(f"cannot turn {type(item).__name__} into a Reply")


class FakeOpenAIServer:
    """A threaded OpenAI-compatible server on 127.0.0.1; use as a context manager.

    Args:
        script: list of replies (served in order, the last repeats) or a callable.
        prefix: URL path prefix of the API (``/v1`` like OpenAI, vLLM, Ollama and LM Studio).
        models: model ids listed by ``GET <prefix>/models``.
    """

    def __init__(self, script: Script = ("",), prefix: str = "/v1", models: Sequence[str] = ("fake-model",)) -> None:
        if not callable(script) and not list(script):
            raise ValueError("script must hold at least one reply")
        self.script = script if callable(script) else list(script)
        self.prefix = prefix.rstrip("/")
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        """The port the server listens on (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port><prefix>``: pass it as ``base_url`` to ``openai.OpenAI``."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def start(self) -> FakeOpenAIServer:
        """Bind a random port and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes sleeping handlers and closes kept-alive client connections."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ script
    @property
    def completions(self) -> list[RecordedRequest]:
        """Recorded chat-completion requests only."""
        return [r for r in self.requests if r.path.split("?")[0].endswith("/chat/completions")]

    def _next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(req)
            index = len(self.completions) - 1
            if callable(self.script):
                return _as_reply(self.script(req))
            return _as_reply(self.script[min(index, len(self.script) - 1)])

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._conns.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _read(self) -> RecordedRequest:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        return RecordedRequest(self.command, self.path, headers, raw, parsed)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        req = self._read()
        self.fake._record(req)
        if self.path.split("?")[0] == f"{self.fake.prefix}/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.fake.models]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
        else:
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        req = self._read()
        if self.path.split("?")[0] != f"{self.fake.prefix}/chat/completions":
            self.fake._record(req)
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            return
        try:
            reply = self.fake._next_reply(req)
        except Exception as exc:  # a broken script answers 500 so the test sees it
            self._send(500, json.dumps({"error": {"message": f"fake server script failed: {exc!r}"}}).encode())
            return
        if reply.delay_s > 0 and self.fake._stopping.wait(reply.delay_s):
            return
        if reply.body is not None:
            body = reply.body
            data = json.dumps(body).encode() if isinstance(body, dict) else (
                body.encode() if isinstance(body, str) else body)
        else:
            contents = reply.content if isinstance(reply.content, list) else [reply.content]
            model = req.json.get("model", "fake-model") if isinstance(req.json, dict) else "fake-model"
            data = json.dumps(completion_body(contents, model, len(self.fake.completions), reply.usage,
                                              reply.finish_reason)).encode()
        self._send(reply.status, data, reply.headers)
