"""In generate mode (enforced) the QA checker stops at the first failed check; audit mode runs them all."""

import pytest

from qa.config import QAConfig
from qa.loop import QAChecker
from tests.helpers.qa_scenes import GOOD, make_assets, moved, place, settled, stack_graph


@pytest.fixture(scope="module")
def floating(tmp_path_factory):
    graph = stack_graph()
    assets = make_assets(graph, tmp_path_factory.mktemp("fail-fast-assets"))
    return place(graph, assets, moved(GOOD, block_1=(0.50, 0.10, 0.0, 0.08))), assets


def test_enforced_qa_stops_at_the_first_failure_and_audit_runs_every_check(floating):
    scene, assets = floating
    cfg = QAConfig(checks=("geometry", "physics", "semantic", "reachability"))
    with settled(scene, assets, gravity=0.0) as world:  # block_1 hangs in the air: physics fails
        enforced = QAChecker(cfg)(scene, world)
        audit = QAChecker(QAConfig(checks=cfg.checks, enforce=False))(scene, world)
    assert [c["name"] for c in enforced["checks"]] == ["geometry", "physics"] and not enforced["passed"]
    assert [c["name"] for c in audit["checks"]] == list(cfg.checks)
    assert audit["passed"] and not audit["qa_passed"]
