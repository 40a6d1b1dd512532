"""The :class:`Asset` record: one generated object instance and its files on disk.

Frame convention (every asset): metres, +z up, the origin at the centre of the bottom
face of the visual mesh's bounding box, so the object rests upright on z = 0; +x is
the object's long horizontal axis.

Files in an asset folder::

    visual.obj (+ visual.mtl, texture.png)   collision/part_000.obj ...   asset.json   model.urdf
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from scenegen.errors import AssetError

ASSET_SCHEMA_VERSION = 1


@dataclass
class Asset:
    """One object instance: meshes, physics and URDF, identified by a content hash."""

    id: str
    """Content hash of the generation key (category, params, generator version, collision settings)."""
    category: str
    """Catalog category name."""
    source: str
    """Where the geometry came from: ``procedural``, ``library:<file>``, ``shap-e``..."""
    seed: int
    """Seed the instance parameters were drawn from."""
    attributes: dict
    """Attributes it was asked for (color, material, size, scale)."""
    params: dict
    """Instance parameters actually used (sizes, radii, curvature...)."""
    extents: tuple[float, float, float]
    """Bounding-box extents (x, y, z) of the visual mesh in metres."""
    mass: float
    """Mass in kg."""
    com: tuple[float, float, float]
    """Centre of mass in the asset frame (m)."""
    inertia: tuple[tuple[float, float, float], ...]
    """3x3 inertia tensor about the centre of mass, asset-frame axes (kg m^2)."""
    friction: float
    """Lateral friction coefficient."""
    restitution: float
    """Coefficient of restitution."""
    rgba: tuple[float, float, float, float]
    """Base colour."""
    collision_method: str
    """``coacd``, ``primitive`` or ``hull``."""
    visual: str = "visual.obj"
    """Visual mesh path relative to the asset folder."""
    collision: list[str] = field(default_factory=list)
    """Collision part paths relative to the asset folder (each one convex)."""
    urdf: str = "model.urdf"
    """URDF path relative to the asset folder."""
    volume: float = 0.0
    """Volume of the (closed) visual mesh in m^3."""
    visual_faces: int = 0
    """Triangle count of the visual mesh."""
    grasp: dict = field(default_factory=dict)
    """Grasp hints for the expert and QA: ``{"mode": "top"|"side", "width": m, "height": m}``."""
    path: Path | None = None
    """Folder holding the files (not serialised)."""
    files: dict[str, str] | None = field(default=None, compare=False, repr=False)
    """Relative path -> sha256 of the asset's files as its pack's manifest lists them (set when the asset is
    read from a pack, None otherwise; not serialised). Exporters copy exactly these files."""

    def file(self, rel: str) -> Path:
        """Absolute path of a file of this asset."""
        if self.path is None:
            raise AssetError(f"asset {self.id[:12]} has no folder on disk; write or load it first")
        return self.path / rel

    @property
    def urdf_path(self) -> Path:
        """Absolute path of ``model.urdf``."""
        return self.file(self.urdf)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (without the folder path)."""
        d = asdict(self)
        d.pop("path")
        d.pop("files")
        d["schema_version"] = ASSET_SCHEMA_VERSION
        return d

    @classmethod
    def from_dict(cls, data: Any, path: Path | None = None) -> Asset:
        """Rebuild from :meth:`to_dict` output, checking every field's type and range.

        Raises:
            AssetError: ``asset.json field <name> ...`` for the first missing, unknown or bad field.

        """
        if not isinstance(data, dict):
            raise AssetError(f"asset.json must be a JSON object, not {type(data).__name__}; regenerate the asset")
        data = dict(data)
        version = data.pop("schema_version", ASSET_SCHEMA_VERSION)
        if version != ASSET_SCHEMA_VERSION:
            _bad("schema_version", version, f"{ASSET_SCHEMA_VERSION} (this scenegen's version)")
        known = {f.name for f in fields(cls)} - {"path", "files"}
        unknown = sorted(str(k) for k in set(data) - known)
        if unknown:
            raise AssetError(f"asset.json field {unknown[0]!r} is not an Asset field; regenerate the asset")
        missing = [f.name for f in fields(cls) if f.name in _REQUIRED and f.name not in data]
        if missing:
            raise AssetError(f"asset.json field {missing[0]!r} is missing; regenerate the asset")
        for name, check in _CHECKS.items():
            if name in data:
                data[name] = check(name, data[name])
        a = cls(**data)
        a.path = path
        return a

    @classmethod
    def load(cls, folder: str | Path) -> Asset:
        """Load an asset from its folder (reads and checks ``asset.json``).

        Raises:
            AssetError: the file is missing, unreadable, not UTF-8 JSON, or a field is bad (named).

        """
        folder = Path(folder)
        f = folder / "asset.json"
        if not f.is_file():
            raise AssetError(f"no asset.json in {folder}; regenerate the asset")
        try:
            data = json.loads(f.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise AssetError(f"{f} is not UTF-8 text; regenerate the asset") from None
        except (OSError, ValueError, RecursionError) as exc:
            raise AssetError(f"{f} is not valid JSON ({str(exc)[:120]}); regenerate the asset") from None
        try:
            return cls.from_dict(data, folder)
        except AssetError as exc:
            raise AssetError(f"{f}: {exc.one_line()}") from None


def _bad(name: str, value: Any, what: str) -> None:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    raise AssetError(f"asset.json field {name!r} = {text} must be {what}; regenerate the asset")


def _text(name: str, v: Any) -> str:
    if not isinstance(v, str) or not 0 < len(v) <= 256:
        _bad(name, v, "a non-empty string")
    return v


def _rel(name: str, v: Any) -> str:
    parts = v.split("/") if isinstance(v, str) else []
    if not parts or any(p in ("", ".", "..") for p in parts) or any(c in v for c in "\\:\0") or len(v) > 256:
        _bad(name, v, "a relative path inside the asset folder")
    return v


def _number(name: str, v: Any, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
        _bad(name, v, f"a finite number in [{low:g}, {high:g}]")
    return v


def _vector(n: int, low: float, high: float) -> Callable[[str, Any], tuple]:
    def check(name: str, v: Any) -> tuple:
        if not isinstance(v, (list, tuple)) or len(v) != n:
            _bad(name, v, f"a list of {n} numbers")
        return tuple(_number(f"{name}[{i}]", x, low, high) for i, x in enumerate(v))
    return check


def _inertia(name: str, v: Any) -> tuple:
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        _bad(name, v, "a 3x3 matrix")
    return tuple(_vector(3, -1e6, 1e6)(f"{name}[{i}]", row) for i, row in enumerate(v))


def _mapping(name: str, v: Any) -> dict:
    if not isinstance(v, dict):
        _bad(name, v, "a JSON object")
    return v


def _grasp(name: str, v: Any) -> dict:
    for k, x in _mapping(name, v).items():
        if not isinstance(x, str):
            _number(f"{name}.{k}", x, -100.0, 100.0)
    return v


def _count(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**31:
        _bad(name, v, "a non-negative integer")
    return v


def _seed(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        _bad(name, v, "an integer")
    return v


def _parts(name: str, v: Any) -> list:
    if not isinstance(v, list) or len(v) > 4096:
        _bad(name, v, "a list of relative paths")
    return [_rel(f"{name}[{i}]", x) for i, x in enumerate(v)]


_REQUIRED = {"id", "category", "source", "seed", "attributes", "params", "extents", "mass", "com", "inertia",
             "friction", "restitution", "rgba", "collision_method"}
_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "id": _text, "category": _text, "source": _text, "collision_method": _text, "seed": _seed,
    "attributes": _mapping, "params": _mapping, "grasp": _grasp,
    "extents": _vector(3, 1e-6, 100.0), "com": _vector(3, -100.0, 100.0), "inertia": _inertia,
    "rgba": _vector(4, 0.0, 1.0), "mass": lambda n, v: _number(n, v, 1e-9, 1e6),
    "friction": lambda n, v: _number(n, v, 0.0, 100.0), "restitution": lambda n, v: _number(n, v, 0.0, 1.0),
    "volume": lambda n, v: _number(n, v, 0.0, 1e6), "visual_faces": _count,
    "visual": _rel, "urdf": _rel, "collision": _parts,
}
"""Field name -> check returning the clean value (tuples for vectors) or raising AssetError."""
