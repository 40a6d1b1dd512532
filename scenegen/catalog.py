"""The object catalog: categories with words, real-world sizes, physics and flags.

The data lives in ``assets/catalog.json`` at the repository root (override with the
``SCENEGEN_CATALOG`` environment variable). ``load_catalog()`` is cached.

Every graspable category says what the jaws close on (``grasp``: a part and its width over the
category's size range; by default its body across the narrow horizontal side), so that
:meth:`Catalog.check_gripper` can refuse a catalog that a robot's gripper cannot serve at
every size an object may be drawn at.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scenegen.errors import CatalogError, GripperError

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
FLAGS = ("graspable", "container", "support", "stackable")
GRASP_PARTS = ("body", "handle", "rim", "wall", "neck", "knob", "blades")
"""What the jaws of a parallel gripper close on."""
GRIP_MARGIN = 0.006
"""Clearance (m) the open jaws need beyond a grasp width: the scripted expert plans a grasp
only when the width is at least this much under the gripper's maximum opening."""


@dataclass(frozen=True)
class Material:
    """Physical defaults of a material."""

    name: str
    density: float
    """Density in kg/m^3."""
    friction: float
    """Lateral friction coefficient."""
    restitution: float
    """Coefficient of restitution."""


@dataclass(frozen=True)
class Category:
    """One object category of the catalog."""

    name: str
    """Canonical id, e.g. ``"cutting_board"``."""
    group: str
    """Family for display (kitchenware, fruit, tools...)."""
    generator: str
    """Procedural shape family that builds its mesh."""
    synonyms: tuple[str, ...]
    """Singular words or phrases that name it (the first is the display name)."""
    plurals: tuple[str, ...]
    """Plural forms."""
    size_min: tuple[float, float, float]
    """Smallest bounding-box extents (x, y, z) in metres."""
    size_max: tuple[float, float, float]
    """Largest bounding-box extents (x, y, z) in metres."""
    material: str
    """Default material name (a key of the catalog's materials)."""
    mass_range: tuple[float, float]
    """Plausible mass range in kg."""
    friction: float
    """Lateral friction coefficient."""
    restitution: float
    """Coefficient of restitution."""
    graspable: bool
    """A parallel-jaw gripper can pick it."""
    container: bool
    """Objects can go ``in`` it (it has a cavity)."""
    support: bool
    """Objects can go ``on`` it (flat top)."""
    stackable: bool
    """Copies of it can be stacked."""
    colors: tuple[str, ...]
    """Default colours (keys of the catalog's colours)."""
    grasp_part: str = "body"
    """What a gripper closes on (one of :data:`GRASP_PARTS`)."""
    grasp_width: tuple[float, float] = (0.0, 0.0)
    """Width (m) of that part across the jaws at the smallest and at the largest size."""

    @property
    def display(self) -> str:
        """Human-readable name, e.g. ``"cutting board"``."""
        return self.synonyms[0]

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return {
            "name": self.name, "group": self.group, "generator": self.generator,
            "synonyms": list(self.synonyms), "plurals": list(self.plurals),
            "size_min": list(self.size_min), "size_max": list(self.size_max),
            "material": self.material, "mass_range": list(self.mass_range),
            "friction": self.friction, "restitution": self.restitution,
            "flags": [f for f in FLAGS if getattr(self, f)], "colors": list(self.colors),
            "grasp": {"part": self.grasp_part, "width": list(self.grasp_width)},
        }


