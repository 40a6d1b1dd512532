import logging
import time

import numpy as np
import pytest
import trimesh

from scenegen.assets.build import finalize_asset
from scenegen.assets.collision import coacd as coacd_module
from scenegen.assets.collision.build import build_collision
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.collision.hulls import air_probes, bbox_error, covered, fit_to_bbox, merge_parts, proxy_gap
from scenegen.assets.mesh.simplify import simplify_to_tolerance
from scenegen.errors import ConfigError
from tests.helpers.asset_shapes import (
    annulus_pm,
    bin_pm,
    bowl_pm,
    box_pm,
    cavity_test,
    coacd_error,
    coacd_hang,
    coacd_segfault,
    cylinder_pm,
    mug_pm,
    sphere_pm,
)

FAST = CollisionConfig.fast()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("collision-cache")


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "vhacd"}, "'vhacd'"), ({"threshold": 0.0}, "threshold 0.0"), ({"max_hulls": 0}, "max_hulls 0"),
    ({"mcts_iterations": 0}, "mcts_iterations=0"), ({"bbox_tolerance": 0.9}, "bbox_tolerance 0.9"),
    ({"simplify": 0.5}, "simplify 0.5"), ({"max_hull_vertices": 3}, "max_hull_vertices 3"),
])
def test_config_validation_shows_the_value(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        CollisionConfig(**kwargs)


def test_config_is_frozen_and_fast_preset_overrides():
    cfg = CollisionConfig.fast(max_hulls=8)
    assert cfg.max_hulls == 8 and cfg.mcts_iterations < CollisionConfig().mcts_iterations
    with pytest.raises(AttributeError):
        cfg.threshold = 0.2  # type: ignore[misc]
    assert CollisionConfig().threshold == 0.05 and CollisionConfig().max_hulls == 16


@pytest.mark.parametrize("make, kind", [(box_pm, "box"), (cylinder_pm, "cylinder"), (sphere_pm, "sphere")])
def test_auto_uses_the_primitive_hint(make, kind, cache):
    pm = make()
    r = build_collision(pm.mesh, FAST, primitive=pm.primitive, cache_dir=cache)
    assert r.method == "primitive" and r.primitive["type"] == kind and len(r.parts) == 1
    assert r.bbox_error < 0.02


def test_cylinder_primitive_follows_its_axis(cache):
    mesh = trimesh.creation.cylinder(radius=0.01, height=0.12, sections=32)
    mesh.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))  # along x
    prim = {"type": "cylinder", "radius": 0.01, "height": 0.12, "axis": "x"}
    r = build_collision(mesh, FAST, primitive=prim, cache_dir=cache)
    assert r.method == "primitive" and r.bbox_error < 0.02
    assert r.parts[0].extents[0] == pytest.approx(0.12)


def test_auto_uses_the_hull_for_convex_and_coacd_for_concave(cache):
    convex = cylinder_pm(primitive=False)
    r = build_collision(convex.mesh, FAST, cache_dir=cache)
    assert r.method == "hull" and len(r.parts) == 1 and r.stats["convexity_ratio"] > 0.99
    ring = annulus_pm()
    r = build_collision(ring.mesh, FAST, cache_dir=cache)
    assert r.method == "coacd" and 2 <= len(r.parts) <= FAST.max_hulls
    # the hole survives: its centre is outside every part
    centre = ring.mesh.bounds.mean(axis=0)
    assert not any(p.contains([centre])[0] for p in r.parts)
    assert all(p.is_watertight and p.is_convex for p in r.parts)


@pytest.mark.parametrize("make", [bowl_pm, bin_pm, mug_pm, annulus_pm])
def test_proxy_bbox_matches_visual_within_5_percent(make, cache):
    pm = make()
    r = build_collision(pm.mesh, FAST, cavity=pm.cavity, cache_dir=cache)
    assert r.method == "coacd"
    lo = np.min([p.bounds[0] for p in r.parts], axis=0)
    hi = np.max([p.bounds[1] for p in r.parts], axis=0)
    np.testing.assert_allclose(hi - lo, pm.mesh.extents, rtol=0.05)
    np.testing.assert_allclose(lo, pm.mesh.bounds[0], atol=0.05 * pm.mesh.extents.max())


