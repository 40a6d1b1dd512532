"""VLM judge: rendered views and the task go to an OpenAI-compatible chat endpoint for a verdict.

The endpoint (base URL, model, key) comes from :class:`~qa.config.VLMConfig` or the
environment (``SCENEGEN_VLM_BASE_URL``, ``SCENEGEN_VLM_MODEL``, ``SCENEGEN_VLM_API_KEY``)
and is reached through the real ``openai`` client, imported when the check runs. The
judge must answer ``{"pass": bool, "score": 0..1, "problems": [...]}``. HTTP errors,
timeouts and unparsable answers are retried with exponential backoff (bounded), and
when no verdict comes the check fails as ``unverified``: it never passes without one.
Each request runs under a wall-clock deadline of ``timeout_s`` (however slowly the server
trickles its answer) and the whole check under ``(max_retries + 1) * timeout_s`` plus its
backoff waits. The key is never written to a message, a log line or a report: every string
the endpoint sends (answers, problems, error bodies) goes through
:class:`~scenegen.secrets.Scrubber` first, and credentials in the base URL are stripped with a
warning and never sent.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import time
from typing import Any

from qa.config import QAConfig, VLMConfig
from qa.result import CheckResult
from scenegen.errors import BackendError
from scenegen.scene import Camera, Scene
from scenegen.secrets import Scrubber, call_with_deadline, split_credentials
from scenegen.sim.camera import render_camera
from scenegen.validate import is_finite

NAME = "vlm"
log = logging.getLogger(__name__)
_NO_KEY = "not-needed"
_SYSTEM = ("You are a strict quality inspector of simulated robot-manipulation scenes. You see rendered views "
           "of a tabletop scene and the scene's specification. Decide whether the images match the "
           "specification: every listed object is present and recognisable, every listed relation holds, "
           "the scene is physically plausible (nothing floating, interpenetrating or fallen) and the task "
           "can be done. Answer with one JSON object and nothing else: "
           '{"pass": true|false, "score": <number 0..1>, "problems": ["<short problem>", ...]}.')


def endpoint(vc: VLMConfig) -> tuple[str | None, str | None, str | None]:
    """Base URL (without credentials), model and key from the config, else from the environment."""
    base_url, _ = _endpoint(vc)
    return base_url, vc.model or os.environ.get("SCENEGEN_VLM_MODEL") or None, _key(vc)


def _key(vc: VLMConfig) -> str | None:
    return vc.api_key or os.environ.get("SCENEGEN_VLM_API_KEY") or None


def _endpoint(vc: VLMConfig) -> tuple[str | None, str | None]:
    """The base URL without ``user:password@``, and those credentials (warned about, never sent)."""
    url = (vc.base_url or os.environ.get("SCENEGEN_VLM_BASE_URL") or "").strip() or None
    if url is None:
        return None, None
    clean, userinfo = split_credentials(url)
    if userinfo is not None:
        log.warning("VLM base URL carried credentials (user:password@); they were removed and are not sent. "
                    "Pass the key as VLMConfig.api_key / SCENEGEN_VLM_API_KEY instead")
    return clean, userinfo


def scrubber(vc: VLMConfig) -> Scrubber:
    """Masks the judge's key and URL credentials (and auth-looking tokens) in any text."""
    url = (vc.base_url or os.environ.get("SCENEGEN_VLM_BASE_URL") or "").strip()
    return Scrubber.for_endpoint(url, _key(vc))


def _side_camera(scene: Scene, size: int) -> Camera:
    support = scene.graph.support_id
    cx = scene.poses[support].position[0] if support in scene.poses else 0.55
    z = scene.table_height
    return Camera("side", eye=(cx + 0.1, -1.1, z + 0.75), target=(cx, 0.0, z), fov_deg=55.0, width=size,
                  height=size, near=0.05, far=4.0)


