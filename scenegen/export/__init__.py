"""Export scenes to other simulators' and viewers' formats (the trimesh ``exchange/`` way).

:data:`EXPORTERS` maps a format name to ``"module:function"``; the module is imported only
when that format is asked for, so optional dependencies (``mujoco``, ``pxr``) load lazily.
Every exporter has the signature::

    export_<fmt>(scene, assets, out_dir, with_robot=False) -> Path   # the main file

and writes a self-contained folder (meshes and textures copied, all paths relative).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path

from scenegen.assets.base import Asset
from scenegen.errors import ExportError
from scenegen.scene import Scene

EXPORTERS: dict[str, str] = {
    "urdf": "scenegen.export.urdf:export_urdf",
    "mjcf": "scenegen.export.mjcf:export_mjcf",
    "sdf": "scenegen.export.sdf:export_sdf",
    "usd": "scenegen.export.usd:export_usd",
    "gltf": "scenegen.export.gltf:export_gltf",
}
"""Format name -> ``"module:function"`` of its exporter."""

Exporter = Callable[..., Path]


def formats() -> list[str]:
    """Names of the supported formats."""
    return list(EXPORTERS)


def get_exporter(fmt: str) -> Exporter:
    """Import and return the exporter function of ``fmt``.

    Raises:
        ExportError: ``fmt`` is not a known format.

    """
    key = (fmt or "").strip().lower()
    if key == "glb":
        key = "gltf"
    if key not in EXPORTERS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORTERS)}")
    module, attr = EXPORTERS[key].split(":")
    return getattr(importlib.import_module(module), attr)


def export(scene: Scene, assets: Mapping[str, Asset], fmt: str, out_dir: str | Path,
           with_robot: bool = False) -> Path:
    """Export one scene to ``out_dir`` in format ``fmt``.

    Args:
        scene: the scene (its settled poses are used when present, else the initial poses).
        assets: asset id -> :class:`Asset` with its folder on disk (``pack.asset_lookup``).
        fmt: one of :data:`EXPORTERS` (``urdf``, ``mjcf``, ``sdf``, ``usd``, ``gltf``).
        out_dir: folder to write (created if needed); it is self-contained afterwards.
        with_robot: also carry the scene's robot where the format can.

    Returns:
        Path of the main file written (scene.json, scene.xml, scene.sdf, scene.usda, scene.glb).

    Raises:
        ExportError: unknown format, missing asset, missing optional dependency or unwritable folder.

    """
    return get_exporter(fmt)(scene, assets, Path(out_dir), with_robot=with_robot)


__all__ = ["EXPORTERS", "export", "formats", "get_exporter"]
