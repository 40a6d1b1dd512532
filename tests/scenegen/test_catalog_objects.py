"""Catalog objects (issue 13): the categories asked for, their flags and sizes, a builder each,
graspable by the registered gripper at both size extremes, and every object at rest once dropped."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from qa.config import PhysicsConfig
from scenegen.assets.build import generate_asset
from scenegen.assets.procedural import GENERATORS, ProceduralMesh, build_mesh
from scenegen.catalog import ASSETS_DIR, GRIP_MARGIN, Catalog, load_catalog
from scenegen.errors import CatalogError, GripperError
from scenegen.graph import SceneGraph
from scenegen.layout.compose import build_scene
from scenegen.pipeline import PipelineConfig
from scenegen.rotations import axis_angle_quat, quat_mul
from scenegen.scene import Pose
from scenegen.sim import robots
from scenegen.sim.robots import PANDA, RobotSpec, get_robot
from scenegen.sim.world import World
from tests.helpers.scene_assets import FAST, cache_dir

CATALOG = load_catalog()
NAMES = [c.name for c in CATALOG]
GRASPABLE = [c.name for c in CATALOG if c.graspable]
ROUND_FRUIT = ("apple", "orange", "tomato", "peach", "onion", "pear", "avocado")
EXTREMES = (0.0, 1.0)


@functools.cache
def built(name: str, scale: float, seed: int = 0) -> ProceduralMesh:
    return build_mesh(CATALOG.get(name), np.random.default_rng(seed), {"scale": scale})


def test_the_catalog_has_the_objects_the_issue_asks_for():
    assert len(CATALOG) >= 60
    for name in ("peach", "toolbox", "kettle", "knife", "teapot", "egg", "phone", "remote", "lid", "sponge",
                 "soap", "scrub_brush", "box", "pan", "pot", "glass", "tennis_ball", "colander", "mug"):
        assert name in CATALOG, name
    assert CATALOG.lookup("pot") == ("pot", False) and CATALOG.lookup("pots") == ("pot", True)
    assert CATALOG.lookup("glass") == ("glass", False) and CATALOG.lookup("tumbler") == ("glass", False)
    assert CATALOG.lookup("cardboard box") == ("box", False)
    assert CATALOG.lookup("parcel") == ("package", False)
    for c in CATALOG:
        assert c.name in GENERATORS.get(c.generator, {}), f"{c.name} has no builder in {c.generator!r}"


def test_flags_and_real_sizes():
    box, pan, mug, ball = (CATALOG.get(n) for n in ("box", "pan", "mug", "tennis_ball"))
    assert box.container and not box.graspable                      # an open cardboard box holds things
    assert pan.container and pan.support                            # a pan holds and supports
    assert CATALOG.get("pot").container and CATALOG.get("glass").container and CATALOG.get("toolbox").container
    assert 0.055 <= ball.mass_range[0] <= 0.057 <= ball.mass_range[1] <= 0.06   # a tennis ball is ~57 g
    assert 0.065 <= ball.size_min[0] <= ball.size_max[0] <= 0.069
    assert (mug.size_min[1], mug.size_max[1]) == (0.08, 0.09)        # a mug body is 8-9 cm across ...
    assert mug.grasp_part == "handle" and mug.size_max[0] > mug.size_max[1]   # ... with a handle to hold
    assert CATALOG.get("egg").mass_range[0] >= 0.045 and CATALOG.get("egg").mass_range[1] <= 0.075


def _data() -> dict:
    return json.loads((ASSETS_DIR / "catalog.json").read_text())


def test_grasp_data_is_checked_when_the_catalog_loads():
    bad = _data()
    bad["categories"]["mug"]["grasp"] = {"part": "ear", "width": [0.01, 0.02]}
    with pytest.raises(CatalogError, match="unknown grasp part 'ear'"):
        Catalog(bad)
    bad["categories"]["mug"]["grasp"] = {"part": "handle", "width": [0.02, 0.01]}
    with pytest.raises(CatalogError, match="grasp width"):
        Catalog(bad)
    twice = _data()
    twice["categories"]["glass"]["synonyms"].append("cup")
    with pytest.raises(CatalogError, match="the word 'cup' names both"):
        Catalog(twice)


def test_every_graspable_category_fits_the_panda_at_both_size_extremes():
    assert CATALOG.gripper_problems(PANDA.max_opening) == []
    for c in CATALOG:
        if c.graspable:
            lo, hi = c.grasp_width
            assert 0 < lo <= hi and hi + GRIP_MARGIN <= PANDA.max_opening + 1e-9, c.name


def test_a_gripper_too_small_for_the_catalog_is_refused_at_load_time(monkeypatch):
    monkeypatch.setattr(robots, "ROBOTS", dict(robots.ROBOTS))
    small = RobotSpec(name="small_hand", urdf="franka_panda/panda.urdf", ee_link="panda_grasptarget",
                      arm_joints=PANDA.arm_joints, finger_joints=PANDA.finger_joints, home=PANDA.home,
                      max_opening=0.06)
    robots.register_robot(small)
    with pytest.raises(GripperError, match=r"robot 'small_hand': category '\w+' is graspable by its \w+, "
                                           r"[\d.]+-[\d.]+ cm across over its size range .* cm, but the gripper "
                                           r"opens 6\.0 cm"):
        get_robot("small_hand")
    assert get_robot("panda") is PANDA
    with pytest.raises(GripperError, match="'mug'"):     # the message names the category that does not fit
        Catalog(_only(["mug"])).check_gripper(0.005)


def _only(names: list[str]) -> dict:
    data = _data()
    data["categories"] = {n: data["categories"][n] for n in names}
    return data


def _handle_width(pm: ProceduralMesh) -> float:
    """Width across y of the part of a mug beyond its round body: its handle."""
    v = pm.mesh.vertices
    edge = pm.params["cavity_point"][0] + pm.params["diameter"] / 2 + 0.002
    return float(np.ptp(v[v[:, 0] > edge, 1]))


@pytest.mark.parametrize("scale", EXTREMES)
@pytest.mark.parametrize("name", NAMES)
def test_every_category_builds_at_both_size_extremes(name, scale):
    pm, cat = built(name, scale), CATALOG.get(name)
    m = pm.mesh
    assert m.is_watertight and m.is_winding_consistent and m.volume > 0
    assert 0 < len(m.faces) <= 5000
    want = np.array(cat.size_max if scale else cat.size_min)
    assert np.all(m.extents >= want * 0.97) and np.all(m.extents <= want * 1.03), (m.extents, want)
    assert pm.cavity or not cat.container, f"{name} is a container without a cavity"


@pytest.mark.parametrize("scale", EXTREMES)
@pytest.mark.parametrize("name", GRASPABLE)
def test_the_part_a_gripper_closes_on_has_the_catalog_width(name, scale):
    """The builders' grasp widths lie in the catalog's declared range, so the load-time check is honest."""
    pm, cat = built(name, scale), CATALOG.get(name)
    width = _handle_width(pm) if name == "mug" else float(pm.grasp["width"])
    lo, hi = cat.grasp_width
    assert lo * 0.97 - 5e-4 <= width <= hi * 1.03 + 5e-4, (name, scale, width, cat.grasp_width)
    assert width + GRIP_MARGIN <= PANDA.max_opening + 1e-9, (name, scale, width)


@pytest.mark.parametrize("name", ROUND_FRUIT)
def test_round_fruit_stands_on_a_flat_base(name):
    for scale in EXTREMES:
        m = built(name, scale).mesh
        base = m.vertices[m.vertices[:, 2] < 1e-6]
        radius = np.linalg.norm(base[:, :2], axis=1).max()
        assert radius >= 0.15 * m.extents[0], (name, scale, radius, m.extents)


def test_the_colander_is_full_of_holes_and_the_box_is_open():
    m = built("colander", 0.5).mesh
    genus = (2 - m.euler_number) // 2
    assert genus >= 20, genus                            # every drain hole is a through hole
    pm = built("box", 0.5)
    top = pm.mesh.bounds[1][2]
    cav = pm.params["cavity_point"]
    assert not pm.mesh.contains([[cav[0], cav[1], top - 0.002]])[0]


# --------------------------------------------------------------------------- rest after a drop

def _drop_and_settle(name: str, scale: float, cache) -> tuple:
    table = generate_asset("table", 0, cache_dir=cache, collision=FAST)
    a = generate_asset(name, 1, {"scale": scale}, cache_dir=cache, collision=FAST)
    g = SceneGraph(f"let the {name} rest")
    g.add_object("table", "table", "support")
    g.add_object("obj", name, "target")
    g.add_relation("obj", "on", "table")
    scene = build_scene(g, {"table": table, "obj": a}, seed=0)
    with World.build(scene, {table.id: table, a.id: a}) as w:
        p = w.pose("obj")
        tilted = quat_mul(axis_angle_quat((0.7071, 0.7071, 0.0), np.radians(5.0)), p.orientation)
        w.set_pose("obj", Pose((p.position[0], p.position[1], p.position[2] + 0.015), tilted))
        report = w.settle(max_seconds=PipelineConfig().settle_seconds)
        end = w.pose("obj")
    return report, float(np.linalg.norm(np.subtract(end.position[:2], p.position[:2])))


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n != "table"])
def test_every_object_comes_to_rest_when_dropped_on_the_table(name, tmp_path_factory):
    """Dropped from 1.5 cm with a 5 degree tilt, each object at both size extremes stops inside the
    settle budget of generation, with QA's kinetic-energy and displacement limits to spare."""
    qa = PhysicsConfig()
    for scale in EXTREMES:
        report, drift = _drop_and_settle(name, scale, cache_dir(tmp_path_factory))
        assert report.at_rest, (name, scale, report.moving)
        assert report.seconds < PipelineConfig().settle_seconds
        assert report.kinetic_energy <= qa.max_kinetic_energy, (name, scale, report.kinetic_energy)
        assert drift <= qa.max_displacement, (name, scale, drift)
