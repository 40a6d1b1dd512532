"""Diffusers backends: text-to-3D meshes (Shap-E) and text-to-image textures.

Both backends take a Hugging Face model id or a local folder (a ``save_pretrained`` /
``hf download --local-dir`` copy). They work offline by default
(``local_files_only=True``): weights are read from the folder or from the Hugging Face
cache and never downloaded; when they are missing, a :class:`BackendError` says which
path was tried and how to provide the weights. A pipeline object can also be injected
(tests build tiny randomly initialised ones from config).

The asset builders on top of these backends (:func:`~scenegen.assets.diffusion.assets.generate_shap_e_asset`,
:func:`~scenegen.assets.diffusion.assets.textured_asset`) live in :mod:`scenegen.assets.diffusion.assets`.

Shap-E's frame: the decoder marches cubes over ``[-1, 1]^3`` with the field's first,
second and third axes as x, y and z, and its preview cameras orbit the ``z`` axis with
image-up along ``+z``; the raw mesh is therefore **z-up** (exporters to glTF rotate it
by -90° about x to make it y-up). ``ShapEConfig.up_axis`` defaults to ``"z"``; set it
for checkpoints or converted meshes that use another convention.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import trimesh
from PIL import Image

from scenegen.assets.diffusion.texturing import PROJECTIONS
from scenegen.assets.mesh.orient import UP_AXES
from scenegen.errors import AssetError, BackendError, ConfigError

log = logging.getLogger(__name__)

SHAPE_ENV = "SCENEGEN_SHAPE_MODEL"
"""Environment variable naming the Shap-E model id or folder."""
TEXTURE_ENV = "SCENEGEN_TEXTURE_MODEL"
"""Environment variable naming the text-to-image model id or folder."""
DEFAULT_SHAPE_MODEL = "openai/shap-e"
DEFAULT_TEXTURE_MODEL = "stable-diffusion-v1-5/stable-diffusion-v1-5"
DTYPES = ("float32", "float16", "bfloat16")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
MAX_LOADED = 2
"""Pipelines kept loaded per process (sources are rebuilt per attempt; weights load once)."""
_LOADED: dict[tuple, Any] = {}


def _check_common(model: str, device: str, dtype: str, steps: int, guidance: float) -> None:
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"model {model!r} is empty; give a Hugging Face id or a local folder")
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", str(device)):
        raise ConfigError(f"device {device!r} is not supported; use 'cpu', 'cuda', 'cuda:N' or 'mps'")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    if dtype != "float32" and device == "cpu":
        raise ConfigError(f"dtype {dtype!r} needs a GPU; use dtype='float32' on the CPU")
    if not 1 <= int(steps) <= 1000:
        raise ConfigError(f"num_inference_steps={steps} is out of range; use 1..1000")
    if not 0.0 <= float(guidance) <= 100.0:
        raise ConfigError(f"guidance_scale={guidance} is out of range; use 0..100")


def _check_template(template: str) -> None:
    try:
        ok = "{description}" in template and template.format(description="x") != template
    except (KeyError, IndexError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"prompt_template {template!r} must contain '{{description}}' and no other "
                          "{placeholders}")


@dataclass(frozen=True)
class ShapEConfig:
    """Settings of the Shap-E text-to-3D backend."""

    model: str = field(default_factory=lambda: os.environ.get(SHAPE_ENV) or DEFAULT_SHAPE_MODEL)
    """Hugging Face model id or local folder (default ``$SCENEGEN_SHAPE_MODEL`` or ``openai/shap-e``)."""
    device: str = "cpu"
    """Torch device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    dtype: str = "float32"
    """Torch dtype of the weights: ``float32``, or ``float16``/``bfloat16`` on a GPU."""
    num_inference_steps: int = 64
    """Denoising steps of the latent diffusion prior."""
    guidance_scale: float = 15.0
    """Classifier-free guidance scale (values above 1 enable guidance)."""
    frame_size: int = 64
    """Frame size of the pipeline's image renders (used only for previews, not for meshes)."""
    grid_size: int = 128
    """Resolution of the marching-cubes grid the decoder queries (Shap-E's own mesh output uses 128)."""
    local_files_only: bool = True
    """Never download: read the folder or the Hugging Face cache only."""
    up_axis: str = "z"
    """Up axis of the decoded mesh (Shap-E's decoder is z-up; see the module docstring)."""
    prompt_template: str = "a {description}"
    """Prompt for an object; ``{description}`` becomes e.g. ``small red ceramic bowl``."""
    min_component_fraction: float = 0.05
    """Cleaning drops components with less than this fraction of the surface area."""
    keep_proportions: bool = True
    """Scale uniformly into the category's size range (clamping axes that fall outside)."""
    max_attempts: int = 3
    """Generations tried (with derived seeds) when one decodes to no usable surface."""

    def __post_init__(self) -> None:
        _check_common(self.model, self.device, self.dtype, self.num_inference_steps, self.guidance_scale)
        if not 16 <= int(self.frame_size) <= 1024:
            raise ConfigError(f"frame_size={self.frame_size} is out of range; use 16..1024")
        if not 8 <= int(self.grid_size) <= 256:
            raise ConfigError(f"grid_size={self.grid_size} is out of range; use 8..256 (Shap-E uses 128)")
        if self.up_axis not in UP_AXES:
            raise ConfigError(f"up_axis {self.up_axis!r} is unknown; use one of {', '.join(UP_AXES)}")
        _check_template(self.prompt_template)
        if not 0.0 <= self.min_component_fraction < 1.0:
            raise ConfigError(f"min_component_fraction={self.min_component_fraction} is out of range; use [0, 1)")
        if not 1 <= int(self.max_attempts) <= 10:
            raise ConfigError(f"max_attempts={self.max_attempts} is out of range; use 1..10")

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (everything that shapes the output)."""
        return asdict(self)


@dataclass(frozen=True)
class TextureConfig:
    """Settings of the text-to-image texture backend."""

    model: str = field(default_factory=lambda: os.environ.get(TEXTURE_ENV) or DEFAULT_TEXTURE_MODEL)
    """Hugging Face model id or local folder of a text-to-image pipeline (Stable Diffusion family)."""
    device: str = "cpu"
    """Torch device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    dtype: str = "float32"
    """Torch dtype of the weights: ``float32``, or ``float16``/``bfloat16`` on a GPU."""
    num_inference_steps: int = 25
    """Denoising steps."""
    guidance_scale: float = 7.5
    """Classifier-free guidance scale."""
    size: int = 512
    """Texture width and height in pixels (a multiple of 8)."""
    local_files_only: bool = True
    """Never download: read the folder or the Hugging Face cache only."""
    prompt_template: str = "seamless texture of {description} surface, flat lighting, high detail"
    """Prompt for a texture; ``{description}`` becomes e.g. ``red ceramic bowl``."""
    negative_prompt: str = "text, watermark, shadow, perspective, object, border"
    """Negative prompt (empty string: none)."""
    projection: str = "auto"
    """UV projection: ``auto``, ``box``, ``cylindrical`` or ``planar``."""

    def __post_init__(self) -> None:
        _check_common(self.model, self.device, self.dtype, self.num_inference_steps, self.guidance_scale)
        if int(self.size) % 8 or not 16 <= int(self.size) <= 2048:
            raise ConfigError(f"texture size={self.size} must be a multiple of 8 in 16..2048")
        _check_template(self.prompt_template)
        if self.projection not in PROJECTIONS:
            raise ConfigError(f"projection {self.projection!r} is unknown; use one of {', '.join(PROJECTIONS)}")

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return asdict(self)


