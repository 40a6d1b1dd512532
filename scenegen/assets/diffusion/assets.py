"""Assets from the diffusers backends: Shap-E meshes and procedural meshes with generated textures.

Both go through the same finishing step as procedural assets
(:func:`~scenegen.assets.build.finalize_asset`: physics, CoACD collision, files,
URDF) and the same content-addressed cache; the cache key holds the model id or path,
the prompt, the seed and every generation setting, so a cache hit needs no weights.
The key names the model by its id/path string: replacing the weights in a folder
without renaming it serves stale assets until the cache is cleared.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.assets.build import finalize_asset, validate_attributes
from scenegen.assets.cache import asset_key, fetch_or_build
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.diffusion.pipelines import ShapEBackend, ShapEConfig, TextureBackend, TextureConfig
from scenegen.assets.diffusion.texturing import apply_texture
from scenegen.assets.mesh.cleanup import clean_mesh
from scenegen.assets.mesh.fit import fit_to_category
from scenegen.assets.procedural import GENERATOR_VERSION, ProceduralMesh, build_mesh
from scenegen.catalog import Catalog, Category, load_catalog
from scenegen.errors import AssetError, ConfigError

log = logging.getLogger(__name__)

DIFFUSION_VERSION = "1"
"""Bump when cleaning, scaling or texturing changes its output: it is part of the cache key."""
SEED_STRIDE = 1_000_003
"""Attempt ``k`` of a Shap-E generation uses seed ``seed + k * SEED_STRIDE``."""


def describe(category: Category, attributes: dict, *, with_material: bool = False) -> str:
    """Words for an object: ``[size] [colour] [material] name``, e.g. ``small red ceramic bowl``.

    The material appears when it was asked for, or with ``with_material`` (texture
    prompts) when the category's default material is a real surface material.
    """
    words = []
    if attributes.get("size"):
        words.append(str(attributes["size"]))
    if attributes.get("color"):
        words.append("transparent" if attributes["color"] == "clear" else str(attributes["color"]))
    material = attributes.get("material") or (category.material if with_material else None)
    if material and material != "fruit":
        words.append(str(material))
    words.append(category.display)
    return " ".join(words)


def _check_budget(max_faces: int) -> None:
    if int(max_faces) < 64:
        raise ConfigError(f"max_faces={max_faces} is too small; use at least 64")


def generate_shap_e_asset(category: str, seed: int = 0, attributes: dict | None = None,
                          config: ShapEConfig | None = None, cache_dir: str | os.PathLike | None = None, *,
                          backend: ShapEBackend | None = None, collision: CollisionConfig | None = None,
                          max_faces: int = 5000, catalog: Catalog | None = None,
                          timings: dict | None = None) -> Asset:
    """Generate (or fetch from the cache) an asset whose mesh comes from Shap-E.

    The prompt is ``config.prompt_template`` filled with :func:`describe`. The raw mesh
    is cleaned (:func:`~scenegen.assets.mesh.cleanup.clean_mesh`), scaled into the
    category's size range (drawn from ``seed``, honouring ``size``/``scale``) and
    finished like a procedural asset. When a generation decodes to no usable surface,
    up to ``config.max_attempts`` derived seeds are tried.

    Args:
        category: catalog category name.
        seed: seed of the diffusion sampler and of the size draw.
        attributes: ``color``, ``material``, ``size``, ``scale``.
        config: backend settings (default: ``backend.config`` or :class:`ShapEConfig`).
        cache_dir: cache root.
        backend: a ready backend (e.g. with an injected pipeline); default builds one from ``config``.
        collision: collision settings.
        max_faces: visual triangle budget.
        catalog: catalog (default :func:`load_catalog`).
        timings: when given, filled with seconds per stage and ``cached``.

    Returns:
        The :class:`Asset` (source ``shap-e:<model>``).

    Raises:
        CatalogError: unknown category.
        AssetError: bad attributes, or no attempt gave a usable mesh.
        BackendError: diffusers or the weights are missing, or the pipeline failed.

    """
    catalog = catalog or load_catalog()
    cat = catalog.get(category)
    _check_budget(max_faces)
    attrs = validate_attributes(attributes, catalog)
    if backend is not None and config is not None and config != backend.config:
        raise ConfigError("generate_shap_e_asset: config differs from backend.config; pass one of them")
    config = config or (backend.config if backend is not None else ShapEConfig())
    backend = backend or ShapEBackend(config)
    col = collision or CollisionConfig()
    prompt = config.prompt_template.format(description=describe(cat, attrs))
    source = f"shap-e:{config.model}"
    material = catalog.materials[attrs.get("material", cat.material)]
    key = asset_key(cat, source, seed, attrs, collision=col, max_faces=max_faces,
                    generator_version=f"shap-e/{DIFFUSION_VERSION}", material=material,
                    extra={"prompt": prompt, "shap_e": config.to_dict()})
    def build(folder: Path) -> Asset:
        tm = time.perf_counter()
        errors = []
        for attempt in range(config.max_attempts):
            used = int(seed) + attempt * SEED_STRIDE
            try:
                raw = backend.generate_mesh(prompt, used)
                mesh, report = clean_mesh(raw, max_faces=max_faces, up=config.up_axis,
                                          min_component_fraction=config.min_component_fraction,
                                          name=f"{cat.name} (shap-e seed {used})")
                break
            except AssetError as exc:
                errors.append(str(exc))
                log.warning("%s: Shap-E attempt %d failed: %s", cat.name, attempt + 1, exc)
        else:
            raise AssetError(f"{cat.name}: Shap-E gave no usable mesh in {config.max_attempts} attempts "
                             f"(last: {errors[-1]}); try another seed or prompt, or use --assets procedural")
        mesh, fit = fit_to_category(mesh, cat, np.random.default_rng(seed), attrs,
                                    keep_proportions=config.keep_proportions, size_classes=catalog.size_classes)
        if report.hull_fallback:
            log.warning("%s: Shap-E mesh replaced by its convex hull (not watertight after repair)", cat.name)
        params = {"prompt": prompt, "model": config.model, "seed_used": used, "attempts": attempt + 1,
                  "raw_faces": int(len(raw.faces)), "cleanup": report.to_dict(), "fit": fit}
        pm = ProceduralMesh(mesh, params, closed=True, cavity=cat.container)
        if timings is not None:
            timings["mesh"] = time.perf_counter() - tm
        return finalize_asset(pm, cat, source, seed, attrs, asset_id=key, out_dir=folder, collision=col,
                              cache_dir=cache_dir, catalog=catalog, max_faces=max_faces, timings=timings)

    return fetch_or_build(key, build, cache_dir, timings)


def textured_asset(category: str, seed: int = 0, attributes: dict | None = None,
                   texture_backend: TextureBackend | None = None, *, projection: str | None = None,
                   cache_dir: str | os.PathLike | None = None, collision: CollisionConfig | None = None,
                   max_faces: int = 5000, catalog: Catalog | None = None,
                   timings: dict | None = None) -> Asset:
    """A procedural asset whose surface carries a texture generated from text.

    The mesh is the procedural one of the same category, seed and attributes; the
    texture prompt is ``texture_backend.config.prompt_template`` filled with
    :func:`describe` (material included); UVs come from :func:`~scenegen.assets.diffusion.texturing.apply_texture`.

    Args:
        category: catalog category name.
        seed: seed of the procedural parameters and of the texture sampler.
        attributes: ``color``, ``material``, ``size``, ``scale``.
        texture_backend: the text-to-image backend (default: one from :class:`TextureConfig`).
        projection: UV projection (default ``texture_backend.config.projection``).
        cache_dir: cache root.
        collision: collision settings.
        max_faces: visual triangle budget.
        catalog: catalog (default :func:`load_catalog`).
        timings: when given, filled with seconds per stage and ``cached``.

    Returns:
        The :class:`Asset` (source ``procedural+texture:<model>``), with ``texture.png``.

    Raises:
        CatalogError: unknown category.
        AssetError: bad attributes or projection.
        BackendError: diffusers or the weights are missing, or the pipeline failed.

    """
    catalog = catalog or load_catalog()
    cat = catalog.get(category)
    _check_budget(max_faces)
    attrs = validate_attributes(attributes, catalog)
    backend = texture_backend or TextureBackend(TextureConfig())
    tcfg: TextureConfig = backend.config
    projection = projection or tcfg.projection
    col = collision or CollisionConfig()
    prompt = tcfg.prompt_template.format(description=describe(cat, attrs, with_material=True))
    source = f"procedural+texture:{tcfg.model}"
    material = catalog.materials[attrs.get("material", cat.material)]
    key = asset_key(cat, source, seed, attrs, collision=col, max_faces=max_faces,
                    generator_version=f"{GENERATOR_VERSION}+texture/{DIFFUSION_VERSION}", material=material,
                    extra={"prompt": prompt, "texture": tcfg.to_dict(), "projection": projection})
    def build(folder: Path) -> Asset:
        tm = time.perf_counter()
        pm = build_mesh(cat, np.random.default_rng(seed), attrs, max_faces)
        image = backend.generate_texture(prompt, int(seed))
        pm.mesh = apply_texture(pm.mesh, image, projection)
        pm.params = dict(pm.params)
        pm.params["texture"] = {"prompt": prompt, "model": tcfg.model, "size": image.size[0],
                                "projection": pm.mesh.metadata["uv_projection"]}
        if timings is not None:
            timings["mesh"] = time.perf_counter() - tm
        return finalize_asset(pm, cat, source, seed, attrs, asset_id=key, out_dir=folder, collision=col,
                              cache_dir=cache_dir, catalog=catalog, max_faces=max_faces, timings=timings)

    return fetch_or_build(key, build, cache_dir, timings)
