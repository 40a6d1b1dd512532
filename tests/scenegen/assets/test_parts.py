"""The builders' own convex decompositions (``procedural._parts``) and the collision stage using them."""

import numpy as np
import pytest
import trimesh

from scenegen.assets.collision.build import build_collision
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.collision.hulls import covered, proxy_gap
from scenegen.assets.procedural import build_mesh
from scenegen.assets.procedural._parts import (
    clip,
    concavity,
    runs,
    sector_count,
    subtract_box,
    volume,
)
from scenegen.catalog import load_catalog
from scenegen.errors import ConfigError

CAT = load_catalog()
SHELLS = ["bowl", "plate", "colander", "cup", "mug", "pan", "jar", "vase"]
BOXES = ["bin", "tote", "tray", "basket", "sorter"]
WITH_PARTS = SHELLS + BOXES + ["hex_nut", "washer", "bearing_ring"]
TOL = CollisionConfig().direct_tolerance


def _pm(name: str, seed: int = 0, **attrs):
    return build_mesh(CAT.get(name), np.random.default_rng(seed), attrs, 5000)


def test_concavity_of_convex_and_notched_polygons():
    assert concavity(np.array([(0, 0), (1, 0), (1, 1), (0, 1)])) == 0.0
    notch = np.array([(0, 0), (1, 0), (1, 1), (0.5, 0.7), (0, 1)])  # a notch 0.3 deep in the top edge
    # the hull's edge midpoint (0.5, 1) is 0.15 / |(0.5, 0.3)| from the notch's sides
    assert concavity(notch) == pytest.approx(0.15 / np.hypot(0.5, 0.3), abs=0.003)


def test_runs_share_their_ends_and_cover_every_index():
    out = runs(7, lambda a, b: b - a <= 2)
    assert out == [(0, 2), (2, 4), (4, 6)]
    ring = runs(6, lambda a, b: b - a <= 3, closed=True)
    pairs = zip(ring, ring[1:], strict=False)
    assert ring[0][0] == 0 and ring[-1][1] == 6 and all(a2 == b1 for (_, b1), (a2, _) in pairs)


def test_sector_count_keeps_the_chord_within_tolerance():
    k = sector_count(48, 0.07, 0.002)
    assert 48 % k == 0 and 0.07 * (1 - np.cos(np.pi / k)) <= 0.002
    smaller = [d for d in range(4, k) if 48 % d == 0]
    assert all(0.07 * (1 - np.cos(np.pi / d)) > 0.002 for d in smaller)


def test_clip_and_box_subtraction_are_exact():
    cube = trimesh.creation.box(extents=(1, 1, 1)).vertices
    half = clip(cube, (1, 0, 0), 0.0)
    assert volume(half) == pytest.approx(0.5)
    slot = ((0.2, 2.0, 0.3), (0.1, 0.0, 0.1))  # a slot right through the cube
    pieces = subtract_box([cube], slot[1], slot[0])
    assert sum(volume(p) for p in pieces) == pytest.approx(1.0 - 0.2 * 1.0 * 0.3)
    inside = np.array([[0.1, y, 0.1] for y in np.linspace(-0.45, 0.45, 7)])
    assert not covered([trimesh.convex.convex_hull(p) for p in pieces], inside).any(), "the slot must stay open"
    far = subtract_box([cube], (5, 5, 5), (1, 1, 1))
    assert len(far) == 1 and far[0] is cube, "a box that misses the part leaves it whole"


@pytest.mark.parametrize("name", WITH_PARTS)
def test_parts_are_convex_cover_the_mesh_and_stay_inside_it(name):
    pm = _pm(name)
    parts = pm.parts(TOL)
    assert parts, "a builder with parts gives at least one"
    mesh = pm.mesh
    verts = np.asarray(mesh.vertices, dtype=float)
    # every vertex of the visual lies in a part, but for the grooves a shell's wall sectors leave at
    # their boundaries on the inner surface (no deeper than the tolerance)
    assert proxy_gap(parts, verts) <= TOL + 1e-6
    lo, hi = mesh.bounds
    for p in parts:
        assert p.is_watertight and p.volume > 0
        assert p.volume == pytest.approx(p.convex_hull.volume, rel=1e-6)
        assert np.all(p.vertices >= lo - 1e-6) and np.all(p.vertices <= hi + 1e-6)
    pts = np.vstack([p.vertices for p in parts])
    outside = ~mesh.contains(pts)
    if outside.any():  # a part's points lie on the surface, or a chord's bridge (within tol) off it
        _, dist, _ = trimesh.proximity.closest_point(mesh, pts[outside])
        assert dist.max() <= TOL + 1e-5, f"a part pokes {dist.max() * 1000:.2f} mm out of the visual mesh"


@pytest.mark.parametrize("name", SHELLS + BOXES)
def test_container_parts_keep_the_cavity_open(name):
    pm = _pm(name)
    parts = pm.parts(TOL)
    c = np.asarray(pm.params["cavity_point"], dtype=float)
    column = np.array([c + [0, 0, dz] for dz in np.linspace(0.0, pm.mesh.bounds[1][2] - c[2] - 0.002, 8)])
    assert not covered(parts, column).any(), "the parts bridge the cavity above its floor"