def render_views(scene: Scene, world: Any, vc: VLMConfig) -> list[tuple[str, bytes]]:
    """PNG images of the configured views (``side`` is a fixed camera beside the table)."""
    from PIL import Image

    out = []
    names = {c.name for c in world.scene.cameras}
    for view in vc.views:
        added = None
        if view not in names:
            if view != "side":
                raise BackendError(f"VLM view {view!r} is not a camera of the scene ({sorted(names)}) nor 'side'")
            added = _side_camera(scene, vc.image_size)
            world.scene.cameras.append(added)
        try:
            rgb, _, _ = render_camera(world, view, vc.image_size, vc.image_size)
        finally:
            if added is not None:
                world.scene.cameras.remove(added)
        buf = io.BytesIO()
        Image.fromarray(rgb, "RGB").save(buf, format="PNG")
        out.append((view, buf.getvalue()))
    return out


def describe(scene: Scene) -> str:
    """The task and the scene specification in plain text, for the judge."""
    g = scene.graph
    lines = [f"Task instruction: {g.instruction!r}", "Objects:"]
    for o in g.objects():
        colour = o.attributes.get("color")
        lines.append(f"- {o.id}: {(colour + ' ') if colour else ''}{o.category.replace('_', ' ')} "
                     f"(role {o.role}, {o.state})")
    lines.append("Relations that must hold in the images (left/right/front/behind are seen from the robot, "
                 "which stands at the near end of the table):")
    lines += [f"- {r.subject} {r.relation.replace('_', ' ')} {r.object}" for r in g.relations()] or ["- none"]
    lines.append("Goal (NOT yet achieved; the scene shows the start of the task):")
    lines += [f"- {gl.subject} {gl.predicate.replace('_', ' ')}{' ' + gl.object if gl.object else ''}"
              for gl in g.goals] or ["- none"]
    return "\n".join(lines)


def parse_verdict(text: str | None) -> dict | None:
    """The verdict ``{"pass", "score", "problems"}`` in an answer, or None when there is none."""
    if not text:
        return None
    m = re.search(r"\{.*\}", text, re.S)
    if m is None:
        return None
    try:
        data = json.loads(m.group(0))
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pass"), bool):
        return None
    score = data.get("score")
    if not (is_finite(score) and 0.0 <= score <= 1.0):
        return None
    problems = data.get("problems", [])
    if not isinstance(problems, list):
        return None
    return {"pass": data["pass"], "score": float(score), "problems": [str(p)[:300] for p in problems[:20]]}


def _one_line(scrub: Scrubber, text: Any) -> str:
    """The scrubbed text on one line, at most 300 characters (scrubbed before it is cut, so no half key remains)."""
    return " ".join(scrub.text(text).split())[:300]


