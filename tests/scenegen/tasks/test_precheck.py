"""Reach and view checks on a layout (``scenegen.tasks.precheck``), and the pipeline rejecting early with them."""

from dataclasses import replace

import pytest

from scenegen.errors import ConfigError
from scenegen.tasks.precheck import GRASP_REACH, PrecheckConfig, precheck, task_graph, task_objects
from tests.helpers.qa_scenes import GOOD, make_assets, moved, place, stack_graph


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    graph = stack_graph()
    return graph, make_assets(graph, tmp_path_factory.mktemp("precheck-assets"))


def test_a_good_layout_passes(stack):
    graph, assets = stack
    assert precheck(place(graph, assets, GOOD), assets) == ""
    assert task_objects(place(graph, assets, GOOD)) == (["block_1"], ["block_2"])


def test_a_target_beyond_the_experts_reach_is_rejected(stack):
    graph, assets = stack
    far = 1.2 * GRASP_REACH[1] * 0.8                        # beyond 1.1 x the Panda's 0.8 m reach
    why = precheck(place(graph, assets, moved(GOOD, block_1=(far, 0.1, 0.0))), assets)
    assert why.startswith("out of reach: block_1")
    assert precheck(place(graph, assets, moved(GOOD, block_1=(far, 0.1, 0.0))), assets,
                    PrecheckConfig(reach=False, view=False)) == ""


def test_a_target_hidden_behind_a_tall_box_is_rejected(stack):
    graph, assets = stack
    # the front camera looks steeply down (80 degrees) from +x: the 25 cm box, broadside and 2.5 mm in front of
    # block_1 (larger x), hides it
    hidden = moved(GOOD, block_1=(0.41, 0.0, 0.0), block_2=(0.45, -0.2, 0.0), cereal_box_1=(0.47, 0.0, 1.5708))
    why = precheck(place(graph, assets, hidden), assets)
    assert why.startswith("occluded: target block_1"), why
    beside = moved(hidden, cereal_box_1=(0.47, 0.3, 1.5708))
    assert precheck(place(graph, assets, beside), assets) == ""


def test_a_target_out_of_the_cameras_view_is_rejected(stack):
    graph, assets = stack
    why = precheck(place(graph, assets, moved(GOOD, block_1=(0.3, 0.55, 0.0))), assets, PrecheckConfig(reach=False))
    assert why.startswith(("out of view: target block_1", "not visible: target block_1")), why


def test_task_graph_drops_only_the_distractors(stack):
    graph, _ = stack
    sub = task_graph(graph)
    assert sorted(sub.g.nodes) == ["block_1", "block_2", "table"] and sub.goals == graph.goals
    assert task_graph(sub) is None, "nothing to drop"


def test_config_is_validated():
    with pytest.raises(ConfigError):
        PrecheckConfig(max_occlusion=0.0)


def test_the_pipeline_rejects_before_building_any_distractor(tmp_path, monkeypatch):
    from scenegen.assets import sources
    from scenegen.design import design
    from scenegen.pipeline import PipelineConfig, run_attempt

    built = []
    real = sources.ProceduralSource.__call__

    def spy(self, category, seed, attributes=None):
        built.append(category)
        return real(self, category, seed, attributes)

    monkeypatch.setattr(sources.ProceduralSource, "__call__", spy)
    graph = next(g for g in design("put the banana in the bowl with 2 distractors", 4, 0) if task_graph(g) is not None)
    distractors = {o.category for o in graph.objects("distractor")}
    cfg = replace(PipelineConfig(), precheck=PrecheckConfig(min_fraction=0.99), preview_size=0)
    res = run_attempt(0, graph.to_dict(), 7, cfg, str(tmp_path))
    assert not res.accepted and res.reason.startswith("precheck: not visible")
    assert built and not distractors & set(built), "a distractor asset was built before the early check"
