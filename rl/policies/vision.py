"""Image encoders: a small conv net (default) or a pretrained transformers / timm backbone.

Every encoder maps ``(B, 3, H, W)`` images in [0, 1] to ``grid * grid`` tokens of width ``d``.
The conv net normalizes with the dataset's per-channel statistics (done by the policy before
it); pretrained backbones get ImageNet normalization (or their image processor's) here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from rl.policies.configuration_flow_vla import VisionConfig
from rl.policies.text import local_or_hub, missing_weights
from scenegen.errors import ConfigError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _groups(c: int) -> int:
    return next(g for g in (8, 4, 2, 1) if c % g == 0)


class ConvEncoder(nn.Module):
    """Stride-2 conv stages (GroupNorm, GELU), pooled to a ``grid x grid`` map, plus 2-D position embeddings."""

    def __init__(self, cfg: VisionConfig, d: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        for c in cfg.channels:
            layers += [nn.Conv2d(c_in, c, 3, stride=2, padding=1), nn.GroupNorm(_groups(c), c), nn.GELU(),
                       nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(_groups(c), c), nn.GELU()]
            c_in = c
        self.net = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(cfg.grid)
        self.proj = nn.Linear(c_in, d)
        self.pos = nn.Parameter(torch.randn(cfg.grid * cfg.grid, d) * 0.02)
        self.normalizes = False

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        f = self.pool(self.net(img))  # (B, C, g, g)
        return self.proj(f.flatten(2).transpose(1, 2)) + self.pos


class _Pretrained(nn.Module):
    """Shared part of the pretrained backbones: ImageNet-style normalization, resizing, pooling, projection."""

    normalizes = True

    def _setup(self, width: int, cfg: VisionConfig, d: int, size: int | None, mean: tuple, std: tuple) -> None:
        self.size = cfg.input_size or size
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)
        self.grid = cfg.grid
        self.proj = nn.Linear(width, d)
        self.pos = nn.Parameter(torch.randn(cfg.grid * cfg.grid, d) * 0.02)
        if cfg.freeze:
            self.backbone.requires_grad_(False)
        self.frozen = cfg.freeze

    def _prep(self, img: torch.Tensor) -> torch.Tensor:
        if self.size and img.shape[-1] != self.size:
            img = F.interpolate(img, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return (img - self.mean) / self.std

    def _tokens(self, feats: torch.Tensor) -> torch.Tensor:
        """``(B, C, h, w)`` maps or ``(B, N, C)`` tokens -> ``(B, grid^2, d)``."""
        if feats.dim() == 3:  # a ViT: drop a class token, lay the patches on their square grid
            n = feats.shape[1]
            side = int(round((n - 1) ** 0.5)) if int(round((n - 1) ** 0.5)) ** 2 == n - 1 else int(round(n ** 0.5))
            feats = feats[:, -side * side:].transpose(1, 2).reshape(feats.shape[0], -1, side, side)
        f = F.adaptive_avg_pool2d(feats, self.grid)
        return self.proj(f.flatten(2).transpose(1, 2)) + self.pos


class HFVision(_Pretrained):
    """A transformers vision model (ViT, ResNet, ConvNeXt, DINOv2, SigLIP vision...) as the image encoder."""

    def __init__(self, cfg: VisionConfig, d: int, from_config: str | None = None) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        name = str(cfg.pretrained)
        if from_config is not None:
            config = AutoConfig.from_pretrained(from_config, local_files_only=True)
            self.backbone = AutoModel.from_config(config)
            where, local = from_config, True
        else:
            where, local = local_or_hub(name, "vision backbone", "--vision-pretrained")
            try:
                self.backbone = AutoModel.from_pretrained(where, local_files_only=local)
            except (OSError, ValueError) as exc:
                raise missing_weights("vision backbone", name, "--vision-pretrained", exc) from None
        config = self.backbone.config
        config = getattr(config, "vision_config", None) or config
        if hasattr(self.backbone, "vision_model"):  # CLIP / SigLIP: keep the image tower
            self.backbone = self.backbone.vision_model
        width = getattr(config, "hidden_size", None) or (getattr(config, "hidden_sizes", None) or [None])[-1]
        if not width:
            raise ConfigError(f"vision backbone {name}: cannot tell its feature width from its config")
        mean, std = IMAGENET_MEAN, IMAGENET_STD
        proc = Path(where) / "preprocessor_config.json"
        if local and proc.is_file():
            p = json.loads(proc.read_text())
            mean, std = tuple(p.get("image_mean", mean)), tuple(p.get("image_std", std))
        size = getattr(config, "image_size", None)
        self._setup(int(width), cfg, d, int(size) if isinstance(size, int) else None, mean, std)

    def save_architecture(self, directory: Path) -> None:
        """Write the backbone's config (its weights go in the policy's safetensors)."""
        self.backbone.config.save_pretrained(directory)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
            out = self.backbone(pixel_values=self._prep(img))
        return self._tokens(out.last_hidden_state)


class TimmVision(_Pretrained):
    """A timm model (``forward_features``) as the image encoder; weights from a local file or folder."""

    def __init__(self, cfg: VisionConfig, d: int, from_config: str | None = None) -> None:
        super().__init__()
        try:
            import timm
        except ImportError:
            raise ConfigError("vision backbone 'timm' needs the timm package (pip install timm)") from None
        name = str(cfg.pretrained)
        if from_config is not None:
            arch = json.loads((Path(from_config) / "timm.json").read_text())["architecture"]
            self.backbone = create_timm(timm, arch, False, cfg.input_size)
        else:
            path = Path(name).expanduser()
            arch, file = name, None
            if path.is_dir():  # a hub snapshot: config.json names the architecture, weights beside it
                meta = json.loads((path / "config.json").read_text()) if (path / "config.json").is_file() else {}
                arch = meta.get("architecture") or meta.get("model_name") or path.name
                file = next((p for p in (path / "model.safetensors", path / "pytorch_model.bin") if p.is_file()), None)
                if file is None:
                    raise ConfigError(f"vision backbone {name}: no model.safetensors or pytorch_model.bin in it; "
                                      "download the timm model there with `hf download ID --local-dir DIR`")
            elif path.is_file():
                arch, file = path.stem, path
            try:
                # a local file is read here, not by the model's own loader (ViTs expect JAX .npz files there)
                self.backbone = create_timm(timm, arch, file is None, cfg.input_size)
                if file is not None:
                    load_weights(self.backbone, file)
            except (OSError, RuntimeError, ValueError) as exc:
                raise missing_weights("vision backbone", name, "--vision-pretrained", exc) from None
        self.architecture = self.backbone.default_cfg.get("architecture", getattr(self.backbone, "name", ""))
        dc = self.backbone.default_cfg
        size = dc.get("input_size", (3, None, None))[-1]
        self._setup(int(self.backbone.num_features), cfg, d, size, tuple(dc.get("mean", IMAGENET_MEAN)),
                    tuple(dc.get("std", IMAGENET_STD)))

    def save_architecture(self, directory: Path) -> None:
        """Write the architecture name (its weights go in the policy's safetensors)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "timm.json").write_text(json.dumps({"architecture": self.architecture}))

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
            feats = self.backbone.forward_features(self._prep(img))
        return self._tokens(feats)


def create_timm(timm: Any, arch: str, pretrained: bool, input_size: int | None) -> nn.Module:
    """A headless timm model; with ``input_size``, one that takes images of that side where the model can.

    Vision transformers fix their patch grid at construction (224 px for most): asked for another size they are
    built with ``dynamic_img_size``, which interpolates the position embedding at run time, so the same
    pretrained weights load. Convolutional models take any size and are built as they are.
    """
    if input_size:
        try:
            return timm.create_model(arch, pretrained=pretrained, num_classes=0, dynamic_img_size=True)
        except TypeError:  # a model without that option (a conv net)
            pass
    return timm.create_model(arch, pretrained=pretrained, num_classes=0)


def load_weights(model: nn.Module, file: Path) -> None:
    """Load a backbone's weights from a ``.safetensors`` or torch file; a classifier head in it is dropped.

    Raises:
        ValueError: the file lacks weights the backbone needs, or holds ones of another shape.
    """
    if file.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(file))
    else:
        state = torch.load(file, map_location="cpu", weights_only=True)
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    wrong = sorted(k for k in own if k in state and tuple(state[k].shape) != tuple(own[k].shape))
    if missing or wrong:
        raise ValueError(f"{file.name} does not fit the architecture: {len(missing)} weights missing "
                         f"(e.g. {missing[:2]}), {len(wrong)} of another shape (e.g. {wrong[:2]})")
    model.load_state_dict({k: state[k] for k in own})


def build_vision(cfg: VisionConfig, d: int, from_config: str | None = None) -> nn.Module:
    """The encoder a config names (``from_config``: a checkpoint's saved architecture, no weights read)."""
    if cfg.backbone == "conv":
        return ConvEncoder(cfg, d)
    return (HFVision if cfg.backbone == "hf" else TimmVision)(cfg, d, from_config)
