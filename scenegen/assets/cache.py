"""Content-addressed asset cache.

An asset's id is the sha256 of the canonical JSON of everything that determines it:
category and its catalog entry, source, seed, attributes, the procedural generator
version, the collision settings and the triangle budget. Its folder is
``<root>/<id>/``; a second request for the same key is a file read (:meth:`Asset.load`).

The root is ``~/.cache/scenegen/assets``, overridable with the ``SCENEGEN_CACHE``
environment variable or an explicit argument. Writes are atomic
(:func:`scenegen.fileio.publish_dir`): an asset is built in a temporary folder inside the
root and renamed into place; if another writer got there first, the second build is discarded.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenegen.assets.base import ASSET_SCHEMA_VERSION, Asset
from scenegen.errors import AssetError
from scenegen.fileio import canonical_json as _canonical_json
from scenegen.fileio import content_hash, publish_dir

log = logging.getLogger(__name__)

PIPELINE_VERSION = "2"
"""Bump when finalisation (physics, collision, files, URDF) changes its output."""
DEFAULT_ROOT = Path("~/.cache/scenegen/assets")
"""Cache root used when neither an argument nor ``SCENEGEN_CACHE`` names one."""


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Return the cache root: ``cache_dir``, else ``$SCENEGEN_CACHE``, else ``~/.cache/scenegen/assets``."""
    chosen = cache_dir or os.environ.get("SCENEGEN_CACHE") or DEFAULT_ROOT
    return Path(chosen).expanduser().resolve()


KEY_JSON = {"float_digits": None, "plain": True, "allow_nan": False, "error": AssetError, "what": "cache key"}
"""The :func:`scenegen.fileio.canonical_json` options of cache keys: floats as Python writes them, numpy
values, paths and dataclasses (through their ``cache_key()``) made plain, no NaN. Changing them changes
every asset id."""


def canonical_json(obj: Any) -> str:
    """Canonical JSON text of a cache key: sorted keys, no spaces, floats as Python writes them (:data:`KEY_JSON`)."""
    return _canonical_json(obj, **KEY_JSON)


def sha256_of(obj: Any) -> str:
    """Hex sha256 of the canonical JSON of ``obj``."""
    return content_hash(obj, **KEY_JSON)


def asset_key(category: Any, source: str, seed: int, attributes: dict | None, *, collision: Any,
              max_faces: int, generator_version: str, material: Any = None,
              extra: dict | None = None) -> str:
    """Content hash identifying one asset.

    Args:
        category: the catalog :class:`~scenegen.catalog.Category` (its whole entry is hashed).
        source: ``procedural``, ``library:<sha256 of the file>``...
        seed: seed of the instance parameters.
        attributes: requested attributes (color, material, size, scale).
        collision: the :class:`~scenegen.assets.collision.config.CollisionConfig`.
        max_faces: visual triangle budget.
        generator_version: version of the procedural generators (or of the loader).
        material: the catalog material record in use (its density, friction...).
        extra: anything else that changes the output.

    """
    return sha256_of({
        "schema": ASSET_SCHEMA_VERSION, "pipeline": PIPELINE_VERSION,
        "category": category.to_dict() if hasattr(category, "to_dict") else category,
        "source": source, "seed": int(seed), "attributes": attributes or {},
        "generator_version": generator_version, "collision": collision,
        "max_faces": int(max_faces), "material": material, "extra": extra or {},
    })


def asset_dir(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Folder an asset with this key lives in."""
    return cache_root(cache_dir) / key


def lookup(key: str, cache_dir: str | os.PathLike | None = None) -> Asset | None:
    """Return the cached asset with this key, or None when absent (or unreadable)."""
    folder = asset_dir(key, cache_dir)
    if not (folder / "asset.json").is_file():
        return None
    try:
        return Asset.load(folder)
    except AssetError as exc:
        log.warning("cached asset %s is unreadable (%s); rebuilding it", key[:12], exc)
        return None


def store(key: str, build: Callable[[Path], Asset], cache_dir: str | os.PathLike | None = None) -> Asset:
    """Build an asset into a temporary folder and move it atomically to ``<root>/<key>``.

    Args:
        key: the asset key (folder name).
        build: writes every file of the asset (``asset.json`` last) into the folder it is given.
        cache_dir: cache root override.

    Returns:
        The asset loaded from its final folder. When another writer finished the same key
        first, its copy is kept and this build discarded.

    """
    root = cache_root(cache_dir)
    final = root / key
    hit = lookup(key, root)
    if hit is not None:
        return hit
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AssetError(f"cannot create the asset cache {root} ({exc}); set SCENEGEN_CACHE "
                         "to a writable folder") from None

    def build_checked(tmp: Path) -> None:
        build(tmp)
        if not (tmp / "asset.json").is_file():
            raise AssetError(f"asset build for {key[:12]} wrote no asset.json; this is a bug")

    # A folder without asset.json is a broken leftover (not written this way): it is replaced.
    if not publish_dir(final, build_checked, keep_existing=lambda f: (f / "asset.json").is_file(),
                       error=AssetError):
        log.debug("asset %s was written concurrently; keeping the first copy", key[:12])
    return Asset.load(final)


def fetch_or_build(key: str, build: Callable[[Path], Asset], cache_dir: str | os.PathLike | None = None,
                   timings: dict | None = None) -> Asset:
    """Return the cached asset of ``key``, building and storing it first when absent.

    ``timings`` (if given) receives ``cached`` (a hit or not) and ``total`` seconds.
    """
    t0 = time.perf_counter()
    hit = lookup(key, cache_dir)
    asset = hit if hit is not None else store(key, build, cache_dir)
    if timings is not None:
        timings.update({"cached": hit is not None, "total": time.perf_counter() - t0})
    return asset
