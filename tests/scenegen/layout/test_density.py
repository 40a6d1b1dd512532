"""Layout density knobs: a distractor count that leaves the prompt alone, and a DR.json's layout part in generate."""

from __future__ import annotations

import json

import pytest

from scenegen.design import design
from scenegen.errors import ConfigError
from scenegen.layout.config import LayoutConfig
from scenegen.layout.density import apply_layout_knobs, read_layout_knobs

PROMPT = "put the banana in the bowl"


def test_distractor_knobs_set_and_add_clutter_and_keep_the_default_graphs():
    plain = design(PROMPT, 4, seed=7)
    assert [g.content_hash() for g in design(PROMPT, 4, seed=7, clutter=None, extra_clutter=0)] == \
        [g.content_hash() for g in plain]
    fixed = design(PROMPT, 4, seed=7, clutter=5)
    assert all(len(g.objects("distractor")) == 5 and g.instruction == PROMPT for g in fixed)
    more = design(PROMPT, 4, seed=7, extra_clutter=2)
    assert len(more[0].objects("distractor")) == len(plain[0].objects("distractor")) + 2  # same draw, +2
    assert all(3 <= len(g.objects("distractor")) <= 5 for g in more)  # 1-3 at random, +2
    assert len(design(PROMPT, 2, seed=7, clutter=29, extra_clutter=5)[0].objects("distractor")) == 30  # capped
    with pytest.raises(ConfigError, match="extra_clutter"):
        design(PROMPT, 2, extra_clutter=-1)
    for bad in ({"distractors": 31}, {"distractors": True}, {"extra_distractors": -1}):
        with pytest.raises(ConfigError, match="distractors"):
            LayoutConfig(**bad)


def _dr(tmp_path, layout, **extra):
    path = tmp_path / "DR.json"
    path.write_text(json.dumps({"schema": "scenegen.dr/1", "dr": {}, "layout": layout, **extra}))
    return path


def test_a_proposed_dr_file_moves_margin_and_clutter_and_names_the_weights_it_leaves(tmp_path):
    from rl.diagnose import diagnose
    from rl.guided_dr import propose, write_dr
    from tests.rl.test_diagnose import table

    doc = propose(diagnose(table(knock=lambda f: 0.5 if f["nn_distance"] < 0.07 else 0.03)))
    path = write_dr(doc, tmp_path / "proposed.json")
    knobs = read_layout_knobs(path)
    assert knobs["margin_scale"] < 1  # close neighbours fail: pack training scenes closer
    assert knobs["margin_scale"] == doc["layout"]["margin_scale"]
    assert knobs["extra_distractors"] == doc["layout"]["extra_distractors"]

    base = LayoutConfig(margin=0.02, extra_distractors=1)
    new, skipped = apply_layout_knobs(base, {"margin_scale": 0.5, "extra_distractors": 3, "tier_weights": {"5": 0.7},
                                             "category_weights": {}})
    assert new.margin == pytest.approx(0.01) and new.extra_distractors == 4 and new.table_height == base.table_height
    assert len(skipped) == 1 and skipped[0].startswith("tier_weights (5: 0.7)")

    for layout, why in (({"margin_scale": 0}, "margin_scale"), ({"extra_distractors": 2.5}, "extra_distractors"),
                        ({"density": 1}, "unknown layout knob"), ({"tier_weights": {"1": -1}}, "tier_weights")):
        with pytest.raises(ConfigError, match=why):
            read_layout_knobs(_dr(tmp_path, layout))
    with pytest.raises(ConfigError, match="not a DR file"):
        read_layout_knobs(_dr(tmp_path, {}, schema="scenegen.evalset/1"))
    with pytest.raises(ConfigError, match="no DR file"):
        read_layout_knobs(tmp_path / "missing.json")


def test_generate_reads_the_layout_knobs_of_a_dr_file(tmp_path, monkeypatch, capsys):
    import scenegen.pipeline
    from scenegen.cli import main

    seen = {}

    def fake_generate(prompt, n, out, seed, cfg, **kw):
        seen["cfg"] = cfg
        raise ConfigError("stop here")

    monkeypatch.setattr(scenegen.pipeline, "generate", fake_generate)
    path = _dr(tmp_path, {"margin_scale": 0.5, "extra_distractors": 2, "tier_weights": {"1": 0.2, "5": 0.8}})
    with pytest.raises(SystemExit):
        main(["generate", PROMPT, "-n", "1", "-o", str(tmp_path / "p"), "--no-qa", "--dr", str(path),
              "--distractors", "3"])
    lay = seen["cfg"].scene.layout
    assert lay.margin == pytest.approx(LayoutConfig().margin * 0.5) and lay.extra_distractors == 2
    assert lay.distractors == 3
    err = capsys.readouterr().err
    assert "tier_weights" in err and "stop here" in err
