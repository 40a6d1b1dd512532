"""Instruction encoders: a word tokenizer with a small transformer, or a pretrained transformers text model.

The word vocabulary is built from the catalog (every category word and synonym) and the
dataset's task strings, so object names the training set never used still have their own
token. A pretrained encoder is loaded from a local folder (``save_pretrained`` layout) or,
where the network allows, a hub id; missing weights raise a one-line error saying how to
supply them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from scenegen.errors import ConfigError

PAD, UNK = "<pad>", "<unk>"
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-case word tokens of a text."""
    return _WORD.findall(text.lower())


def build_vocab(tasks: list[str]) -> list[str]:
    """The catalog's words and the tasks' words, sorted, after the pad and unknown tokens."""
    from scenegen.catalog import load_catalog

    vocab = set()
    for w in load_catalog().words:
        vocab.update(words(w))
    for t in tasks:
        vocab.update(words(t))
    return [PAD, UNK, *sorted(vocab - {PAD, UNK})]


def local_or_hub(name: str, what: str, flag: str) -> tuple[str, bool]:
    """``(name, local_files_only)``: a folder that exists is read offline; anything else is a hub id.

    Raises:
        ConfigError: ``name`` looks like a path (starts with ``/``, ``.`` or ``~``) that does not exist.

    """
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{what} {name}: the folder has no config.json; save the model there with "
                              "save_pretrained() or download it with `hf download ID --local-dir DIR`")
        return str(path), True
    if name.startswith(("/", ".", "~")):
        raise ConfigError(f"{what} {name} does not exist; download it with `hf download ID --local-dir {name}` "
                          f"and pass {flag} {name}")
    return name, False


def missing_weights(what: str, name: str, flag: str, exc: Exception) -> ConfigError:
    """The one-line error for weights that could not be loaded."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ConfigError(f"{what} {name!r} could not be loaded ({first[:160]}); download it with "
                       f"`hf download {name} --local-dir DIR` on a machine with network access and pass {flag} DIR")


class WordTokenizer:
    """Words to ids over a fixed vocabulary (unknown words map to ``<unk>``)."""

    def __init__(self, vocab: tuple[str, ...] | list[str], max_tokens: int) -> None:
        self.vocab = list(vocab)
        if self.vocab[:2] != [PAD, UNK]:
            raise ConfigError(f"a word vocabulary starts with {PAD!r}, {UNK!r}; got {self.vocab[:2]}")
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.max_tokens = max_tokens

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``ids`` ``(B, L)`` and ``mask`` ``(B, L)`` (True = a real token); every text gives >= 1 token."""
        rows = [[self.index.get(w, 1) for w in words(t)][: self.max_tokens] or [1] for t in texts]
        n = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), n, dtype=torch.long)
        mask = torch.zeros(len(rows), n, dtype=torch.bool)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = True
        return ids, mask


class WordEncoder(nn.Module):
    """Word embeddings, positions and a small transformer: ``(B, L, d)`` tokens."""

    def __init__(self, vocab: tuple[str, ...], max_tokens: int, d: int, heads: int, layers: int, ff: int,
                 dropout: float) -> None:
        super().__init__()
        self.tokenizer = WordTokenizer(vocab, max_tokens)
        self.embed = nn.Embedding(len(vocab), d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(max_tokens, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False) if layers else None
        self._cache: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def tokenize(self, texts: list[str], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and mask for texts, cached per distinct text list."""
        key = "\x00".join(texts)
        hit = self._cache.get(key)
        if hit is None or hit[0].device != device:
            ids, mask = self.tokenizer(texts)
            hit = (ids.to(device), mask.to(device))
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def forward(self, texts: list[str], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = self.tokenize(texts, device)
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        if self.encoder is not None:
            x = self.encoder(x, src_key_padding_mask=~mask)
        return x, mask


class PretrainedTextEncoder(nn.Module):
    """A transformers text model and its tokenizer; its last hidden states projected to ``d``."""

    def __init__(self, name: str, d: int, max_tokens: int, freeze: bool, from_config: str | None = None) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.max_tokens, self.freeze = max_tokens, freeze
        if from_config is not None:  # a checkpoint: architecture and tokenizer saved beside the weights
            self.tokenizer = AutoTokenizer.from_pretrained(from_config, local_files_only=True)
            self.model = AutoModel.from_config(AutoConfig.from_pretrained(from_config, local_files_only=True))
        else:
            where, local = local_or_hub(name, "text encoder", "--text-pretrained")
            try:
                self.tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=local)
                self.model = AutoModel.from_pretrained(where, local_files_only=local)
            except (OSError, ValueError) as exc:
                raise missing_weights("text encoder", name, "--text-pretrained", exc) from None
        if freeze:
            self.model.requires_grad_(False)
        width = getattr(self.model.config, "hidden_size", None) or self.model.config.d_model
        self.proj = nn.Linear(int(width), d)

    def save_architecture(self, directory: Path) -> None:
        """Write the model's config and the tokenizer (the weights go in the policy's safetensors)."""
        self.model.config.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    def forward(self, texts: list[str], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_tokens,
                             return_tensors="pt")
        enc = {k: v.to(device) for k, v in enc.items()}
        if self.freeze:
            self.model.eval()
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            out: Any = self.model(**enc)
        return self.proj(out.last_hidden_state), enc["attention_mask"].bool()