@pytest.mark.parametrize("name", ["bowl", "bin", "mug"])
def test_parts_follow_the_asset_size(name):
    for size in ("small", "large"):
        pm = _pm(name, size=size, scale=0.5)
        parts = pm.parts(TOL)
        assert proxy_gap(parts, np.asarray(pm.mesh.vertices)) <= TOL + 1e-6
        lo = np.min([p.bounds[0] for p in parts], axis=0)
        hi = np.max([p.bounds[1] for p in parts], axis=0)
        np.testing.assert_allclose(hi - lo, pm.mesh.extents, atol=1e-6)


def test_tote_handle_slots_stay_open_in_the_parts():
    pm = _pm("tote")
    parts = pm.parts(TOL)
    hx = pm.mesh.bounds[1][0] - 0.006 - 0.002                # inside the +x short wall (under the lip)
    top = pm.mesh.bounds[1][2]
    z = np.linspace(0.01, top - 0.01, 200)
    wall = np.column_stack([np.full_like(z, hx), np.zeros_like(z), z])
    slot = ~pm.mesh.contains(wall)
    assert slot.sum() > 5, "the slot is there in the visual mesh"
    assert not covered(parts, wall[slot]).any(), "the parts fill the handle slot"
    assert covered(parts, wall[~slot]).all(), "the wall around the slot is in the parts"


def test_which_builders_emit_parts():
    assert all(_pm(n).parts is not None for n in WITH_PARTS)
    assert _pm("banana").parts is None and _pm("table").parts is None


def test_tighter_tolerance_gives_more_parts():
    pm = _pm("bowl")
    assert len(pm.parts(0.001)) > len(pm.parts(0.004))


def test_auto_uses_the_builders_parts_and_coacd_stays_an_option(monkeypatch):
    from scenegen.assets.collision import build as cb

    pm = _pm("cup")
    res = build_collision(pm.mesh, CollisionConfig(), cavity=True, parts=pm.parts)
    assert res.method == "direct" and len(res.parts) == res.stats["direct_parts"] > 1
    assert res.stats["gap"] <= TOL + 1e-6 and res.bbox_error < 1e-6 and res.stats["probes_open"] > 0.8
    calls = []

    def fake(mesh, config, cache_dir=None):
        calls.append(len(mesh.vertices))
        return [mesh.convex_hull], 0.0, False

    monkeypatch.setattr(cb, "run_coacd", fake)
    forced = build_collision(pm.mesh, CollisionConfig(method="coacd"), cavity=True, parts=pm.parts)
    assert forced.method == "coacd" and calls, "method='coacd' decomposes with CoACD even with the builder's parts"


def test_direct_tolerance_is_validated():
    with pytest.raises(ConfigError, match="direct_tolerance"):
        CollisionConfig(direct_tolerance=0.5)


def test_one_coacd_decomposition_serves_every_size_of_a_shape(tmp_path):
    from scenegen.assets.build import generate_asset

    cfg = CollisionConfig.fast()
    runs_ = []
    for attrs in ({"size": "small", "scale": 0.1}, {"size": "large", "scale": 0.9}, {}):
        t: dict = {}
        a = generate_asset("screwdriver", 3, attrs, cache_dir=tmp_path, collision=cfg, timings=t)
        assert a.collision_method == "coacd"
        runs_.append((a, t))
    assert len(list((tmp_path / "coacd").glob("*.npz"))) == 1, "one decomposition for the shape"
    assert runs_[1][1]["coacd"] == 0.0 and runs_[2][1]["coacd"] == 0.0
    small, large = runs_[0][0], runs_[1][0]
    assert large.extents[0] > small.extents[0] * 1.2
    for a in (small, large):  # the shared parts were scaled onto each asset's own box
        parts = [trimesh.load(a.file(rel), force="mesh") for rel in a.collision]
        lo = np.min([p.bounds[0] for p in parts], axis=0)
        hi = np.max([p.bounds[1] for p in parts], axis=0)
        np.testing.assert_allclose(hi - lo, a.extents, rtol=0.05)


def test_rest_height_is_exact_on_a_box_and_the_drop_test_measures_a_flat_proxy_as_faithful():
    from scenegen.assets.collision.fidelity import drop_test, rest_height

    slab = trimesh.creation.box(extents=(0.3, 0.3, 0.04))
    slab.apply_translation((0, 0, 0.02))
    assert rest_height(slab, 0.05, -0.02, 0.03) == pytest.approx(0.07, abs=1e-5)
    assert rest_height(slab, 0.5, 0.0, 0.03) == pytest.approx(0.03, abs=1e-5), "beside it: on the ground"
    drops = drop_test([slab], slab, [(0.0, 0.0, 0.02), (0.05, 0.05, 0.04)])
    assert all(abs(d.error) < 5e-4 for d in drops), [d.error for d in drops]
    assert 0.0 < drops[0].margin < 0.005


def test_drop_test_tells_the_builders_parts_from_a_hull_over_the_cavity():
    from scenegen.assets.collision.fidelity import cavity_drops, drop_test

    pm = _pm("bowl")
    drops = cavity_drops(pm.mesh, pm.params["cavity_point"])
    own = drop_test(pm.parts(TOL), pm.mesh, drops)
    lid = drop_test([pm.mesh.convex_hull], pm.mesh, drops)
    assert max(abs(d.error) for d in own) < 0.004
    assert min(d.error for d in lid) > 0.02, "a hull holds the spheres above the cavity"
