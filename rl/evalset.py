"""Frozen, hashed, tiered evaluation sets: every configuration parameter of every episode, recorded once.

An eval set is a folder holding ``evalset.json`` (and, when the set generated them, its packs
under ``packs/tier-K/``). The document lists *configurations*: a scene of a pack, the reset
seed that fixes its domain-randomization draw, and what that reset produced (object poses,
yaw and states, the robot's start, the DR draw, the light and camera offsets), plus the
factors diagnosis groups by (tier, target category, nearest-neighbour distance, clutter,
light, camera offset). Its ``content_hash`` covers everything else in the document; a set
whose hash no longer matches is refused (``eval set changed since it was frozen; bump its
version``), and :func:`bump` freezes an edited set as a new version that records its parent's
hash. Packs are referenced by content hash and checked when the set is opened.

Tiers are recipes of generation knobs (:mod:`rl.evalset_tiers`: distractor count, layout margin);
task families (issue 19) plug their own tier recipes in there.
Running a policy over a set and scoring it is :mod:`rl.evalrun`; the layout export is
:mod:`rl.evalset_export`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from rl.envs.config import DRConfig
from rl.evalset_tiers import TIER_FAMILIES, parse_tiers, tier_pipeline, tier_prompt
from scenegen.errors import ConfigError
from scenegen.fileio import canonical_json, content_hash, read_json, write_atomic
from scenegen.rotations import quat_to_rpy

SCHEMA = "scenegen.evalset/1"
"""Schema tag of ``evalset.json``."""
FILE = "evalset.json"
"""The set's document inside its folder."""
CHANGED = "eval set changed since it was frozen; bump its version"
"""The refusal message of a tampered set (``scenegen evalset bump SET`` freezes the edit as a new version)."""
EPISODE_FIELDS = ("max_episode_steps", "control_hz", "max_delta", "max_yaw_delta", "yaw_limit", "workspace",
                  "finger_force", "finger_friction", "arm_gain", "ik_iterations", "ik_refine", "require_release",
                  "rest_speed", "knock_off_margin", "terminate_on_success")
"""EpisodeConfig fields that shape an episode's dynamics and scoring: frozen with the set, the same for every
policy (observation fields such as cameras and image size are the policy's business)."""
POSE_TOL = 0.002
"""Largest drift (m) of an object's reset position from the frozen one before a run is refused."""


def _derive_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def rollout_seed(config_seed: int, repeat: int) -> int:
    """Seed of repeat ``repeat`` of a configuration (repeat 0 uses the configuration's own seed)."""
    return config_seed if repeat == 0 else _derive_seed("repeat", config_seed, repeat)


# ---------------------------------------------------------------------------------------------- the document
@dataclass
class EvalSet:
    """An opened eval set: its document and folder (see the module docstring for the layout)."""

    doc: dict
    root: Path

    @property
    def content_hash(self) -> str:
        """The frozen hash over the whole set."""
        return self.doc["content_hash"]

    @property
    def version(self) -> int:
        """Version number (1, then +1 per bump)."""
        return int(self.doc["version"])

    @property
    def configurations(self) -> list[dict]:
        """Every configuration, in order."""
        return self.doc["configurations"]

    @property
    def repeats(self) -> int:
        """Rollouts per configuration."""
        return int(self.doc["repeats"])

    @property
    def episode(self) -> dict:
        """Frozen episode settings (:data:`EPISODE_FIELDS`)."""
        return self.doc["episode"]

    @property
    def dr(self) -> DRConfig | None:
        """The domain randomization every configuration's draw came from (None: nominal)."""
        d = self.doc.get("dr")
        return None if d is None else DRConfig(**{**d, "weights": dict(d["weights"])})

    def pack_dir(self, name: str) -> Path:
        """Folder of one of the set's packs (relative paths are under the set's folder)."""
        p = Path(self.doc["packs"][name]["path"])
        return p if p.is_absolute() else self.root / p

    def tiers(self) -> list[int]:
        """Tiers present, ascending."""
        return sorted({int(c["tier"]) for c in self.configurations})

    def episodes(self) -> list[tuple[dict, int, int]]:
        """``(configuration, repeat, rollout seed)`` for every episode of a run, in order."""
        return [(c, r, rollout_seed(int(c["seed"]), r)) for c in self.configurations for r in range(self.repeats)]


