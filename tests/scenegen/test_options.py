"""CLI options built from config dataclasses (scenegen.options), and docs/cli.md against the commands."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import click
import pytest
from click.testing import CliRunner

from scenegen.errors import ConfigError
from scenegen.options import (
    CommaSeparated,
    ConfigCommand,
    ConfigOptions,
    cli_option_names,
    field_docs,
    help_text,
    opt,
    option_default,
    render_cli_docs,
    splice_cli_docs,
)

ROOT = Path(__file__).resolve().parents[2]
MODES = ("fast", "slow")


@dataclass(frozen=True)
class Inner:
    """A nested config."""

    size: int = 64
    """Side (pixels) of the image."""
    label: str = "front"
    """Camera label."""

    def __post_init__(self) -> None:
        if not 8 <= self.size <= 512:
            raise ConfigError(f"Inner.size = {self.size} must be in 8..512")


@dataclass(frozen=True)
class Demo:
    """A test config."""

    count: int = 3
    """How many, at most
    (a docstring on two lines)."""
    rate: float = 0.5
    """A rate in (0, 1]; see ``count``."""
    name: str = "rules"
    """A name."""
    verbose: bool = False
    """Print more."""
    colour: bool = True
    """Draw in colour."""
    kind: Literal["a", "b"] = "a"
    """Kind of thing (:class:`~scenegen.graph.SceneGraph` style)."""
    mode: str = "fast"
    """``fast`` or ``slow`` (validated in ``__post_init__``)."""
    model: str | None = None
    """Model weights (None: none)."""
    views: tuple[str, ...] = ("front", "side")
    """Views to draw."""
    box: tuple[float, float, float] = (1.0, 2.0, 3.0)
    """A fixed-length triple."""
    inner: Inner = field(default_factory=Inner)
    """Nested settings."""
    undocumented: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ConfigError(f"Demo.count = {self.count} must be at least 1")
        if not 0 < self.rate <= 1:
            raise ConfigError(f"Demo.rate = {self.rate} must be in (0, 1]")
        if self.mode not in MODES:
            raise ConfigError(f"Demo.mode = {self.mode!r} must be one of {', '.join(MODES)}")


@dataclass(frozen=True)
class Derived(Demo):
    """A subclass: inherited fields keep their docstrings."""

    extra: float = 1.0
    """Added by the subclass."""


FIELDS = ["count", "rate", "name", "verbose", "colour", "kind", opt("mode", choices="MODES"), "model", "views",
          "box", opt("inner.size", flag="--image-size"), "inner.label"]


def _command(builder: ConfigOptions, sink: dict) -> click.Command:
    @click.command(cls=ConfigCommand)
    @builder
    def cmd(**kw: object) -> None:
        sink["config"] = builder.to_config(kw)

    return cmd


def _by_flag(builder: ConfigOptions) -> dict[str, click.Option]:
    return {o.opts[0]: o for o in builder.options()}


def test_field_docs_reads_the_string_under_each_field():
    docs = field_docs(Demo)
    assert docs["count"] == "How many, at most\n(a docstring on two lines)."
    assert docs["inner"] == "Nested settings." and "undocumented" not in docs
    assert field_docs(Derived)["extra"] == "Added by the subclass." and field_docs(Derived)["rate"] == docs["rate"]
    assert field_docs(Demo) is docs  # cached
    with pytest.raises(ConfigError, match="not a dataclass"):
        field_docs(int)


def test_help_text_unwraps_markup_and_names_flags():
    assert help_text("see :class:`~scenegen.graph.SceneGraph` and :func:`scenegen.pipeline.generate`") == \
        "see SceneGraph and scenegen.pipeline.generate"
    assert help_text('``ray`` (``ray_address`` picks it; for ``assets="shap-e"``)',
                     {"ray_address": "--ray-address", "assets": "--assets"}) == \
        "ray (--ray-address picks it; for --assets shap-e)"
    assert help_text("two\n   lines") == "two lines"


def test_each_type_maps_to_a_click_option():
    o = _by_flag(ConfigOptions(Demo, FIELDS))
    assert o["--count"].type is click.INT and o["--count"].default == 3 and o["--count"].show_default
    assert o["--rate"].type is click.FLOAT and o["--name"].type is click.STRING
    assert o["--verbose"].secondary_opts == ["--no-verbose"] and o["--verbose"].default is False
    assert o["--colour"].secondary_opts == ["--no-colour"] and o["--colour"].default is True
    assert isinstance(o["--kind"].type, click.Choice) and list(o["--kind"].type.choices) == ["a", "b"]
    assert list(o["--mode"].type.choices) == list(MODES)  # choices= names a constant of the config's module
    assert o["--model"].type is click.STRING and o["--model"].default is None and not o["--model"].required
    assert isinstance(o["--views"].type, CommaSeparated) and o["--views"].default == "front,side"
    assert o["--box"].type.length == 3
    assert o["--count"].help == "How many, at most (a docstring on two lines)."
    assert o["--rate"].help == "A rate in (0, 1]; see --count."
    assert o["--kind"].help == "Kind of thing (SceneGraph style)."


def test_overrides_and_nested_paths():
    o = _by_flag(ConfigOptions(Demo, [opt("inner.size", flag="--image-size", default=128, help="Side."),
                                      "inner.label"]))
    assert o["--image-size"].name == "inner__size" and o["--image-size"].default == 128
    assert o["--image-size"].help == "Side."
    assert o["--label"].name == "inner__label" and o["--label"].default == "front"
    plain = ConfigOptions(Demo, [opt("verbose", negatable=False, name="loud")]).options()[0]
    assert plain.is_flag and plain.opts == ["--verbose"] and not plain.secondary_opts and plain.name == "loud"
    with pytest.raises(ConfigError, match="needs a False default"):
        ConfigOptions(Demo, [opt("colour", negatable=False)]).options()
    with pytest.raises(ConfigError, match="no field 'nope'"):
        ConfigOptions(Demo, ["inner.nope"]).options()
    with pytest.raises(ConfigError, match="not a nested config"):
        ConfigOptions(Demo, ["count.x"]).options()
    with pytest.raises(ConfigError, match="no CLI form"):
        ConfigOptions(Demo, ["inner"]).options()
    with pytest.raises(ConfigError, match="duplicate flag --count"):
        ConfigOptions(Demo, ["count", opt("rate", flag="--count")])


def test_a_field_without_docstring_is_refused():
    with pytest.raises(ConfigError, match=r"Demo.undocumented has no docstring.*--undocumented"):
        ConfigOptions(Demo, ["undocumented"]).options()


def test_round_trip_click_values_to_config():
    b = ConfigOptions(Demo, FIELDS)
    base = Demo()
    assert b.to_config(b.to_values(base)) == base and b.to_config({}) == base
    cfg = Demo(count=7, rate=0.25, name="llm", verbose=True, colour=False, kind="b", mode="slow", model="w",
               views=("wrist",), box=(0.5, 0.5, 1.0), inner=Inner(size=32, label="top"))
    assert b.to_config(b.to_values(cfg)) == cfg
    sink: dict = {}
    args = ["--count", "7", "--rate", "0.25", "--name", "llm", "--verbose", "--no-colour", "--kind", "b",
            "--mode", "slow", "--model", "w", "--views", " wrist ", "--box", "0.5,0.5,1", "--image-size", "32",
            "--label", "top"]
    res = CliRunner().invoke(_command(b, sink), args)
    assert res.exit_code == 0, res.output
    assert sink["config"] == cfg
    res = CliRunner().invoke(_command(b, sink), [])
    assert res.exit_code == 0 and sink["config"] == base
    res = CliRunner().invoke(_command(b, sink), ["--box", "1,2"])
    assert res.exit_code == 2 and "3 comma-separated values" in res.output
    res = CliRunner().invoke(_command(b, sink), ["--views", ""])
    assert res.exit_code == 0 and sink["config"].views == ()


def test_a_new_field_appears_as_an_option_with_its_docstring(tmp_path, monkeypatch):
    def load(name: str, body: str) -> type:
        path = tmp_path / f"{name}.py"
        path.write_text("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Cfg:\n"
                        "    '''A config.'''\n\n" + textwrap.indent(textwrap.dedent(body), "    "))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module.Cfg

    v1 = load("cfg_v1", 'a: int = 1\n"""The a."""\n')
    v2 = load("cfg_v2", 'a: int = 1\n"""The a."""\nnew_knob: float = 0.5\n"""A knob added later."""\n')
    assert [o.opts for o in ConfigOptions(v1).options()] == [["--a"]]
    new = _by_flag(ConfigOptions(v2))["--new-knob"]
    assert new.help == "A knob added later." and new.default == 0.5 and new.type is click.FLOAT
    sink: dict = {}
    res = CliRunner().invoke(_command(ConfigOptions("cfg_v2:Cfg"), sink), ["--help"])
    assert "--new-knob FLOAT" in res.output and "A knob added later." in res.output


def test_bad_value_is_a_one_line_config_error():
    b = ConfigOptions(Demo, FIELDS)
    with pytest.raises(ConfigError, match=r"^Demo.rate = 2.0 must be in \(0, 1\] \(set by --rate\)$"):
        b.to_config({"rate": 2.0})
    with pytest.raises(ConfigError, match=r"^Inner.size = 4 must be in 8..512 \(set by --image-size\)$"):
        b.to_config({"inner__size": 4})


def test_cli_bad_value_prints_one_line_and_exits_2(tmp_path):
    res = subprocess.run([sys.executable, "-m", "scenegen.cli", "generate", "x", "-o", str(tmp_path / "o"),
                          "--workers", "0"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == ["error: workers = 0 must be an int in 1..512 (set by --workers)"]


def test_config_classes_are_imported_only_when_the_options_are_needed():
    code = ("import sys, qa.cli, rl.cli; from scenegen.cli import cli; cli.main(['--help'], standalone_mode=False); "
            "print(sorted(m for m in ('scenegen.pipeline', 'qa.config', 'rl.envs.config') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "scenegen.pipeline" not in res.stdout and "rl.envs.config" not in res.stdout


# Every option of the commands as they were before the options were built from the configs:
# (flags, default) — names and defaults must not change.
GENERATE_OPTIONS = [
    (["-n"], 8), (["-o", "--out"], None), (["--seed"], 0), (["--workers"], 1), (["--robot"], "panda"),
    (["--designer"], "rules"), (["--assets"], "procedural"), (["--shap-e-model"], None), (["--texture-model"], None),
    (["--device"], None), (["--backend"], "process"), (["--ray-address"], None), (["--attempts-per-scene"], 3.0),
    (["--time-budget"], 3600.0), (["--cache-dir"], None), (["--fast-collision"], False), (["--quiet"], False),
    (["--qa", "--no-qa"], True), (["--checks"], None), (["--vlm"], False), (["--keep-rejected"], False),
]
DEMOS_OPTIONS = [
    (["-n"], None), (["-o", "--out"], None), (["--seed"], 0), (["--image-size"], 128), (["--cameras"], "front"),
    (["--max-steps"], 300), (["--max-attempts"], None), (["--pointcloud", "--no-pointcloud"], False),
    (["--action-mode"], "ee7"), (["--randomize", "--no-randomize"], False), (["--image-format"], "video"),
    (["--episodes-per-file"], 50), (["--workers"], 1), (["--overwrite"], False),
]
QA_OPTIONS = [
    (["--checks"], None), (["--vlm"], False), (["--fail-fast"], False), (["--no-write"], False), (["--json"], False),
    (["--strict"], False), (["--quiet"], False),
]
ADDED_OPTIONS = {
    "generate": [(["--attempt-timeout"], 600.0), (["--tier"], None), (["--distractors"], None), (["--dr"], None)],
    "demos": [(["--dr"], None)],
}
"""Options added since then, with their defaults."""


def _options(name: str) -> list[tuple[list[str], object]]:
    from scenegen.cli import cli

    ctx = click.Context(cli)
    cmd = cli.get_command(ctx, name)
    sub = click.Context(cmd)
    out = []
    for p in cmd.params:
        if isinstance(p, click.Option):
            out.append(([*p.opts, *p.secondary_opts], option_default(p, sub)))
    return out


@pytest.mark.parametrize(("name", "expected"), [("generate", GENERATE_OPTIONS), ("demos", DEMOS_OPTIONS),
                                                ("qa", QA_OPTIONS)])
def test_command_options_are_unchanged(name, expected):
    have = _options(name)
    added = ADDED_OPTIONS.get(name, [])
    assert [o for o in have if o not in added] == expected  # the old ones: same names, defaults and order
    assert [o for o in added if o not in have] == []


def test_generate_options_carry_the_config_docstrings():
    from qa.cli import generate
    from scenegen.pipeline import PipelineConfig

    opts = {p.opts[0]: p for p in generate.params if isinstance(p, click.Option)}
    assert opts["--workers"].help == help_text(field_docs(PipelineConfig)["workers"])
    assert opts["--time-budget"].help.startswith("Wall-clock budget of a run (s)")
    assert "--ray-address" in opts["--backend"].help and list(opts["--backend"].type.choices) == ["process", "ray"]


def test_every_cli_option_builds():
    """Building every command's options fails on a CLI-exposed config field without a docstring."""
    from scenegen.cli import COMMANDS, cli

    names = cli_option_names(cli)
    assert {f"scenegen {c}" for c in COMMANDS} <= set(names)
    assert all(names[f"scenegen {c}"] for c in ("generate", "demos", "qa", "design", "export"))


