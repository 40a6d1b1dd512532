"""``generate(prompt, n, seed, config)``: prompt -> graphs -> assets -> layout -> settled world -> pack.

Each *attempt* turns one designed graph into a scene in a worker: assets from the
chosen source, layout, a PyBullet world settled by physics, an acceptance test (every
object at rest, on the table or its support, none interpenetrating) and an optional
``checker`` (the QA loop plugs in there). Attempts run in a local process pool by
default, or on Ray when asked; results are committed to the pack in attempt order, so
the accepted set (and every hash) is the same for any number of workers. An
interrupted run resumes from the pack on disk and keeps its finished scenes.
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from scenegen.assets.collision.config import CollisionConfig
from scenegen.attempts import attempt_results, mark_stage
from scenegen.errors import BudgetError, ConfigError, ScenegenError
from scenegen.layout.compose import SceneConfig
from scenegen.sim.world import WorldConfig
from scenegen.tasks.precheck import PrecheckConfig

log = logging.getLogger(__name__)

BACKENDS = ("process", "ray")


@dataclass(frozen=True)
class AcceptConfig:
    """Acceptance thresholds applied to every settled scene (QA adds finer checks)."""

    max_penetration: float = 0.005
    """Largest allowed interpenetration (m) between any two bodies after settling."""
    fall_margin: float = 0.03
    """An object whose box's centre is this far (m) below the table top has fallen off."""
    require_rest: bool = True
    """Every object must come to rest within the settling budget."""
    check_support: bool = True
    """Every object must still be on/in its parent from the graph after settling."""

    def __post_init__(self) -> None:
        if not (0 < self.max_penetration < 0.1 and 0 < self.fall_margin < 1):
            raise ConfigError(f"AcceptConfig: max_penetration ({self.max_penetration}) must be in (0, 0.1) m and "
                              f"fall_margin ({self.fall_margin}) in (0, 1) m")


@dataclass(frozen=True)
class PipelineConfig:
    """How :func:`generate` turns a prompt into a pack."""

    designer: str = "rules"
    """Scene designer backend (``rules`` offline, ``llm``)."""
    assets: str = "procedural"
    """Asset source: ``procedural``, ``textured``, ``shap-e`` or ``library:DIR``."""
    shap_e_model: str | None = None
    """Shap-E weights (local folder or hub id) for ``assets="shap-e"``."""
    texture_model: str | None = None
    """Text-to-image weights for ``assets="textured"``."""
    device: str | None = None
    """Torch device of the diffusers backends (``cpu``, ``cuda``; None picks)."""
    workers: int = 1
    """Parallel workers (1 runs in this process)."""
    backend: str = "process"
    """``process`` (local process pool) or ``ray`` (a Ray cluster; ``ray_address`` picks it)."""
    ray_address: str | None = None
    """Ray cluster address (None starts or joins a local one)."""
    attempts_per_scene: float = 3.0
    """Attempt budget: ``ceil(n * attempts_per_scene) + 4`` designed graphs at most."""
    time_budget_s: float = 3600.0
    """Wall-clock budget of a run (s); the run stops and reports when spent."""
    attempt_timeout_s: float = 600.0
    """Wall-clock deadline (s) of one attempt: a late one is stopped and fails as ``timeout in STAGE`` (0: none)."""
    settle_seconds: float = 2.0
    """Simulated-time budget of physics settling per scene."""
    preview_size: int = 256
    """Side (pixels) of each scene's preview image (0 disables previews)."""
    scene: SceneConfig = field(default_factory=SceneConfig)
    """Layout, robot, cameras and lights."""
    world: WorldConfig = field(default_factory=WorldConfig)
    """Physics settings."""
    accept: AcceptConfig = field(default_factory=AcceptConfig)
    """Acceptance thresholds."""
    collision: CollisionConfig = field(default_factory=CollisionConfig)
    """Collision-proxy settings of generated assets (CoACD threshold, hull budget...)."""
    precheck: PrecheckConfig = field(default_factory=PrecheckConfig)
    """Reach and view checks on the layout, before distractors are built and before settling."""
    light_robot: bool = True
    """Settle with the robot's low-poly render copy: same physics, 5x faster to load (previews draw it low-poly)."""
    tier: int | None = None
    """Difficulty tier of a task family (the prompt names the family; see ``assets/tasks/``); None: the prompt as is."""

    def __post_init__(self) -> None:
        if not (isinstance(self.workers, int) and 1 <= self.workers <= 512):
            raise ConfigError(f"workers = {self.workers!r} must be an int in 1..512")
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend = {self.backend!r} must be one of {', '.join(BACKENDS)}")
        if not 1.0 <= self.attempts_per_scene <= 100:
            raise ConfigError(f"attempts_per_scene = {self.attempts_per_scene} must be in 1..100")
        if not (0 <= self.attempt_timeout_s <= 1e6):
            raise ConfigError(f"attempt_timeout_s = {self.attempt_timeout_s} must be in 0..1e6 s (0: no deadline)")
        if not (self.time_budget_s > 0 and 0 < self.settle_seconds <= 30):
            raise ConfigError(f"time_budget_s ({self.time_budget_s}) must be > 0 and settle_seconds "
                              f"({self.settle_seconds}) in (0, 30]")
        if not (self.preview_size == 0 or 32 <= self.preview_size <= 2048):
            raise ConfigError(f"preview_size = {self.preview_size} must be 0 or in 32..2048")

    def content_dict(self) -> dict:
        """The settings that shape the scenes (stored in the manifest; workers and budgets excluded)."""
        d = asdict(self)
        for k in ("workers", "backend", "ray_address", "time_budget_s", "attempt_timeout_s"):
            d.pop(k)
        return d


