"""Hand-placed scenes for the QA tests: two blocks and a cereal box on a table (primitive collision only).

Every object is placed explicitly (no layout solver), so each test scene fails exactly the
way it is built to. Assets come from a session cache and use box primitives (no CoACD).
"""

from __future__ import annotations

import math
from pathlib import Path

from scenegen.assets.build import generate_asset
from scenegen.graph import SceneGraph
from scenegen.rotations import axis_angle_quat
from scenegen.scene import Light, Pose, Scene
from scenegen.sim.camera import default_cameras
from scenegen.sim.robots import get_robot
from scenegen.sim.world import World, WorldConfig

TABLE_X = 0.55
SEEDS = {"table": 11, "block_1": 21, "block_2": 22, "cereal_box_1": 23, "book_1": 24}

# node -> (x, y, yaw) of the good scene: block_1 left of block_2, the cereal box well behind them
GOOD = {"block_1": (0.50, 0.10, 0.0), "block_2": (0.50, -0.12, 0.3), "cereal_box_1": (0.35, 0.30, 0.0)}


def stack_graph(with_book: bool = False) -> SceneGraph:
    g = SceneGraph("stack the red block on the blue block")
    g.add_object("table", "table", "support", attributes={"color": "wood"})
    g.add_object("block_1", "block", "target", attributes={"color": "red"})
    g.add_object("block_2", "block", "receptacle", attributes={"color": "blue"})
    g.add_object("cereal_box_1", "cereal_box", "distractor")
    for n in ("block_1", "block_2", "cereal_box_1"):
        g.add_relation(n, "on", "table")
    g.add_relation("block_1", "left_of", "block_2")
    if with_book:
        g.add_object("book_1", "book", "distractor")
        g.add_relation("book_1", "on", "table")
    g.add_goal("block_1", "on", "block_2")
    return g.check()


def make_assets(graph: SceneGraph, cache: Path) -> dict:
    return {o.id: generate_asset(o.category, SEEDS[o.id], {k: v for k, v in o.attributes.items()},
                                 cache_dir=cache) for o in graph.objects()}


def place(graph: SceneGraph, assets: dict, layout: dict, gap: float = 0.001) -> Scene:
    """A scene with each node at ``(x, y, yaw)`` on the table top (or ``(x, y, yaw, z)`` for its bottom)."""
    table = assets["table"]
    poses = {"table": Pose((TABLE_X, 0.0, -table.extents[2]))}
    for node, spec in layout.items():
        x, y, yaw = spec[:3]
        z = spec[3] if len(spec) > 3 else gap
        poses[node] = Pose((x, y, z), axis_angle_quat((0.0, 0.0, 1.0), yaw))
    spec = get_robot("panda")
    scene = Scene(id="", graph=graph, assets={n: a.id for n, a in assets.items()}, poses=poses, robot="panda",
                  robot_base=spec.base_pose, table_height=0.0, cameras=default_cameras(spec, table_height=0.0),
                  lights=[Light()], seed=0)
    scene.id = scene.compute_id()
    return scene


def settled(scene: Scene, assets: dict, gravity: float = -9.81, seconds: float = 1.0) -> World:
    """Build and settle the scene's world (close it when done)."""
    world = World.build(scene, {a.id: a for a in assets.values()}, config=WorldConfig(gravity=gravity))
    world.settle(max_seconds=seconds)
    return world


def moved(layout: dict, **changes: tuple) -> dict:
    out = dict(layout)
    out.update(changes)
    return out


QUARTER = math.pi / 2
