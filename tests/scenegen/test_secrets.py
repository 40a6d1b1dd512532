"""The one scrubber of endpoint secrets and the wall-clock deadline of endpoint calls (issue 12)."""

from __future__ import annotations

import base64
import threading
import time

import pytest

from scenegen.secrets import MASK, Scrubber, call_with_deadline, scrub, split_credentials

KEY = "sk-canary-0123456789abcdef"


def test_every_form_of_the_key_and_url_credentials_is_masked():
    s = Scrubber.for_endpoint("http://bob:pa%24%24word@host:8000/v1", KEY)
    basic = base64.b64encode(b"bob:pa$$word").decode()
    text = (f"Authorization: Bearer {KEY} | {base64.b64encode(KEY.encode()).decode()} | Basic {basic} | "
            f"pa$$word | pa%24%24word | http://bob:pa%24%24word@host:8000/v1")
    out = s.text(text)
    assert KEY not in out and "pa$$word" not in out and "pa%24%24word" not in out and basic not in out
    assert out.count(MASK) >= 6
    data = s.data({"instruction": f"x {KEY}", "list": [f"Bearer {KEY}"], KEY: 1, "n": 3})
    assert KEY not in repr(data) and data["n"] == 3


def test_auth_looking_tokens_are_masked_but_plain_words_are_not():
    other = base64.b64encode(b"alice:secret").decode()
    out = scrub(f"Bearer abcdefgh12345678 and Basic {other}; sk-live-abcdefghijk; basic shapes everywhere")
    assert "abcdefgh12345678" not in out and other not in out and "abcdefghijk" not in out
    assert "basic shapes everywhere" in out


def test_split_credentials():
    assert split_credentials("https://u:p@h:1/v1?q=1") == ("https://h:1/v1?q=1", "u:p")
    assert split_credentials("http://h/v1") == ("http://h/v1", None)


def test_a_call_past_its_deadline_raises_and_is_cancelled():
    cancelled = threading.Event()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="slow call did not finish within 0.2 s"):
        call_with_deadline(lambda: time.sleep(5), 0.2, what="slow call", cancel=cancelled.set)
    assert time.monotonic() - start < 1.0 and cancelled.is_set()
    assert call_with_deadline(lambda: 42, 1.0, what="quick") == 42
    with pytest.raises(KeyError):
        call_with_deadline(lambda: {}["x"], 1.0, what="failing")
