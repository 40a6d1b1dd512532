"""End to end: every catalog category, three seeds, through generate_asset.

All assets are built once per session (two worker processes, cheaper CoACD settings)
into a cache under pytest's temp folder; the tests then check the files and the physics.
"""

import os
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import trimesh

from scenegen.assets.base import Asset
from scenegen.assets.build import generate_asset
from scenegen.assets.collision.config import CollisionConfig
from scenegen.catalog import load_catalog
from tests.helpers.asset_shapes import bullet_client, cavity_test, drop_test

pytestmark = pytest.mark.slow  # builds every category's asset: about a minute

CAT = load_catalog()
SEEDS = (0, 1, 2)
CONFIG = CollisionConfig.fast()
MAX_FACES = 5000
CASES = [(c.name, s) for c in CAT for s in SEEDS]
CONTAINERS = [c.name for c in CAT if c.container]


def _build(args):
    category, seed, cache = args
    t0 = time.perf_counter()
    try:
        a = generate_asset(category, seed, cache_dir=cache, collision=CONFIG, max_faces=MAX_FACES)
        return category, seed, str(a.path), time.perf_counter() - t0
    except Exception as exc:  # reported by the test of that case
        return category, seed, f"error: {type(exc).__name__}: {exc}", time.perf_counter() - t0


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    cache = tmp_path_factory.mktemp("assets-all")
    jobs = [(c, s, str(cache)) for c, s in CASES]
    workers = min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_build, jobs, chunksize=1))
    return cache, {(c, s): r for c, s, r, _ in results}


def load(built, category, seed) -> Asset:
    res = built[1][(category, seed)]
    assert not res.startswith("error: "), res
    return Asset.load(res)


def visual_mesh(a: Asset) -> trimesh.Trimesh:
    m = trimesh.load(a.file(a.visual), force="mesh")
    m.merge_vertices(merge_tex=True, merge_norm=True)
    return m


@pytest.mark.parametrize("category, seed", CASES)
def test_mesh_is_valid_and_in_range(built, category, seed):
    a = load(built, category, seed)
    cat = CAT.get(category)
    m = visual_mesh(a)
    assert 0 < len(m.faces) <= MAX_FACES and a.visual_faces == len(m.faces)
    assert m.area_faces.min() > 0, "degenerate faces"
    assert m.is_winding_consistent
    assert m.is_watertight, "the object is closed, its mesh must be watertight"
    assert m.volume > 0, "normals point inwards"
    assert a.volume == pytest.approx(m.volume, rel=1e-4)
    np.testing.assert_allclose(m.bounds[0], [-a.extents[0] / 2, -a.extents[1] / 2, 0], atol=1e-6)  # asset frame
    for e, lo, hi, axis in zip(a.extents, cat.size_min, cat.size_max, "xyz", strict=True):
        assert lo * 0.98 - 1e-4 <= e <= hi * 1.02 + 1e-4, f"{axis} extent {e:.4f} outside {lo}..{hi}"
    assert cat.mass_range[0] <= a.mass <= cat.mass_range[1]
    assert a.grasp.get("mode") and a.grasp.get("width", 0) > 0


@pytest.mark.parametrize("category, seed", CASES)
def test_inertia_is_physical_and_matches_the_mesh(built, category, seed):
    a = load(built, category, seed)
    inertia = np.array(a.inertia)
    np.testing.assert_allclose(inertia, inertia.T, atol=1e-15)
    eig = np.linalg.eigvalsh(inertia)
    assert eig.min() > 0 and not np.allclose(inertia, np.eye(3))
    assert eig[0] + eig[1] >= eig[2] * (1 - 1e-6), "principal moments violate the triangle inequality"
    m = visual_mesh(a)
    solid = m.convex_hull if a.params["physics"]["volume_from_hull"] else m
    solid.density = a.mass / solid.volume
    np.testing.assert_allclose(inertia, solid.moment_inertia, rtol=1e-3, atol=1e-3 * eig.max())
    np.testing.assert_allclose(a.com, solid.center_mass, atol=1e-5)


