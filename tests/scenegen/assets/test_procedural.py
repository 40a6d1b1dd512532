"""Procedural meshes: every catalog category, several seeds, validity, frame, size, cavity."""

from __future__ import annotations

import dataclasses
import functools
import json

import numpy as np
import pytest
import trimesh

from scenegen.assets.procedural import GENERATORS, ProceduralMesh, build_mesh
from scenegen.catalog import load_catalog
from scenegen.errors import AssetError

CATALOG = load_catalog()
NAMES = [c.name for c in CATALOG]
SEEDS = (0, 1, 2)
TOL = 0.02
TEXTURED = ("table", "cutting_board", "box", "cereal_box", "book")


@functools.cache
def built(name: str, seed: int, attrs: str = "{}") -> ProceduralMesh:
    return build_mesh(CATALOG.get(name), np.random.default_rng(seed), json.loads(attrs))


def test_catalog_has_at_least_60_categories_all_with_their_own_builder():
    build_mesh(CATALOG.get("ball"), np.random.default_rng(0))  # loads every family module
    assert len(NAMES) >= 60
    for c in CATALOG:
        assert c.name in GENERATORS.get(c.generator, {}), f"{c.name} has no builder in {c.generator}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_mesh_is_valid_and_in_the_asset_frame(name, seed):
    pm = built(name, seed)
    m, cat = pm.mesh, CATALOG.get(name)
    assert isinstance(m, trimesh.Trimesh)
    if pm.closed:
        assert m.is_watertight
    assert m.is_winding_consistent
    assert m.volume > 0
    assert 0 < len(m.faces) <= 5000
    assert m.nondegenerate_faces().all()
    assert m.area_faces.min() > 1e-12
    assert len(np.unique(m.vertices, axis=0)) == len(m.vertices)          # no duplicate vertices
    assert len(np.unique(m.faces)) == len(m.vertices)                     # no unreferenced vertices
    lo, hi = m.bounds
    assert abs(lo[2]) < 1e-9
    assert abs(lo[0] + hi[0]) < 1e-9 and abs(lo[1] + hi[1]) < 1e-9
    ext = m.extents
    assert np.all(ext >= np.array(cat.size_min) * (1 - TOL)), (ext, cat.size_min)
    assert np.all(ext <= np.array(cat.size_max) * (1 + TOL)), (ext, cat.size_max)
    assert ext[0] >= ext[1] * (1 - 1e-6), "x must be the long horizontal axis"


@pytest.mark.parametrize("name", NAMES)
def test_params_grasp_and_primitive_are_plain_and_consistent(name):
    pm = built(name, 0)
    ext = pm.mesh.extents
    json.dumps(pm.params)
    json.dumps(pm.grasp)
    assert pm.params and all(isinstance(k, str) for k in pm.params)
    assert pm.grasp["mode"] in ("top", "side", "rim")
    assert 0 < pm.grasp["width"] <= max(ext[0], ext[1]) + 1e-9
    assert 0 <= pm.grasp["height"] <= ext[2] + 1e-9
    assert abs(pm.grasp.get("x", 0.0)) <= ext[0] / 2 + 1e-9
    prim = pm.primitive
    if prim is None:
        return
    json.dumps(prim)
    if prim["type"] == "box":
        assert np.allclose(prim["extents"], ext, rtol=1e-6)
    elif prim["type"] == "sphere":
        assert abs(2 * prim["radius"] - ext.mean()) < 0.05 * ext.mean()
    elif prim["type"] == "cylinder":
        axis = "xyz".index(prim["axis"])
        assert abs(prim["height"] - ext[axis]) < 1e-6
        assert abs(2 * prim["radius"] - max(np.delete(ext, axis))) < 0.02 * ext.max()
    else:
        pytest.fail(f"unknown primitive {prim}")


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_mesh_and_different_seeds_different_params(name):
    a = build_mesh(CATALOG.get(name), np.random.default_rng(7))
    b = build_mesh(CATALOG.get(name), np.random.default_rng(7))
    assert np.array_equal(a.mesh.vertices, b.mesh.vertices)
    assert np.array_equal(a.mesh.faces, b.mesh.faces)
    assert a.params == b.params
    params = [json.dumps(built(name, s).params, sort_keys=True) for s in SEEDS]
    assert len(set(params)) == len(SEEDS)


@pytest.mark.parametrize("name", NAMES)
def test_size_attribute_orders_extents(name):
    small = built(name, 3, json.dumps({"size": "small"})).mesh.extents
    large = built(name, 3, json.dumps({"size": "large"})).mesh.extents
    assert np.all(small <= large + 1e-9), (small, large)
    assert np.prod(small) < np.prod(large)