def _classify(openai: Any, exc: Exception) -> tuple[str, bool]:
    """A short description of a failed request and whether a retry may help."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout", True
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error ({exc})", True
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        return f"HTTP {code}", code in (408, 409, 429) or code >= 500
    return f"bad response ({type(exc).__name__}: {exc})", True


def _usage(resp: Any, tokens: dict) -> None:
    usage = getattr(resp, "usage", None)
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = getattr(usage, k, None) if usage is not None else None
        if isinstance(v, int):
            tokens[k] += v


def check(scene: Scene, world: Any, cfg: QAConfig) -> CheckResult:
    """Ask the VLM judge whether the rendered scene matches its specification.

    Args:
        scene: the scene.
        world: the settled world (rendered, not moved).
        cfg: QA settings (``cfg.vlm``).

    Returns:
        A :class:`CheckResult`: passed only with a verdict ``pass`` and a score >= ``min_score``;
        ``unverified`` failures otherwise. ``metrics`` hold latency, token use, attempts and errors.

    """
    vc = cfg.vlm
    base_url, model, key = endpoint(vc)
    if not base_url or not model:
        return CheckResult(NAME, False, 0.0, "unverified: no VLM endpoint configured (set "
                           "SCENEGEN_VLM_BASE_URL and SCENEGEN_VLM_MODEL, or VLMConfig.base_url/model)",
                           {"attempts": 0})
    try:
        import openai
    except ImportError:
        return CheckResult(NAME, False, 0.0, "unverified: the openai package is missing (pip install openai)",
                           {"attempts": 0})
    scrub = scrubber(vc)
    views = render_views(scene, world, vc)
    content: list[dict] = [{"type": "text", "text": describe(scene)}]
    for name, png in views:
        content.append({"type": "text", "text": f"View: {name} camera"})
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        content.append({"type": "image_url", "image_url": {"url": url}})
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": content}]
    tokens = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    errors: list[str] = []
    latency = 0.0
    json_mode = vc.json_mode
    verdict = None
    attempts = 0
    waits = sum(min(vc.max_backoff_s, vc.backoff_s * 2 ** k) for k in range(vc.max_retries))
    run_deadline = time.monotonic() + (vc.max_retries + 1) * vc.timeout_s + waits
    for attempt in range(vc.max_retries + 1):
        if attempt:
            time.sleep(max(0.0, min(vc.max_backoff_s, vc.backoff_s * 2 ** (attempt - 1),
                                    run_deadline - time.monotonic())))
        remaining = run_deadline - time.monotonic()
        if remaining <= 0:
            errors.append(f"the check's deadline of {(vc.max_retries + 1) * vc.timeout_s + waits:.3g} s was spent")
            break
        attempts += 1
        kw: dict = {"response_format": {"type": "json_object"}} if json_mode else {}
        client = openai.OpenAI(base_url=base_url, api_key=key or _NO_KEY, timeout=vc.timeout_s, max_retries=0)
        t0 = time.perf_counter()
        try:
            resp = call_with_deadline(
                lambda c=client, k=kw: c.chat.completions.create(model=model, messages=messages, temperature=0.0,
                                                                 max_tokens=vc.max_tokens, **k),
                min(vc.timeout_s, remaining), what="VLM request", cancel=client.close)
        except Exception as exc:  # noqa: BLE001 - every client failure is classified and reported
            latency += time.perf_counter() - t0
            why, retry = ("timeout (wall-clock deadline)", True) if isinstance(exc, TimeoutError) else \
                _classify(openai, exc)
            if json_mode and isinstance(exc, openai.BadRequestError):
                json_mode, retry = False, True  # the server may not know response_format
            errors.append(_one_line(scrub, why))
            log.info("VLM judge attempt %d failed: %s", attempts, errors[-1])
            if not retry:
                break
            continue
        finally:
            client.close()
        latency += time.perf_counter() - t0
        _usage(resp, tokens)
        choices = getattr(resp, "choices", None) or []
        text = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
        verdict = parse_verdict(scrub.text(text) if isinstance(text, str) else None)
        if verdict is not None:
            break
        errors.append(_one_line(scrub, f"unparsable answer: {text!r}"))
    metrics = {"model": model, "attempts": attempts, "latency_s": latency, "tokens": tokens,
               "errors": errors, "views": [v for v, _ in views], "verdict": verdict}
    if verdict is None:
        last = errors[-1] if errors else "no answer"
        return CheckResult(NAME, False, 0.0, f"unverified: no verdict after {attempts} request(s); last error: "
                           f"{last}", metrics)
    if not verdict["pass"]:
        probs = "; ".join(verdict["problems"][:3]) or "no problem given"
        return CheckResult(NAME, False, verdict["score"], f"judge rejected: {probs}", metrics)
    if verdict["score"] < vc.min_score:
        return CheckResult(NAME, False, verdict["score"], f"judge score too low: {verdict['score']:.2f} "
                           f"(min {vc.min_score:.2f})", metrics)
    return CheckResult(NAME, True, verdict["score"], "", metrics)