def hash_document(doc: dict) -> str:
    """sha256 over the canonical JSON of the document without its ``content_hash``."""
    return content_hash({k: v for k, v in doc.items() if k != "content_hash"})


def _path(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p / FILE if p.is_dir() or p.suffix != ".json" else p


def read_document(path: str | os.PathLike) -> tuple[dict, Path]:
    """The raw document of a set (folder or file) and its folder; nothing verified.

    Raises:
        ConfigError: missing, unreadable or not an eval set.

    """
    f = _path(path)
    doc = read_json(f, "eval set", "make one with scenegen evalset make")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ConfigError(f"{f} is not an eval set (schema {doc.get('schema') if isinstance(doc, dict) else None!r}, "
                          f"expected {SCHEMA!r})")
    for key in ("configurations", "packs", "episode", "repeats", "version", "content_hash"):
        if key not in doc:
            raise ConfigError(f"eval set {f} has no {key!r}; it is damaged, make it again")
    return doc, f.parent


def load_evalset(path: str | os.PathLike, verify_packs: bool = True) -> EvalSet:
    """Open an eval set and refuse it when it changed since it was frozen.

    Args:
        path: the set's folder or its ``evalset.json``.
        verify_packs: also open each pack and compare its content hash with the recorded one.

    Raises:
        ConfigError: the hash no longer matches (:data:`CHANGED`), or a pack is missing or changed.

    """
    doc, root = read_document(path)
    if hash_document(doc) != doc["content_hash"]:
        raise ConfigError(f"{_path(path)}: {CHANGED} (scenegen evalset bump {path})")
    es = EvalSet(doc, root)
    if verify_packs:
        from scenegen.pack.reader import load_pack

        for name, ref in doc["packs"].items():
            pack = load_pack(es.pack_dir(name))
            if pack.content_hash != ref["content_hash"]:
                raise ConfigError(f"eval set {root}: pack {name} at {es.pack_dir(name)} has content hash "
                                  f"{pack.content_hash[:12]}, the set froze {ref['content_hash'][:12]}; "
                                  "restore that pack or make a new set")
    return es


def freeze(doc: dict, out: str | os.PathLike) -> EvalSet:
    """Hash a document and write it atomically to ``out`` (a folder or a ``.json`` path)."""
    doc = {k: v for k, v in doc.items() if k != "content_hash"}
    doc["content_hash"] = hash_document(doc)
    f = _path(out) if Path(out).suffix == ".json" else Path(out) / FILE
    write_atomic(f, canonical_json(doc, indent=1, separators=None), error=ConfigError)
    return EvalSet(json.loads(f.read_text()), f.parent)


def bump(path: str | os.PathLike, out: str | os.PathLike | None = None, *, repeats: int | None = None,
         max_episode_steps: int | None = None, note: str = "") -> EvalSet:
    """Freeze a set (edited or not) as a new version that records its parent's frozen hash.

    Args:
        path: the set (its document may have been edited since it was frozen).
        out: where the new version goes (default: the same file, replaced).
        repeats: a new repeat count.
        max_episode_steps: a new episode length (the same for every policy on the new version).
        note: why the version changed (recorded).

    """
    doc, root = read_document(path)
    new = dict(doc)
    new["parent_hash"] = doc["content_hash"]
    new["version"] = int(doc["version"]) + 1
    if repeats is not None:
        _check_repeats(repeats)
        new["repeats"] = repeats
    if max_episode_steps is not None:
        new["episode"] = {**doc["episode"], "max_episode_steps": int(max_episode_steps)}
        _episode_config(new["episode"])
    new["history"] = [*doc.get("history", []), {"version": new["version"], "parent_hash": doc["content_hash"],
                                                  "note": note}]
    target = out if out is not None else _path(path)
    if out is not None and Path(out).suffix != ".json":
        _relocate_packs(new, root, Path(out))
    return freeze(new, target)


def _relocate_packs(doc: dict, old_root: Path, new_root: Path) -> None:
    """Keep relative pack paths valid when a version is written to another folder."""
    packs = {}
    for name, ref in doc["packs"].items():
        p = Path(ref["path"])
        if not p.is_absolute():
            p = Path(os.path.relpath((old_root / p).resolve(), new_root.resolve()))
        packs[name] = {**ref, "path": p.as_posix()}
    doc["packs"] = packs


def _check_repeats(repeats: int) -> None:
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 1000:
        raise ConfigError(f"--repeats {repeats!r} must be an int in 1..1000")


def _episode_config(episode: dict) -> Any:
    from scenegen.tasks.config import EpisodeConfig

    return EpisodeConfig(**{k: tuple(v) if k == "workspace" else v for k, v in episode.items()})


def env_config(es: EvalSet, **observation: Any) -> Any:
    """The :class:`~rl.envs.config.EnvConfig` of a set: its frozen episode settings and DR, plus observation fields.

    Raises:
        ConfigError: ``observation`` tries to change a frozen episode field.

    """
    from rl.envs.config import EnvConfig

    clash = sorted(set(observation) & set(EPISODE_FIELDS) | set(observation) & {"dr", "scene_ids"})
    if clash:
        raise ConfigError(f"{clash} are frozen by the eval set (v{es.version}); bump a new version to change them")
    episode = {k: tuple(v) if k == "workspace" else v for k, v in es.episode.items()}
    return EnvConfig(**episode, dr=es.dr, **observation)


# ---------------------------------------------------------------------------------------------- instantiation
def _yaw_deg(q: Sequence[float]) -> float:
    return math.degrees(quat_to_rpy(tuple(q))[2])


def _tilt_deg(q: Sequence[float]) -> float:
    r, p, _ = quat_to_rpy(tuple(q))
    return math.degrees(math.acos(max(-1.0, min(1.0, math.cos(r) * math.cos(p)))))


def _r(x: float, d: int = 5) -> float:
    return round(float(x), d)


def record_reset(env: Any, info: dict) -> dict:
    """What a reset produced, to freeze or to compare: objects, robot start, DR draw, light, camera offset."""
    world = env.world
    graph = world.scene.graph
    support = graph.support_id
    entry = env.cache.get(env.scene_id)
    dr = info.get("dr") or {}
    objects = []
    for o in sorted(graph.objects(), key=lambda x: x.id):
        if o.id == support:
            continue
        pose = world.pose(o.id)
        fr = (dr.get("friction") or {}).get(o.id)
        objects.append({"id": o.id, "category": o.category, "role": o.role, "state": o.state,
                        "position": [_r(v) for v in pose.position], "yaw_deg": _r(_yaw_deg(pose.orientation), 3),
                        "tilt_deg": _r(_tilt_deg(pose.orientation), 3),
                        "extents": [_r(v, 4) for v in world.assets[o.id].extents],
                        "friction_scale": _r(1.0 if fr is None else fr / max(entry.nominal[o.id]["friction"], 1e-9), 4),
                        "mass_scale": _r((dr.get("mass_scale") or {}).get(o.id, 1.0), 4)})
    view = env.episode.renderer.view
    light = view.light
    d = np.asarray(light.direction, dtype=float)
    d = d / max(float(np.linalg.norm(d)), 1e-9)
    table = world.assets[support].extents
    robot = env.source.scene(env.scene_id).robot
    return {"instruction": graph.instruction,
            "goals": [{"subject": g.subject, "predicate": g.predicate, "object": g.object} for g in graph.goals],
            "objects": objects, "table": {"extents": [_r(v, 4) for v in table],
                                           "center": [_r(v) for v in world.scene.poses[support].position]},
            "robot": {"name": robot, "base": [_r(v) for v in world.scene.robot_base.position],
                      "start_joints": [_r(v) for v in world.joint_positions()],
                      "start_ee": [_r(v) for v in env.controller.ee_pose()[0]]},
            "light": {"direction": [_r(v) for v in d], "ambient": _r(light.ambient), "diffuse": _r(light.diffuse)},
            "camera_offset": {"eye": [_r(v) for v in view.eye_offset], "target": [_r(v) for v in view.target_offset]},
            "dr_draw": dr}


def factors(record: dict, tier: int) -> dict:
    """The conditions diagnosis groups by, from one configuration's reset record."""
    objs = {o["id"]: o for o in record["objects"]}
    subjects = [g["subject"] for g in record["goals"] if g["subject"] in objs]
    target = objs[subjects[0]] if subjects else None
    nn = math.inf
    for s in subjects:
        p = np.asarray(objs[s]["position"][:2])
        for o in record["objects"]:
            if o["id"] != s:
                nn = min(nn, float(np.linalg.norm(np.asarray(o["position"][:2]) - p)))
    tx, ty = record["table"]["extents"][:2]
    fill = sum(o["extents"][0] * o["extents"][1] for o in record["objects"]) / max(tx * ty, 1e-9)
    d = record["light"]["direction"]
    return {"tier": int(tier), "target_category": target["category"] if target else "none",
            "n_objects": len(record["objects"]),
            "n_distractors": sum(1 for o in record["objects"] if o["role"] == "distractor"),
            "nn_distance": _r(nn if math.isfinite(nn) else 1.0, 4), "clutter": _r(fill, 4),
            "light_diffuse": record["light"]["diffuse"],
            "light_elevation_deg": _r(math.degrees(math.asin(max(-1.0, min(1.0, d[2])))), 2),
            "camera_offset": _r(float(np.linalg.norm(record["camera_offset"]["eye"])), 5),
            "target_friction_scale": target["friction_scale"] if target else 1.0,
            "target_mass_scale": target["mass_scale"] if target else 1.0}


def check_reset(conf: dict, record: dict) -> None:
    """Refuse a run whose reset of a configuration differs from what the set froze (the env or pack changed).

    Raises:
        ConfigError: an object moved more than :data:`POSE_TOL`, the robot starts elsewhere, or the DR draw differs.

    """
    def fail(what: str) -> None:
        raise ConfigError(f"configuration {conf['id']}: {what} differs from the frozen eval set; the env or its "
                          "pack changed since the set was frozen: make a new set (or bump a version) for it")

    frozen = {o["id"]: o for o in conf["objects"]}
    now = {o["id"]: o for o in record["objects"]}
    if frozen.keys() != now.keys():
        fail(f"the object list ({sorted(now)})")
    for k, o in frozen.items():
        if float(np.linalg.norm(np.subtract(o["position"], now[k]["position"]))) > POSE_TOL:
            fail(f"object {k}'s reset position {now[k]['position']} (frozen {o['position']})")
    if float(np.max(np.abs(np.subtract(conf["robot"]["start_joints"], record["robot"]["start_joints"])))) > 1e-3:
        fail("the robot's start")
    a, b = canonical_json(conf["dr_draw"], float_digits=3), canonical_json(record["dr_draw"], float_digits=3)
    if a != b:
        fail("the domain-randomization draw")


def _pack_ref(pack_dir: Path, root: Path, tier: int) -> dict:
    from scenegen.pack.reader import load_pack

    pack = load_pack(pack_dir)
    try:
        rel = pack_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = pack_dir.resolve().as_posix()
    return {"path": rel, "content_hash": pack.content_hash, "prompt": pack.prompt, "seed": pack.seed,
            "tier": tier, "scenes": len(pack)}


def _generate_tier(prompt: str, knobs: dict, n: int, out: Path, seed: int, pipeline: Any, qa: bool,
                   cache_dir: str | None, progress: bool) -> None:
    from scenegen.errors import BudgetError
    from scenegen.pipeline import PipelineConfig, generate

    cfg = tier_pipeline(pipeline or PipelineConfig(), knobs)
    if "family" in knobs:   # a task family's tier: the pipeline draws that tier's scenes
        cfg = replace(cfg, tier=int(knobs["tier"]))
    if qa:
        from qa.loop import generate_with_qa

        run = generate_with_qa(prompt, n, out, seed, cfg, cache_dir=cache_dir, progress=progress)
        if not run.complete:
            raise BudgetError(run.message)
    else:
        generate(prompt, n, out, seed, cfg, cache_dir=cache_dir, progress=progress)


def make_evalset(source: str | None, out: str | os.PathLike, per_tier: int, *, tiers: Sequence[int] = (),
                 packs: Sequence[str | os.PathLike] = (), seed: int = 0, repeats: int = 1,
                 max_episode_steps: int = 200, dr: DRConfig | None = None, pipeline: Any = None, qa: bool = True,
                 cache_dir: str | None = None, progress: bool = True, name: str | None = None,
                 scene_ids: Sequence[str] | None = None) -> EvalSet:
    """Sample, instantiate and freeze an eval set.

    Args:
        source: a prompt or a registered task family (None with ``packs``).
        out: the set's folder (its packs are generated under ``out/packs/tier-K``).
        per_tier: configurations per tier.
        tiers: tiers to generate (empty: one tier of the prompt as written); with ``packs``, their labels.
        packs: existing packs to reference by content hash instead of generating (one per tier).
        seed: seed of the generation runs and of every configuration's reset seed.
        repeats: rollouts per configuration (repeat ``r > 0`` reseeds the policy, see :func:`rollout_seed`).
        max_episode_steps: episode length, the same for every policy evaluated on the set.
        dr: domain randomization whose per-configuration draw is frozen (None: nominal scenes).
        pipeline: a :class:`~scenegen.pipeline.PipelineConfig` for generated packs.
        qa: run the QA checks on generated scenes (keeps only solvable, well-formed ones).
        cache_dir: asset cache folder.
        progress: progress bars.
        name: a label (default: the folder name).
        scene_ids: configurations cycle over these scenes of each pack only (None: every scene).

    Raises:
        ConfigError: bad counts, an existing set at ``out``, or neither a source nor packs.

    """
    from rl.envs import EnvConfig, PickPlaceEnv

    root = Path(out)
    if (root / FILE).exists():
        raise ConfigError(f"{root / FILE} exists; an eval set is frozen: bump a version or pick another folder")
    if isinstance(per_tier, bool) or not isinstance(per_tier, int) or not 1 <= per_tier <= 100_000:
        raise ConfigError(f"-n {per_tier!r} must be an int in 1..100000")
    _check_repeats(repeats)
    tiers = parse_tiers(tiers) if tiers else ()
    episode = {k: getattr(EnvConfig(max_episode_steps=max_episode_steps), k) for k in EPISODE_FIELDS}
    plan: list[tuple[int, Path, dict]] = []
    if packs:
        labels = tiers or tuple(range(1, len(packs) + 1))
        if len(labels) != len(packs):
            raise ConfigError(f"{len(packs)} packs but {len(labels)} tiers; give one tier label per --pack")
        plan = [(t, Path(p), {"referenced": True}) for t, p in zip(labels, packs, strict=True)]
        kind = "packs"
    elif source:
        kind = "family" if source in TIER_FAMILIES else "prompt"
        for t in tiers or (1,):
            prompt, knobs = tier_prompt(source, t) if tiers else (source, {})
            sub = root / "packs" / f"tier-{t}"
            _generate_tier(prompt, knobs, per_tier, sub, _derive_seed("pack", seed, t), pipeline, qa, cache_dir,
                           progress)
            plan.append((t, sub, {"prompt": prompt, **knobs}))
    else:
        raise ConfigError("give a PROMPT (or task family) or at least one --pack")
    doc: dict = {"schema": SCHEMA, "name": name or root.resolve().name, "version": 1, "parent_hash": None,
                 "source": {"kind": kind, "text": source, "tiers": {str(t): k for t, _, k in plan}},
                 "seed": seed, "repeats": repeats, "episode": episode,
                 "dr": None if dr is None else {f.name: getattr(dr, f.name) for f in fields(dr)},
                 "packs": {}, "configurations": [], "history": []}
    for t, pack_dir, _ in plan:
        key = f"tier-{t}"
        doc["packs"][key] = _pack_ref(pack_dir, root, t)
        env = PickPlaceEnv(pack_dir, EnvConfig(image_keys=(), dr=dr, scene_ids=tuple(scene_ids) if scene_ids else None,
                                               **episode))
        try:
            ids = env.scene_ids
            for i in range(per_tier):
                s = _derive_seed("config", seed, t, i)
                _, info = env.reset(seed=s, options={"scene_id": ids[i % len(ids)]})
                rec = record_reset(env, info)
                doc["configurations"].append({"id": f"t{t}-{i:04d}", "tier": t, "pack": key,
                                              "scene_id": env.scene_id, "seed": s,
                                              "episode_steps": max_episode_steps, **rec,
                                              "factors": factors(rec, t)})
        finally:
            env.close()
    return freeze(doc, root)
