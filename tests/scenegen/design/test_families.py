"""Task families: the seed-task files load and validate, bad files fail naming file and field, tier draws."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from scenegen.design.families import SCHEMA, families, find_family, load_family, parse_family, require_family
from scenegen.design.family_draw import design_run, family_graphs, render_targets
from scenegen.design.registry import design
from scenegen.errors import ConfigError, FamilyError
from scenegen.pipeline import PipelineConfig

SEED_TASKS = ("bottles_in_bin", "flip_mugs", "sort_from_tote")


@pytest.fixture(scope="module")
def fams():
    return families()


def test_seed_task_files_load_with_five_tiers_each(fams):
    assert set(SEED_TASKS) <= set(fams)
    for name in SEED_TASKS:
        fam = fams[name]
        assert [t.tier for t in fam.tiers] == [1, 2, 3, 4, 5]
        assert fam.path.endswith(f"{name}.json") and fam.progress
        counts = [t.count for t in fam.tiers]
        assert counts == sorted(counts), f"{name}: target counts must not fall as the tier rises"
        assert fam.tiers[0].margin >= fam.tiers[-1].margin
    bottles = fams["bottles_in_bin"]
    assert bottles.tiers[0].count == (1, 1) and dict(bottles.tiers[0].states) == {"upright": 1.0}
    assert bottles.tiers[4].count == (4, 5) and set(dict(bottles.tiers[4].states)) == {"upright", "lying"}
    assert fams["sort_from_tote"].tiers[4].count[0] >= 10 and fams["sort_from_tote"].tiers[4].types[1] == 4
    assert "upright" in dict(fams["flip_mugs"].tiers[2].states)  # some mugs already upright


def test_round_trip_of_a_family_file(fams, tmp_path):
    fam = fams["flip_mugs"]
    p = tmp_path / "flip_mugs.json"
    p.write_text(json.dumps(fam.to_dict()))
    assert load_family(p) == fam


def test_find_family_by_name_prompt_or_alias(fams):
    assert find_family("bottles_in_bin").name == "bottles_in_bin"
    assert find_family("Put all the bottles in the bin.").name == "bottles_in_bin"
    assert find_family("flip the mug upright").name == "flip_mugs"
    assert find_family("sort the nuts, bolts and washers from the tote into the sorter").name == "sort_from_tote"
    assert find_family("put the banana in the bowl") is None
    with pytest.raises(FamilyError, match="names none; use one of: bottles_in_bin"):
        require_family("put the banana in the bowl")
    with pytest.raises(FamilyError, match="has no tier 6; use --tier 1..5"):
        fams["bottles_in_bin"].tier(6)


def _good(fams) -> dict:
    return copy.deepcopy(fams["bottles_in_bin"].to_dict())


def _bad(data: dict, *path_value) -> dict:
    *path, value = path_value
    d = data
    for k in path[:-1]:
        d = d[k]
    if value is KeyError:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return data


@pytest.mark.parametrize(("edit", "field"), [
    (("schema", "scenegen.task_family/9"), "'schema'"),
    (("template", KeyError), "'template'"),
    (("template", "put the bottles in the bin"), "'template'"),
    (("targets", ["spork"]), "'targets'"),
    (("colour", "red"), "'colour'"),
    (("tiers", []), "'tiers'"),
    (("tiers", 0, "count", [3, 1]), "tiers[0].count"),
    (("tiers", 0, "count", [0, 1]), "tiers[0].count"),
    (("tiers", 1, "tier", 5), "tiers[1].tier"),
    (("tiers", 0, "states", {"sideways": 1.0}), "tiers[0].states.sideways"),
    (("tiers", 0, "states", {"upright": -1}), "tiers[0].states.upright"),
    (("tiers", 0, "margin", 0.5), "tiers[0].margin"),
    (("tiers", 2, "distractors", [0, 99]), "tiers[2].distractors"),
    (("tiers", 0, "types", [2, 2]), "tiers[0].types"),
    (("tiers", 0, "density", 3), "tiers[0].density"),
    (("tiers", 0, "margin", KeyError), "tiers[0].margin"),
])
def test_a_bad_family_file_names_the_file_and_the_field(fams, tmp_path, edit, field):
    p = tmp_path / "bottles_in_bin.json"
    p.write_text(json.dumps(_bad(_good(fams), *edit)))
    with pytest.raises(FamilyError) as info:
        load_family(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: field {field} ") and "; " in msg and "\n" not in msg
    assert isinstance(info.value, ConfigError)


def test_unreadable_family_files(tmp_path, fams):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(FamilyError, match=r"broken\.json: not valid JSON \(line 1"):
        load_family(bad)
    with pytest.raises(FamilyError, match="no such task-family file"):
        load_family(tmp_path / "absent.json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(_good(fams)))
    with pytest.raises(FamilyError, match="name the file bottles_in_bin.json"):
        load_family(other)
    with pytest.raises(FamilyError, match="not a task family object"):
        parse_family([1, 2], "x.json")
    assert _good(fams)["schema"] == SCHEMA


def test_a_folder_with_a_bad_file_fails_on_load(tmp_path, fams):
    (tmp_path / "bottles_in_bin.json").write_text(json.dumps(_bad(_good(fams), "tiers", 0, "count", [2, 1])))
    with pytest.raises(FamilyError, match="tiers\\[0\\].count"):
        families(tmp_path)


def test_render_targets():
    from scenegen.catalog import load_catalog

    cat = load_catalog()
    assert render_targets([("bottle", 1)], cat) == "bottle"
    assert render_targets([("bottle", 3)], cat) == "3 bottles"
    assert render_targets([("hex_nut", 2), ("bolt", 1), ("washer", 3)], cat) == "2 hex nuts, 1 bolt and 3 washers"


@pytest.mark.parametrize("name", SEED_TASKS)
def test_tier_draws_are_deterministic_and_follow_the_recipe(fams, name):
    fam = fams[name]
    for tier in (1, 3, 5):
        spec = fam.tier(tier)
        a = family_graphs(fam, tier, 12, seed=4)
        b = family_graphs(fam, tier, 12, seed=4)
        assert [g.content_hash() for g in a] == [g.content_hash() for g in b]
        assert len({g.content_hash() for g in a}) == 12
        c = family_graphs(fam, tier, 12, seed=5)
        assert [g.content_hash() for g in a] != [g.content_hash() for g in c]
        allowed = dict(spec.states)
        for g in a:
            drawn = g.meta["family"]
            assert drawn["name"] == name and drawn["tier"] == tier
            kinds = drawn["kinds"]
            assert spec.count[0] <= sum(kinds.values()) <= spec.count[1]
            assert spec.types[0] <= len(kinds) <= spec.types[1] and set(kinds) <= set(fam.targets)
            assert spec.distractors[0] <= drawn["distractors"] <= spec.distractors[1]
            assert sum(o.role == "distractor" for o in g.objects()) == drawn["distractors"]
            objs = [o for o in g.objects() if o.category in fam.targets]
            assert len(objs) == sum(kinds.values())
            assert all(o.state in allowed for o in objs)
            assert g.goals and not g.validate()


def test_mug_tiers_leave_upright_mugs_without_goals(fams):
    graphs = family_graphs(fams["flip_mugs"], 3, 30, seed=0)
    seen_upright = 0
    for g in graphs:
        goals = {gl.subject for gl in g.goals}
        for o in g.objects():
            if o.category != "mug":
                continue
            if o.state == "upright":
                seen_upright += 1
                assert o.id not in goals and o.role == "background"
            else:
                assert o.id in goals and o.role == "target"
        assert goals, "a mug scene needs at least one mug to turn"
    assert seen_upright > 0


def test_design_run_without_a_tier_is_the_designer():
    cfg = PipelineConfig()
    graphs, out = design_run("put the banana in the bowl", 3, 7, cfg)
    assert out is cfg
    assert [g.content_hash() for g in graphs] == [g.content_hash() for g in design("put the banana in the bowl", 3, 7)]


def test_design_run_with_a_tier_draws_the_family_and_sets_the_margin(fams):
    cfg = replace(PipelineConfig(), tier=5)
    graphs, out = design_run("put all the bottles in the bin", 4, 0, cfg)
    assert out.scene.layout.margin == fams["bottles_in_bin"].tier(5).margin
    assert out.tier == 5 and all(g.meta["family"]["tier"] == 5 for g in graphs)
    assert [g.content_hash() for g in graphs] == \
        [g.content_hash() for g in family_graphs(fams["bottles_in_bin"], 5, 4, 0)]
    with pytest.raises(FamilyError, match="no tier 9"):
        design_run("bottles_in_bin", 4, 0, replace(cfg, tier=9))
    with pytest.raises(FamilyError, match="names none"):
        design_run("put the banana in the bowl", 4, 0, cfg)
