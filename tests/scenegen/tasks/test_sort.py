"""Sort from the tote: the designer's compartment assignment, the slot goal in a world, and the expert end to end."""

import numpy as np
import pytest

from scenegen.design import design, parse
from scenegen.errors import GraphError, PromptError
from scenegen.graph import Goal
from scenegen.pipeline import PipelineConfig, generate
from scenegen.rotations import quat_matrix
from scenegen.scene import Pose
from scenegen.sim.world import World
from scenegen.tasks.expert import run_expert
from scenegen.tasks.plan import place_target
from scenegen.tasks.tracker import asset_slots, world_goal_check
from tests.helpers.scene_assets import FAST

PROMPT = "sort the nuts, bolts and washers from the tote into the sorter"
CONFIG = PipelineConfig(collision=FAST, preview_size=0)


def test_each_kind_of_part_gets_its_own_compartment_and_starts_in_the_tote():
    g = parse(PROMPT)
    slots = {gl.subject: gl.slot for gl in g.goals}
    assert all(gl.predicate == "in" and gl.object == "sorter_1" for gl in g.goals) and len(g.goals) == 6
    by_kind = {}
    for node, slot in slots.items():
        by_kind.setdefault(g.object(node).category, set()).add(slot)
    assert by_kind == {"hex_nut": {"A"}, "bolt": {"B"}, "washer": {"C"}}, "in the prompt's order, one slot a kind"
    assert all(g.parent(n) == ("in", "tote_1") for n in slots)
    # the variants keep the assignment; a count gives that many parts
    big = design("sort 4 nuts, 3 bolts, 2 washers and 2 bearing rings from the tote into the sorter", 2, seed=1)
    for v in big:
        assert len(v.goals) == 11 and {gl.slot for gl in v.goals} == {"A", "B", "C", "D"}
        assert v.validate() == []


def test_sorting_more_kinds_than_compartments_or_moving_without_sorting():
    with pytest.raises(PromptError, match="4 compartments"):
        parse("sort the nuts, bolts, washers, bearing rings and spoons into the sorter")
    plain = parse("put the nuts in the sorter")
    assert [gl.slot for gl in plain.goals] == [None, None], "no sorting, no compartment: any one will do"
    into_bin = parse("sort the nuts and the bolts into the bin")
    assert all(gl.slot is None for gl in into_bin.goals), "a bin has no compartments"


@pytest.fixture(scope="module")
def sort_pack(tmp_path_factory):
    return generate("sort a nut, a bolt and a washer from the tote into the sorter", 3,
                    tmp_path_factory.mktemp("sort") / "pack", seed=2, config=CONFIG, progress=False)


@pytest.mark.slow
def test_a_part_is_in_its_compartment_only(sort_pack):
    scene = sort_pack.scenes()[0]
    with World.build(scene, sort_pack.asset_lookup) as w:
        goal = next(gl for gl in scene.graph.goals if gl.slot == "A")
        sorter = w.assets["sorter_1"]
        slots = asset_slots(sorter)
        assert set(slots) >= {"A", "B", "C", "D"}
        assert not world_goal_check(w, goal)[0], "the part starts in the tote"
        sp = w.pose("sorter_1")
        rot = quat_matrix(sp.orientation)[:2, :2]
        floor = sp.position[2] + float(sorter.params["floor"])
        results = {}
        for name in ("A", "B"):
            centre = rot @ slots[name].mean(axis=0) + np.asarray(sp.position[:2])
            w.set_pose(goal.subject, Pose((float(centre[0]), float(centre[1]), floor + 0.002), (0, 0, 0, 1)))
            for _ in range(240):
                w.step()
            results[name] = world_goal_check(w, goal)
        assert results["A"][0], results["A"]
        assert not results["B"][0] and "cavity" in results["B"][1]
        if "F" not in slots:
            with pytest.raises(GraphError, match="no compartment 'F'"):
                world_goal_check(w, Goal(goal.subject, "in", "sorter_1", "F"))


@pytest.mark.slow
def test_the_expert_drops_each_part_into_its_compartment(sort_pack):
    results = []
    for scene in sort_pack.scenes():
        with World.build(scene, sort_pack.asset_lookup) as w:
            for gl in scene.graph.goals:  # the drop point lies in the goal's compartment
                target = place_target(w, gl, (w.robot.reach_min, w.robot.reach_max))
                body_slot = asset_slots(w.assets["sorter_1"])[gl.slot]
                sp = w.pose("sorter_1")
                lx, ly = quat_matrix(sp.orientation)[:2, :2].T @ (np.asarray(target.xy) - np.asarray(sp.position[:2]))
                lo, hi = body_slot.min(axis=0), body_slot.max(axis=0)
                assert lo[0] < lx < hi[0] and lo[1] < ly < hi[1], (gl, lx, ly, lo, hi)
        results.append(run_expert(scene, sort_pack.asset_lookup, max_steps=400))
    # progress is the fraction of parts in their own compartment, and the expert sorts most of them
    for r in results:
        assert r.progress in (0.0, 1 / 3, 2 / 3, 1.0) or abs(r.progress * 3 - round(r.progress * 3)) < 1e-6
        assert r.success == (r.progress == 1.0)
    assert sum(r.progress for r in results) >= 1.0, [(r.progress, r.failure) for r in results]


