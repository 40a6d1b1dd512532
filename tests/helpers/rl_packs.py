"""Small generated packs shared by the RL tests (env, expert, demos).

Packs are made by :func:`scenegen.pipeline.generate` into pytest's session base folder, with
the session asset cache and cheap CoACD settings; a second request for the same pack
resumes the finished one on disk, so each pack is generated once per session.
"""

from __future__ import annotations

from pathlib import Path

from scenegen.pack.reader import Pack
from scenegen.pipeline import PipelineConfig, generate
from tests.helpers.scene_assets import FAST, cache_dir

BANANA = "put the banana in the bowl"
CONFIG = PipelineConfig(collision=FAST, preview_size=0)


def pack(tmp_path_factory, prompt: str = BANANA, n: int = 3, seed: int = 5) -> Pack:
    """The pack of ``n`` scenes for ``prompt`` (generated on first use in this session)."""
    out = Path(tmp_path_factory.getbasetemp()) / "rl_packs" / f"{prompt.replace(' ', '_')}_{n}_{seed}"
    out.parent.mkdir(parents=True, exist_ok=True)
    return generate(prompt, n, out, seed=seed, config=CONFIG, cache_dir=cache_dir(tmp_path_factory),
                    progress=False)


def bimanual_pack(tmp_path_factory, prompt: str = BANANA, n: int = 3, seed: int = 5) -> Pack:
    """The pack of ``n`` scenes for ``prompt`` with the two-arm ``bimanual_panda`` (generated on first use)."""
    from dataclasses import replace

    from scenegen.layout.compose import SceneConfig

    out = Path(tmp_path_factory.getbasetemp()) / "rl_packs" / f"bimanual_{prompt.replace(' ', '_')}_{n}_{seed}"
    out.parent.mkdir(parents=True, exist_ok=True)
    config = replace(CONFIG, scene=SceneConfig(robot="bimanual_panda"))
    return generate(prompt, n, out, seed=seed, config=config, cache_dir=cache_dir(tmp_path_factory), progress=False)
