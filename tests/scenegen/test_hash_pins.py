"""Pinned hashes: same prompt + seed + config => the same graphs, scenes and packs, across refactors.

The literals were computed before the house was restructured (issue 11) and again after it;
they must only change with an intended change of generated content, and the commit that
changes them says why.
"""

from __future__ import annotations

import pytest

from qa.config import QAConfig
from qa.loop import generate_with_qa
from scenegen.design import design
from scenegen.pack.reader import load_pack
from scenegen.pipeline import PipelineConfig, generate
from tests.helpers.scene_assets import FAST, cache_dir

CFG = PipelineConfig(collision=FAST, preview_size=64)

GRAPHS = ["80db7c52eafeb8fbd69053ce295f05f86757c5f94041b15af2a4f7bb1b0540fe",
          "26dd5b2929544d60f0c3088f4e6b02c2b534335b8662150ad6e9367ea76cec70",
          "0c156da2ae7ad9dee254a9c282c6316137302f1806a73147dacfbb24135ff9aa"]
PACK = "4418ddeeca4ada52448113b1fb3d6df026c65e07cf07ba65d127ae871801521e"
PACK_SCENES = ["442263f8dc73a3615a397de565f82c05c1949a573600250d42586f1c3a55e3ba",
               "d5264ae6953457ead9f52ac78b4c0b5a122f62cfd4c03e889cd51bf73211c9a5"]
QA_PACK = "257e3425ff7db6d0f01f6287d29ee1f33c80db1f3c4ee68a7daa1b11baf2a44f"
QA_SCENES = ["12054f563d2a5074287a6d20dc1b415a87618acd11032c38d955bbb4e387fc49",
             "dbda036b2bb16d620cd70d4574da2600470b5e3411bb8698aafe54bf78ecc080"]


def test_graph_hashes_are_pinned():
    assert [g.content_hash() for g in design("put the banana in the bowl", 3, seed=7)] == GRAPHS


@pytest.mark.slow
def test_pack_hash_is_pinned(tmp_path, tmp_path_factory):
    pack = generate("put the banana in the bowl", 2, tmp_path / "a", seed=3, config=CFG,
                    cache_dir=cache_dir(tmp_path_factory), progress=False)
    assert sorted(pack.scene_ids) == PACK_SCENES
    assert pack.content_hash == PACK


@pytest.mark.slow
def test_qa_pack_hash_is_pinned(tmp_path, tmp_path_factory):
    generate_with_qa("put the apple on the plate", 2, tmp_path / "b", 4, CFG, QAConfig(),
                     cache_dir=cache_dir(tmp_path_factory), progress=False)
    pack = load_pack(tmp_path / "b")
    assert sorted(pack.scene_ids) == QA_SCENES
    assert pack.content_hash == QA_PACK