# --------------------------------------------------------------------------- loading

def import_diffusers() -> Any:
    """Import ``diffusers`` (and torch), or raise a :class:`BackendError` saying how to install them."""
    try:
        import diffusers
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise BackendError(f"the diffusers backends need diffusers, transformers and torch ({exc}); "
                           "install them with `pip install 'scenegen[diffusion]'`") from None
    return diffusers


def _how_to_provide(what: str, model: str, env: str, flag: str) -> str:
    repo = model if _HUB_ID.match(model) else _default_for(what)
    return (f"download them on a connected machine with `hf download {repo} --local-dir DIR` "
            f"(`huggingface-cli download {repo} --local-dir DIR` on older huggingface_hub), copy DIR here "
            f"and pass {flag} DIR or set {env}=DIR")


def _default_for(what: str) -> str:
    return DEFAULT_SHAPE_MODEL if what == "Shap-E" else DEFAULT_TEXTURE_MODEL


def _resolve_model(model: str, what: str, env: str, flag: str) -> str:
    """Return the local folder or hub id to load; raise when a path is given that does not exist."""
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists():
        raise BackendError(f"{what} model path {path} is a file, not a folder; pass the folder that "
                           f"holds model_index.json ({flag} DIR or {env}=DIR)")
    if not _HUB_ID.match(model):
        raise BackendError(f"{what} weights not found: {path} does not exist; "
                           + _how_to_provide(what, model, env, flag))
    return model


