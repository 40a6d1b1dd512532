"""The policy contract (as LeRobot's policies have it) and the helpers every policy shares.

A policy is a ``torch.nn.Module`` with

* ``reset()``: forget the queued actions (call at every env reset);
* ``select_action(obs) -> (B, A)``: the next action, drained from a queue refilled with the first
  ``n_action_steps`` actions of a freshly predicted chunk;
* ``predict_action_chunk(obs) -> (B, H, A)``: a whole chunk of H future actions;
* ``forward(batch) -> (loss, metrics)``: the training loss on a batch of the dataset;
* ``save(dir)`` / ``load(dir)``.

Observations (``obs``) and training batches use the dataset's feature names:
``observation.images.<camera>`` float ``(B, 3, H, W)`` in [0, 1], ``observation.state``
``(B, D)``, ``task`` (a list of B strings) and, in training, ``action`` ``(B, H, A)`` with
``action_is_pad`` ``(B, H)``. :func:`env_to_batch` turns env observations into that form.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenegen.errors import ConfigError

CAMERA_PREFIX = "observation.images."
STATE = "observation.state"


@runtime_checkable
class Policy(Protocol):
    """What training, evaluation and fine-tuning call on a policy."""

    n_action_steps: int
    """Actions of each predicted chunk that :meth:`select_action` plays before predicting again."""

    def reset(self) -> None: ...  # noqa: D102

    def select_action(self, obs: Mapping[str, Any]) -> Any: ...  # noqa: D102

    def predict_action_chunk(self, obs: Mapping[str, Any]) -> Any: ...  # noqa: D102

    def forward(self, batch: Mapping[str, Any]) -> tuple[Any, dict]: ...  # noqa: D102

    def save(self, directory: str | os.PathLike, provenance: Mapping[str, Any] | None = None) -> Path: ...  # noqa: D102


class ActionQueue:
    """The queue behind ``select_action``: chunks ``(B, H, A)`` in, one ``(B, A)`` action out per call."""

    def __init__(self, n_action_steps: int) -> None:
        self.n = n_action_steps
        self._q: deque = deque()

    def clear(self) -> None:
        """Drop queued actions."""
        self._q.clear()

    def __len__(self) -> int:
        return len(self._q)

    def push(self, chunk: Any) -> None:
        """Queue the first ``n_action_steps`` actions of a chunk."""
        for k in range(min(self.n, chunk.shape[1])):
            self._q.append(chunk[:, k])

    def pop(self) -> Any:
        """The next action ``(B, A)``."""
        return self._q.popleft()


def env_to_batch(obs: Mapping[str, Any], cameras: tuple[str, ...], device: Any = "cpu") -> dict:
    """An env observation (one env's, or a vector env's stacked one) as a policy batch on ``device``.

    Raises:
        ConfigError: a camera the policy needs is not in the observation.

    """
    import torch

    proprio = np.asarray(obs["proprio"], dtype=np.float32)
    single = proprio.ndim == 1
    batch: dict[str, Any] = {STATE: torch.as_tensor(proprio[None] if single else proprio, device=device)}
    for cam in cameras:
        if cam not in obs:
            raise ConfigError(f"the policy needs camera {cam!r}, the observation has {sorted(obs)}; "
                              f"make the env with image_keys={cameras}")
        img = torch.as_tensor(np.asarray(obs[cam]), device=device)
        img = img[None] if single else img
        batch[CAMERA_PREFIX + cam] = img.permute(0, 3, 1, 2).float().div_(255.0)
    text = obs.get("instruction", "")
    batch["task"] = [str(text)] if single or isinstance(text, str) else [str(t) for t in text]
    return batch


def git_commit(cwd: str | os.PathLike | None = None) -> str | None:
    """The repository's HEAD commit (None outside a git checkout or without git); 5 s deadline."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd or Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def read_json(path: Path, what: str) -> dict:
    """A JSON file of a checkpoint, or a one-line error saying which file is wrong.

    Raises:
        ConfigError: missing or unreadable.

    """
    if not path.is_file():
        raise ConfigError(f"{path.parent} is not a policy checkpoint: {path.name} ({what}) is missing; "
                          "give a folder written by `scenegen train bc`")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable {what} ({exc})") from None
