"""Tiny, randomly initialised diffusers pipelines for the diffusion tests (no download).

They use the component classes of the real checkpoints with tiny sizes:

- Shap-E: ``PriorTransformer``, ``CLIPTextModelWithProjection`` + ``CLIPTokenizer``,
  ``HeunDiscreteScheduler`` (openai/shap-e's scheduler config), ``ShapERenderer``;
- Stable Diffusion: ``UNet2DConditionModel``, ``AutoencoderKL``, ``CLIPTextModel`` +
  ``CLIPTokenizer``, ``PNDMScheduler``.

The CLIP tokenizer is built from a vocab.json of single letters and an empty merges
file written into a temporary folder.

A real Shap-E checkpoint stores the marching-cubes lookup table of its mesh decoder as
the ``cases``/``masks`` buffers; a freshly initialised renderer has them all zero (it
would decode every latent to nothing), so :func:`marching_cubes_table` builds a table
for the decoder's corner and edge numbering: each face of the cube links its sign
changes (positive corners of a face kept apart on ambiguous faces, so neighbouring cubes
agree), the links close into loops, and each loop is split into triangles without
diagonals lying on a cube face. The result is watertight and outward-facing.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

LETTERS = "abcdefghijklmnopqrstuvwxyz"
MAX_TOKENS = 16


def write_tokenizer(folder: Path):
    """A CLIPTokenizer over single letters (vocab.json + merges.txt written into ``folder``)."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"!": 0}
    for c in LETTERS:
        vocab[c] = len(vocab)
    for c in LETTERS:
        vocab[c + "</w>"] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=MAX_TOKENS)


# --------------------------------------------------------------------------- marching cubes

def _corner(i: int) -> tuple[int, int, int]:
    return i & 1, (i >> 1) & 1, (i >> 2) & 1


def _edge(a: int, b: int) -> int:
    """Decoder edge index: 4 * axis + (first other coordinate) + 2 * (second other coordinate)."""
    pa, pb = _corner(a), _corner(b)
    axis = next(k for k in range(3) if pa[k] != pb[k])
    o = [k for k in range(3) if k != axis]
    return 4 * axis + pa[o[0]] + 2 * pa[o[1]]


def _edge_faces(e: int) -> set:
    axis = e // 4
    o = [k for k in range(3) if k != axis]
    return {(o[0], e & 1), (o[1], (e >> 1) & 1)}


def _cube_faces() -> list[list[int]]:
    """The 6 faces as corner lists, counter-clockwise seen from outside."""
    out = []
    for axis, side in itertools.product(range(3), (0, 1)):
        corners = [i for i in range(8) if _corner(i)[axis] == side]
        normal = np.zeros(3)
        normal[axis] = 1.0 if side else -1.0
        u = np.zeros(3)
        u[(axis + 1) % 3] = 1.0
        v = np.cross(normal, u)
        c = np.mean([_corner(i) for i in corners], axis=0)
        ang = [np.arctan2((np.array(_corner(i)) - c) @ v, (np.array(_corner(i)) - c) @ u) for i in corners]
        out.append([corners[k] for k in np.argsort(ang)])
    return out


def _triangulate(loop: list[int]) -> list[tuple[int, int, int]] | None:
    n = len(loop)
    if n == 3:
        return [tuple(loop)]
    for i in range(n):
        for k in range(2, n - 1):
            a, b = loop[i], loop[(i + k) % n]
            if _edge_faces(a) & _edge_faces(b):
                continue  # a diagonal on a cube face would be shared with the neighbour cube
            t1 = _triangulate([loop[(i + j) % n] for j in range(k + 1)])
            t2 = _triangulate([loop[(i + k + j) % n] for j in range(n - k + 1)])
            if t1 is not None and t2 is not None:
                return t1 + t2
    return None