def test_fit_to_bbox_clips_inflated_parts_and_stretches_short_ones():
    mesh = trimesh.creation.box(extents=(0.1, 0.1, 0.1))
    inflated = [trimesh.creation.box(extents=(0.06, 0.12, 0.1),
                                     transform=trimesh.transformations.translation_matrix((-0.03, 0, 0.01))),
                trimesh.creation.box(extents=(0.07, 0.1, 0.1),
                                     transform=trimesh.transformations.translation_matrix((0.04, 0, 0)))]
    assert bbox_error(inflated, mesh) > 0.1
    fitted = fit_to_bbox(inflated, mesh, 0.05)
    assert bbox_error(fitted, mesh) < 1e-6
    assert all(p.is_convex for p in fitted)
    short = [trimesh.creation.box(extents=(0.08, 0.1, 0.1))]
    assert bbox_error(short, mesh) == pytest.approx(0.2)  # 2 cm short of 10 cm
    assert bbox_error(fit_to_bbox(short, mesh, 0.05), mesh) < 1e-6


def test_merge_parts_respects_the_budget_and_merges_neighbours_first():
    # Two rows of small cubes with a gap between rows: merging to 2 keeps the rows apart.
    cubes = [trimesh.creation.box(extents=(0.01, 0.01, 0.01),
                                  transform=trimesh.transformations.translation_matrix((0.012 * i, y, 0)))
             for y in (0.0, 0.1) for i in range(5)]
    merged = merge_parts(cubes, 2)
    assert len(merged) == 2
    spans = sorted(round(float(p.extents[1]), 3) for p in merged)
    assert spans == [0.01, 0.01]  # neither hull bridges the 10 cm gap
    assert merge_parts(cubes, 16) and len(merge_parts(cubes, 16)) == 10


def test_max_hulls_is_respected(cache):
    pm = bowl_pm()
    r = build_collision(pm.mesh, CollisionConfig.fast(max_hulls=4), cavity=True, cache_dir=cache)
    assert r.method == "coacd" and 1 <= len(r.parts) <= 4


