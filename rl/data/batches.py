"""Training batches from a demonstration dataset: action chunks with a pad mask, augmentation, on any device.

:class:`FrameStore` holds every frame of a dataset in memory (images as uint8). For frame ``t``
of an episode, the target is the chunk of the next H actions ``a_t .. a_{t+H-1}``; steps past
the episode's end repeat its last action and are marked in ``action_is_pad`` (the loss skips
them). :class:`ChunkBatcher` keeps the store as tensors on the training device and draws
batches by index, so a GPU trains without a data-loader process; :class:`ChunkDataset` is the
same indexing as a ``torch.utils.data.Dataset`` (one frame per item, as LeRobot's datasets give).
Normalization is the policy's (from ``stats.json``); augmentation is :class:`Augment`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from rl.data.reader import STATE, DemoDataset
from scenegen.errors import ConfigError
from scenegen.validate import finite, int_in

CAMERA_PREFIX = "observation.images."


@dataclass(frozen=True)
class AugmentConfig:
    """Image augmentation of training batches (each sample draws its own)."""

    shift: float = 0.06
    """Random shift: pad by this fraction of the side (edge pixels repeated) and crop back at a random offset."""
    brightness: float = 0.2
    """Colour jitter: brightness scaled by 1 +- this."""
    contrast: float = 0.2
    """Contrast scaled by 1 +- this (around each image's mean)."""
    saturation: float = 0.2
    """Saturation scaled by 1 +- this (around each pixel's grey)."""
    enabled: bool = True
    """Augment at all."""

    def __post_init__(self) -> None:
        finite("AugmentConfig.shift", self.shift, 0.0, 0.5)
        for name in ("brightness", "contrast", "saturation"):
            finite(f"AugmentConfig.{name}", getattr(self, name), 0.0, 0.9)


class Augment:
    """Random shift / crop and colour jitter of ``(B, 3, H, W)`` float images in [0, 1]."""

    def __init__(self, cfg: AugmentConfig) -> None:
        self.cfg = cfg

    def __call__(self, img: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        cfg = self.cfg
        if not cfg.enabled:
            return img
        b, _, h, w = img.shape
        dev = img.device

        def u(*shape: int) -> torch.Tensor:  # uniform in [-1, 1], drawn on the generator's device
            gdev = generator.device if generator is not None else dev
            return (torch.rand(shape, generator=generator, device=gdev) * 2 - 1).to(dev)

        pad = int(round(cfg.shift * max(h, w)))
        if pad > 0:
            padded = torch.nn.functional.pad(img, (pad, pad, pad, pad), mode="replicate")
            ox = ((u(b) + 1) * 0.5 * (2 * pad + 1)).long().clamp(0, 2 * pad)
            oy = ((u(b) + 1) * 0.5 * (2 * pad + 1)).long().clamp(0, 2 * pad)
            rows = (oy[:, None] + torch.arange(h, device=dev)[None])  # (B, H)
            cols = (ox[:, None] + torch.arange(w, device=dev)[None])  # (B, W)
            bi = torch.arange(b, device=dev)[:, None, None]
            img = padded.permute(0, 2, 3, 1)[bi, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)
        if cfg.brightness:
            img = img * (1 + cfg.brightness * u(b, 1, 1, 1))
        if cfg.contrast:
            mean = img.mean(dim=(1, 2, 3), keepdim=True)
            img = (img - mean) * (1 + cfg.contrast * u(b, 1, 1, 1)) + mean
        if cfg.saturation:
            grey = (0.299 * img[:, :1] + 0.587 * img[:, 1:2] + 0.114 * img[:, 2:3])
            img = (img - grey) * (1 + cfg.saturation * u(b, 1, 1, 1)) + grey
        return img.clamp(0.0, 1.0)


class FrameStore:
    """Every frame of a dataset (or of some of its episodes) as arrays, with each frame's episode end.

    Raises:
        ConfigError: a camera the policy needs is not in the dataset, or no episode is selected.

    """

    def __init__(self, ds: DemoDataset, cameras: tuple[str, ...] = (), episodes: list[int] | None = None) -> None:
        missing = [c for c in cameras if c not in ds.cameras]
        if missing:
            raise ConfigError(f"cameras {missing} are not in the dataset {ds.root} (it has {ds.cameras})")
        chosen = list(range(len(ds))) if episodes is None else list(episodes)
        if not chosen:
            raise ConfigError(f"no episode of {ds.root} selected for training")
        self.cameras = tuple(cameras)
        self.tasks = list(ds.tasks)
        cols: dict[str, list] = {"state": [], "action": [], "task": [], "end": []}
        imgs: dict[str, list] = {c: [] for c in cameras}
        n = 0
        for i in chosen:
            data = ds.frames(i)
            t = len(data["action"])
            cols["state"].append(np.asarray(data[STATE], np.float32))
            cols["action"].append(np.asarray(data["action"], np.float32))
            cols["task"].append(np.asarray(data["task_index"], np.int64))
            cols["end"].append(np.full(t, n + t, np.int64))
            for c in cameras:
                imgs[c].append(np.asarray(data[CAMERA_PREFIX + c], np.uint8))
            n += t
        self.state = np.concatenate(cols["state"])
        self.action = np.concatenate(cols["action"])
        self.task_index = np.concatenate(cols["task"])
        self.end = np.concatenate(cols["end"])
        self.images = {c: np.concatenate(v) for c, v in imgs.items()}
        self.episodes = chosen

    def __len__(self) -> int:
        return len(self.action)


def chunk_indices(idx: torch.Tensor, end: torch.Tensor, horizon: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of the H actions after each frame ``(B, H)`` (clamped to its episode's last) and the pad mask."""
    steps = idx[:, None] + torch.arange(horizon, device=idx.device)[None]
    last = (end[idx] - 1)[:, None]
    return torch.minimum(steps, last), steps > last


class ChunkBatcher:
    """Batches of frames with their action chunks, from tensors kept on ``device``."""

    def __init__(self, store: FrameStore, chunk_size: int, device: str | torch.device = "cpu",
                 augment: AugmentConfig | None = None) -> None:
        int_in("chunk_size", chunk_size, 1, 1024)
        self.device = torch.device(device)
        self.h = chunk_size
        self.tasks = store.tasks
        self.state = torch.as_tensor(store.state, device=self.device)
        self.action = torch.as_tensor(store.action, device=self.device)
        self.task_index = torch.as_tensor(store.task_index, device=self.device)
        self.end = torch.as_tensor(store.end, device=self.device)
        self.images = {c: torch.as_tensor(v, device=self.device) for c, v in store.images.items()}
        self.augment = Augment(augment) if augment is not None else None
        self.n = len(store)

    def get(self, idx: torch.Tensor, generator: torch.Generator | None = None) -> dict:
        """The batch of frames ``idx``: images ``(B, 3, H, W)`` in [0, 1], state, task, action chunk, pad mask."""
        idx = idx.to(self.device)
        rows, pad = chunk_indices(idx, self.end, self.h)
        batch = {STATE: self.state[idx], "action": self.action[rows], "action_is_pad": pad,
                 "task": [self.tasks[int(i)] for i in self.task_index[idx].tolist()], "index": idx}
        for c, v in self.images.items():
            img = v[idx].permute(0, 3, 1, 2).float().div_(255.0)
            batch[CAMERA_PREFIX + c] = self.augment(img, generator) if self.augment is not None else img
        return batch

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> dict:
        """A batch of frames drawn uniformly with replacement."""
        gdev = generator.device if generator is not None else self.device
        idx = torch.randint(0, self.n, (batch_size,), generator=generator, device=gdev)
        return self.get(idx, generator)


class ChunkDataset(torch.utils.data.Dataset):
    """One frame per item (no augmentation): ``observation.*``, ``task``, ``action`` ``(H, A)``, ``action_is_pad``."""

    def __init__(self, store: FrameStore, chunk_size: int) -> None:
        self.batcher = ChunkBatcher(store, chunk_size, "cpu", None)

    def __len__(self) -> int:
        return self.batcher.n

    def __getitem__(self, i: int) -> dict:
        b = self.batcher.get(torch.tensor([int(i)]))
        return {k: (v[0] if isinstance(v, (torch.Tensor, list)) else v) for k, v in b.items()}