@functools.lru_cache(maxsize=1)
def _table() -> tuple[np.ndarray, np.ndarray]:
    """``(cases, masks)`` tensors of shape (256, 5, 3) and (256, 5) for ``MeshDecoder``."""
    faces = _cube_faces()
    cases = np.zeros((256, 5, 3), dtype=np.int64)
    masks = np.zeros((256, 5), dtype=bool)
    for cfg in range(256):
        inside = [bool((cfg >> i) & 1) for i in range(8)]
        nxt = {}
        for f in faces:
            s = [inside[c] for c in f]
            if all(s) or not any(s):
                continue
            for k in range(4):
                if s[k] and not s[(k + 1) % 4]:  # a run of positive corners ends at k
                    j = k
                    while s[(j - 1) % 4]:
                        j -= 1
                    nxt[_edge(f[k], f[(k + 1) % 4])] = _edge(f[(j - 1) % 4], f[j % 4])
        tris = []
        while nxt:
            loop = [min(nxt)]
            while nxt[loop[-1]] != loop[0]:
                loop.append(nxt[loop[-1]])
            for e in loop:
                del nxt[e]
            tris += [(a, c, b) for a, b, c in _triangulate(loop)]
        for t, tri in enumerate(tris):
            cases[cfg, t] = tri
            masks[cfg, t] = True
    return cases, masks


def marching_cubes_table():
    """``(cases, masks)`` tensors of shape (256, 5, 3) and (256, 5) for ``MeshDecoder``."""
    import torch

    cases, masks = _table()
    return torch.from_numpy(cases.copy()), torch.from_numpy(masks.copy())


# --------------------------------------------------------------------------- pipelines

def _scratch() -> Path:
    """A temporary folder for tokenizer files, removed when the process exits."""
    folder = Path(tempfile.mkdtemp(prefix="scenegen-tiny-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=2)
def tiny_shap_e(seed: int = 0):
    """A ShapEPipeline with tiny random weights (renderer MLP width 8, latent 32 x 8), built once per process.

    Tests that change it must restore it.
    """
    folder = _scratch()
    import torch
    from diffusers import HeunDiscreteScheduler, PriorTransformer, ShapEPipeline
    from diffusers.pipelines.shap_e import ShapERenderer
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    tok = write_tokenizer(folder / "tok")
    torch.manual_seed(seed)
    text = CLIPTextModelWithProjection(CLIPTextConfig(
        vocab_size=len(tok.get_vocab()), hidden_size=16, intermediate_size=32, num_attention_heads=2,
        num_hidden_layers=1, projection_dim=16, max_position_embeddings=MAX_TOKENS,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=0))
    width, latent = 8, 8
    prior = PriorTransformer(num_attention_heads=2, attention_head_dim=4, num_layers=1, embedding_dim=latent,
                             num_embeddings=4 * width, additional_embeddings=0, time_embed_act_fn="gelu",
                             norm_in_type="layer", encoder_hid_proj_type=None, added_emb_type=None,
                             time_embed_dim=16, embedding_proj_dim=16, clip_embed_dim=2 * latent)
    renderer = ShapERenderer(param_shapes=((width, 93), (width, width), (width, width), (width, width)),
                             d_latent=latent, d_hidden=width, n_output=12, background=(0.1, 0.1, 0.1))
    cases, masks = marching_cubes_table()
    renderer.mesh_decoder.cases.copy_(cases)
    renderer.mesh_decoder.masks.copy_(masks)
    scheduler = HeunDiscreteScheduler(beta_schedule="exp", num_train_timesteps=1024, prediction_type="sample",
                                      use_karras_sigmas=True, clip_sample=True, clip_sample_range=1.0)
    pipe = ShapEPipeline(prior=prior, text_encoder=text, tokenizer=tok, scheduler=scheduler,
                         shap_e_renderer=renderer)
    pipe.set_progress_bar_config(disable=True)
    return pipe


@functools.lru_cache(maxsize=2)
def tiny_stable_diffusion(seed: int = 0):
    """A StableDiffusionPipeline with tiny random weights (VAE factor 2, UNet widths 8/16), built once per process."""
    folder = _scratch()
    import torch
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    tok = write_tokenizer(folder / "tok")
    torch.manual_seed(seed)
    text = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tok.get_vocab()), hidden_size=16, intermediate_size=32, num_attention_heads=2,
        num_hidden_layers=1, max_position_embeddings=MAX_TOKENS,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=0))
    unet = UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=16,
                                attention_head_dim=2, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16),
                        norm_num_groups=4, layers_per_block=1,
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))
    scheduler = PNDMScheduler(skip_prk_steps=True, steps_offset=1)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe
