"""``scenegen design`` and ``scenegen catalog``: prompt -> scene graphs, and the object list."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import click

from scenegen.errors import ConfigError
from scenegen.graph import SceneGraph

DESIGN_EPILOG = """\b
Examples:
  scenegen design "put the banana in the bowl"
  scenegen design "put the banana in the bowl" -n 20 --json > graphs.json
  scenegen design "stack the red block on the blue block with 4 distractors" -n 8 -o out/graphs
  scenegen design "sort the fruit into the bowl and the tools into the bin" -n 5 --seed 7

\b
The offline designer understands verbs (put, place, move, stack, flip, turn upright,
sort ... into, gather / collect, take ... out of), counts, colours and sizes
("three red apples"), spatial phrases (in, on, next to, left of, in front of, behind,
near, away from), clutter ("with 4 distractors", "on a cluttered table") and several
steps joined by "and", "then" or commas.
"""

CATALOG_EPILOG = """\b
Examples:
  scenegen catalog
  scenegen catalog --json | jq '.categories[].name'
"""


def _summary(i: int, g: SceneGraph) -> str:
    """A short readable description of one graph."""
    def obj(o) -> str:
        a = o.attributes
        bits = [a.get("color"), a.get("size"), o.state if o.state != "upright" else None]
        return f"{o.id}({', '.join(b for b in bits if b)})"

    goals = ", ".join(f"{gl.subject} {gl.predicate}" + (f" {gl.object}" if gl.object else "") for gl in g.goals)
    lines = [f"#{i} {g.content_hash()[:12]}  {len(g) - 1} objects  goals: {goals}"]
    for role in ("support", "target", "receptacle", "background", "distractor"):
        objs = g.objects(role)
        if objs:
            lines.append(f"    {role + ':':12s}{' '.join(obj(o) for o in objs)}")
    rels = [f"{r.subject} {r.relation} {r.object}" for r in g.relations() if r.object != g.support_id]
    if rels:
        lines.append(f"    {'starts:':12s}{'; '.join(rels)}")
    return "\n".join(lines)


def write_graphs(graphs: list[SceneGraph], out: Path, force: bool = False) -> list[Path]:
    """Write one JSON file per graph (``<index>_<hash12>.json``) into ``out`` atomically.

    The files are written to a temporary folder beside ``out`` and renamed into place,
    so a crash never leaves a half-written folder.

    Raises:
        ConfigError: ``out`` exists and is not an empty folder (and ``force`` is off), or cannot be written.

    """
    try:
        return _write_graphs(graphs, Path(out), force)
    except OSError as exc:
        raise ConfigError(f"cannot write the graphs to {out} ({exc.strerror or exc}); choose another -o") from None


def _write_graphs(graphs: list[SceneGraph], out: Path, force: bool) -> list[Path]:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output path {out} is a file; give a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(f"output folder {out} is not empty; choose another or pass --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()  # honours the umask, unlike mkdtemp
    names = []
    try:
        width = max(4, len(str(len(graphs) - 1)))
        for i, g in enumerate(graphs):
            name = f"{i:0{width}d}_{g.content_hash()[:12]}.json"
            (tmp / name).write_text(g.to_json() + "\n")
            names.append(name)
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{tmp.name.rsplit('-', 1)[-1]}"
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / n for n in names]


@click.command(epilog=DESIGN_EPILOG)
@click.argument("prompt")
@click.option("-n", "--num", "n", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="Number of distinct graphs to make.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed; same prompt + seed = same graphs.")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None,
              help="Folder to write one JSON file per graph into (written atomically).")
@click.option("--json", "as_json", is_flag=True, help="Print the graphs as a JSON list to stdout.")
@click.option("--designer", default="rules", show_default=True,
              help="Designer backend: 'rules' (offline) or 'llm' (an OpenAI-compatible server).")
@click.option("--force", is_flag=True, help="With -o: replace a non-empty output folder.")
def design(prompt: str, n: int, seed: int, out: Path | None, as_json: bool, designer: str, force: bool) -> None:
    """Turn a task PROMPT into N scene graphs (objects, relations, goals).

    Without -o or --json a readable summary of each graph is printed.
    """
    from scenegen.design.registry import design as run_design

    if out is not None and as_json:
        raise ConfigError("give either -o DIR or --json, not both")
    graphs = run_design(prompt, n, seed=seed, designer=designer)
    if as_json:
        click.echo(json.dumps([g.to_dict() for g in graphs], indent=1))
    elif out is not None:
        paths = write_graphs(graphs, out, force=force)
        click.echo(f"wrote {len(paths)} graph(s) to {out}")
    else:
        for i, g in enumerate(graphs):
            click.echo(_summary(i, g))


@click.command(epilog=CATALOG_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print the whole catalog as JSON.")
def catalog(as_json: bool) -> None:
    """List the object categories the designer knows, grouped by family."""
    from scenegen.catalog import load_catalog

    cat = load_catalog()
    if as_json:
        data = {
            "categories": [c.to_dict() for c in cat],
            "colors": {k: list(v) for k, v in cat.colors.items()},
            "materials": {k: {"density": m.density, "friction": m.friction, "restitution": m.restitution}
                          for k, m in cat.materials.items()},
            "size_classes": {k: list(v) for k, v in cat.size_classes.items()},
        }
        click.echo(json.dumps(data, indent=1))
        return
    groups: dict[str, list] = {}
    for c in cat:
        groups.setdefault(c.group, []).append(c)
    click.echo(f"{len(cat)} categories in {len(groups)} groups; colours: {', '.join(sorted(cat.colors))}")
    for group in sorted(groups):
        click.echo(f"\n{group}")
        for c in sorted(groups[group], key=lambda x: x.name):
            flags = ",".join(f for f in ("graspable", "container", "support", "stackable") if getattr(c, f))
            size = "x".join(f"{a * 100:.0f}-{b * 100:.0f}" for a, b in zip(c.size_min, c.size_max, strict=True))
            words = ", ".join(dict.fromkeys((*c.synonyms, *c.plurals)))
            click.echo(f"  {c.name:14s} {size + ' cm':22s} {flags:32s} {words}")
