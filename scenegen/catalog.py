"""The object catalog: categories with words, real-world sizes, physics and flags.

The data lives in ``assets/catalog.json`` at the repository root (override with the
``SCENEGEN_CATALOG`` environment variable). ``load_catalog()`` is cached.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scenegen.errors import CatalogError

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
FLAGS = ("graspable", "container", "support", "stackable")


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
                self.categories[name] = Category(
                    name=name, group=c["group"], generator=c["generator"],
                    synonyms=tuple(c["synonyms"]), plurals=tuple(c["plurals"]),
                    size_min=tuple(float(x) for x in c["size_min"]),
                    size_max=tuple(float(x) for x in c["size_max"]),
                    material=c["material"], mass_range=tuple(float(x) for x in c["mass_range"]),
                    friction=float(c.get("friction", mat.friction)),
                    restitution=float(c.get("restitution", mat.restitution)),
                    graspable="graspable" in c["flags"], container="container" in c["flags"],
                    support="support" in c["flags"], stackable="stackable" in c["flags"],
                    colors=tuple(c["colors"]),
                )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CatalogError(f"catalog data is malformed ({exc!r}); fix assets/catalog.json") from exc
        self._words: dict[str, tuple[str, bool]] = {}
        for cat in self.categories.values():
            for w in (cat.name.replace("_", " "), *cat.synonyms):
                self._words.setdefault(w.lower(), (cat.name, False))
            for w in cat.plurals:
                self._words.setdefault(w.lower(), (cat.name, True))
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
