"""Where a run's object meshes come from: the asset-source selector.

``scenegen generate --assets SPEC`` turns SPEC into an :class:`AssetSource` with
:func:`resolve_source`; the pipeline then calls ``source(category, seed, attributes)``
for every object and writes ``source.config()`` into the pack manifest.

Specs:

- ``procedural`` (default): the offline procedural generators (:func:`generate_asset`);
- ``shap-e``: text-to-3D with Shap-E (:func:`generate_shap_e_asset`); the model folder
  comes from the ``shap_e_model`` option (``--shap-e-model``) or ``$SCENEGEN_SHAPE_MODEL``;
- ``textured``: procedural meshes with a text-to-image texture (:func:`textured_asset`);
  the model from ``texture_model`` or ``$SCENEGEN_TEXTURE_MODEL``;
- ``library:DIR``: the user's meshes in DIR, named by category (``bowl.obj``,
  ``bowl_2.glb``; a seed picks among the variants of a category). A category without
  a file falls back to the procedural generator; the fallback is logged and listed in
  ``source.fallbacks`` and in ``config()``.

Sources are plain picklable objects: a loaded diffusion pipeline is not pickled, each
worker process loads its own on first use.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import Any

from scenegen.assets.base import Asset
from scenegen.assets.collision.config import CollisionConfig
from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import ConfigError

log = logging.getLogger(__name__)

SPECS = ("procedural", "shap-e", "textured", "library:DIR")
"""The accepted source specs (``DIR`` is a folder)."""
COMMON_OPTIONS = ("cache_dir", "collision", "max_faces", "catalog")
SHAPE_OPTIONS = ("shap_e_model", "shap_e_config", "shap_e_backend", "device")
TEXTURE_OPTIONS = ("texture_model", "texture_config", "texture_backend", "device")
OPTIONS = tuple(dict.fromkeys(COMMON_OPTIONS + SHAPE_OPTIONS + TEXTURE_OPTIONS))
"""Keyword options :func:`resolve_source` understands (``None`` values are ignored)."""


class AssetSource:
    """A callable ``(category, seed, attributes) -> Asset`` with a name and a manifest record."""

    name: str = "source"
    """Short name, e.g. ``procedural``, ``shap-e`` or ``library:/path``."""

    def __init__(self, *, cache_dir: str | os.PathLike | None = None, collision: CollisionConfig | None = None,
                 max_faces: int = 5000, catalog: Catalog | None = None) -> None:
        """Store the settings every source shares.

        Args:
            cache_dir: asset cache root (default ``$SCENEGEN_CACHE`` or ``~/.cache/scenegen/assets``).
            collision: collision settings (default :class:`CollisionConfig`).
            max_faces: visual triangle budget.
            catalog: catalog (default :func:`load_catalog`).

        """
        if int(max_faces) < 64:
            raise ConfigError(f"max_faces={max_faces} is too small; use at least 64")
        self.cache_dir = cache_dir
        self.collision = collision or CollisionConfig()
        self.max_faces = int(max_faces)
        self.catalog = catalog or load_catalog()

    def __call__(self, category: str, seed: int, attributes: dict | None = None) -> Asset:
        raise NotImplementedError

    def _common(self) -> dict:
        return {"max_faces": self.max_faces, "collision": dataclasses.asdict(self.collision)}

    def _procedural(self, category: str, seed: int, attributes: dict | None) -> Asset:
        from scenegen.assets.build import generate_asset

        return generate_asset(category, seed, attributes, cache_dir=self.cache_dir, collision=self.collision,
                              max_faces=self.max_faces, catalog=self.catalog)

    def config(self) -> dict:
        """A JSON-ready record of the source and its settings, for the pack manifest."""
        return {"kind": self.name, **self._common()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ProceduralSource(AssetSource):
    """The offline procedural generators."""

    name = "procedural"

    def __call__(self, category: str, seed: int, attributes: dict | None = None) -> Asset:
        return self._procedural(category, seed, attributes)


class ShapESource(AssetSource):
    """Text-to-3D meshes from Shap-E; the pipeline loads once, on the first call."""

    name = "shap-e"

    def __init__(self, config: Any = None, backend: Any = None, **common: Any) -> None:
        """Create the source.

        Args:
            config: a :class:`~scenegen.assets.diffusion.pipelines.ShapEConfig` (default: from the environment).
            backend: a ready :class:`~scenegen.assets.diffusion.pipelines.ShapEBackend` (e.g. an injected pipeline).
            **common: ``cache_dir``, ``collision``, ``max_faces``, ``catalog``.

        """
        super().__init__(**common)
        from scenegen.assets.diffusion.pipelines import ShapEBackend, ShapEConfig

        if backend is not None and config is not None and config != backend.config:
            raise ConfigError("ShapESource: config differs from backend.config; pass one of them")
        self.shap_e = config or (backend.config if backend is not None else ShapEConfig())
        self.backend = backend or ShapEBackend(self.shap_e)

    def __call__(self, category: str, seed: int, attributes: dict | None = None) -> Asset:
        from scenegen.assets.diffusion.assets import generate_shap_e_asset

        return generate_shap_e_asset(category, seed, attributes, self.shap_e, self.cache_dir, backend=self.backend,
                                     collision=self.collision, max_faces=self.max_faces, catalog=self.catalog)

    def config(self) -> dict:
        return {"kind": self.name, "model": self.shap_e.model, "settings": self.shap_e.to_dict(), **self._common()}


class TexturedSource(AssetSource):
    """Procedural meshes carrying a texture generated from text."""

    name = "textured"

    def __init__(self, config: Any = None, backend: Any = None, **common: Any) -> None:
        """Create the source.

        Args:
            config: a :class:`~scenegen.assets.diffusion.pipelines.TextureConfig` (default: from the environment).
            backend: a ready :class:`~scenegen.assets.diffusion.pipelines.TextureBackend`.
            **common: ``cache_dir``, ``collision``, ``max_faces``, ``catalog``.

        """
        super().__init__(**common)
        from scenegen.assets.diffusion.pipelines import TextureBackend, TextureConfig

        if backend is not None and config is not None and config != backend.config:
            raise ConfigError("TexturedSource: config differs from backend.config; pass one of them")
        self.texture = config or (backend.config if backend is not None else TextureConfig())
        self.backend = backend or TextureBackend(self.texture)

    def __call__(self, category: str, seed: int, attributes: dict | None = None) -> Asset:
        from scenegen.assets.diffusion.assets import textured_asset

        return textured_asset(category, seed, attributes, self.backend, cache_dir=self.cache_dir,
                              collision=self.collision, max_faces=self.max_faces, catalog=self.catalog)

    def config(self) -> dict:
        return {"kind": self.name, "model": self.texture.model, "settings": self.texture.to_dict(), **self._common()}


def index_library(folder: Path, catalog: Catalog) -> tuple[dict[str, list[Path]], list[str]]:
    """Map categories to the mesh files of a library folder.

    A file belongs to a category when its stem is the category name, or the name plus
    ``_<number>`` (``bowl.obj``, ``bowl_2.glb``). Variants are sorted by name.

    Returns:
        ``(index, ignored)``: category -> files, and the names of mesh files that match no category.

    """
    from scenegen.assets.library import SUPPORTED

    index: dict[str, list[Path]] = {}
    ignored: list[str] = []
    for f in sorted(folder.iterdir()):
        if not f.is_file() or f.suffix.lower() not in SUPPORTED:
            continue
        stem = f.stem
        m = re.fullmatch(r"(.+?)_(\d+)", stem)
        cat = stem if stem in catalog else (m.group(1) if m and m.group(1) in catalog else None)
        if cat is None:
            ignored.append(f.name)
        else:
            index.setdefault(cat, []).append(f)
    if ignored:
        log.warning("library %s: %d file(s) match no category and are ignored: %s", folder, len(ignored),
                    ", ".join(ignored[:5]) + (" ..." if len(ignored) > 5 else ""))
    return index, ignored


class LibrarySource(AssetSource):
    """The user's meshes from a folder, named by category; procedural for the rest."""

    def __init__(self, folder: str | os.PathLike, **common: Any) -> None:
        """Index the folder.

        Args:
            folder: the library folder.
            **common: ``cache_dir``, ``collision``, ``max_faces``, ``catalog``.

        Raises:
            ConfigError: the folder does not exist.

        """
        super().__init__(**common)
        self.folder = Path(folder).expanduser().resolve()
        if not self.folder.is_dir():
            raise ConfigError(f"asset library {self.folder} is not a folder; pass --assets library:DIR with "
                              "a folder of meshes named by category (bowl.obj, bowl_2.glb)")
        self.name = f"library:{self.folder}"
        self.index, self.ignored = index_library(self.folder, self.catalog)
        self.fallbacks: dict[str, int] = {}
        """Categories served by the procedural fallback -> how many times."""

    def __call__(self, category: str, seed: int, attributes: dict | None = None) -> Asset:
        files = self.index.get(category)
        if not files:
            if category not in self.fallbacks:
                log.info("library %s has no mesh for %r; using the procedural generator", self.folder, category)
            self.fallbacks[category] = self.fallbacks.get(category, 0) + 1
            return self._procedural(category, seed, attributes)
        from scenegen.assets.library import load_library_asset

        path = files[int(seed) % len(files)]
        return load_library_asset(path, category, seed=seed, attributes=attributes, cache_dir=self.cache_dir,
                                  collision=self.collision, max_faces=self.max_faces, catalog=self.catalog)

    def config(self) -> dict:
        return {"kind": "library", "dir": str(self.folder),
                "files": {c: [f.name for f in fs] for c, fs in sorted(self.index.items())},
                "ignored": list(self.ignored), "fallback": "procedural",
                "fallbacks": dict(sorted(self.fallbacks.items())), **self._common()}