def load_pipeline(class_name: str, model: str, *, local_files_only: bool, device: str, dtype: str,
                  what: str, env: str, flag: str) -> Any:
    """Load a diffusers pipeline with clear errors (memoised per process: the same model loads once).

    Args:
        class_name: diffusers class (``ShapEPipeline``, ``AutoPipelineForText2Image``...).
        model: hub id or local folder.
        local_files_only: never download.
        device: torch device.
        dtype: torch dtype name.
        what: backend name for messages (``Shap-E``, ``texture``).
        env: environment variable that names the model.
        flag: CLI flag that names the model.

    Raises:
        BackendError: diffusers is missing, the weights are not available, CUDA is missing.

    """
    memo = (class_name, model, local_files_only, device, dtype)
    if memo in _LOADED:
        return _LOADED[memo]
    diffusers = import_diffusers()
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendError(f"{what}: device {device!r} requested but torch has no CUDA here; use device='cpu'")
    source = _resolve_model(model, what, env, flag)
    cls = getattr(diffusers, class_name)
    kwargs: dict = {"local_files_only": local_files_only}
    if dtype != "float32":  # float32 is the default; passing it only triggers a rename warning
        kwargs["torch_dtype"] = getattr(torch, dtype)
    try:
        pipe = cls.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        where = "in the Hugging Face cache" if source == model and not Path(model).is_dir() else f"in {source}"
        text = " ".join(str(exc).split())
        first = (text.split(". ")[0].rstrip(".")[:200]) if text else type(exc).__name__
        raise BackendError(f"{what} weights {model!r} are not available offline (nothing usable {where}: "
                           f"{first}); " + _how_to_provide(what, model, env, flag)) from None
    pipe = pipe.to(device)
    if hasattr(pipe, "set_progress_bar_config"):
        pipe.set_progress_bar_config(disable=True)
    while len(_LOADED) >= MAX_LOADED:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[memo] = pipe
    return pipe


def _generator(device: str, seed: int) -> Any:
    import torch

    dev = "cpu" if device == "mps" else device
    return torch.Generator(device=dev).manual_seed(int(seed) % (2**63))


