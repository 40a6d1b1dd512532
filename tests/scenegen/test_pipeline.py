import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from scenegen.assets.collision.config import CollisionConfig
from scenegen.cli import main
from scenegen.errors import ScenegenError
from scenegen.pack.reader import load_pack
from scenegen.pipeline import PipelineConfig, generate
from scenegen.relations import relation_holds
from tests.helpers.scene_assets import FAST, cache_dir

PROMPT = "put the banana in the bowl"
CFG = PipelineConfig(collision=FAST, preview_size=64)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return cache_dir(tmp_path_factory)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, cache):
    out = tmp_path_factory.mktemp("pipe") / "base"
    return generate(PROMPT, 3, out, seed=5, config=CFG, cache_dir=cache, progress=False)


def test_generate_writes_settled_scenes(baseline):
    assert len(baseline) == 3
    run = baseline.manifest["summary"]["run"]
    assert run["accepted"] == 3 and run["attempts"] >= 3 and run["stopped_by"] == ""
    assert baseline.extra_path("contact_sheet.png") is not None
    lookup = baseline.asset_lookup
    for scene in baseline.scenes():
        assert scene.settled is not None and scene.meta["settle"]["at_rest"]
        assert baseline.preview_path(scene.id) is not None
        cats = {o.category for o in scene.graph.objects()}
        assert {"banana", "bowl", "table"} <= cats
        for obj in scene.graph.objects():
            parent = scene.graph.parent(obj.id)
            if parent is None:
                continue
            rel, p = parent
            ext = lookup[scene.assets[obj.id]].extents
            assert relation_holds(rel, scene.settled[obj.id], ext, scene.settled[p], lookup[scene.assets[p]].extents)
    assert baseline.verify() == []


@pytest.mark.slow
def test_same_seed_same_hashes_with_two_workers(baseline, tmp_path, cache):
    pack = generate(PROMPT, 3, tmp_path / "w2", seed=5, config=replace(CFG, workers=2), cache_dir=cache,
                    progress=False)
    assert pack.content_hash == baseline.content_hash
    assert pack.scene_ids == baseline.scene_ids


@pytest.mark.slow
def test_other_seed_other_scenes(baseline, tmp_path, cache):
    pack = generate(PROMPT, 1, tmp_path / "s6", seed=6, config=CFG, cache_dir=cache, progress=False)
    assert not set(pack.scene_ids) & set(baseline.scene_ids)


KILL_SCRIPT = """
import os, sys
sys.path.insert(0, {tests!r})
from tests.helpers.scene_assets import FAST
from scenegen.pack.writer import PackWriter
from scenegen.pipeline import PipelineConfig, generate
orig = PackWriter.add_scene
def add_scene(self, *a, **k):
    if len(self.scene_ids) == 1:
        os._exit(9)  # die like a killed process, mid-run
    return orig(self, *a, **k)
PackWriter.add_scene = add_scene
generate({prompt!r}, 3, {out!r}, seed=5, config=PipelineConfig(collision=FAST, preview_size=64),
         cache_dir={cache!r}, progress=False)
"""


@pytest.mark.slow
def test_resume_after_killed_run(baseline, tmp_path, cache):
    out = tmp_path / "killed"
    repo = str(Path(__file__).resolve().parents[2])
    script = KILL_SCRIPT.format(tests=repo, prompt=PROMPT, out=str(out), cache=str(cache))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert len(json.loads((out / "manifest.json").read_text())["scenes"]) == 1
    pack = generate(PROMPT, 3, out, seed=5, config=CFG, cache_dir=cache, progress=False)
    assert pack.manifest["summary"]["run"]["resumed"] == 1
    assert pack.content_hash == baseline.content_hash


def test_impossible_layout_fails_clearly_in_bounded_time(tmp_path, cache):
    cfg = replace(CFG, collision=CollisionConfig(method="hull"), attempts_per_scene=1.0)
    t0 = time.perf_counter()
    with pytest.raises(ScenegenError) as ei:
        generate("put 20 large bowls in the tote", 1, tmp_path / "full", seed=0, config=cfg,
                 cache_dir=cache, progress=False)
    msg = str(ei.value)
    assert "0/1 scenes accepted" in msg and "LayoutError" in msg
    assert time.perf_counter() - t0 < 240
    # the failed run leaves a valid, empty pack (nothing half-written)
    assert len(load_pack(tmp_path / "full")) == 0


def test_bad_config_values():
    with pytest.raises(ScenegenError, match="workers"):
        PipelineConfig(workers=0)
    with pytest.raises(ScenegenError, match="backend"):
        PipelineConfig(backend="threads")


def test_cli_generate_info_show(tmp_path, cache, capsys):
    out = tmp_path / "cli"
    main(["generate", PROMPT, "-n", "1", "-o", str(out), "--seed", "5", "--quiet", "--cache-dir", str(cache),
          "--fast-collision"])
    assert "1 scenes in" in capsys.readouterr().out
    main(["info", str(out), "--json", "--verify"])
    data = json.loads(capsys.readouterr().out)
    assert data["mismatches"] == []
    main(["show", str(out)])
    assert "contact sheet" in capsys.readouterr().out
    sid = load_pack(out).scene_ids[0]
    main(["show", str(out), "--scene", sid[:8]])
    assert "goal: banana_1 in bowl_1" in capsys.readouterr().out


def test_cli_bad_prompt_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as ei:
        main(["generate", "put the spaceship in the bowl", "-n", "1", "-o", str(tmp_path / "x")])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "spaceship" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_ray_backend_gives_the_same_pack(baseline, tmp_path, cache):
    import ray  # the ray extra is installed by `make test`

    try:
        pack = generate(PROMPT, 3, tmp_path / "ray", seed=5, config=replace(CFG, workers=2, backend="ray"),
                        cache_dir=cache, progress=False)
    finally:
        ray.shutdown()
    assert pack.content_hash == baseline.content_hash