def test_docs_cli_md_matches_the_commands():
    """docs/cli.md's option reference is generated; SCENEGEN_UPDATE_DOCS=1 rewrites it from the commands."""
    from scenegen.cli import cli

    path = ROOT / "docs" / "cli.md"
    text = path.read_text()
    want = splice_cli_docs(text, render_cli_docs(cli))
    if os.environ.get("SCENEGEN_UPDATE_DOCS") == "1":
        path.write_text(want)
        return
    assert text == want, ("docs/cli.md is out of date with the commands; regenerate it with "
                          "SCENEGEN_UPDATE_DOCS=1 .venv/bin/python -m pytest -q tests/scenegen/test_options.py -k docs")


def test_docs_cli_md_names_only_real_options():
    """Every ``--flag`` in the summary table exists on the command of its row."""
    from scenegen.cli import cli

    names = cli_option_names(cli)
    text = (ROOT / "docs" / "cli.md").read_text().split("<!-- options:begin -->")[0]
    rows = 0
    for line in text.splitlines():
        m = re.match(r"\| `scenegen ([\w-]+)(?: ([a-z][\w-]*))?", line)
        if not m:
            continue
        rows += 1
        cmd = f"scenegen {m.group(1)}" + (f" {m.group(2)}" if f"scenegen {m.group(1)} {m.group(2)}" in names else "")
        flags = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", line.split("|")[1]))
        unknown = flags - set(names[cmd]) - {"-h", "--help"}
        assert not unknown, f"docs/cli.md: {cmd} has no option(s) {sorted(unknown)}"
    assert rows >= 8
