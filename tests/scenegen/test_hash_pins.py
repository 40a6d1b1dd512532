"""Pinned hashes: same prompt + seed + config => the same graphs, scenes and packs, across refactors.

The literals were computed before the house was restructured (issue 11) and again after it;
they must only change with an intended change of generated content, and the commit that
changes them says why. Last change: issue 13's catalog (66 categories, grasp data in every
category's entry) and paraphrased instructions, and issue 18's builder-made collision parts,
early precheck and light robot in settling.
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
PACK = "92d491f72ed5de58ed793c4f041fb993872068117992b2b2b13135878a7e4398"
PACK_SCENES = ["a42bfdbda664f148ebce65c54716a481e5e845be53e17932cd49d815cf8160c3",
               "c10747cc2fef5840b0a5972b7ee8f1b72ace8a662b1b73e7a818716426e0c25e"]
QA_PACK = "5623ffe36e81c0a59b2a8ea51b8dc727434f32fb4128cc141359144e6eddbb26"
QA_SCENES = ["b4ad18ce7eeb441c15222825e63f2f2f64ddfe0c71075dcdb4dc2b200ea38955",
             "f82420b4ea89150598320dbdfc2d7c86105660a6313fa9946f1d8961126b8f78"]


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