class Catalog:
    """All categories, colours, materials and size classes, with word lookup."""

    def __init__(self, data: dict) -> None:
        try:
            self.colors: dict[str, tuple[float, float, float]] = {
                k: tuple(float(x) for x in v) for k, v in data["colors"].items()
            }
            self.materials: dict[str, Material] = {
                k: Material(k, float(v["density"]), float(v["friction"]), float(v["restitution"]))
                for k, v in data["materials"].items()
            }
            self.size_classes: dict[str, tuple[float, float]] = {
                k: (float(v[0]), float(v[1])) for k, v in data["size_classes"].items()
            }
            self.categories: dict[str, Category] = {}
            for name, c in data["categories"].items():
                mat = self.materials[c["material"]]
                size_min = tuple(float(x) for x in c["size_min"])
                size_max = tuple(float(x) for x in c["size_max"])
                part, width = _grasp(name, c.get("grasp"), size_min, size_max)
                self.categories[name] = Category(
                    name=name, group=c["group"], generator=c["generator"],
                    synonyms=tuple(c["synonyms"]), plurals=tuple(c["plurals"]),
                    size_min=size_min, size_max=size_max,
                    material=c["material"], mass_range=tuple(float(x) for x in c["mass_range"]),
                    friction=float(c.get("friction", mat.friction)),
                    restitution=float(c.get("restitution", mat.restitution)),
                    graspable="graspable" in c["flags"], container="container" in c["flags"],
                    support="support" in c["flags"], stackable="stackable" in c["flags"],
                    colors=tuple(c["colors"]), grasp_part=part, grasp_width=width,
                )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CatalogError(f"catalog data is malformed ({exc!r}); fix assets/catalog.json") from exc
        self._words: dict[str, tuple[str, bool]] = {}
        for cat in self.categories.values():
            words = [(w, False) for w in (cat.name.replace("_", " "), *cat.synonyms)]
            for w, plural in words + [(w, True) for w in cat.plurals]:
                other = self._words.get(w.lower())
                if other is not None and other[0] != cat.name:
                    raise CatalogError(f"the word {w!r} names both {other[0]!r} and {cat.name!r}; "
                                       "keep it in one category of the catalog")
                self._words.setdefault(w.lower(), (cat.name, plural))
        self._check()

    def _check(self) -> None:
        for cat in self.categories.values():
            if any(lo > hi for lo, hi in zip(cat.size_min, cat.size_max, strict=True)):
                raise CatalogError(f"category {cat.name!r}: size_min exceeds size_max; fix the catalog")
            if cat.mass_range[0] <= 0 or cat.mass_range[0] > cat.mass_range[1]:
                raise CatalogError(f"category {cat.name!r}: bad mass_range {cat.mass_range}; fix the catalog")
            for col in cat.colors:
                if col not in self.colors:
                    raise CatalogError(f"category {cat.name!r}: unknown colour {col!r}; add it to colors")

    def gripper_problems(self, opening: float, margin: float = GRIP_MARGIN) -> list[str]:
        """Why each graspable category does not fit a gripper that opens ``opening`` metres.

        A category fits when its grasp part, at the largest size the catalog allows (and so at
        every smaller one), is at least ``margin`` narrower than the opening.
        """
        out = []
        for c in self:
            lo, hi = c.grasp_width
            if c.graspable and hi + margin > opening + 1e-9:
                sizes = " .. ".join("x".join(f"{v * 100:g}" for v in s) for s in (c.size_min, c.size_max))
                out.append(f"category {c.name!r} is graspable by its {c.grasp_part}, {lo * 100:.1f}-{hi * 100:.1f} "
                           f"cm across over its size range {sizes} cm, but the gripper opens "
                           f"{opening * 100:.1f} cm and needs {margin * 100:.1f} cm to spare")
        return out

    def check_gripper(self, opening: float, robot: str = "the robot", margin: float = GRIP_MARGIN) -> None:
        """Raise unless every graspable category fits ``robot``'s gripper at its smallest and largest size.

        Raises:
            GripperError: names the first category that does not fit, its sizes and the opening.

        """
        probs = self.gripper_problems(opening, margin)
        if probs:
            more = f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""
            raise GripperError(f"{robot}: {probs[0]}{more}; shrink its size range, name a narrower grasp "
                               "part in assets/catalog.json, or drop its graspable flag")

    def __contains__(self, name: object) -> bool:
        return name in self.categories

    def __iter__(self) -> Iterator[Category]:
        return iter(self.categories.values())

    def __len__(self) -> int:
        return len(self.categories)

    def get(self, name: str) -> Category:
        """Return a category by canonical name.

        Raises:
            CatalogError: the name is unknown (the message suggests close names).

        """
        try:
            return self.categories[name]
        except KeyError:
            close = ", ".join(self.closest(name)) or "see `scenegen catalog`"
            raise CatalogError(f"unknown category {name!r}; did you mean: {close}?") from None

    def lookup(self, word: str) -> tuple[str, bool] | None:
        """Map a word or phrase to ``(category, is_plural)``, or None if unknown."""
        return self._words.get(word.lower().strip())

    @property
    def words(self) -> dict[str, tuple[str, bool]]:
        """Every known word/phrase mapped to ``(category, is_plural)``."""
        return dict(self._words)

    def closest(self, word: str, n: int = 3) -> list[str]:
        """Return up to ``n`` category names whose words are closest to ``word``."""
        hits = difflib.get_close_matches(word.lower(), list(self._words), n=n * 3, cutoff=0.5)
        out: list[str] = []
        for h in hits:
            name = self._words[h][0]
            if name not in out:
                out.append(name)
        return out[:n]

    def with_flag(self, flag: str) -> list[Category]:
        """Return categories with a flag set (graspable, container, support, stackable)."""
        if flag not in FLAGS:
            raise CatalogError(f"unknown flag {flag!r}; use one of {', '.join(FLAGS)}")
        return [c for c in self if getattr(c, flag)]

    def color_rgba(self, name: str) -> tuple[float, float, float, float]:
        """RGBA of a named colour (alpha 1)."""
        if name not in self.colors:
            raise CatalogError(f"unknown colour {name!r}; use one of {', '.join(sorted(self.colors))}")
        return (*self.colors[name], 1.0)


def _grasp(name: str, spec: dict | None, size_min: tuple, size_max: tuple) -> tuple[str, tuple[float, float]]:
    """Grasp part and width range of a category (default: the body across its narrow side)."""
    if spec is None:
        return "body", (min(size_min[0], size_min[1]), min(size_max[0], size_max[1]))
    part = spec.get("part", "body")
    if part not in GRASP_PARTS:
        raise CatalogError(f"category {name!r}: unknown grasp part {part!r}; use one of {', '.join(GRASP_PARTS)}")
    lo, hi = (float(x) for x in spec["width"])
    if not 0 < lo <= hi:
        raise CatalogError(f"category {name!r}: grasp width {[lo, hi]} must be 0 < min <= max metres")
    return part, (lo, hi)


@functools.lru_cache(maxsize=4)
def _load(path: str) -> Catalog:
    p = Path(path)
    if not p.is_file():
        raise CatalogError(f"catalog file {p} not found; set SCENEGEN_CATALOG or reinstall with `pip install -e .`")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise CatalogError(f"catalog file {p} is not valid JSON ({exc}); fix it") from exc
    return Catalog(data)


def load_catalog(path: str | os.PathLike | None = None) -> Catalog:
    """Load (and cache) the catalog from ``path``, ``$SCENEGEN_CATALOG`` or ``assets/catalog.json``."""
    chosen = path or os.environ.get("SCENEGEN_CATALOG") or ASSETS_DIR / "catalog.json"
    return _load(str(Path(chosen).resolve()))