def test_a_hex_nut_is_pinched_across_flats_and_a_washer_any_way(tmp_path):
    from scenegen.assets.build import generate_asset
    from scenegen.tasks.bins import flat_axes

    nut = generate_asset("hex_nut", 0, cache_dir=tmp_path, collision=FAST)
    washer = generate_asset("washer", 0, cache_dir=tmp_path, collision=FAST)
    yaw = 0.4
    pose = Pose((0.5, 0.0, 0.0), (0.0, 0.0, float(np.sin(yaw / 2)), float(np.cos(yaw / 2))))
    axes = sorted(flat_axes(nut, pose))
    # three axes 60 degrees apart, each along a flat's normal (the corners of the builder's hexagon are at
    # 15 + 60k degrees in the asset frame, so its flats face 45 + 60k degrees), turned with the nut
    assert len(axes) == 3 and np.allclose(np.diff(axes), np.pi / 3, atol=0.03)
    assert min(abs((a - (np.radians(45) + yaw) + np.pi / 6) % (np.pi / 3) - np.pi / 6) for a in axes) < 0.03
    assert flat_axes(washer, pose) == []
    tilted = Pose((0.5, 0.0, 0.0), (float(np.sin(0.4)), 0.0, 0.0, float(np.cos(0.4))))
    assert flat_axes(nut, tilted) == [], "a tilted nut shows no upright footprint"


def test_wall_gap_is_negative_when_a_finger_or_the_hand_leaves_the_opening():
    from shapely.geometry import box

    from scenegen.tasks.bins import HAND_ABOVE, HAND_HALF, wall_gap

    tote = (box(0.0, 0.0, 0.30, 0.20), 0.05)              # opening and rim height
    deep, shallow = np.array([0.15, 0.03, 0.01]), np.array([0.15, 0.03, 0.05 - HAND_ABOVE + 0.001])
    along_x, along_y = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    # 3 cm from the wall at y = 0: closing along the wall keeps the fingertips in, but the hand's side dips out
    assert wall_gap(tote, shallow, along_x, 0.08) == pytest.approx(0.03)   # the hand stays above the rim
    assert wall_gap(tote, deep, along_x, 0.08) == pytest.approx(0.03 - HAND_HALF[1])
    assert wall_gap(tote, shallow, along_y, 0.08) == pytest.approx(0.03 - 0.05)   # a fingertip over the wall


@pytest.mark.slow
def test_open_fingers_low_in_a_compartment_rise_clear_before_opening_and_leave_the_sorter(sort_pack):
    """Opened 2 mm below the rim, the fingers pressed both walls of the compartment and the retreat lifted the
    sorter (scene c38321ac268c); the release now raises the closed hand clear of the rim first."""
    from scenegen.tasks.config import EpisodeConfig
    from scenegen.tasks.episode import TaskEpisode
    from scenegen.tasks.expert import ScriptedExpert
    from scenegen.tasks.grasps import FINGER_REACH
    from scenegen.tasks.release import clear_height
    from scenegen.tasks.worlds import SceneSet

    scene = sort_pack.scenes()[0]
    env = TaskEpisode(SceneSet([scene], sort_pack.asset_lookup),
                      EpisodeConfig(image_keys=(), render_max_faces=0, max_episode_steps=400))
    try:
        env.reset(seed=0)
        expert, w, ctrl = ScriptedExpert(env), env.world, env.controller
        index, goal = next((i, g) for i, g in enumerate(expert.goals) if g.predicate == "in" and g.slot)
        sp = w.pose("sorter_1")
        rot = quat_matrix(sp.orientation)
        slot = asset_slots(w.assets["sorter_1"])[goal.slot]
        centre = rot[:2, :2] @ slot.mean(axis=0) + np.asarray(sp.position[:2])
        size = slot.max(axis=0) - slot.min(axis=0)
        # the fingers close across the compartment's narrower side: open, their outer faces span it
        yaw = float(np.arctan2(rot[1, 0], rot[0, 0])) + (np.pi / 2 if size[0] < size[1] else 0.0)
        low = clear_height(w, goal) - FINGER_REACH - 0.002 - 0.002  # the fingertips 2 mm below the rim
        assert clear_height(w, Goal(goal.subject, "in", "tote_1")) is None, "a tote has no compartments"
        for wp, speed in (((*centre, low + 0.08), 1.0), ((*centre, low), 0.2)):
            for _ in range(100):
                env.step(expert._move(np.array(wp), yaw, True, speed))
                if np.linalg.norm(ctrl.ee_pose()[0] - np.array(wp)) < 0.0015:
                    break
        assert abs(ctrl.ee_pose()[0][2] - low) < 0.003, "the closed hand is down between the walls"
        before = np.asarray(w.pose("sorter_1").position)
        expert.goal_index, expert.phase, expert.count = index, "release", 0
        for _ in range(60):
            env.step(expert.act())
            if expert.phase not in ("release", "retreat"):
                break
        assert expert.phase not in ("release", "retreat") and ctrl.ee_pose()[0][2] > low + 0.04, expert.phase
        moved = float(np.linalg.norm(np.asarray(w.pose("sorter_1").position) - before))
        assert moved < 0.002, f"the retreat moved the sorter {moved * 1000:.1f} mm"
    finally:
        env.close()
