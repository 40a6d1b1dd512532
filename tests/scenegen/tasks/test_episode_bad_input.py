"""Bad episode input is a one-line typed error (issue 12): reset options that are not a dict, damaged scenes."""

from __future__ import annotations

import json
import math

import pytest

from scenegen.errors import ConfigError, PackError
from scenegen.tasks.episode import TaskEpisode
from tests.scenegen.pack.test_pack import make_asset, make_scene, write_pack


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    base = tmp_path_factory.mktemp("episode_bad_input")
    table = make_asset(base, "table", "table", (0.8, 1.2, 0.05))
    bowl = make_asset(base, "bowl", "bowl", (0.15, 0.15, 0.06))
    banana = make_asset(base, "banana", "banana", (0.18, 0.04, 0.04))
    scene = make_scene(banana, table, bowl, 0.01)
    return write_pack(base / "pack", [(scene, {a.id: a for a in (table, bowl, banana)}, None, None)])


@pytest.mark.parametrize("options", [[1, 2], "scene", 5, {"scene_id": "nope"}])
def test_reset_refuses_bad_options(pack, options):
    with TaskEpisode(pack.root) as episode, pytest.raises(ConfigError, match="reset options|scene id"):
        episode.reset(seed=0, options=options)


def test_nan_settled_poses_are_refused_when_the_episode_loads(pack, tmp_path):
    import shutil

    root = tmp_path / "pack"
    shutil.copytree(pack.root, root)
    path = next((root / "scenes").iterdir()) / "scene.json"
    data = json.loads(path.read_text())
    data["settled"]["banana_1"][0][2] = math.nan
    path.write_text(json.dumps(data))
    with pytest.raises(PackError, match=r"scene\.json: scene field settled/banana_1/position/2"):
        with TaskEpisode(root) as episode:
            episode.reset(seed=0)
