"""Assets: procedural meshes, physics, collision proxies, URDF, cache and user meshes.

The main entry points are re-exported here and imported lazily, so ``import
scenegen.assets.base`` stays light::

    from scenegen.assets import generate_asset, CollisionConfig
    asset = generate_asset("mug", seed=3, attributes={"color": "red"})
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Asset": "scenegen.assets.base",
    "ASSET_SCHEMA_VERSION": "scenegen.assets.base",
    "generate_asset": "scenegen.assets.generate",
    "finalize_asset": "scenegen.assets.generate",
    "validate_attributes": "scenegen.assets.generate",
    "CollisionConfig": "scenegen.assets.collision",
    "CollisionResult": "scenegen.assets.collision",
    "build_collision": "scenegen.assets.collision",
    "PhysicsProps": "scenegen.assets.physics",
    "compute_physics": "scenegen.assets.physics",
    "write_urdf": "scenegen.assets.urdf",
    "asset_key": "scenegen.assets.cache",
    "cache_root": "scenegen.assets.cache",
    "load_library_asset": "scenegen.assets.library",
    "load_library": "scenegen.assets.library",
    "ProceduralMesh": "scenegen.assets.procedural",
    "build_mesh": "scenegen.assets.procedural",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'scenegen.assets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
