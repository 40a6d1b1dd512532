"""Pinned hashes: same prompt + seed + config => the same graphs, scenes and packs, across refactors.

The literals were computed before the house was restructured (issue 11) and again after it;
they must only change with an intended change of generated content, and the commit that
changes them says why. Last change: issue 13's catalog (66 categories, grasp data in every
category's entry) and paraphrased instructions, and issue 18's builder-made collision parts,
early precheck and light robot in settling; then issue 13's front camera framing (80 deg elevation,
20 deg fov, 5 cm margin: the scene's camera is part of its content, the layouts are unchanged).
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

GRAPHS = ["5974a6c88a694a051b5b5d0853c41e096a07f3e59f3a23912a244f2c78540f6a",
          "2dfc9e5a15028ca8e3b336f8848e04204864d07bd7b7a43b850e3f7212156571",
          "ecb59e1eaa85014ae29774681aa36c74b68ef2fc13e2eb1a94511956a4477ac7"]
PACK = "c728aca37fef46a49eb12d7ede7d9f2dd7d06116f3406fc4f8a3e58cebbcfe97"
PACK_SCENES = ["9258604b5f4278052296f786d5213a28554afa185c7cbe4da485a93675319b3e",
               "eb5571210ad008ae93913fb26ce0e7ff97e185ff3d56880d8ca2be4b1289575b"]
QA_PACK = "71d288e5a2d1439654fcdccf5e0aa6337b575f249874a9c0358ec19b8038ca65"
QA_SCENES = ["2059164ab239874ca3e51a80cc98fbae43950370418d52ba4116a702445557c9",
             "79d769e2ff6bd0ffe5fd6d85b7e7e0fa999f61916b81b380ce956799744f8c44"]


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
