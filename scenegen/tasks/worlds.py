"""Where an environment's scenes come from, and the cache of their built worlds.

A *scene source* is anything with ``scene_ids``, ``scene(id)`` and ``asset_lookup``: a
:class:`~scenegen.pack.reader.Pack` (or its folder) or an in-memory :class:`SceneSet`.
:class:`WorldCache` builds one :class:`~scenegen.sim.world.World` per scene, puts the objects
at their settled poses and snapshots the physics state; a reset restores that snapshot, in a
world no episode has run in yet (by default a used one is built again: see
``EpisodeConfig.fresh_worlds``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from scenegen.assets.base import Asset
from scenegen.errors import ConfigError, PackError, StateError
from scenegen.fileio import Closeable
from scenegen.pack.reader import Pack, load_pack
from scenegen.scene import Scene
from scenegen.sim.world import World
from scenegen.tasks.config import EpisodeConfig


class SceneSource(Protocol):
    """What the environment needs from a pack."""

    @property
    def scene_ids(self) -> list[str]: ...  # noqa: D102

    def scene(self, scene_id: str) -> Scene: ...  # noqa: D102

    @property
    def asset_lookup(self) -> Mapping[str, Asset] | Callable[[str], Asset]: ...  # noqa: D102


class SceneSet:
    """Scenes held in memory with their assets (what :func:`scenegen.tasks.expert.run_expert` wraps a scene in)."""

    def __init__(self, scenes: Iterable[Scene], asset_lookup: Mapping[str, Asset] | Callable[[str], Asset]) -> None:
        self._scenes = {s.id: s for s in scenes}
        if not self._scenes:
            raise ConfigError("SceneSet needs at least one scene")
        self._lookup = asset_lookup

    @property
    def scene_ids(self) -> list[str]:
        """Scene ids, sorted."""
        return sorted(self._scenes)

    def scene(self, scene_id: str) -> Scene:
        """The scene with this id."""
        try:
            return self._scenes[scene_id]
        except KeyError:
            raise ConfigError(f"no scene {scene_id!r} in this SceneSet; it has {self.scene_ids}") from None

    @property
    def asset_lookup(self) -> Mapping[str, Asset] | Callable[[str], Asset]:
        """Asset id -> Asset."""
        return self._lookup


def as_source(pack: str | os.PathLike | Pack | SceneSource) -> SceneSource:
    """Turn a pack folder, a Pack or a SceneSet into a scene source.

    Raises:
        PackError: the folder is not a pack, or the pack holds no scene.

    """
    src = load_pack(pack) if isinstance(pack, (str, os.PathLike)) else pack
    for attr in ("scene_ids", "scene", "asset_lookup"):
        if not hasattr(src, attr):
            raise ConfigError(f"{type(src).__name__} is not a scene source (no {attr}); pass a pack folder, "
                              "a Pack or a SceneSet")
    if not src.scene_ids:
        raise PackError(f"{getattr(src, 'root', 'the scene source')} holds no scene; generate some first")
    return src


def source_path(src: Any) -> str | None:
    """The folder of a pack source (for re-opening it in another process), or None."""
    root = getattr(src, "root", None)
    return str(root) if isinstance(root, (str, Path)) else None


def resolve_ids(src: SceneSource, wanted: tuple[str, ...] | None) -> list[str]:
    """Full scene ids for a fixed list (ids or unique prefixes of 4+ characters), or every id.

    Raises:
        ConfigError: an id matches no scene, or a prefix matches several.

    """
    ids = list(src.scene_ids)
    if wanted is None:
        return ids
    out = []
    for w in wanted:
        hits = [s for s in ids if s == w] or [s for s in ids if len(w) >= 4 and s.startswith(w)]
        if len(hits) != 1:
            why = "no scene has it" if not hits else f"{len(hits)} scenes start with it"
            raise ConfigError(f"scene id {w!r}: {why}; the source has {len(ids)} scenes")
        out.append(hits[0])
    return out


@dataclass
class CachedWorld:
    """A built world and what a reset needs to restore it."""

    world: World
    state_id: int
    """PyBullet saved state: objects at their settled poses, robot at home, nothing moving."""
    nominal: dict[str, dict] = field(default_factory=dict)
    """Node id -> nominal ``mass``, ``inertia``, ``friction``, ``rgba`` (what randomization perturbs)."""
    randomized: bool = False
    """Dynamics or colours differ from nominal now."""
    episodes: int = 0
    """Episodes started in this world."""


def build_world(scene: Scene, lookup: Any, cfg: EpisodeConfig) -> CachedWorld:
    """Build a scene's world for the env: settled objects, robot at home, finger friction, snapshot."""
    import pybullet as p

    from scenegen.sim.light_robot import light_robot

    built = replace(scene, robot=light_robot(scene.robot).name) if cfg.light_robot else scene
    if cfg.render_max_faces:
        from scenegen.sim.light_assets import LightAssets

        lookup = LightAssets(lookup, cfg.render_max_faces)
    world = World.build(built, lookup, config=cfg.world)
    c = world.client
    try:
        if scene.settled:
            for n in world.objects():
                if n in scene.settled:
                    world.set_pose(n, scene.settled[n])
        else:
            world.settle()
        world.reset_robot()
        if cfg.sleeping:
            for n in world.objects():
                p.changeDynamics(world.body_of[n], -1, activationState=p.ACTIVATION_STATE_ENABLE_SLEEPING,
                                 physicsClientId=c)
        world.step(24)
        for j in world.finger_joints:
            p.changeDynamics(world.robot_id, j, lateralFriction=cfg.finger_friction, spinningFriction=0.01,
                             frictionAnchor=1, contactStiffness=cfg.finger_stiffness,
                             contactDamping=cfg.finger_damping, physicsClientId=c)
        if not cfg.render_ground:
            p.changeVisualShape(world.ground_id, -1, rgbaColor=[1, 1, 1, 0], physicsClientId=c)
        nominal = {}
        for n in sorted(world.body_of):
            info = p.getDynamicsInfo(world.body_of[n], -1, physicsClientId=c)
            nominal[n] = {"mass": info[0], "friction": info[1], "inertia": tuple(info[2]),
                          "rgba": _shown_rgba(world, n)}
        state = p.saveState(physicsClientId=c)
    except BaseException:
        world.close()
        raise
    return CachedWorld(world, state, nominal)


