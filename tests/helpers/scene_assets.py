"""Real generated assets and scene graphs shared by the layout, world and robot tests.

Assets go to one cache folder per test session (under pytest's base temp), so the three
test files generate each asset once. The bowl is the only CoACD asset; it uses cheap CoACD
settings to keep the tests fast.
"""

from __future__ import annotations

from pathlib import Path

from scenegen.assets.base import Asset
from scenegen.assets.build import generate_asset
from scenegen.assets.collision.config import CollisionConfig
from scenegen.graph import SceneGraph

FAST = CollisionConfig.fast(threshold=0.1, max_hulls=8, resolution=300, mcts_iterations=15,
                            preprocess_resolution=20)

# node id -> (category, role)
OBJECTS = {
    "table": ("table", "support"),
    "bowl_1": ("bowl", "receptacle"),
    "lemon_1": ("lemon", "distractor"),
    "apple_1": ("apple", "target"),
    "cutting_board_1": ("cutting_board", "distractor"),
    "can_1": ("can", "distractor"),
    "bottle_1": ("bottle", "distractor"),
    "block_1": ("block", "distractor"),
    "sponge_1": ("sponge", "distractor"),
}

# every relation kind at least once
RELATIONS = [
    ("bowl_1", "on", "table"), ("cutting_board_1", "on", "table"), ("can_1", "on", "table"),
    ("bottle_1", "on", "table"), ("block_1", "on", "table"), ("sponge_1", "on", "table"),
    ("lemon_1", "in", "bowl_1"), ("apple_1", "on", "cutting_board_1"),
    ("can_1", "left_of", "bottle_1"), ("block_1", "right_of", "bottle_1"),
    ("sponge_1", "in_front_of", "bottle_1"), ("block_1", "behind", "sponge_1"),
    ("can_1", "near", "bowl_1"), ("cutting_board_1", "far_from", "bowl_1"),
]


def cache_dir(tmp_path_factory) -> Path:
    """The session's asset cache folder (shared by every test file of the session)."""
    path = Path(tmp_path_factory.getbasetemp()) / "scenegen_asset_cache"
    path.mkdir(exist_ok=True)
    return path


def asset(category: str, cache: Path, seed: int = 1) -> Asset:
    """Generate (or fetch) one asset; only containers get a CoACD decomposition."""
    return generate_asset(category, seed=seed, cache_dir=cache, collision=FAST)


def full_graph() -> SceneGraph:
    """The test scene: 8 objects on a table with every relation kind; goal apple in bowl."""
    g = SceneGraph("put the apple in the bowl")
    for n, (cat, role) in OBJECTS.items():
        g.add_object(n, cat, role)
    for s, k, o in RELATIONS:
        g.add_relation(s, k, o)
    g.add_goal("apple_1", "in", "bowl_1")
    return g


def full_assets(cache: Path) -> dict[str, Asset]:
    """Node id -> asset for :func:`full_graph`."""
    return {n: asset(cat, cache) for n, (cat, _) in OBJECTS.items()}


def small_graph() -> SceneGraph:
    """Banana and bowl on the table, goal banana in bowl."""
    g = SceneGraph("put the banana in the bowl")
    g.add_object("table", "table", "support")
    g.add_object("banana_1", "banana", "target")
    g.add_object("bowl_1", "bowl", "receptacle")
    g.add_relation("banana_1", "on", "table")
    g.add_relation("bowl_1", "on", "table")
    g.add_relation("banana_1", "near", "bowl_1")
    g.add_goal("banana_1", "in", "bowl_1")
    return g