def _pick(options: dict, names: tuple[str, ...]) -> dict:
    return {k: options[k] for k in names if options.get(k) is not None}


def _backend_parts(options: dict, prefix: str, config_cls: type) -> tuple[Any, Any]:
    """The (config, backend) of a diffusion source from ``<prefix>_model/_config/_backend`` and ``device``."""
    backend = options.get(f"{prefix}_backend")
    cfg = options.get(f"{prefix}_config")
    changes = {k: str(v) for k, v in (("model", options.get(f"{prefix}_model")), ("device", options.get("device")))
               if v is not None}
    if backend is not None:
        if changes or (cfg is not None and cfg != backend.config):
            raise ConfigError(f"{prefix}_backend carries its own settings; do not pass {prefix}_model, "
                              f"{prefix}_config or device with it")
        return backend.config, backend
    cfg = cfg or config_cls()
    return (dataclasses.replace(cfg, **changes) if changes else cfg), None


def resolve_source(spec: str | None = "procedural", **options: Any) -> AssetSource:
    """Turn an ``--assets`` spec into an :class:`AssetSource`.

    Args:
        spec: ``procedural`` (default; also for an empty spec), ``shap-e``, ``textured`` or ``library:DIR``.
        **options: any of :data:`OPTIONS`: ``cache_dir``, ``collision``, ``max_faces``,
            ``catalog``; for Shap-E ``shap_e_model`` (id or folder), ``shap_e_config``,
            ``shap_e_backend``, ``device``; for textures ``texture_model``,
            ``texture_config``, ``texture_backend``, ``device``. ``None`` values are
            ignored, and options of other kinds are accepted and unused.

    Raises:
        ConfigError: an unknown spec or option, or a library folder that does not exist.

    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"unknown asset source option(s) {', '.join(unknown)}; use {', '.join(OPTIONS)}")
    common = _pick(options, COMMON_OPTIONS)
    text = (spec or "procedural").strip()
    if text == "procedural":
        return ProceduralSource(**common)
    if text == "shap-e":
        from scenegen.assets.diffusion.pipelines import ShapEConfig

        return ShapESource(*_backend_parts(options, "shap_e", ShapEConfig), **common)
    if text == "textured":
        from scenegen.assets.diffusion.pipelines import TextureConfig

        return TexturedSource(*_backend_parts(options, "texture", TextureConfig), **common)
    if text.startswith("library:"):
        folder = text[len("library:"):].strip()
        if not folder:
            raise ConfigError("asset source 'library:' needs a folder: use --assets library:DIR")
        return LibrarySource(folder, **common)
    raise ConfigError(f"unknown asset source {spec!r}; use one of {', '.join(SPECS)}")
