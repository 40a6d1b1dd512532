"""Cases of the fuzz campaign that need no damaged pack: prompts, graph / scene / asset JSON, meshes,
endpoints and env inputs. Each ``case_<category>(ctx, i, rng)`` runs one input and returns a result
dict (``{"outcome": "success"}`` plus findings); a typed :class:`~scenegen.errors.ScenegenError`
it lets through counts as a clean error, anything else as a traceback (see :mod:`fuzz`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_data import junk, mesh_file, mutate, prompt, to_text

from scenegen.errors import BackendError, ScenegenError


class Ctx:
    """Paths of the campaign and resources its workers build once (catalog, base data, a world, an env)."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.work = Path(data["work"])
        self.base = Path(data["base_pack"])
        self.key, self.password, self.token = data["key"], data["password"], data["token"]
        self.secret_file, self.outside_dir = Path(data["secret_file"]), Path(data["outside_dir"])

    @functools.cached_property
    def catalog(self) -> Any:
        from scenegen.catalog import load_catalog

        return load_catalog()

    @functools.cached_property
    def categories(self) -> list[str]:
        return sorted(self.catalog.categories)

    @functools.cached_property
    def graspable(self) -> list[str]:
        return sorted(c.name for c in self.catalog.with_flag("graspable"))

    @functools.cached_property
    def containers(self) -> list[str]:
        return sorted(c.name for c in self.catalog.with_flag("container"))

    @functools.cached_property
    def pack(self) -> Any:
        from scenegen.pack.reader import load_pack

        return load_pack(self.base)

    @functools.cached_property
    def graphs(self) -> list[dict]:
        from scenegen.design import design

        prompts = ["put the banana in the bowl", "stack the red block on the blue block with 3 distractors",
                   "put the apple in the bowl and the cup on the plate"]
        return [g.to_dict() for p in prompts for g in design(p, 3, seed=1)]

    @functools.cached_property
    def scene_dict(self) -> dict:
        return json.loads((self.base / "scenes" / self.pack.scene_ids[0] / "scene.json").read_text())

    @functools.cached_property
    def asset_dicts(self) -> list[dict]:
        return [json.loads((self.base / e["path"] / "asset.json").read_text()) for e in self.pack.manifest["assets"]]

    @functools.cached_property
    def world(self) -> Any:
        from scenegen.sim.world import World

        scene = self.pack.scene(self.pack.scene_ids[0])
        world = World.build(scene, self.pack.asset_lookup)
        world.settle(max_seconds=1.0)
        return world

    @functools.cached_property
    def env(self) -> Any:
        from rl.envs.pick_place import PickPlaceEnv

        return PickPlaceEnv(self.base, image_keys=(), max_episode_steps=50)

    def secret_forms(self) -> list[str]:
        """The canary key and URL password in every form a leak could take."""
        import base64

        out = []
        for s in (self.key, self.password, f"user:{self.password}"):
            out += [s, base64.b64encode(s.encode()).decode().rstrip("=")]
        return out

    def leaks(self, *texts: str) -> list[str]:
        return sorted({f for f in self.secret_forms() for t in texts if f in t})


class LogTap(logging.Handler):
    """Collects every log record's message while a case runs (what a user would see in their logs)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a record that cannot format is not a finding
            pass

    def __enter__(self) -> LogTap:
        root = logging.getLogger()
        self._level = root.level
        root.setLevel(logging.DEBUG)
        root.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)
        logging.getLogger().setLevel(self._level)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


OK = {"outcome": "success"}


def classify(exc: BaseException) -> tuple[str, str]:
    """``("error", message)`` for a typed ScenegenError (a clean one-line error), else ``("traceback", trace)``."""
    import traceback

    if isinstance(exc, ScenegenError):
        if "\n" in exc.one_line() or not exc.one_line():
            return "traceback", f"empty or multi-line error: {exc!r}"
        return "error", exc.one_line()[:300]
    return "traceback", "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-1500:]


# --------------------------------------------------------------------------- prompts, graph JSON
def case_prompts(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Design graphs for a random prompt; every graph a designer returns must store and reload as is."""
    from scenegen.design import design
    from scenegen.graph import SceneGraph

    graphs = design(prompt(rng, ctx.categories, ctx.graspable, ctx.containers), 1 + i % 3, seed=i)
    for g in graphs:
        again = SceneGraph.from_json(g.to_json())  # a GraphError here is a designer defect, not a clean error
        if again.content_hash() != g.content_hash():
            raise AssertionError("a designed graph changes when stored and reloaded")
    return OK


