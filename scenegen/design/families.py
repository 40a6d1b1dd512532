"""Task families with difficulty tiers: the files under ``assets/tasks/``, loaded and validated.

A *task family* is one task (``bottles_in_bin``: "put all the bottles in the bin") with several
*tiers*, each a recipe for drawing scenes of one difficulty: how many target objects
(``count``, a range) of how many kinds (``types``, a range over the family's ``targets``),
which initial states they may start in (``states``, weights), how densely the layout packs them
(``margin``, the layout's minimum gap between footprints) and how many distractors join them
(``distractors``, a range). A family file looks like::

    {"schema": "scenegen.task_family/1", "name": "bottles_in_bin",
     "prompt": "put all the bottles in the bin", "template": "put the {targets} in the bin",
     "targets": ["bottle"], "progress": "bottles in the bin / target bottles",
     "tiers": [{"tier": 1, "count": [1, 1], "types": [1, 1], "states": {"upright": 1.0},
                "margin": 0.04, "distractors": [0, 0]}, ...]}

:func:`load_family` reads one file and raises :class:`~scenegen.errors.FamilyError` naming the
file and the field at fault; :func:`families` loads every file of the tasks folder
(``$SCENEGEN_TASKS`` or ``assets/tasks``) and :func:`find_family` finds one by its name, its
prompt or an alias. Drawing a tier's scene graphs is :mod:`scenegen.design.family_draw`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenegen.catalog import ASSETS_DIR, Catalog, load_catalog
from scenegen.errors import CatalogError, FamilyError
from scenegen.graph_schema import STATES

SCHEMA = "scenegen.task_family/1"
"""The ``schema`` string every family file carries."""
TASKS_DIR = ASSETS_DIR / "tasks"
"""The default folder of family files (``$SCENEGEN_TASKS`` overrides it)."""
MAX_COUNT = 40
"""Most target objects one tier may ask for (a scene graph holds at most 64 objects)."""
MAX_DISTRACTORS = 30
"""Most distractors one tier may ask for (the variation sampler's limit)."""
_KEYS = {"schema", "name", "title", "description", "prompt", "aliases", "template", "instruction", "targets",
         "progress", "tiers"}
_REQUIRED = ("schema", "name", "prompt", "template", "targets", "tiers")
_TIER_KEYS = {"tier", "count", "types", "states", "margin", "distractors", "note"}
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class TierSpec:
    """One difficulty tier of a task family: the recipe its scenes are drawn from."""

    tier: int
    """Tier number (1 = easiest); a family's tiers are numbered 1..N."""
    count: tuple[int, int]
    """Inclusive range of target objects per scene."""
    types: tuple[int, int]
    """Inclusive range of target categories per scene (drawn from the family's ``targets``)."""
    states: tuple[tuple[str, float], ...]
    """Initial states the targets may start in, with their weights (``upright``, ``inverted``, ``lying``)."""
    margin: float
    """Layout's minimum gap (m) between footprints: smaller packs the scene closer."""
    distractors: tuple[int, int]
    """Inclusive range of distractor objects per scene."""
    note: str = ""
    """What the tier is, in words."""

    def to_dict(self) -> dict:
        """Return the tier as the JSON its file holds."""
        return {"tier": self.tier, "count": list(self.count), "types": list(self.types),
                "states": dict(self.states), "margin": self.margin, "distractors": list(self.distractors),
                "note": self.note}


@dataclass(frozen=True)
class TaskFamily:
    """A task with its difficulty tiers, as read from a family file."""

    name: str
    """Identifier (the file's stem), e.g. ``bottles_in_bin``."""
    prompt: str
    """The family's task in English; ``scenegen generate PROMPT --tier K`` finds the family by it."""
    template: str
    """The prompt of one drawn scene, with ``{targets}`` for the targets (``the 3 bottles``)."""
    targets: tuple[str, ...]
    """Catalog categories the targets are drawn from."""
    tiers: tuple[TierSpec, ...]
    """The tiers, 1..N in order."""
    title: str = ""
    """A display name."""
    description: str = ""
    """The task in a sentence or two."""
    aliases: tuple[str, ...] = ()
    """Other prompts that name the family."""
    instruction: str | None = None
    """Every drawn scene's instruction (None: the rendered template)."""
    progress: str = ""
    """How task progress is defined for the family, in words."""
    path: str = field(default="", compare=False)
    """The file it was read from."""

    def tier(self, k: Any) -> TierSpec:
        """The recipe of tier ``k``.

        Raises:
            FamilyError: the family has no such tier.

        """
        for t in self.tiers:
            if not isinstance(k, bool) and k == t.tier:
                return t
        raise FamilyError(f"task family {self.name!r} has no tier {k!r}; use --tier 1..{len(self.tiers)}")

    def names(self) -> tuple[str, ...]:
        """Every text that names the family: its name, its prompt and its aliases, normalised."""
        return tuple(_norm(x) for x in (self.name, self.name.replace("_", " "), self.prompt, *self.aliases))

    def to_dict(self) -> dict:
        """Return the family as the JSON of its file."""
        out: dict = {"schema": SCHEMA, "name": self.name, "title": self.title, "description": self.description,
                     "prompt": self.prompt, "aliases": list(self.aliases), "template": self.template,
                     "targets": list(self.targets), "progress": self.progress,
                     "tiers": [t.to_dict() for t in self.tiers]}
        if self.instruction is not None:
            out["instruction"] = self.instruction
        return out


def _norm(text: str) -> str:
    return " ".join(str(text).lower().replace("-", " ").split()).rstrip(".!?")


class _Reader:
    """Field checks of one family file; every failure names the file and the field."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str, fix: str) -> FamilyError:
        return FamilyError(f"{self.path}: field {where} {problem}; {fix}")

    def text(self, data: dict, key: str, where: str, required: bool = True) -> str:
        v = data.get(key)
        if v is None and not required:
            return ""
        if not isinstance(v, str) or not v.strip():
            raise self.fail(where, f"is {v!r}", "give a non-empty string")
        return v.strip()

    def texts(self, data: dict, key: str) -> tuple[str, ...]:
        v = data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
            raise self.fail(repr(key), f"is {v!r}", "give a list of non-empty strings")
        return tuple(x.strip() for x in v)

    def span(self, data: dict, key: str, where: str, lo: int, hi: int) -> tuple[int, int]:
        v = data.get(key)
        ok = isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        if not ok or not lo <= v[0] <= v[1] <= hi:
            raise self.fail(f"{where}.{key}", f"is {v!r}", f"give [min, max] integers with {lo} <= min <= max <= {hi}")
        return int(v[0]), int(v[1])

    def tier(self, data: Any, i: int, n_targets: int) -> TierSpec:
        where = f"tiers[{i}]"
        if not isinstance(data, dict):
            raise self.fail(where, f"is {type(data).__name__}", "give an object with tier, count, types, states, "
                            "margin and distractors")
        extra = sorted(set(data) - _TIER_KEYS)
        if extra:
            raise self.fail(f"{where}.{extra[0]}", "is not a tier field", f"use only {', '.join(sorted(_TIER_KEYS))}")
        for key in ("tier", "count", "states", "margin"):
            if key not in data:
                raise self.fail(f"{where}.{key}", "is missing", "every tier needs tier, count, states and margin")
        if data["tier"] != i + 1 or isinstance(data["tier"], bool):
            raise self.fail(f"{where}.tier", f"is {data['tier']!r}", f"number the tiers 1, 2, ... in order (this "
                            f"one is {i + 1})")
        count = self.span(data, "count", where, 1, MAX_COUNT)
        types = self.span({"types": [1, 1], **data}, "types", where, 1, n_targets)
        if types[0] > count[1]:
            raise self.fail(f"{where}.types", f"is {list(types)} but count is {list(count)}",
                            "every target type needs at least one object: lower types or raise count")
        states = data["states"]
        if not isinstance(states, dict) or not states:
            raise self.fail(f"{where}.states", f"is {states!r}", f"give weights of states, e.g. {{\"upright\": 1.0}} "
                            f"(states: {', '.join(STATES)})")
        for s, w in states.items():
            if s not in STATES:
                raise self.fail(f"{where}.states.{s}", "is not a state", f"use {', '.join(STATES)}")
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w < 1e6:
                raise self.fail(f"{where}.states.{s}", f"has weight {w!r}", "give a positive number")
        margin = data["margin"]
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0.0 <= margin < 0.2:
            raise self.fail(f"{where}.margin", f"is {margin!r}", "give the layout gap in metres, in [0, 0.2)")
        dis = self.span({"distractors": [0, 0], **data}, "distractors", where, 0, MAX_DISTRACTORS)
        note = data.get("note", "")
        if not isinstance(note, str):
            raise self.fail(f"{where}.note", f"is {note!r}", "give a string")
        return TierSpec(i + 1, count, types, tuple((s, float(w)) for s, w in states.items()), float(margin), dis,
                        note)


def parse_family(data: Any, path: str = "<family>", catalog: Catalog | None = None) -> TaskFamily:
    """Validate the JSON of a family file and return the :class:`TaskFamily`.

    Raises:
        FamilyError: naming ``path`` and the field at fault, with the fix.

    """
    r = _Reader(path)
    if not isinstance(data, dict):
        raise FamilyError(f"{path}: holds {type(data).__name__}, not a task family object; see assets/tasks/")
    for key in _REQUIRED:
        if key not in data:
            raise r.fail(repr(key), "is missing", f"a family file needs {', '.join(_REQUIRED)}")
    extra = sorted(set(data) - _KEYS)
    if extra:
        raise r.fail(repr(extra[0]), "is not a family field", f"use only {', '.join(sorted(_KEYS))}")
    if data["schema"] != SCHEMA:
        raise r.fail("'schema'", f"is {data['schema']!r}", f"write {SCHEMA!r}")
    name = r.text(data, "name", "'name'")
    if not _NAME.fullmatch(name):
        raise r.fail("'name'", f"is {name!r}", "use lower-case letters, digits and _ (e.g. bottles_in_bin)")
    stem = Path(path).stem
    if path.endswith(".json") and stem != name:
        raise r.fail("'name'", f"is {name!r} but the file is {Path(path).name}", f"name the file {name}.json")
    template = r.text(data, "template", "'template'")
    if template.count("{targets}") != 1 or re.search(r"\{(?!targets\})", template):
        raise r.fail("'template'", f"is {template!r}", "write the task with one {targets} placeholder, e.g. "
                     "'put the {targets} in the bin'")
    targets = r.texts(data, "targets")
    if not targets or len(set(targets)) != len(targets):
        raise r.fail("'targets'", f"is {list(targets)!r}", "list one or more distinct catalog categories")
    cat = catalog or load_catalog()
    for t in targets:
        try:
            cat.get(t)
        except CatalogError as exc:
            raise r.fail("'targets'", f"names {t!r}, which is not in the catalog ({exc.one_line()})",
                         "use a category of assets/catalog.json") from None
    tiers = data["tiers"]
    if not isinstance(tiers, list) or not 1 <= len(tiers) <= 20:
        raise r.fail("'tiers'", f"is {type(tiers).__name__} of {len(tiers) if isinstance(tiers, list) else 0}",
                     "give a list of 1..20 tiers")
    specs = tuple(r.tier(t, i, len(targets)) for i, t in enumerate(tiers))
    instruction = data.get("instruction")
    if instruction is not None:
        instruction = r.text(data, "instruction", "'instruction'")
    return TaskFamily(name=name, prompt=r.text(data, "prompt", "'prompt'"), template=template, targets=targets,
                      tiers=specs, title=r.text(data, "title", "'title'", required=False),
                      description=r.text(data, "description", "'description'", required=False),
                      aliases=r.texts(data, "aliases"), instruction=instruction,
                      progress=r.text(data, "progress", "'progress'", required=False), path=path)


def load_family(path: str | os.PathLike, catalog: Catalog | None = None) -> TaskFamily:
    """Read and validate one family file.

    Raises:
        FamilyError: the file is missing, not JSON, or a field is wrong (the message names it).

    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FamilyError(f"{p}: no such task-family file; see assets/tasks/ for the families") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FamilyError(f"{p}: cannot read the task-family file ({exc}); check its permissions") from None
    except json.JSONDecodeError as exc:
        raise FamilyError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix the file "
                          "") from None
    return parse_family(data, str(p), catalog)


