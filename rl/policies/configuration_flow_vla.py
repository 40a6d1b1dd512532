"""Configuration of the flow-matching VLA (:mod:`rl.policies.modeling_flow_vla`): frozen, validated dataclasses.

Sizes the dataset decides (``action_dim``, ``state_dim``, ``cameras``) may be left at their
"from the dataset" defaults; :func:`resolve` fills them in from a dataset before a model is built.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rl.policies.flow_matching import TIME_DISTRIBUTIONS
from scenegen.errors import ConfigError
from scenegen.validate import finite, int_in

VISION_BACKBONES = ("conv", "hf", "timm")
TEXT_ENCODERS = ("words", "hf")


@dataclass(frozen=True)
class VisionConfig:
    """The per-camera image encoder."""

    backbone: str = "conv"
    """``conv`` (a small conv net trained from scratch), ``hf`` (a transformers vision model) or ``timm``."""
    pretrained: str | None = None
    """For ``hf`` / ``timm``: a local folder (or, with network access, a hub id) holding the backbone's weights."""
    channels: tuple[int, ...] = (32, 64, 128, 128)
    """Widths of the conv net's stride-2 stages."""
    grid: int = 4
    """Each camera gives ``grid x grid`` tokens (the feature map pooled to that size)."""
    input_size: int | None = None
    """Images are resized to this side before a pretrained backbone (None: the backbone's own size, or as given)."""
    freeze: bool = False
    """Keep a pretrained backbone's weights fixed."""

    def __post_init__(self) -> None:
        if self.backbone not in VISION_BACKBONES:
            raise ConfigError(f"VisionConfig.backbone = {self.backbone!r} must be one of {VISION_BACKBONES}")
        if self.backbone != "conv" and not self.pretrained:
            raise ConfigError(f"VisionConfig.backbone = {self.backbone!r} needs pretrained= (a local folder or "
                              "hub id of the backbone's weights)")
        chans = tuple(self.channels)
        if not chans or len(chans) > 6 or any(not isinstance(c, int) or not 4 <= c <= 1024 for c in chans):
            raise ConfigError(f"VisionConfig.channels = {self.channels!r} must be 1..6 ints in 4..1024")
        object.__setattr__(self, "channels", chans)
        int_in("VisionConfig.grid", self.grid, 1, 16)
        if self.input_size is not None:
            int_in("VisionConfig.input_size", self.input_size, 16, 1024)


@dataclass(frozen=True)
class TextConfig:
    """The instruction encoder."""

    encoder: str = "words"
    """``words`` (a word tokenizer over the catalog and task vocabulary, and a small transformer) or ``hf``."""
    pretrained: str | None = None
    """For ``hf``: a local folder (or hub id) with a transformers text model and its tokenizer."""
    vocab: tuple[str, ...] = ()
    """The word tokenizer's vocabulary (filled from the catalog and the dataset's tasks when empty)."""
    max_tokens: int = 24
    """Longest instruction in tokens (longer ones are cut)."""
    layers: int = 2
    """Transformer layers of the word encoder."""
    freeze: bool = True
    """Keep a pretrained text encoder's weights fixed."""

    def __post_init__(self) -> None:
        if self.encoder not in TEXT_ENCODERS:
            raise ConfigError(f"TextConfig.encoder = {self.encoder!r} must be one of {TEXT_ENCODERS}")
        if self.encoder == "hf" and not self.pretrained:
            raise ConfigError("TextConfig.encoder = 'hf' needs pretrained= (a local folder or hub id)")
        object.__setattr__(self, "vocab", tuple(str(w) for w in self.vocab))
        int_in("TextConfig.max_tokens", self.max_tokens, 1, 512)
        int_in("TextConfig.layers", self.layers, 0, 12)


