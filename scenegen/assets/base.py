"""The :class:`Asset` record: one generated object instance and its files on disk.

Frame convention (every asset): metres, +z up, the origin at the centre of the bottom
face of the visual mesh's bounding box, so the object rests upright on z = 0; +x is
the object's long horizontal axis.

Files in an asset folder::

    visual.obj (+ visual.mtl, texture.png)   collision/part_000.obj ...   asset.json   model.urdf
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
        d["schema_version"] = ASSET_SCHEMA_VERSION
        return d

    @classmethod
    def from_dict(cls, data: dict, path: Path | None = None) -> Asset:
        """Rebuild from :meth:`to_dict` output."""
        data = dict(data)
        data.pop("schema_version", None)
        try:
            a = cls(**data)
        except TypeError as exc:
            raise AssetError(f"asset.json is malformed ({exc}); regenerate the asset") from None
        a.extents = tuple(a.extents)
        a.com = tuple(a.com)
        a.inertia = tuple(tuple(r) for r in a.inertia)
        a.rgba = tuple(a.rgba)
        a.path = path
        return a

    @classmethod
    def load(cls, folder: str | Path) -> Asset:
        """Load an asset from its folder (reads ``asset.json``)."""
        folder = Path(folder)
        f = folder / "asset.json"
        if not f.is_file():
            raise AssetError(f"no asset.json in {folder}; regenerate the asset")
        try:
            return cls.from_dict(json.loads(f.read_text()), folder)
        except json.JSONDecodeError as exc:
            raise AssetError(f"{f} is not valid JSON ({exc}); regenerate the asset") from None
