"""``scenegen generate TASK --tier K``: refused families and tiers exit 2 in one line; a bottles tier end to end."""

from __future__ import annotations

from dataclasses import replace

import pytest

from qa.config import QAConfig
from qa.loop import generate_with_qa
from scenegen.cli import main
from scenegen.pack.reader import load_pack
from scenegen.pipeline import PipelineConfig
from tests.helpers.scene_assets import FAST, cache_dir


@pytest.mark.parametrize(("args", "words"), [
    (["put the banana in the bowl", "--tier", "2"], ("names none", "bottles_in_bin", "drop --tier")),
    (["bottles_in_bin", "--tier", "7"], ("no tier 7", "--tier 1..5")),
    (["flip_mugs", "--tier", "0"], ("no tier 0",)),
])
def test_refused_tier_or_family_exits_2_in_one_line(tmp_path, capsys, args, words):
    out = tmp_path / "pack"
    with pytest.raises(SystemExit) as info:
        main(["generate", *args, "-n", "1", "-o", str(out), "--quiet"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert all(w in err for w in words), err
    assert not out.exists()


def test_tier_is_a_pipeline_option():
    from click.testing import CliRunner

    from scenegen.cli import cli

    res = CliRunner().invoke(cli, ["generate", "--help"])
    assert res.exit_code == 0 and "--tier INTEGER" in res.output and "task family" in res.output


@pytest.mark.slow
def test_bottles_tier_1_generates_and_the_expert_puts_the_bottle_in_the_bin(tmp_path, tmp_path_factory):
    from rl.envs import PickPlaceEnv
    from scenegen.tasks.expert import rollout

    cfg = PipelineConfig(collision=FAST, preview_size=0, tier=1)
    out = tmp_path / "bottles-t1"
    run = generate_with_qa("bottles_in_bin", 2, out, 0, cfg, QAConfig(), cache_dir=cache_dir(tmp_path_factory),
                           progress=False)
    assert run.complete, run.message
    pack = load_pack(out)
    assert len(pack) == 2 and pack.manifest["config"]["tier"] == 1
    assert pack.manifest["config"]["scene"]["layout"]["margin"] == 0.04
    env = PickPlaceEnv(pack, image_keys=(), max_episode_steps=400)
    try:
        for sid in pack.scene_ids:
            scene = pack.scene(sid)
            assert scene.graph.meta["family"]["tier"] == 1
            bottles = [o for o in scene.graph.objects() if o.category == "bottle"]
            assert len(bottles) == 1 and [g.predicate for g in scene.graph.goals] == ["in"]
            assert sum(o.role == "distractor" for o in scene.graph.objects()) == 0
            res, _ = rollout(env, seed=0, options={"scene_id": sid})
            assert res.success and res.progress == 1.0, res.failure
    finally:
        env.close()
    # the same seed and tier again: the same scenes
    again = generate_with_qa("bottles_in_bin", 2, tmp_path / "again", 0, replace(cfg), QAConfig(),
                             cache_dir=cache_dir(tmp_path_factory), progress=False)
    assert again.complete
    assert sorted(load_pack(tmp_path / "again").scene_ids) == sorted(pack.scene_ids)