@dataclass(frozen=True)
class FlowVLAConfig:
    """The flow-matching vision-language-action policy."""

    action_dim: int = 0
    """Size of an action (0: from the dataset)."""
    state_dim: int = 0
    """Size of ``observation.state`` (0: from the dataset)."""
    cameras: tuple[str, ...] | None = None
    """Cameras the policy looks at (None: every camera of the dataset; () none)."""
    robot_type: str = ""
    """The robot the policy drives (from the dataset); a checkpoint refuses envs of another robot."""
    action_low: float = -1.0
    """Lower bound of every action dimension (chunks are clipped to it)."""
    action_high: float = 1.0
    """Upper bound of every action dimension."""
    chunk_size: int = 16
    """H: actions predicted per chunk."""
    n_action_steps: int = 8
    """Actions of a chunk played before the next prediction (<= chunk_size)."""
    num_inference_steps: int = 10
    """K: Euler steps from noise to an action chunk (K=10 and K=1 are the same model)."""
    d_model: int = 128
    """Width of every token."""
    heads: int = 4
    """Attention heads."""
    obs_layers: int = 2
    """Transformer layers fusing image, instruction and state tokens."""
    expert_layers: int = 4
    """Layers of the action expert (self-attention over the H action tokens, cross-attention to the observation)."""
    ff_mult: int = 4
    """Feed-forward width as a multiple of d_model."""
    dropout: float = 0.0
    """Dropout in the transformers."""
    time_distribution: str = "beta"
    """Training flow times: ``beta`` (as pi0 / SmolVLA: weighted towards the noisy end) or ``uniform``."""
    time_alpha: float = 1.5
    """Beta distribution's alpha."""
    time_beta: float = 1.0
    """Beta distribution's beta."""
    vision: VisionConfig = field(default_factory=VisionConfig)
    """The image encoder."""
    text: TextConfig = field(default_factory=TextConfig)
    """The instruction encoder."""

    def __post_init__(self) -> None:
        int_in("FlowVLAConfig.action_dim", self.action_dim, 0, 256)
        int_in("FlowVLAConfig.state_dim", self.state_dim, 0, 4096)
        if self.cameras is not None:
            cams = tuple(self.cameras)
            if len(set(cams)) != len(cams) or not all(isinstance(c, str) and c for c in cams):
                raise ConfigError(f"FlowVLAConfig.cameras = {self.cameras!r} must be distinct camera names")
            object.__setattr__(self, "cameras", cams)
        finite("FlowVLAConfig.action_low", self.action_low)
        finite("FlowVLAConfig.action_high", self.action_high)
        if not self.action_low < self.action_high:
            raise ConfigError(f"FlowVLAConfig: action_low {self.action_low} must be below action_high "
                              f"{self.action_high}")
        int_in("FlowVLAConfig.chunk_size", self.chunk_size, 1, 256)
        int_in("FlowVLAConfig.n_action_steps", self.n_action_steps, 1, self.chunk_size)
        int_in("FlowVLAConfig.num_inference_steps", self.num_inference_steps, 1, 1000)
        int_in("FlowVLAConfig.d_model", self.d_model, 8, 4096)
        int_in("FlowVLAConfig.heads", self.heads, 1, 64)
        if self.d_model % self.heads:
            raise ConfigError(f"FlowVLAConfig: d_model {self.d_model} must be a multiple of heads {self.heads}")
        int_in("FlowVLAConfig.obs_layers", self.obs_layers, 0, 24)
        int_in("FlowVLAConfig.expert_layers", self.expert_layers, 1, 24)
        int_in("FlowVLAConfig.ff_mult", self.ff_mult, 1, 16)
        finite("FlowVLAConfig.dropout", self.dropout, 0.0, 0.9)
        if self.time_distribution not in TIME_DISTRIBUTIONS:
            raise ConfigError(f"FlowVLAConfig.time_distribution = {self.time_distribution!r} must be one of "
                              f"{TIME_DISTRIBUTIONS}")
        finite("FlowVLAConfig.time_alpha", self.time_alpha, 1e-3, 100.0)
        finite("FlowVLAConfig.time_beta", self.time_beta, 1e-3, 100.0)
        if not isinstance(self.vision, VisionConfig) or not isinstance(self.text, TextConfig):
            raise ConfigError("FlowVLAConfig.vision / .text must be a VisionConfig / TextConfig")

    @property
    def resolved(self) -> bool:
        """The dataset's sizes are filled in (a model can be built)."""
        return self.action_dim > 0 and self.state_dim > 0 and self.cameras is not None and bool(self.text.vocab
                                                                                                or self.text.encoder
                                                                                                != "words")

    def to_dict(self) -> dict:
        """JSON-ready dict (tuples as lists)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FlowVLAConfig:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: unknown fields or bad values.

        """
        data = dict(data)
        try:
            vision = VisionConfig(**data.pop("vision", {}))
            text = TextConfig(**data.pop("text", {}))
            return cls(**data, vision=vision, text=text)
        except TypeError as exc:
            raise ConfigError(f"policy config: {exc}") from None


def resolve(cfg: FlowVLAConfig, *, action_dim: int, state_dim: int, cameras: tuple[str, ...], robot_type: str,
            tasks: list[str], action_bounds: tuple[float, float] = (-1.0, 1.0)) -> FlowVLAConfig:
    """``cfg`` with the dataset's sizes filled in and checked.

    Raises:
        ConfigError: ``cfg`` fixes a size or camera the dataset does not have.

    """
    for name, have in (("action_dim", action_dim), ("state_dim", state_dim)):
        want = getattr(cfg, name)
        if want and want != have:
            raise ConfigError(f"FlowVLAConfig.{name} = {want} but the dataset's is {have}; leave it 0")
    cams = tuple(cameras) if cfg.cameras is None else cfg.cameras
    missing = [c for c in cams if c not in cameras]
    if missing:
        raise ConfigError(f"policy cameras {missing} are not in the dataset (it has {list(cameras)})")
    if cfg.robot_type and cfg.robot_type != robot_type:
        raise ConfigError(f"the policy is for robot {cfg.robot_type!r}, the dataset is of {robot_type!r}")
    text = cfg.text
    if text.encoder == "words" and not text.vocab:
        from rl.policies.text import build_vocab

        text = replace(text, vocab=tuple(build_vocab(tasks)))
    return replace(cfg, action_dim=action_dim, state_dim=state_dim, cameras=cams, robot_type=robot_type,
                   action_low=float(action_bounds[0]), action_high=float(action_bounds[1]), text=text)


def config_summary(cfg: FlowVLAConfig) -> dict[str, Any]:
    """A few headline numbers of a config (for logs)."""
    return {"H": cfg.chunk_size, "K": cfg.num_inference_steps, "d_model": cfg.d_model, "cameras": cfg.cameras,
            "vision": cfg.vision.backbone, "text": cfg.text.encoder}
