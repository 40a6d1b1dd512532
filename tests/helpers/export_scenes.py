"""Shared scenes and parsed summaries for the export tests (this module holds no tests).

Scenes use real generated assets from the session's asset cache (``scene_assets``), so the
bowl's CoACD decomposition runs once per session. :func:`settled_scene` is laid out and
settled in PyBullet once per process; :func:`golden_scene` is hand placed and needs no
CoACD, so its parsed summaries can be compared with the golden files in ``tests/scenegen/export/golden``.
Set ``SCENEGEN_UPDATE_GOLDEN=1`` to rewrite the golden files after an intended change.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from scenegen.assets.base import Asset
from scenegen.graph import SceneGraph
from scenegen.layout.compose import build_scene
from scenegen.scene import Pose, Scene
from scenegen.sim.world import World
from tests.helpers.scene_assets import asset

GOLDEN = Path(__file__).parent.parent / "scenegen" / "export" / "golden"


def _yaw(deg: float) -> tuple[float, float, float, float]:
    h = math.radians(deg) / 2
    return (0.0, 0.0, math.sin(h), math.cos(h))


def _graph(objects: dict[str, tuple[str, str]], relations: list[tuple[str, str, str]], goal) -> SceneGraph:
    g = SceneGraph("put the banana in the bowl")
    for n, (cat, role) in objects.items():
        g.add_object(n, cat, role)
    for s, k, o in relations:
        g.add_relation(s, k, o)
    g.add_goal(*goal)
    return g


@functools.cache
def _settled(cache: str) -> tuple[Scene, dict[str, Asset]]:
    objects = {"table": ("table", "support"), "banana_1": ("banana", "target"), "bowl_1": ("bowl", "receptacle"),
               "apple_1": ("apple", "distractor"), "can_1": ("can", "distractor"),
               "cereal_box_1": ("cereal_box", "distractor")}
    relations = [("banana_1", "on", "table"), ("bowl_1", "on", "table"), ("apple_1", "in", "bowl_1"),
                 ("can_1", "on", "table"), ("cereal_box_1", "on", "table")]
    graph = _graph(objects, relations, ("banana_1", "in", "bowl_1"))
    by_node = {n: asset(cat, Path(cache)) for n, (cat, _) in objects.items()}
    scene = build_scene(graph, by_node, seed=0)
    lookup = {a.id: a for a in by_node.values()}
    with World.build(scene, lookup) as world:
        world.settle(max_seconds=3.0, lin_tol=0.002, ang_tol=0.02, min_seconds=0.3, rest_seconds=0.2)
    assert scene.settled is not None
    return scene, lookup


def settled_scene(cache: Path) -> tuple[Scene, dict[str, Asset]]:
    """Banana, bowl (an apple in it), can and cereal box on the table, laid out and settled in PyBullet."""
    scene, lookup = _settled(str(cache))
    return copy.deepcopy(scene), lookup


def golden_scene(cache: Path) -> tuple[Scene, dict[str, Asset]]:
    """A hand-placed, unsettled scene (table, banana, can, cereal box): deterministic, no CoACD."""
    objects = {"table": ("table", "support"), "banana_1": ("banana", "target"), "can_1": ("can", "distractor"),
               "cereal_box_1": ("cereal_box", "distractor")}
    relations = [("banana_1", "on", "table"), ("can_1", "on", "table"), ("cereal_box_1", "on", "table")]
    graph = _graph(objects, relations, ("banana_1", "near", "can_1"))
    by_node = {n: asset(cat, cache, seed=3) for n, (cat, _) in objects.items()}
    poses = {"table": Pose((0.55, 0.0, -by_node["table"].extents[2])),
             "banana_1": Pose((0.45, 0.15, 0.0), _yaw(30)),
             "can_1": Pose((0.6, -0.15, 0.0)),
             "cereal_box_1": Pose((0.7, 0.12, 0.0), _yaw(-90))}
    scene = Scene(id="", graph=graph, assets={n: a.id for n, a in by_node.items()}, poses=poses)
    scene.id = scene.compute_id()
    return scene, {a.id: a for a in by_node.values()}


def anonymise(text: str, lookup: dict[str, Asset]) -> str:
    """Replace asset ids by ``<category>`` so summaries survive generator changes."""
    for aid, a in lookup.items():
        text = text.replace(aid, f"<{a.category}>")
    return text


def _sorted_lists(x):
    if isinstance(x, dict):
        return {k: _sorted_lists(v) for k, v in x.items()}
    if isinstance(x, list):
        items = [_sorted_lists(v) for v in x]
        return sorted(items) if all(isinstance(v, str) for v in items) else items
    return x


def check_golden(name: str, summary: dict, lookup: dict[str, Asset]) -> None:
    """Compare a parsed summary with ``golden/<name>.json`` beside the export tests (SCENEGEN_UPDATE_GOLDEN=1 rewrites).

    Asset ids become ``<category>`` and lists of strings are compared as sorted lists.
    """
    data = _sorted_lists(json.loads(anonymise(json.dumps(summary, sort_keys=True), lookup)))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("SCENEGEN_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    assert path.is_file(), f"golden file {path} is missing; run with SCENEGEN_UPDATE_GOLDEN=1 once"
    assert data == json.loads(path.read_text()), f"{name}: parsed export differs from {path}"


def quat_angle_deg(q1_xyzw, q2_xyzw) -> float:
    """Angle (degrees) between two orientations given as (x, y, z, w)."""
    from scipy.spatial.transform import Rotation

    rel = Rotation.from_quat(np.asarray(q1_xyzw, float)).inv() * Rotation.from_quat(np.asarray(q2_xyzw, float))
    return math.degrees(float(rel.magnitude()))


def text_files(folder: Path) -> list[Path]:
    """Every text-format file the exporters write (XML, JSON, USDA, OBJ, MTL, URDF)."""
    return [p for p in folder.rglob("*") if p.suffix in (".xml", ".json", ".usda", ".sdf", ".urdf", ".obj", ".mtl")]


def xml_children(el: ET.Element, tag: str) -> list[ET.Element]:
    """Direct children of ``el`` with ``tag``."""
    return [c for c in el if c.tag == tag]
