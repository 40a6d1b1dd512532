"""An OpenAI-compatible endpoint that misbehaves on purpose, for fault tests and the fuzz campaign.

:class:`BadEndpoint` serves ``POST .../chat/completions`` on ``127.0.0.1`` from a background
thread, in one of :data:`MODES`:

* ``stall``: reads the request and never answers;
* ``trickle``: answers a valid completion one byte every ``interval`` seconds (headers included),
  so a per-read timeout never fires;
* ``garbage``: ``200`` with a body that is not JSON; ``error500``: an OpenAI-style 500;
* ``echo``: a valid completion whose content is ``content`` (a string, or a callable of the request
  headers) and which also carries the request's ``Authorization`` header; ``echo_error``: a 401 whose
  message is the request headers;
* ``valid``: the completion ``content`` at once.

Every request's headers are kept in ``requests`` so a test can check what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("stall", "trickle", "garbage", "error500", "echo", "echo_error", "valid")


class BadEndpoint:
    """A misbehaving chat endpoint; use as a context manager.

    Args:
        mode: One of :data:`MODES`.
        content: The assistant message of ``valid``/``echo``/``trickle`` answers, or a callable
            ``headers -> str`` (``echo`` passes the request headers, so the content may quote them).
        interval: Seconds between two bytes in ``trickle`` mode.

    """

    def __init__(self, mode: str, content: str | Callable[[dict[str, str]], str] = "{}", interval: float = 1.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of {MODES}")
        self.mode, self.content, self.interval = mode, content, interval
        self.requests: list[dict[str, str]] = []
        self.stopping = threading.Event()
        handler = type("Handler", (_Handler,), {"endpoint": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> BadEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def body(self, headers: dict[str, str]) -> bytes:
        """The completion this endpoint answers with (``echo`` adds the Authorization header to the content)."""
        text = self.content(headers) if callable(self.content) else self.content
        if self.mode == "echo" and not callable(self.content):
            text += f" [you sent Authorization: {headers.get('authorization', '')}]"
        return json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


class _Handler(BaseHTTPRequestHandler):
    endpoint: BadEndpoint
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        ep = self.endpoint
        self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        ep.requests.append(headers)
        if ep.mode == "stall":
            ep.stopping.wait(600)
            return
        if ep.mode == "trickle":
            body = ep.body(headers)
            raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            for i in range(len(raw)):
                if ep.stopping.wait(ep.interval if i else 0.0):
                    return
                try:
                    self.wfile.write(raw[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return
            return
        if ep.mode == "garbage":
            self._send(200, b"\x00\xff<html>not json{{")
        elif ep.mode == "error500":
            self._send(500, json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode())
        elif ep.mode == "echo_error":
            message = "unauthorized; request headers were " + json.dumps(headers)
            self._send(401, json.dumps({"error": {"message": message, "type": "auth"}}).encode())
        else:
            self._send(200, ep.body(headers))

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("retry-after-ms", "5")
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass


def echo_graph(headers: dict[str, str], prompt: str = "put the banana in the bowl") -> str:
    """A valid scene graph answer whose instruction quotes the request headers (an echoing server)."""
    echoed = f"{headers.get('authorization', '')} {json.dumps(headers)}"
    return json.dumps({
        "schema_version": 1, "instruction": f"{prompt} {echoed}",
        "objects": [{"id": "table", "category": "table", "role": "support"},
                    {"id": "banana_1", "category": "banana", "role": "target"},
                    {"id": "bowl_1", "category": "bowl", "role": "receptacle"}],
        "relations": [{"subject": "banana_1", "relation": "on", "object": "table"},
                      {"subject": "bowl_1", "relation": "on", "object": "table"}],
        "goals": [{"subject": "banana_1", "predicate": "in", "object": "bowl_1"}]})


def echo_verdict(headers: dict[str, str]) -> str:
    """A VLM verdict (a rejection) whose problems quote the request headers."""
    return json.dumps({"pass": False, "score": 0.2, "problems": [f"saw {headers.get('authorization')}",
                                                                json.dumps(headers)]})


def wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    """Poll ``predicate`` every 50 ms for up to ``seconds``; True once it holds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
