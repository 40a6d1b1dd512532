"""Thin cutlery pinches, a long tool laid across a deep pan's rim, and the stand-up swing (``scenegen.tasks.spots``).

Hand-placed scenes (``tests.helpers.qa_scenes``):

- a fork lying on the table: its pinch must keep the finger pads off its head, whose convex collision part
  reaches a centimetre nearer the handle than the visual flare (the pads closed on that corner and squeezed
  the fork out of the fingers);
- a spatula and a deep frying pan: lying on the pan's floor would sink the spatula deeper than ``on`` allows,
  so it is laid across the rim, and the expert's placement holds;
- the stand-up swing turns the hand first, then tilts it about one fixed axis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from shapely.geometry import Point

from scenegen.assets.build import generate_asset
from scenegen.graph import SceneGraph
from scenegen.rotations import quat_matrix
from scenegen.tasks.carry import stand_swing
from scenegen.tasks.expert import run_expert
from scenegen.tasks.grasps import PAD_HALF, section_grasp, touch_meshes
from scenegen.tasks.plan import place_target
from scenegen.tasks.spots import across_rim, too_deep
from scenegen.tasks.tracker import node_body
from tests.helpers.qa_scenes import place, settled


def _kit(tmp_path_factory, prompt: str, objects: dict[str, tuple[str, int, dict]], goal: tuple[str, str, str]):
    g = SceneGraph(prompt)
    g.add_object("table", "table", "support", attributes={"color": "wood"})
    for n, (cat, _, attrs) in objects.items():
        g.add_object(n, cat, "target" if n == goal[0] else "receptacle", attributes=attrs)
        g.add_relation(n, "on", "table")
    g.add_goal(*goal)
    cache = tmp_path_factory.mktemp("spots-assets")
    seeds = {"table": 11, **{n: s for n, (_, s, _) in objects.items()}}
    assets = {o.id: generate_asset(o.category, seeds[o.id], dict(o.attributes), cache_dir=cache)
              for o in g.check().objects()}
    return g, assets


def test_fork_pinch_keeps_the_pads_off_its_head(tmp_path_factory):
    g, assets = _kit(tmp_path_factory, "put the fork next to the block",
                     {"fork_1": ("fork", 41, {}), "block_1": ("block", 42, {})}, ("fork_1", "near", "block_1"))
    with settled(place(g, assets, {"fork_1": (0.5, 0.0, 0.4), "block_1": (0.45, -0.25, 0.0)}), assets) as world:
        asset, pose = world.assets["fork_1"], world.pose("fork_1")
        parts = touch_meshes(asset)[1:]
        assert parts, "the fork has collision parts"
        head = min(float(v[:, 0].min()) for v, _ in parts if float(np.ptp(v[:, 1])) > 0.02)  # the wide head part
        point, axis, width = section_grasp(asset, pose, world.scene.table_height, world.robot.max_opening)
        rot = quat_matrix(pose.orientation)
        local = rot.T @ (np.asarray(point) - np.asarray(pose.position))
        # the pads (PAD_HALF along the handle either side of the pinch) end before the head part begins
        assert local[0] + PAD_HALF <= head + 1e-6, (local, head)
        assert width < 0.015  # across the handle, not the head


@pytest.fixture(scope="module")
def pan_kit(tmp_path_factory):
    return _kit(tmp_path_factory, "put the spatula on the pan",
                {"spatula_1": ("spatula", 51, {"scale": 0.0}), "pan_1": ("pan", 52, {"scale": 1.0})},
                ("spatula_1", "on", "pan_1"))


PAN_POSES = {"spatula_1": (0.45, 0.25, 0.3), "pan_1": (0.6, -0.1, 0.0)}


def test_spatula_is_laid_across_a_deep_pans_rim(pan_kit):
    g, assets = pan_kit
    with settled(place(g, assets, PAN_POSES), assets) as world:
        assert too_deep(world, "pan_1")  # lying on the floor, the spatula would sink deeper than ``on`` allows
        reach = (world.robot.reach_min, world.robot.reach_max)
        xy, turn = across_rim(world, "spatula_1", "pan_1", reach)
        target = place_target(world, g.goals[0], reach)
        assert np.allclose(target.xy, xy) and target.turn == pytest.approx(turn)
        # both ends of the spatula, moved there, lie outside the pan's opening
        sp = world.pose("spatula_1")
        rot = quat_matrix(sp.orientation)
        heading = math.atan2(rot[1, 0], rot[0, 0]) + turn
        half = 0.5 * world.assets["spatula_1"].extents[0]
        opening = node_body(world.assets["pan_1"], world.pose("pan_1")).opening()
        d = np.array([math.cos(heading), math.sin(heading)])
        for end in (xy + half * d, xy - half * d):
            assert not opening.contains(Point(*end)), end
        assert opening.contains(Point(*xy))  # its middle is over the pan


@pytest.mark.slow
def test_expert_puts_a_spatula_on_a_deep_pan(pan_kit):
    g, assets = pan_kit
    scene = place(g, assets, PAN_POSES)
    with settled(scene, assets) as world:
        res = run_expert(world.scene, world, max_steps=400)
    assert res.success, res.failure


class _Ctrl:
    def __init__(self, yaw: float, swing) -> None:
        self.target_yaw, self.target_swing = yaw, np.asarray(swing, dtype=float)


def test_stand_swing_turns_first_then_tilts_about_one_axis():
    swing = np.array([0.0, 1.0, 0.0]) * (math.pi / 2)
    assert stand_swing(_Ctrl(0.0, np.zeros(3)), swing, 1.0, 0.06, 0.06) is None  # not turned yet: no tilt
    step = stand_swing(_Ctrl(1.0, np.zeros(3)), swing, 1.0, 0.06, 0.06)
    assert np.allclose(step, [0.0, 0.06, 0.0])  # a small step about the swing's own axis
    half = stand_swing(_Ctrl(1.0, 0.5 * swing), swing, 1.0, 0.06, 0.06)
    assert np.allclose(half, swing * (0.5 + 0.06 / (math.pi / 2)))
    assert np.allclose(stand_swing(_Ctrl(1.0, swing), swing, 1.0, 0.06, 0.06), swing)
    tilted = np.array([0.0, 0.3, 0.0])
    assert np.allclose(stand_swing(_Ctrl(0.5, tilted), swing, 1.0, 0.06, 0.06), tilted)  # keeps the tilt begun


@pytest.mark.slow
def test_free_spot_keeps_clear_of_a_shaft_across_the_cavity(tmp_path_factory):
    """A spoon lying across a mug's opening: its hull has no vertex along the shaft; the spot keeps off it."""
    from scenegen.geometry import transform_points
    from scenegen.tasks.spots import _surface, free_spot

    g, assets = _kit(tmp_path_factory, "put the fork in the mug",
                     {"fork_1": ("fork", 41, {}), "mug_1": ("mug", 61, {}), "spoon_1": ("spoon", 62, {})},
                     ("fork_1", "in", "mug_1"))
    with settled(place(g, assets, {"fork_1": (0.45, 0.25, 0.0), "mug_1": (0.55, -0.1, 0.0),
                                   "spoon_1": (0.55, -0.1, 0.12)}), assets) as world:
        opening = node_body(world.assets["mug_1"], world.pose("mug_1")).opening()
        c = np.asarray(opening.centroid.coords[0])
        r = 0.45 * math.sqrt(opening.area / math.pi)
        cands = [c + r * np.array([math.cos(a), math.sin(a)]) for a in np.linspace(0, 2 * math.pi, 8, endpoint=False)]
        pts = transform_points(_surface(world.assets["spoon_1"]), world.pose("spoon_1"))
        near = [p[:2] for p in pts if opening.buffer(0.02).contains(Point(*p[:2]))]
        assert near, "the spoon lies over the mug's opening"
        gap = [float(np.min(np.linalg.norm(np.asarray(near) - q, axis=1))) for q in cands]
        xy = free_spot(world, "fork_1", "mug_1", ["spoon_1"], cands)
        best = float(np.min(np.linalg.norm(np.asarray(near) - xy, axis=1)))
        assert best == pytest.approx(max(gap)) and best > min(gap) + 0.005, (best, gap)