class ShapEBackend:
    """Text-to-3D with diffusers' ``ShapEPipeline``; the pipeline loads on first use."""

    def __init__(self, config: ShapEConfig | None = None, pipeline: Any = None) -> None:
        """Create the backend.

        Args:
            config: settings (default :class:`ShapEConfig`).
            pipeline: an already built ``ShapEPipeline`` (skips loading ``config.model``).

        """
        self.config = config or ShapEConfig()
        self._pipeline = pipeline
        if pipeline is not None and hasattr(pipeline, "set_progress_bar_config"):
            pipeline.set_progress_bar_config(disable=True)

    def __getstate__(self) -> dict:
        # The pipeline is not sent to worker processes (Shap-E's renderer cannot be pickled
        # anyway); each worker loads ``config.model`` on first use.
        state = dict(self.__dict__)
        state["_pipeline"] = None
        return state

    @property
    def pipeline(self) -> Any:
        """The diffusers pipeline (loaded from ``config.model`` on first access)."""
        if self._pipeline is None:
            c = self.config
            self._pipeline = load_pipeline("ShapEPipeline", c.model, local_files_only=c.local_files_only,
                                           device=c.device, dtype=c.dtype, what="Shap-E", env=SHAPE_ENV,
                                           flag="--shap-e-model")
        return self._pipeline

    def generate_mesh(self, prompt: str, seed: int) -> trimesh.Trimesh:
        """Generate the raw mesh of ``prompt`` (Shap-E's frame: z-up, inside ``[-1, 1]^3``).

        Runs the prior to a latent (``output_type="latent"``) and decodes it with the
        pipeline's own ``shap_e_renderer.decode_to_mesh`` — what ``output_type="mesh"``
        does, with the grid resolution of ``config.grid_size``. Vertex colours come from
        the decoder's RGB channels.

        Raises:
            AssetError: the latent decodes to no surface (try another seed).
            BackendError: the weights cannot be loaded or the pipeline failed.

        """
        import torch

        c = self.config
        pipe = self.pipeline
        try:
            latents = pipe(prompt, num_inference_steps=c.num_inference_steps, guidance_scale=c.guidance_scale,
                           frame_size=c.frame_size, generator=_generator(c.device, seed),
                           output_type="latent").images
        except (RuntimeError, ValueError, TypeError) as exc:
            raise BackendError(f"Shap-E pipeline failed on {prompt!r}: {str(exc).splitlines()[0][:200]}") from None
        try:
            with torch.no_grad():
                out = pipe.shap_e_renderer.decode_to_mesh(latents[0][None], torch.device(c.device),
                                                          grid_size=c.grid_size)
        except ValueError as exc:  # diffusers fails on an empty marching-cubes result
            raise AssetError(f"Shap-E decoded {prompt!r} (seed {seed}) to no surface ({exc}); "
                             "try another seed or prompt") from None
        verts = out.verts.detach().float().cpu().numpy().astype(np.float64)
        faces = out.faces.detach().cpu().numpy().astype(np.int64)
        if len(faces) == 0:
            raise AssetError(f"Shap-E decoded {prompt!r} (seed {seed}) to no surface; try another seed or prompt")
        colors = None
        if out.vertex_channels and all(k in out.vertex_channels for k in "RGB"):
            rgb = np.stack([out.vertex_channels[k].detach().float().cpu().numpy() for k in "RGB"], axis=1)
            colors = np.clip(np.c_[rgb, np.ones(len(rgb))] * 255.0, 0, 255).astype(np.uint8)
        return trimesh.Trimesh(verts, faces, vertex_colors=colors, process=False)


class TextureBackend:
    """Text-to-image textures with a diffusers pipeline; the pipeline loads on first use."""

    def __init__(self, config: TextureConfig | None = None, pipeline: Any = None) -> None:
        """Create the backend.

        Args:
            config: settings (default :class:`TextureConfig`).
            pipeline: an already built text-to-image pipeline (skips loading ``config.model``).

        """
        self.config = config or TextureConfig()
        self._pipeline = pipeline
        if pipeline is not None and hasattr(pipeline, "set_progress_bar_config"):
            pipeline.set_progress_bar_config(disable=True)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_pipeline"] = None  # each worker process loads its own
        return state

    @property
    def pipeline(self) -> Any:
        """The diffusers pipeline (``AutoPipelineForText2Image`` from ``config.model`` on first access)."""
        if self._pipeline is None:
            c = self.config
            self._pipeline = load_pipeline("AutoPipelineForText2Image", c.model,
                                           local_files_only=c.local_files_only, device=c.device, dtype=c.dtype,
                                           what="texture", env=TEXTURE_ENV, flag="--texture-model")
        return self._pipeline

    def generate_texture(self, prompt: str, seed: int, size: int | None = None) -> Image.Image:
        """Generate an RGB texture image of ``size`` x ``size`` pixels (default ``config.size``).

        Raises:
            ConfigError: the size is not a multiple of 8.
            BackendError: the weights cannot be loaded or the pipeline failed.

        """
        c = self.config
        size = int(size or c.size)
        if size % 8 or size < 16:
            raise ConfigError(f"texture size={size} must be a multiple of 8, at least 16")
        try:
            image = self.pipeline(prompt, negative_prompt=c.negative_prompt or None, height=size, width=size,
                                  num_inference_steps=c.num_inference_steps, guidance_scale=c.guidance_scale,
                                  generator=_generator(c.device, seed), output_type="pil").images[0]
        except (RuntimeError, ValueError, TypeError) as exc:
            raise BackendError(f"texture pipeline failed on {prompt!r}: {str(exc).splitlines()[0][:200]}") from None
        image = image.convert("RGB")
        if image.size != (size, size):
            image = image.resize((size, size), Image.Resampling.BICUBIC)
        return image
