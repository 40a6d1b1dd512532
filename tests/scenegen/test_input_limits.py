"""Bad input ends fast with a typed one-line error (issue 12): long prompts, too many goals or scenes, Ray, ids."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenegen.design import design
from scenegen.design.lexicon import MAX_PROMPT_CHARS
from scenegen.errors import BackendError, ConfigError, PromptError
from scenegen.graph import SceneGraph
from scenegen.pipeline import PipelineConfig, generate

ROOT = Path(__file__).resolve().parents[2]


def test_a_100_kb_prompt_is_refused_at_once():
    start = time.monotonic()
    with pytest.raises(PromptError, match=f"at most {MAX_PROMPT_CHARS}"):
        design("put an apple in the bowl. " * 4000, 4)
    assert time.monotonic() - start < 1.0  # it took 110 s before the cap


def test_the_rules_designer_says_what_the_schema_refuses():
    prompt = ("put the 20 apples in the bowl and the 20 bananas in the basket and 20 cups on the plate and 20 cans "
              "in the bin")
    with pytest.raises(PromptError, match="asks for 80 goals where a scene graph holds at most 64"):
        design(prompt, 3)


def test_new_id_is_linear_and_gives_the_smallest_free_index():
    g = SceneGraph("x")
    start = time.monotonic()
    for _ in range(20_000):
        g.add_object(g.new_id("apple"), "apple", "distractor")
    assert time.monotonic() - start < 5.0  # quadratic, this is about 200 million membership tests
    assert len(g) == 20_000 and "apple_20000" in g
    g.remove_object("apple_7")
    assert g.new_id("apple") == "apple_7"
    g.add_object("apple_20002", "apple", "distractor")
    g.add_object(g.new_id("apple"), "apple", "distractor")
    assert g.new_id("apple") == "apple_20001" and g.new_id("pear") == "pear_1"


@pytest.mark.parametrize("n", [100_000, 3_333])
def test_too_many_scenes_say_why_before_any_work(tmp_path, n):
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"-n {n} is too many scenes.*{n * 3 + 4} designed graphs.*at most 3332"):
        generate("put the banana in the bowl", n, tmp_path / "p", config=PipelineConfig())
    assert time.monotonic() - start < 2.0 and not (tmp_path / "p").exists()


def test_an_unreachable_ray_address_fails_fast_naming_it(tmp_path):
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(BackendError, match=rf"stage ray connect: cannot reach the Ray cluster at 127\.0\.0\.1:{port}"):
        generate("put the banana in the bowl", 1, tmp_path / "p",
                 config=PipelineConfig(backend="ray", workers=2, ray_address=f"127.0.0.1:{port}"))
    assert time.monotonic() - start < 15.0  # it retried past 90 s


def _session(sid: int) -> dict[int, str]:
    """Pid -> command line of the live processes of session ``sid``."""
    out = {}
    for d in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                out[int(d)] = Path(f"/proc/{d}/cmdline").read_text().replace("\0", " ")
        except (OSError, ValueError, IndexError):
            continue
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_and_the_resource_tracker_die_with_a_killed_run(tmp_path):
    cmd = [sys.executable, "-m", "scenegen.cli", "generate", "put the banana in the bowl", "-n", "4", "-o",
           str(tmp_path / "pack"), "--workers", "2", "--fast-collision", "--cache-dir", str(tmp_path / "cache"),
           "--quiet", "--no-qa"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 120
        while len(_session(proc.pid)) < 4 and time.monotonic() < end:  # the run, the tracker, two workers
            time.sleep(0.2)
        assert len(_session(proc.pid)) >= 4, _session(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        end = time.monotonic() + 20
        while _session(proc.pid) and time.monotonic() < end:
            time.sleep(0.2)
        assert not _session(proc.pid), _session(proc.pid)
    finally:
        for pid in [proc.pid, *_session(proc.pid)]:  # only the processes this test started
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