def test_coacd_failure_falls_back_to_hull_with_warning(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(coacd_module, "CALL", coacd_error)
    pm = bowl_pm()
    with caplog.at_level(logging.WARNING, logger="scenegen.assets.collision.build"):
        r = build_collision(pm.mesh, FAST, cavity=True, cache_dir=tmp_path, name="bowl")
    assert r.method == "hull" and len(r.parts) == 1
    assert "CoACD failed (RuntimeError: synthetic failure)" in r.note and "convex hull" in r.note
    assert "bowl: CoACD failed" in caplog.text
    assert not list(tmp_path.rglob("*.npz"))  # failures are not cached


def spy_coacd(monkeypatch, marker):
    """Make CoACD calls run in this process, leave a file and fail."""
    def spy(*a, **k):
        marker.write_text("called")
        raise RuntimeError("spy")

    monkeypatch.setattr(coacd_module, "CALL", spy)


def test_decompositions_are_cached_and_deterministic(monkeypatch, tmp_path):
    pm = annulus_pm()
    first = build_collision(pm.mesh, FAST, cache_dir=tmp_path / "a")
    assert not first.cached and first.seconds > 0 and first.method == "coacd"
    assert len(list((tmp_path / "a" / "coacd").glob("*.npz"))) == 1
    again = build_collision(pm.mesh, FAST, cache_dir=tmp_path / "b")  # fresh cache: recomputed
    for p, q in zip(first.parts, again.parts, strict=True):
        np.testing.assert_array_equal(p.vertices, q.vertices)

    marker = tmp_path / "coacd-called"
    spy_coacd(monkeypatch, marker)
    hit = build_collision(pm.mesh, CollisionConfig.fast(isolate=False), cache_dir=tmp_path / "a")
    assert hit.cached and hit.seconds == 0.0 and len(hit.parts) == len(first.parts)
    assert not marker.exists()
    # different settings -> a different cache entry, so CoACD runs
    miss = build_collision(pm.mesh, CollisionConfig.fast(threshold=0.2, isolate=False), cache_dir=tmp_path / "a")
    assert marker.exists() and miss.method == "hull"


def test_isolation_and_timeout_fields_do_not_change_the_asset_key():
    from scenegen.assets.cache import sha256_of

    base = sha256_of({"c": CollisionConfig()})
    assert sha256_of({"c": CollisionConfig(isolate=False, timeout_s=5)}) == base
    assert sha256_of({"c": CollisionConfig(threshold=0.06)}) != base


def test_a_crash_in_coacd_does_not_kill_the_caller(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(coacd_module, "CALL", coacd_segfault)
    pm = bowl_pm()
    with caplog.at_level(logging.INFO):
        r = build_collision(pm.mesh, FAST, cavity=True, cache_dir=tmp_path, name="bowl")
    assert r.method == "hull" and "CoACD crashed (exit code -11)" in r.note
    assert "bowl: CoACD crashed" in caplog.text
    assert "retrying on the unsimplified mesh" in caplog.text or len(pm.mesh.faces) < 200


def test_a_hanging_coacd_is_stopped(monkeypatch, tmp_path):
    monkeypatch.setattr(coacd_module, "CALL", coacd_hang)
    t0 = time.perf_counter()
    r = build_collision(bowl_pm().mesh, CollisionConfig.fast(timeout_s=1.0), cavity=True, cache_dir=tmp_path)
    assert time.perf_counter() - t0 < 10
    assert r.method == "hull" and "longer than 1 s" in r.note


def test_in_process_mode_gives_the_same_parts(tmp_path):
    pm = annulus_pm()
    a = build_collision(pm.mesh, FAST, cache_dir=tmp_path / "a")
    b = build_collision(pm.mesh, CollisionConfig.fast(isolate=False), cache_dir=tmp_path / "b")
    assert len(a.parts) == len(b.parts)
    for p, q in zip(a.parts, b.parts, strict=True):
        np.testing.assert_array_equal(p.vertices, q.vertices)


def test_corrupt_decomposition_cache_entry_is_recomputed(tmp_path):
    pm = annulus_pm()
    build_collision(pm.mesh, FAST, cache_dir=tmp_path)
    (entry,) = (tmp_path / "coacd").glob("*.npz")
    entry.write_bytes(b"garbage")
    r = build_collision(pm.mesh, FAST, cache_dir=tmp_path)
    assert not r.cached and r.method == "coacd"


def test_forced_methods(cache):
    pm = bowl_pm()
    assert build_collision(pm.mesh, CollisionConfig(method="hull"), cavity=True).method == "hull"
    r = build_collision(pm.mesh, CollisionConfig(method="primitive"), cache_dir=cache)
    assert r.method == "primitive" and r.primitive["type"] == "box"
    np.testing.assert_allclose(r.parts[0].extents, pm.mesh.extents)


@pytest.mark.parametrize("make, category, config, method", [
    (bowl_pm, "bowl", CollisionConfig(), "coacd"), (bin_pm, "bin", FAST, "coacd"),
    (mug_pm, "mug", CollisionConfig.fast(method="coacd"), "coacd"), (mug_pm, "mug", CollisionConfig(), "direct")],
    ids=["bowl-default", "bin-fast", "mug-coacd", "mug-direct"])
def test_containers_keep_their_cavity(make, category, config, method, tmp_path, cache):
    pm = make()  # the hand-made meshes have no parts of their own: CoACD; the procedural mug brings its own
    asset = finalize_asset(pm, category, "test", 0, {}, asset_id="c" * 64, out_dir=tmp_path,
                           collision=config, cache_dir=cache)
    assert asset.collision_method == method
    pos, inside, (lo, hi) = cavity_test(asset, radius=0.01)
    assert inside, f"sphere ended at {pos}, container spans {lo}..{hi}"
    # and it rests on the floor of the cavity, not on a lid of hull over it
    assert pos[2] < lo[2] + 0.5 * (hi[2] - lo[2])


def test_hull_of_a_container_would_fail_the_cavity_test(tmp_path):
    # The control for the test above: a convex hull proxy fills the cavity.
    pm = bowl_pm()
    asset = finalize_asset(pm, "bowl", "test", 0, {}, asset_id="h" * 64, out_dir=tmp_path,
                           collision=CollisionConfig(method="hull"))
    assert asset.collision_method == "hull"
    pos, inside, (lo, hi) = cavity_test(asset, radius=0.01)
    assert not inside and pos[2] > hi[2], f"sphere at {pos}, hull top at {hi[2]}"


def test_simplify_to_tolerance_reduces_faces_and_keeps_it_closed():
    from tests.helpers.asset_shapes import bowl_mesh

    dense = bowl_mesh(sections=128)
    simple = simplify_to_tolerance(dense, 0.01 * np.linalg.norm(dense.extents))
    assert simple.is_watertight and len(simple.faces) < len(dense.faces)
    assert simple.volume == pytest.approx(dense.volume, rel=0.1)
    assert simplify_to_tolerance(dense, 0.0) is dense


def test_air_probes_lie_in_the_open_cavity():
    from tests.helpers.asset_shapes import bowl_mesh

    bowl = bowl_mesh()
    probes = air_probes(bowl)
    assert len(probes) > 20
    assert not bowl.contains(probes).any()
    lo, hi = bowl.bounds
    assert np.all(probes[:, 2] > lo[2]) and np.all(probes[:, 2] < hi[2])
    assert len(air_probes(trimesh.creation.box(extents=(0.05, 0.05, 0.05)))) == 0


def test_merge_does_not_bridge_a_cavity_while_another_merge_exists():
    def cube(x, y, z):
        return trimesh.creation.box(extents=(0.01, 0.01, 0.01),
                                    transform=trimesh.transformations.translation_matrix((x, y, z)))

    neck = [cube(0.005, 0, 0), cube(0.025, 0, 0)]  # 1 cm apart: the cheapest merge by volume
    apart = [cube(0.005, 0.1, 0), cube(0.035, 0.1, 0.03)]  # diagonal: a costly merge
    probe = np.array([[0.015, 0.0, 0.0]])  # the opening between the neck parts
    plain = merge_parts(neck + apart, 3)
    assert covered(plain, probe)[0]  # volume alone bridges the opening
    careful = merge_parts(neck + apart, 3, probes=probe)
    assert not covered(careful, probe)[0] and len(careful) == 3


def test_proxy_gap_measures_how_far_the_mesh_pokes_out():
    mesh = trimesh.creation.box(extents=(0.1, 0.1, 0.1))
    assert proxy_gap([mesh.copy()], mesh.vertices) == pytest.approx(0.0, abs=1e-9)
    short = trimesh.creation.box(extents=(0.1, 0.1, 0.09),
                                 transform=trimesh.transformations.translation_matrix((0, 0, -0.005)))
    assert proxy_gap([short], mesh.vertices) == pytest.approx(0.01, rel=1e-6)


def test_a_primitive_that_misses_the_bbox_is_replaced(cache):
    egg = trimesh.creation.icosphere(subdivisions=3, radius=0.03)
    egg.apply_scale((1.0, 1.0, 1.6))
    r = build_collision(egg, FAST, primitive={"type": "sphere", "radius": 0.035}, cache_dir=cache)
    assert r.method == "hull" and r.bbox_error < 0.01
    assert r.stats["gap"] == pytest.approx(0.0, abs=1e-6)