@pytest.mark.parametrize("category, seed", CASES)
def test_collision_proxy_fits_and_is_within_budget(built, category, seed):
    a = load(built, category, seed)
    assert len(a.collision) >= 1
    if a.collision_method == "coacd":  # the builder's own parts follow direct_tolerance, not the CoACD budget
        assert len(a.collision) <= CONFIG.max_hulls
    parts = [trimesh.load(a.file(rel), force="mesh") for rel in a.collision]
    for p in parts:  # convex up to the rounding of the OBJ text
        # parts are convex hulls: only float rounding (~1e-6 on thin parts) may separate the two volumes
        assert p.volume > 0 and p.volume == pytest.approx(p.convex_hull.volume, rel=1e-5)
    lo = np.min([p.bounds[0] for p in parts], axis=0)
    hi = np.max([p.bounds[1] for p in parts], axis=0)
    ext = np.array(a.extents)
    np.testing.assert_allclose(hi - lo, ext, rtol=0.05)
    assert np.all(np.abs(lo - [-ext[0] / 2, -ext[1] / 2, 0]) <= 0.05 * ext)
    if CAT.get(category).container:
        assert a.collision_method in ("direct", "coacd"), "a container needs a decomposition to keep its cavity"
    root = ET.parse(a.urdf_path).getroot()
    n_col = len(root.findall("link/collision"))
    assert n_col == (1 if a.collision_method == "primitive" else len(a.collision))


@pytest.mark.parametrize("category, seed", CASES)
def test_urdf_loads_and_drop_test(built, category, seed):
    a = load(built, category, seed)
    p, cid = bullet_client()
    try:
        body = p.loadURDF(str(a.urdf_path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)
        info = p.getDynamicsInfo(body, -1, physicsClientId=cid)
        assert info[0] == pytest.approx(a.mass, rel=1e-5) and info[1] == pytest.approx(a.friction, rel=1e-5)
    finally:
        p.disconnect(cid)
    drift, speed, vmax, low, tilt = drop_test(a, height=0.05, seconds=1.0)
    assert speed < 0.01, f"still moving at {speed:.3f} m/s after 1 s"
    assert vmax < 2.0, f"exploded: peak speed {vmax:.2f} m/s"
    assert drift < 0.05, f"slid or rolled {drift:.3f} m"
    assert -0.004 < low < 0.006, f"rests with its lowest point at z={low:.4f}"


@pytest.mark.parametrize("category, seed", [(c, s) for c in CONTAINERS for s in SEEDS])
def test_containers_keep_their_cavity(built, category, seed):
    a = load(built, category, seed)
    pos, inside, (lo, hi) = cavity_test(a, radius=0.01)
    assert inside, f"a 1 cm sphere ended at {pos.round(3)}, outside {lo.round(3)}..{hi.round(3)}"


def test_cache_hit_for_every_asset_is_a_file_read(built, monkeypatch):
    import coacd

    import scenegen.assets.build as gen

    monkeypatch.setattr(coacd, "run_coacd", lambda *a, **k: pytest.fail("CoACD ran on a cache hit"))
    monkeypatch.setattr(gen, "build_mesh", lambda *a, **k: pytest.fail("mesh rebuilt on a cache hit"))
    cache, results = built
    t0 = time.perf_counter()
    for (category, seed), path in results.items():
        if path.startswith("error: "):
            continue
        a = generate_asset(category, seed, cache_dir=cache, collision=CONFIG, max_faces=MAX_FACES)
        assert str(a.path) == path
    per_asset = (time.perf_counter() - t0) / len(results)
    assert per_asset < 0.05, f"a cache hit took {per_asset * 1000:.1f} ms"


@pytest.mark.parametrize("category", ["bin", "hammer", "block"])
def test_generation_is_deterministic_across_processes(built, category, tmp_path):
    fresh = generate_asset(category, 1, cache_dir=tmp_path, collision=CONFIG, max_faces=MAX_FACES)
    first = load(built, category, 1)
    assert fresh.id == first.id and fresh.to_dict() == first.to_dict()
    for rel in [fresh.visual, fresh.urdf, *fresh.collision]:
        assert fresh.file(rel).read_bytes() == first.file(rel).read_bytes(), rel