@pytest.mark.parametrize("name", ["block", "table", "bin", "tray", "washer", "ball", "wrench", "cereal_box"])
def test_scale_picks_the_exact_fraction(name):
    cat = CATALOG.get(name)
    for s, want in ((0.0, cat.size_min), (1.0, cat.size_max)):
        ext = built(name, 5, json.dumps({"scale": s})).mesh.extents
        assert np.allclose(ext, want, rtol=1e-6), (s, ext, want)
    half = built(name, 5, json.dumps({"size": "large", "scale": 0.0})).mesh.extents
    lo = CATALOG.size_classes["large"][0]
    assert np.allclose(half, np.array(cat.size_min) + lo * (np.array(cat.size_max) - np.array(cat.size_min)))


CONTAINERS = [c.name for c in CATALOG if c.container] + ["bowl", "mug", "cup", "jar", "vase"]


@pytest.mark.parametrize("name", sorted(set(CONTAINERS)))
def test_containers_have_a_real_cavity(name):
    for seed in SEEDS:
        pm = built(name, seed)
        m = pm.mesh
        assert pm.cavity
        cav, wall = pm.params["cavity_point"], pm.params["wall_point"]
        assert cav[2] - pm.params["floor"] < 0.006
        inside = m.contains([cav, wall])
        assert not inside[0], f"{name}: cavity point {cav} is inside the material"
        assert inside[1], f"{name}: wall point {wall} is not inside the material"
        # the cavity is open upwards: a point straight above it, past the top, is outside
        assert not m.contains([[cav[0], cav[1], m.bounds[1][2] - 0.002]])[0]


@pytest.mark.parametrize("name", ["hex_nut", "washer", "bearing_ring"])
def test_rings_have_a_through_hole(name):
    m = built(name, 0).mesh
    h = m.extents[2]
    assert not m.contains([[0.0, 0.0, h / 2]])[0]
    assert m.euler_number == 0          # genus one: a single through hole


def test_mug_and_pan_handles_stick_out_along_x():
    for name in ("mug", "pan"):
        pm = built(name, 0)
        ext = pm.mesh.extents
        assert ext[0] > ext[1] * 1.1
        body_axis = pm.params["cavity_point"][0]
        assert body_axis < 0                # the body sits at -x, the handle reaches to +x


def test_banana_is_curved_and_carrot_is_long():
    m = built("banana", 0).mesh
    centre = m.vertices[np.abs(m.vertices[:, 0]) < 0.01]
    ends = m.vertices[np.abs(m.vertices[:, 0]) > 0.4 * m.extents[0]]
    assert abs(centre[:, 1].mean() - ends[:, 1].mean()) > 0.005
    c = built("carrot", 0).mesh.extents
    assert c[0] > 3 * c[1]


@pytest.mark.parametrize("name", TEXTURED)
def test_textures_are_small_deterministic_and_keep_the_mesh_closed(name):
    pm = built(name, 0)
    vis = pm.mesh.visual
    assert isinstance(vis, trimesh.visual.TextureVisuals)
    assert vis.uv.shape == (len(pm.mesh.vertices), 2)
    assert vis.uv.min() >= -1e-9 and vis.uv.max() <= 1 + 1e-9
    img = vis.material.image
    assert max(img.size) <= 256
    again = build_mesh(CATALOG.get(name), np.random.default_rng(0)).mesh.visual.material.image
    assert np.array_equal(np.asarray(img), np.asarray(again))
    other = built(name, 1).mesh.visual.material.image
    assert not np.array_equal(np.asarray(img), np.asarray(other))
    assert pm.mesh.is_watertight


def test_face_budget_is_honoured_or_refused():
    pm = build_mesh(CATALOG.get("bowl"), np.random.default_rng(0), max_faces=1200)
    assert len(pm.mesh.faces) <= 1200 and pm.mesh.is_watertight
    with pytest.raises(AssetError, match="max_faces"):
        build_mesh(CATALOG.get("bowl"), np.random.default_rng(0), max_faces=20)


def test_bad_attributes_and_unknown_generator_raise_asset_error():
    cat = CATALOG.get("apple")
    with pytest.raises(AssetError, match="unknown size"):
        build_mesh(cat, np.random.default_rng(0), {"size": "huge"})
    with pytest.raises(AssetError, match="scale"):
        build_mesh(cat, np.random.default_rng(0), {"scale": 1.5})
    with pytest.raises(AssetError, match="no procedural builder"):
        build_mesh(dataclasses.replace(cat, generator="nope"), np.random.default_rng(0))