def _shown_rgba(world: World, node: str) -> tuple[float, ...]:
    """The colour a body's base is drawn with, as loaded: what a colour change replaces.

    A textured mesh (the table) is drawn in its texture tinted white, not in its asset's colour; recording the
    asset colour as nominal made every randomized episode (even at zero weights) tint the texture by it.
    """
    import pybullet as p

    shapes = [v for v in p.getVisualShapeData(world.body_of[node], physicsClientId=world.client) if v[1] == -1]
    return tuple(float(x) for x in shapes[0][7]) if shapes else tuple(world.assets[node].rgba)


class WorldCache(Closeable):
    """Built worlds by scene id, least recently used first out."""

    def __init__(self, src: SceneSource, cfg: EpisodeConfig) -> None:
        self.src = src
        self.cfg = cfg
        self.capacity = cfg.max_cached_worlds
        self._worlds: OrderedDict[str, CachedWorld] = OrderedDict()
        self.builds = 0
        """Worlds built so far (a reset in a cached world no episode has run in builds nothing)."""

    def get(self, scene_id: str, unused: bool = False) -> CachedWorld:
        """The cached world of a scene, built on first use.

        Args:
            scene_id: the scene.
            unused: a world no episode has started in: a used one is closed and built again.

        Raises:
            StateError: the cache is closed.

        """
        if self.closed:
            raise StateError(f"the WorldCache is closed; open a new one to build scene {scene_id}")
        if scene_id in self._worlds:
            self._worlds.move_to_end(scene_id)
            entry = self._worlds[scene_id]
            if not (unused and entry.episodes):
                return entry
            del self._worlds[scene_id]
            entry.world.close()
        entry = build_world(self.src.scene(scene_id), self.src.asset_lookup, self.cfg)
        self.builds += 1
        self._worlds[scene_id] = entry
        while len(self._worlds) > self.capacity:
            _, old = self._worlds.popitem(last=False)
            old.world.close()
        return entry

    def _close(self) -> None:
        """Close every world (:meth:`close` calls this once)."""
        while self._worlds:
            _, entry = self._worlds.popitem()
            entry.world.close()