@dataclass
class Attempt:
    """One graph turned (or not) into an accepted scene, as returned by a worker."""

    index: int
    accepted: bool
    reason: str = ""
    """Why it was rejected (the first failing condition), empty when accepted."""
    scene: dict | None = None
    asset_dirs: dict[str, str] = field(default_factory=dict)
    """Asset id -> folder of its files."""
    preview: bytes | None = None
    qa: dict | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def _node_seed(seed: int, node: str, attributes: dict) -> int:
    if "instance_seed" in attributes:
        return int(attributes["instance_seed"])
    digest = hashlib.sha256(f"{seed}:{node}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _reason(exc: BaseException) -> str:
    kind = type(exc).__name__ if isinstance(exc, ScenegenError) else f"internal {type(exc).__name__}"
    return f"{kind}: {' '.join(str(exc).split())[:300]}"


def acceptance(world: Any, report: Any, cfg: AcceptConfig) -> str:
    """Return why a settled world is not acceptable, or ``""`` when it is."""
    from scenegen.relations import relation_holds, z_range

    scene = world.scene
    if cfg.require_rest and not report.at_rest:
        return f"not at rest: {', '.join(report.moving[:4])} still moving after {report.seconds:.1f}s"
    poses = world.poses()
    for n in world.objects():
        # the centre of the asset's own box, not getAABB (which pads primitives by ~2.5 cm), nor its lowest
        # corner (3-4 cm below the table top for a mug lying rolled on its side, its mesh resting on the table)
        if sum(z_range(poses[n], world.assets[n].extents)) / 2 < scene.table_height - cfg.fall_margin:
            return f"fell off the table: {n}"
    depth, pair = world.max_penetration()
    if depth > cfg.max_penetration:
        return f"interpenetration: {pair[0]} and {pair[1]} overlap by {depth * 1000:.1f} mm"
    if cfg.check_support:
        settled = scene.settled or world.poses()
        for n in world.objects():
            parent = scene.graph.parent(n)
            if parent is None:
                continue
            rel, p = parent
            if not relation_holds(rel, settled[n], world.assets[n].extents, settled[p], world.assets[p].extents):
                return f"support lost: {n} no longer {rel} {p} after settling"
    return ""


def run_attempt(index: int, graph_data: dict, seed: int, config: PipelineConfig, cache_dir: str | None,
                checker: Callable | None = None) -> Attempt:
    """Turn one graph into a scene (worker side). Never raises for a scene-level failure."""
    from scenegen.assets.sources import resolve_source
    from scenegen.graph import SceneGraph
    from scenegen.layout.compose import build_scene
    from scenegen.sim.camera import make_preview
    from scenegen.sim.light_robot import light_robot
    from scenegen.sim.world import World
    from scenegen.tasks.precheck import precheck, task_graph

    t0 = time.perf_counter()
    secs: dict[str, float] = {}
    mark_stage(index, "assets")
    try:
        graph = SceneGraph.from_dict(graph_data)
        options = {k: v for k, v in (("shap_e_model", config.shap_e_model), ("texture_model", config.texture_model),
                                     ("device", config.device)) if v is not None}
        source = resolve_source(config.assets, cache_dir=cache_dir, collision=config.collision, **options)
        assets: dict = {}

        def make(ids: set | None) -> None:
            for o in (o for o in graph.objects() if o.id not in assets and (ids is None or o.id in ids)):
                attrs = {k: v for k, v in o.attributes.items() if k != "instance_seed"}
                assets[o.id] = source(o.category, _node_seed(seed, o.id, o.attributes), attrs)

        task = task_graph(graph)    # reject early: the task objects' reach and view, before any distractor
        if task is not None and (config.precheck.reach or config.precheck.view):
            make(set(task.g.nodes))
            mark_stage(index, "precheck")
            tp = time.perf_counter()
            why = precheck(build_scene(task, assets, seed=seed, config=config.scene), assets, config.precheck)
            secs["precheck"] = time.perf_counter() - tp
            if why:
                return Attempt(index, False, f"precheck: {why}", seconds=secs)
        mark_stage(index, "assets")
        make(None)
        mark_stage(index, "layout")
        secs["assets"] = time.perf_counter() - t0 - secs.get("precheck", 0.0)
        t1 = time.perf_counter()
        scene = build_scene(graph, assets, seed=seed, config=config.scene)
        scene.meta["attempt"] = index
        secs["layout"] = time.perf_counter() - t1
        why = precheck(scene, assets, config.precheck)
        if why:
            return Attempt(index, False, f"precheck: {why}", seconds=secs)
    except ScenegenError as exc:
        return Attempt(index, False, _reason(exc), seconds=secs)
    lookup = {a.id: a for a in assets.values()}
    t2 = time.perf_counter()
    mark_stage(index, "world")
    try:
        built = replace(scene, robot=light_robot(scene.robot).name) if config.light_robot else scene
        with World.build(built, lookup, config=config.world) as world:
            report = world.settle(max_seconds=config.settle_seconds)
            scene.settled = built.settled
            secs["settle"] = time.perf_counter() - t2
            scene.meta["settle"] = report.to_dict()
            reason = acceptance(world, report, config.accept)
            qa = None
            if not reason and checker is not None:
                mark_stage(index, "qa")
                t3 = time.perf_counter()
                qa = checker(scene, world)
                secs["qa"] = time.perf_counter() - t3
                if not qa.get("passed", False):
                    reason = f"qa: {qa.get('reason', 'failed')}"
            preview, t4 = None, time.perf_counter()
            if config.preview_size:
                mark_stage(index, "preview")
                buf = io.BytesIO()
                make_preview(scene, world, config.preview_size).save(buf, format="PNG")
                preview = buf.getvalue()
                secs["preview"] = time.perf_counter() - t4
    except ScenegenError as exc:
        return Attempt(index, False, _reason(exc), seconds=secs)
    secs["total"] = time.perf_counter() - t0
    dirs = {a.id: str(a.path) for a in assets.values()}
    return Attempt(index, not reason, reason, scene.to_dict(), dirs, preview, qa, secs)


def _attempt_task(task: tuple) -> Attempt:
    try:
        return run_attempt(*task)
    except Exception as exc:  # a bug must not kill the whole run: it is reported per attempt
        log.exception("attempt %s crashed", task[0])
        return Attempt(task[0], False, _reason(exc))


@dataclass
class RunSummary:
    """What a :func:`generate` run did."""

    requested: int
    accepted: int
    attempts: int
    seconds: float
    reasons: dict[str, int]
    """Rejection reasons (kind of failure) -> count."""
    resumed: int = 0
    """Scenes already in the pack when the run started."""
    stopped_by: str = ""
    """``""`` when ``requested`` scenes were accepted, else what ended the run."""
    timings: dict[str, float] = field(default_factory=dict)
    """Mean seconds per accepted scene by stage."""

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return asdict(self)


def _reason_kind(reason: str) -> str:
    head = reason.split(":")[0]
    return head if head not in ("qa", "precheck") else ":".join(reason.split(":")[:2]).strip()


def generate(prompt: str, n: int, out: str | Path, seed: int = 0, config: PipelineConfig | None = None, *,
             cache_dir: str | Path | None = None, progress: bool = True, checker: Callable | None = None,
             on_reject: Callable[[Attempt], None] | None = None):
    """Generate ``n`` accepted scenes for ``prompt`` into the pack folder ``out``.

    Args:
        prompt: the task in English.
        n: scenes wanted.
        out: pack folder (created, or resumed when it holds a run of the same prompt, seed and config).
        seed: run seed; the same prompt, seed and config give the same hashes.
        config: pipeline settings.
        cache_dir: asset cache folder (default ``~/.cache/scenegen/assets`` or ``$SCENEGEN_CACHE``).
        progress: show a progress bar.
        checker: optional ``(scene, world) -> dict`` run on each settled scene (QA); ``passed`` false rejects.
        on_reject: optional callback receiving each rejected :class:`Attempt` (e.g. to keep it for inspection).

    Returns:
        The :class:`~scenegen.pack.reader.Pack`, whose manifest summary holds the :class:`RunSummary`.

    Raises:
        PromptError: the prompt cannot be turned into graphs.
        PackError: ``out`` holds something else.
        ScenegenError: fewer than ``n`` scenes were accepted within the budget (the message says why).

    """
    from tqdm import tqdm

    from scenegen.assets.base import Asset
    from scenegen.assets.preview import contact_sheet
    from scenegen.design.family_draw import design_run
    from scenegen.pack.reader import load_pack
    from scenegen.pack.writer import PackWriter
    from scenegen.scene import Scene

    cfg = config or PipelineConfig()
    budget = _attempt_budget(n, cfg)
    t0 = time.perf_counter()
    graphs, cfg = design_run(prompt, budget, seed, cfg)    # a task family's tier sets its graphs and layout margin
    cache = str(cache_dir) if cache_dir is not None else None
    writer = PackWriter(out, prompt, seed, cfg.content_dict())
    reasons: Counter = Counter()
    stage_totals: Counter = Counter()
    try:
        done = writer.scene_ids
        start = 0
        if done:
            pack = load_pack(out)
            start = 1 + max(int(pack.scene(s).meta.get("attempt", -1)) for s in done)
        accepted, attempts = len(done), start
        stopped_by = ""
        tasks = ((i, graphs[i].to_dict(), attempt_seed(seed, i), cfg, cache, checker) for i in range(start, budget))
        results, stop = attempt_results(tasks, cfg, _attempt_task, lambda i, why: Attempt(i, False, why))
        bar = tqdm(total=n, initial=accepted, desc="scenes", unit="scene", disable=not progress or accepted >= n)
        try:
            for res in results if accepted < n else ():
                attempts += 1
                if res.accepted:
                    scene = Scene.from_dict(res.scene)
                    assets = {aid: Asset.load(d) for aid, d in res.asset_dirs.items()}
                    tw = time.perf_counter()
                    writer.add_scene(scene, assets, preview=_png(res.preview), qa=res.qa)
                    res.seconds["pack"] = time.perf_counter() - tw
                    accepted += 1
                    stage_totals.update(res.seconds)
                    bar.update(1)
                else:
                    reasons[_reason_kind(res.reason)] += 1
                    log.info("attempt %d rejected: %s", res.index, res.reason)
                    if on_reject is not None:
                        on_reject(res)
                bar.set_postfix(attempts=attempts, rejected=sum(reasons.values()))
                if accepted >= n:
                    break
                if time.perf_counter() - t0 > cfg.time_budget_s:
                    stopped_by = f"time budget of {cfg.time_budget_s:.0f}s spent"
                    break
            else:
                if accepted < n:
                    stopped_by = f"attempt budget of {budget} graphs spent"
        finally:
            bar.close()
            stop()
        summary = RunSummary(n, accepted, attempts, round(time.perf_counter() - t0, 3), dict(reasons),
                             resumed=len(done), stopped_by=stopped_by,
                             timings={k: round(v / max(1, accepted - len(done)), 4) for k, v in stage_totals.items()})
        if accepted:
            _write_contact_sheet(writer, out, contact_sheet)
        pack = writer.finalize({"run": summary.to_dict()})
    except BaseException:
        writer.close()
        raise
    if accepted < n:
        top = ", ".join(f"{k} x{v}" for k, v in reasons.most_common(4)) or "no attempts"
        raise BudgetError(f"only {accepted}/{n} scenes accepted ({stopped_by}); rejections: {top}. "
                            f"The pack at {out} keeps the accepted ones; rerun to resume, or raise "
                            "attempts_per_scene / simplify the prompt")
    return pack


def _attempt_budget(n: Any, cfg: PipelineConfig) -> int:
    """Designed graphs a run of ``n`` scenes may use: ``ceil(n * attempts_per_scene) + 4``, within the designer's limit.

    Raises:
        ConfigError: ``n`` is not a positive int, or its budget exceeds what one design call makes.

    """
    from scenegen.design.variation import MAX_VARIANTS

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"-n {n!r} must be a positive integer (the number of scenes wanted)")
    most = max(1, math.floor((MAX_VARIANTS - 4) / cfg.attempts_per_scene))
    if n > most:
        raise ConfigError(f"-n {n} is too many scenes for one run: with attempts_per_scene {cfg.attempts_per_scene:g} "
                          f"it needs up to {math.ceil(n * cfg.attempts_per_scene) + 4} designed graphs and one design "
                          f"call makes at most {MAX_VARIANTS}; ask for at most {most} scenes per pack or lower "
                          "--attempts-per-scene")
    return math.ceil(n * cfg.attempts_per_scene) + 4


def attempt_seed(seed: int, index: int) -> int:
    """The seed of attempt ``index`` of a run seeded ``seed`` (SHA-256 derived: independent per attempt)."""
    digest = hashlib.sha256(f"attempt:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _png(data: bytes | None):
    if data is None:
        return None
    from PIL import Image

    return Image.open(io.BytesIO(data))


def _write_contact_sheet(writer: Any, out: str | Path, contact_sheet: Callable) -> None:
    from PIL import Image

    root = Path(out)
    images, labels = [], []
    for sid in sorted(writer.scene_ids)[:64]:
        p = root / "scenes" / sid / "preview.png"
        if p.is_file():
            with Image.open(p) as im:
                images.append(im.convert("RGB").resize((160, 160)))
            labels.append(sid[:10])
    if images:
        writer.write_extra("contact_sheet.png", contact_sheet(images, labels))