def tasks_dir() -> Path:
    """The folder of family files: ``$SCENEGEN_TASKS`` or ``assets/tasks``."""
    return Path(os.environ.get("SCENEGEN_TASKS") or TASKS_DIR)


_CACHE: dict[tuple[str, tuple], dict[str, TaskFamily]] = {}


def families(folder: str | os.PathLike | None = None) -> dict[str, TaskFamily]:
    """Every family of a folder (default :func:`tasks_dir`), by name; cached while the files are unchanged.

    Raises:
        FamilyError: a file is malformed, or two files name one family.

    """
    root = Path(folder) if folder is not None else tasks_dir()
    files = sorted(root.glob("*.json")) if root.is_dir() else []
    key = (str(root.resolve()), tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    if key not in _CACHE:
        out: dict[str, TaskFamily] = {}
        for f in files:
            fam = load_family(f)
            if fam.name in out:
                raise FamilyError(f"{f}: family {fam.name!r} is also defined by {out[fam.name].path}; rename one")
            out[fam.name] = fam
        _CACHE.clear()
        _CACHE[key] = out
    return dict(_CACHE[key])


def find_family(text: str, folder: str | os.PathLike | None = None) -> TaskFamily | None:
    """The family named by ``text`` (its name, e.g. ``bottles_in_bin``, its prompt or an alias), or None."""
    want = _norm(text)
    for fam in families(folder).values():
        if want in fam.names():
            return fam
    return None


def require_family(text: str, folder: str | os.PathLike | None = None) -> TaskFamily:
    """:func:`find_family`, or a one-line error listing the families.

    Raises:
        FamilyError: no family is named by ``text``.

    """
    fam = find_family(text, folder)
    if fam is None:
        names = ", ".join(sorted(families(folder))) or "none"
        raise FamilyError(f"--tier needs a task family, and {text!r} names none; use one of: {names} "
                          f"(or its prompt), or drop --tier")
    return fam
