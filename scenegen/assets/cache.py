"""Content-addressed asset cache.

An asset's id is the sha256 of the canonical JSON of everything that determines it:
category and its catalog entry, source, seed, attributes, the procedural generator
version, the collision settings and the triangle budget. Its folder is
``<root>/<id>/``; a second request for the same key is a file read (:meth:`Asset.load`).

The root is ``~/.cache/scenegen/assets``, overridable with the ``SCENEGEN_CACHE``
environment variable or an explicit argument. Writes are atomic: an asset is built
in a temporary folder inside the root and renamed into place; if another writer got
there first, the second build is discarded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenegen.assets.base import ASSET_SCHEMA_VERSION, Asset
from scenegen.errors import AssetError

log = logging.getLogger(__name__)

PIPELINE_VERSION = "1"
"""Bump when finalisation (physics, collision, files, URDF) changes its output."""
DEFAULT_ROOT = Path("~/.cache/scenegen/assets")
"""Cache root used when neither an argument nor ``SCENEGEN_CACHE`` names one."""


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Return the cache root: ``cache_dir``, else ``$SCENEGEN_CACHE``, else ``~/.cache/scenegen/assets``."""
    chosen = cache_dir or os.environ.get("SCENEGEN_CACHE") or DEFAULT_ROOT
    return Path(chosen).expanduser().resolve()


def _plain(obj: Any) -> Any:
    """Turn dataclasses, tuples and numpy scalars into plain JSON types."""
    if callable(getattr(obj, "cache_key", None)):  # e.g. CollisionConfig: only the fields that matter
        return _plain(obj.cache_key())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def canonical_json(obj: Any) -> str:
    """Canonical JSON text of ``obj``: sorted keys, no spaces, floats as Python writes them."""
    try:
        return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssetError(f"cache key is not JSON-serialisable ({exc}); pass plain attributes") from None


def sha256_of(obj: Any) -> str:
    """Hex sha256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def asset_key(category: Any, source: str, seed: int, attributes: dict | None, *, collision: Any,
              max_faces: int, generator_version: str, material: Any = None,
              extra: dict | None = None) -> str:
    """Content hash identifying one asset.

    Args:
        category: the catalog :class:`~scenegen.catalog.Category` (its whole entry is hashed).
        source: ``procedural``, ``library:<sha256 of the file>``...
        seed: seed of the instance parameters.
        attributes: requested attributes (color, material, size, scale).
        collision: the :class:`~scenegen.assets.collision.CollisionConfig`.
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
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:12]}-", dir=root))
    try:
        build(tmp)
        if not (tmp / "asset.json").is_file():
            raise AssetError(f"asset build for {key[:12]} wrote no asset.json; this is a bug")
        if final.exists() and not (final / "asset.json").is_file():
            # A broken leftover (not written by this protocol): move it out of the way.
            os.replace(final, root / f".trash-{key[:12]}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "asset.json").is_file():
                raise
            log.debug("asset %s was written concurrently; keeping the first copy", key[:12])
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        for junk in root.glob(f".trash-{key[:12]}-*"):
            shutil.rmtree(junk, ignore_errors=True)
    return Asset.load(final)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
