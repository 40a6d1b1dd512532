"""`scenegen design` and `scenegen catalog` through click's CliRunner and through main()."""

import json
import re

import pytest
from click.testing import CliRunner

from scenegen.cli import cli, main
from scenegen.graph import SceneGraph


@pytest.fixture
def runner():
    return CliRunner()


def test_design_json_prints_valid_distinct_graphs(runner, catalog):
    res = runner.invoke(cli, ["design", "put the banana in the bowl", "-n", "20", "--json"])
    assert res.exit_code == 0, res.output
    graphs = [SceneGraph.from_dict(d) for d in json.loads(res.stdout)]
    assert len(graphs) == 20
    assert len({g.content_hash() for g in graphs}) == 20
    assert all(g.validate(catalog) == [] for g in graphs)
    assert all([(x.subject, x.predicate, x.object) for x in g.goals] == [("banana_1", "in", "bowl_1")]
               for g in graphs)


def test_design_seed_is_deterministic(runner):
    args = ["design", "stack the blocks with 2 distractors", "-n", "4", "--json"]
    a = runner.invoke(cli, [*args, "--seed", "7"]).stdout
    b = runner.invoke(cli, [*args, "--seed", "7"]).stdout
    c = runner.invoke(cli, [*args, "--seed", "8"]).stdout
    assert a == b and a != c


def test_design_summary(runner):
    res = runner.invoke(cli, ["design", "flip the mug and put it on the tray", "-n", "2"])
    assert res.exit_code == 0, res.output
    assert "#0 " in res.stdout and "#1 " in res.stdout
    assert "goals: mug_1 upright, mug_1 on tray_1" in res.stdout
    assert "mug_1(" in res.stdout and "inverted" in res.stdout


def test_design_writes_one_file_per_graph_atomically(runner, tmp_path):
    out = tmp_path / "graphs"
    res = runner.invoke(cli, ["design", "put the apple in the basket", "-n", "5", "-o", str(out)])
    assert res.exit_code == 0, res.output
    files = sorted(out.iterdir())
    assert len(files) == 5
    for i, f in enumerate(files):
        m = re.fullmatch(r"(\d{4})_([0-9a-f]{12})\.json", f.name)
        assert m and int(m.group(1)) == i
        g = SceneGraph.from_json(f.read_text())
        assert g.content_hash().startswith(m.group(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graphs"]  # no temp folder left behind
    # A non-empty folder is refused without --force, and replaced with it.
    res = runner.invoke(cli, ["design", "put the apple in the basket", "-n", "2", "-o", str(out)])
    assert res.exit_code != 0 and "not empty" in str(res.exception)
    assert len(list(out.iterdir())) == 5
    res = runner.invoke(cli, ["design", "put the apple in the basket", "-n", "2", "-o", str(out), "--force"])
    assert res.exit_code == 0, res.output
    assert len(list(out.iterdir())) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graphs"]


def test_bad_prompt_through_main_exits_2_with_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["design", "put the spork in the bowl"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "spork" in err and "fork" in err


@pytest.mark.parametrize("args", [
    ["design", ""],
    ["design", "put the bowl in the banana"],
    ["design", "put the banana in the bowl", "--designer", "nope"],
    ["design", "put the banana in the bowl", "--json", "-o", "somewhere"],
    ["design", "put the banana in the bowl", "-n", "0"],
])
def test_errors_exit_2(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert capsys.readouterr().err.strip()
    assert not list(tmp_path.iterdir())


def test_main_json_output(capsys):
    main(["design", "put the cup on the plate", "-n", "3", "--json"])  # returns normally on success
    graphs = [SceneGraph.from_dict(d) for d in json.loads(capsys.readouterr().out)]
    assert len(graphs) == 3 and all(not g.validate() for g in graphs)


def test_design_help_has_examples(runner):
    res = runner.invoke(cli, ["design", "--help"])
    assert res.exit_code == 0
    assert "Examples:" in res.stdout and "--json" in res.stdout and "-o" in res.stdout


def test_catalog_table_and_json(runner, catalog):
    res = runner.invoke(cli, ["catalog"])
    assert res.exit_code == 0, res.output
    groups = {c.group for c in catalog}
    assert all(f"\n{g}\n" in res.stdout for g in groups)
    assert all(c.name in res.stdout for c in catalog)
    res = runner.invoke(cli, ["catalog", "--json"])
    data = json.loads(res.stdout)
    assert [c["name"] for c in data["categories"]] == [c.name for c in catalog]
    assert set(data["colors"]) == set(catalog.colors)
    assert runner.invoke(cli, ["catalog", "--help"]).stdout.count("Examples:") == 1