def case_graph_json(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Parse and validate a mutated graph JSON text; a valid one must hash and round-trip."""
    from scenegen.graph import SceneGraph

    base = rng.choice(ctx.graphs)
    if i % 17 == 0:  # more objects than the schema allows
        base = {**base, "objects": [dict(base["objects"][1], id=f"o{k}") for k in range(rng.choice([257, 2000]))]}
    data = mutate(base, rng, ops=i % 5)  # every fifth case unchanged
    g = SceneGraph.from_json(to_text(data, rng))
    if g.validate(ctx.catalog):
        return {"outcome": "error", "detail": "validation problems"}
    if SceneGraph.from_json(g.to_json()).content_hash() != g.content_hash():
        raise AssertionError("a valid graph changes when stored and reloaded")
    return OK


# --------------------------------------------------------------------------- scene and asset JSON
def case_scene_json(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Load a mutated scene.json; every 15th accepted one is built, settled and checked (no hang, no crash)."""
    from qa.config import QAConfig
    from qa.loop import run_checks
    from scenegen.scene import Scene
    from scenegen.sim.world import World

    data = mutate(ctx.scene_dict, rng, ops=1 + i % 3, numeric_bias=0.6)
    scene = Scene.from_dict(json.loads(json.dumps(data)))
    if i % 15 == 0:
        with World.build(scene, ctx.pack.asset_lookup) as world:
            world.settle(max_seconds=0.5)
            rep = run_checks(scene, world, QAConfig(checks=("physics", "semantic", "reachability")))
        crashed = [r.reason for r in rep.results if r.reason.startswith("internal error")]
        if crashed:
            raise AssertionError(f"a QA check crashed on an accepted scene: {crashed[0]}")
    return OK


def case_asset_json(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Load a mutated asset.json; an accepted one must round-trip."""
    from scenegen.assets.base import Asset

    data = mutate(rng.choice(ctx.asset_dicts), rng, ops=1 + i % 3, numeric_bias=0.5)
    asset = Asset.from_dict(json.loads(json.dumps(data)))
    if Asset.from_dict(asset.to_dict()).to_dict() != asset.to_dict():
        raise AssertionError("an accepted asset.json changes when stored and reloaded")
    return OK


# --------------------------------------------------------------------------- meshes
def case_meshes(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Read and repair a damaged user mesh; every 8th readable one becomes a library asset."""
    from scenegen.assets.library import load_library_asset, read_mesh, repair_mesh

    suffix, data = mesh_file(rng)
    path = ctx.work / "meshes" / f"m{i}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    try:
        mesh = repair_mesh(read_mesh(path), path, allow_open=bool(i % 2))
        if not np.all(np.isfinite(mesh.vertices)):
            raise AssertionError("a repaired mesh holds non-finite vertices")
        if i % 8 == 0:
            asset = load_library_asset(path, "block", cache_dir=ctx.work / "mesh_cache", max_faces=500)
            if not all(math.isfinite(v) for v in (asset.mass, asset.volume, *asset.extents)):
                raise AssertionError("a library asset has non-finite physics")
    finally:
        path.unlink(missing_ok=True)
    return OK


# --------------------------------------------------------------------------- endpoints
ENDPOINT_MODES = ("stall", "trickle", "garbage", "error500", "echo", "echo_error", "valid")


def case_endpoints(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """The LLM designer (even cases) or the VLM judge (odd) against a misbehaving endpoint with a canary key.

    Findings: any form of the key or URL password in what is returned, raised or logged; a call
    that outlives its deadline by more than 3 s (a hang).
    """
    from tests.helpers.bad_endpoints import BadEndpoint, echo_graph, echo_verdict

    mode = ENDPOINT_MODES[(i // 2) % len(ENDPOINT_MODES)]
    timeout, retries = rng.choice([0.3, 0.6]), rng.choice([0, 1])
    llm = i % 2 == 0
    answer = echo_graph if llm else echo_verdict
    texts: list[str] = []
    if not llm:
        ctx.world  # noqa: B018 - build and settle the judged world before the clock starts
    start = time.monotonic()
    with BadEndpoint(mode, answer, interval=0.2) as ep, LogTap() as tap:
        url = ep.base_url.replace("http://", f"http://user:{ctx.password}@") if rng.random() < 0.5 else ep.base_url
        try:
            texts += _call_llm(ctx, url, timeout, retries) if llm else _call_vlm(ctx, url, timeout, retries)
            outcome = "success"
        except ScenegenError as exc:
            texts.append(str(exc))
            outcome = "error"
        texts.append(tap.text)
        sent = json.dumps(ep.requests)
    took = time.monotonic() - start
    bound = (retries + 1) * (timeout + 0.2) + 0.5 * retries + 3.0
    result = {"outcome": outcome, "leak": ctx.leaks(*texts) + ([ctx.password] if ctx.password in sent else [])}
    if took > bound:
        result["overrun"] = f"{mode}: {took:.1f} s > {bound:.1f} s"
    return result


def _call_llm(ctx: Ctx, url: str, timeout: float, retries: int) -> list[str]:
    from scenegen.design.llm import LLMConfig, LLMDesigner

    cfg = LLMConfig(base_url=url, model="m", api_key=ctx.key, timeout_s=timeout, max_retries=retries,
                    n_proposals=1, max_repair_rounds=0, deadline_s=20.0)
    return [g.to_json() for g in LLMDesigner(cfg, ctx.catalog).design("put the banana in the bowl", 2)]


def _call_vlm(ctx: Ctx, url: str, timeout: float, retries: int) -> list[str]:
    from qa.checks import vlm
    from qa.config import QAConfig, VLMConfig
    from qa.report import build_report, render_markdown

    scene = ctx.world.scene
    cfg = QAConfig(checks=("vlm",), vlm=VLMConfig(base_url=url, model="judge", api_key=ctx.key, timeout_s=timeout,
                                                  max_retries=retries, backoff_s=0.05, image_size=32,
                                                  views=("front",)))
    res = vlm.check(scene, ctx.world, cfg)
    record = {"scene_id": scene.id, "passed": res.passed, "checks": [res.to_dict()], "failed": ["vlm"]}
    report = build_report([], [{"id": scene.id, "attempt": 0, "reason": res.reason, "qa": record}], mode="recheck")
    if res.passed:
        raise BackendError("the judge passed a scene without a verdict")  # cannot happen: every mode rejects
    return [json.dumps(res.to_dict()), json.dumps(report), render_markdown(report)]


# --------------------------------------------------------------------------- env inputs
def _junk_action(rng: random.Random, dim: int) -> Any:
    roll = rng.randrange(9)
    if roll == 0:
        return rng.uniform(-1, 1) * np.ones(dim)  # valid
    if roll == 1:
        return np.full(dim, rng.choice([math.nan, math.inf, -math.inf, 1e308, 2.0, -1.0000001]))
    if roll == 2:
        return np.zeros(rng.choice([0, 1, dim - 1, dim + 1, 100]))
    if roll == 3:
        return [junk(rng) for _ in range(dim)]
    if roll == 4:
        return junk(rng)
    if roll == 5:
        return np.zeros((dim, 2))
    if roll == 6:
        return np.array(["a"] * dim)
    if roll == 7:
        return {"action": [0.0] * dim}
    return np.zeros(dim, dtype=np.float16) + 0.5


def case_env(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Reset the gymnasium env with junk seeds / options, or step it with a junk action.

    A bad seed must be refused by gymnasium's own ``gymnasium.error.Error``, bad options by a
    ScenegenError, a junk action by the env's documented one-line ``ValueError``; an accepted input
    must give a finite observation and reward.
    """
    import gymnasium

    env = ctx.env
    if i % 3 == 0:
        seed = rng.choice([None, 0, 7, -1, 2**70, 1.5, "x", math.nan, [1, 2], True])
        options = rng.choice([None, {}, [1, 2], "scene", 5, {"scene_id": junk(rng)}, {"scene_id": env.scene_ids[0]},
                              {"scene_id": env.scene_ids[0][:4]}, {"unknown": 1}])
        try:
            obs, _ = env.reset(seed=seed, options=options)
        except gymnasium.error.Error as exc:
            if "\n" in str(exc):
                raise
            return {"outcome": "error", "detail": "gymnasium seed check"}
        reward = 0.0
    else:
        env.reset(seed=i)
        try:
            obs, reward, *_ = env.step(_junk_action(rng, env.action_space.shape[0]))
        except ValueError as exc:
            if "\n" in str(exc) or not str(exc):
                raise
            return {"outcome": "error", "detail": "documented ValueError"}
    if not math.isfinite(reward):
        raise AssertionError("a step gave a non-finite reward")
    bad = [k for k, v in obs.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.isfinite(v).all()]
    if bad:
        raise AssertionError(f"an accepted input gave non-finite observations {bad}")
    return OK
