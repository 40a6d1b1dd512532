"""Endpoint safety, done one way: secrets scrubbed from every string an endpoint gave, and a deadline on every call.

Every path that talks to an HTTP endpoint (the LLM designer, the VLM judge) uses this module:

* :func:`split_credentials` takes ``user:password@`` out of a base URL (the caller warns and
  never sends or stores them).
* :class:`Scrubber` knows the secret forms of a key and of URL credentials (the raw value, its
  ``Bearer`` and ``Basic`` header forms, base64 and percent-encoded variants) and replaces them,
  and any ``Authorization``-looking token, by ``***`` in a text or in JSON-like data, before it
  is stored (graphs, ``scene.json``, QA reports) or printed (errors, logs).
* :func:`call_with_deadline` runs one blocking call under a wall-clock deadline: an endpoint that
  trickles a byte every few seconds cannot keep a request alive past it.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "***"
"""What every secret is replaced by."""
MIN_SECRET = 4
"""Shorter values are not treated as secrets (replacing ``"a"`` everywhere would garble text)."""
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=-]{8,})")
_BASIC = re.compile(r"(?i)\b(basic)(\s+)([A-Za-z0-9+/=_-]{4,})")
_SK = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
_T = TypeVar("_T")


def split_credentials(url: str) -> tuple[str, str | None]:
    """Return ``url`` without its ``user[:password]@`` part, and that part (None when there is none).

    An unparsable URL is returned unchanged (the caller's URL check reports it).
    """
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        return url, None
    if "@" not in netloc:
        return url, None
    userinfo, host = netloc.rsplit("@", 1)
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), userinfo


def _is_basic(token: str) -> bool:
    """True when ``token`` is the base64 of ``user:password`` (an HTTP Basic credential)."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token
                               else None, validate=True)
    except ValueError:
        return False
    return b":" in raw


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` can show up in an answer or an error: raw, percent-coded, base64, header forms."""
    out = {secret, unquote(secret), quote(secret, safe="")}
    for value in list(out):
        raw = value.encode()
        out.add(base64.b64encode(raw).decode())
        out.add(base64.urlsafe_b64encode(raw).decode())
        out.add(base64.b64encode(raw).decode().rstrip("="))
    return {f for f in out if len(f) >= MIN_SECRET}


class Scrubber:
    """Replaces known secrets (and anything that looks like an auth token) with :data:`MASK`.

    Args:
        secrets: Keys, passwords and ``user:password`` strings; None and short values are ignored.

    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        forms: set[str] = set()
        for s in secrets:
            if s and len(s) >= MIN_SECRET:
                forms |= _forms(s)
                if ":" in s:  # user:password: the password alone is a secret too
                    forms |= _forms(s.split(":", 1)[1]) if len(s.split(":", 1)[1]) >= MIN_SECRET else set()
        self._forms = sorted(forms, key=len, reverse=True)  # longest first: a form inside another stays masked

    @classmethod
    def for_endpoint(cls, base_url: str | None, key: str | None, userinfo: str | None = None) -> Scrubber:
        """The scrubber of one endpoint: its key, the credentials of its URL, and the URL itself when it carries any."""
        _, inline = split_credentials(base_url or "")
        return cls([key, userinfo, inline, *([base_url] if (userinfo or inline) else [])])

    def text(self, value: Any) -> str:
        """``value`` as a string with every secret form and auth-looking token masked."""
        text = value if isinstance(value, str) else str(value)
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        text = _BASIC.sub(lambda m: m.group(1) + m.group(2) + MASK if _is_basic(m.group(3)) else m.group(0), text)
        return _SK.sub("sk-" + MASK, text)

    def data(self, value: _T) -> _T:
        """A copy of JSON-like data (dicts, lists, strings) with every string, keys included, scrubbed."""
        if isinstance(value, str):
            return self.text(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}  # type: ignore[return-value]
        if isinstance(value, (list, tuple)):
            return type(value)(self.data(v) for v in value)  # type: ignore[return-value]
        return value

    def __call__(self, value: Any) -> str:
        return self.text(value)


def scrub(value: Any, *secrets: str | None) -> str:
    """One-off :meth:`Scrubber.text` with the given secrets (tokens that look like keys are masked anyway)."""
    return Scrubber(secrets).text(value)


def call_with_deadline(fn: Callable[[], _T], seconds: float, *, what: str,
                       cancel: Callable[[], Any] | None = None) -> _T:
    """Run ``fn()`` and return its result, or raise :class:`TimeoutError` once ``seconds`` of wall-clock time pass.

    The call runs in a daemon thread, so a stuck call never keeps the process alive; on timeout
    ``cancel`` (e.g. closing the HTTP client, which drops its connections) is called so the
    abandoned call ends as soon as its socket notices.

    Args:
        fn: The blocking call.
        seconds: The deadline.
        what: Names the call in the timeout message.
        cancel: Called once on timeout; its errors are ignored.

    Raises:
        TimeoutError: ``<what> did not finish within <seconds> s (wall-clock deadline)``.
        Exception: whatever ``fn`` raised.

    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=run, name=f"deadline:{what}"[:60], daemon=True)
    worker.start()
    if not done.wait(max(0.0, seconds)):
        if cancel is not None:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - best effort; the deadline error below is what matters
                pass
        raise TimeoutError(f"{what} did not finish within {seconds:.3g} s (wall-clock deadline)")
    if "error" in box:
        raise box["error"]
    return box["value"]
