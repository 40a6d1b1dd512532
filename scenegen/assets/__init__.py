"""Assets: procedural meshes, physics, collision proxies, URDF, cache and user meshes.

Layout: :mod:`.build` (a mesh becomes an asset folder; procedural assets through the cache),
:mod:`.procedural` (the shape builders), :mod:`.mesh` (repair, simplification, orientation,
sizing), :mod:`.collision` (proxies, CoACD), :mod:`.diffusion` (Shap-E and texture backends),
:mod:`.library` (user meshes), :mod:`.sources` (choosing a source), :mod:`.physics`,
:mod:`.model_urdf` (an asset's ``model.urdf`` and mesh files), :mod:`.cache`, :mod:`.preview`,
:mod:`.base` (the :class:`~scenegen.assets.base.Asset` record) and :mod:`.cli`.

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
    "generate_asset": "scenegen.assets.build",
    "finalize_asset": "scenegen.assets.build",
    "validate_attributes": "scenegen.assets.build",
    "CollisionConfig": "scenegen.assets.collision.config",
    "CollisionResult": "scenegen.assets.collision.config",
    "build_collision": "scenegen.assets.collision.build",
    "PhysicsProps": "scenegen.assets.physics",
    "compute_physics": "scenegen.assets.physics",
    "write_urdf": "scenegen.assets.model_urdf",
    "asset_key": "scenegen.assets.cache",
    "cache_root": "scenegen.assets.cache",
    "load_library_asset": "scenegen.assets.library",
    "load_library": "scenegen.assets.library",
    "ProceduralMesh": "scenegen.assets.procedural.registry",
    "build_mesh": "scenegen.assets.procedural.registry",
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
