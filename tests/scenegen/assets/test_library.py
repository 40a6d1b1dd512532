import numpy as np
import pytest
import trimesh

from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.library import category_from_name, load_library, load_library_asset, read_mesh
from scenegen.assets.mesh.fit import fit_scale
from scenegen.catalog import load_catalog
from scenegen.errors import AssetError
from tests.helpers.asset_shapes import drop_test

CAT = load_catalog()
FAST = CollisionConfig.fast()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("library-cache")


def in_range(asset, tol=1e-6):
    c = CAT.get(asset.category)
    return all(lo - tol <= e <= hi + tol for e, lo, hi in zip(asset.extents, c.size_min, c.size_max, strict=True))


@pytest.mark.parametrize("ext", ["obj", "stl", "ply", "glb"])
def test_formats_load_scaled_into_the_category_range(ext, tmp_path, cache):
    # A 2 m long block: must come back block-sized, in the asset frame.
    mesh = trimesh.creation.box(extents=(2.0, 1.8, 1.6))
    mesh.apply_translation((5, -3, 7))
    path = tmp_path / f"thing.{ext}"
    mesh.export(path)
    a = load_library_asset(path, "block", cache_dir=cache, collision=FAST)
    assert a.source == f"library:thing.{ext}" and a.category == "block"
    assert in_range(a), a.extents
    ratios = [1, 0.8, 0.9] if ext == "glb" else [1, 0.9, 0.8]  # GLB is read y-up: its y becomes z
    np.testing.assert_allclose(np.array(a.extents) / a.extents[0], ratios, rtol=1e-6)  # uniform scale
    back = trimesh.load(a.path / "visual.obj", force="mesh")
    np.testing.assert_allclose(back.bounds[0], [-a.extents[0] / 2, -a.extents[1] / 2, 0], atol=1e-7)
    assert a.params["file"] == f"thing.{ext}" and a.params["scale"] == pytest.approx(a.extents[0] / 2.0)
    assert CAT.get("block").mass_range[0] <= a.mass <= CAT.get("block").mass_range[1]


def test_glb_is_turned_from_y_up_to_z_up(tmp_path, cache):
    tall = trimesh.creation.cylinder(radius=0.2, height=1.3, sections=32)  # along z ...
    tall.apply_transform(trimesh.transformations.rotation_matrix(-np.pi / 2, [1, 0, 0]))  # ... now along y (glTF up)
    path = tmp_path / "bottle.glb"
    tall.export(path)
    a = load_library_asset(path, "bottle", cache_dir=cache, collision=FAST)
    assert a.params["up"] == "y"
    assert a.extents[2] > 3 * a.extents[0] and in_range(a)
    z_up = load_library_asset(path, "bottle", up="z", cache_dir=cache, collision=FAST)
    assert z_up.id != a.id and z_up.extents[2] < z_up.extents[0]


def test_long_axis_is_turned_onto_x(tmp_path, cache):
    path = tmp_path / "board.stl"
    trimesh.creation.box(extents=(0.2, 0.3, 0.02)).export(path)
    a = load_library_asset(path, "cutting_board", cache_dir=cache, collision=FAST)
    assert a.params["yaw_deg"] == 90 and a.extents[0] > a.extents[1] and in_range(a)


def test_library_asset_is_cached_by_content_and_drops_cleanly(tmp_path, cache):
    path = tmp_path / "apple.obj"
    trimesh.creation.icosphere(subdivisions=3, radius=0.04).export(path)
    a = load_library_asset(path, "apple", cache_dir=cache, collision=FAST)
    b = load_library_asset(path, "apple", cache_dir=cache, collision=FAST)
    assert a.id == b.id and a.path == b.path
    copy = tmp_path / "apple_copy.obj"
    copy.write_bytes(path.read_bytes())
    assert load_library_asset(copy, "apple", cache_dir=cache, collision=FAST).id == a.id  # same content
    drift, speed, vmax, low, tilt = drop_test(a)
    assert speed < 0.01 and vmax < 2.0 and abs(low) < 0.003 and drift < 0.01


def test_size_attribute_picks_within_the_feasible_range():
    cat = CAT.get("apple")
    ext = np.array([1.0, 1.0, 1.0])
    small, medium, large = (fit_scale(ext, cat, s) for s in ("small", "medium", "large"))
    assert small < medium < large
    for s in (small, medium, large):
        assert np.all(s * ext >= np.array(cat.size_min) - 1e-12) and np.all(s * ext <= np.array(cat.size_max) + 1e-12)
    # an aspect ratio that cannot fit: the least-bad compromise
    s = fit_scale(np.array([1.0, 1.0, 3.0]), cat)
    assert s * 3.0 > cat.size_max[2] and s * 1.0 < cat.size_min[0]


def test_container_from_library_keeps_its_cavity(tmp_path, cache):
    from tests.helpers.asset_shapes import bin_mesh, cavity_test

    path = tmp_path / "my_bin.ply"
    mesh = bin_mesh()
    mesh.apply_scale(10.0)  # modelled in decimetres
    mesh.export(path)
    a = load_library_asset(path, "bin", cache_dir=cache, collision=FAST)
    assert a.collision_method == "coacd" and in_range(a)
    pos, inside, _ = cavity_test(a)
    assert inside, pos


def test_folder_with_names_and_map(tmp_path, cache):
    lib = tmp_path / "lib"
    lib.mkdir()
    trimesh.creation.icosphere(radius=0.04).export(lib / "red_apple_01.obj")
    trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(lib / "cube.stl")
    (lib / "README.txt").write_text("not a mesh")
    assets = load_library(lib, category_map={"cube": "block"}, cache_dir=cache, collision=FAST)
    assert [a.category for a in assets] == ["block", "apple"]  # sorted by file name: cube.stl, red_apple_01.obj
    trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(lib / "gizmo.stl")
    with pytest.raises(AssetError, match="gizmo.stl: cannot tell its category"):
        load_library(lib, category_map={"cube": "block"}, cache_dir=cache, collision=FAST)
    forced = load_library(lib, "block", cache_dir=cache, collision=FAST)
    assert [a.category for a in forced] == ["block", "block", "block"]
    with pytest.raises(AssetError, match="no OBJ, GLB, STL or PLY file"):
        load_library(tmp_path / "lib" / "..", cache_dir=cache)
    with pytest.raises(AssetError, match="not found"):
        load_library(tmp_path / "missing")


def test_category_from_name():
    assert category_from_name("red_mug_02.obj") == "mug"
    assert category_from_name("Cutting-Board.glb") == "cutting_board"
    assert category_from_name("bananas.stl") == "banana"
    assert category_from_name("scan_0001.ply") is None


# ------------------------------------------------------------------ broken meshes


def _obj(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


BOX_OBJ = trimesh.exchange.obj.export_obj(trimesh.creation.box(extents=(0.05, 0.05, 0.05)), include_normals=False)


@pytest.mark.parametrize("name, content, message", [
    ("empty.obj", "", "empty.obj: empty file"),
    ("points.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n", "points.obj: empty mesh"),
    ("nan.obj", BOX_OBJ.replace("v 0.02500000 0.02500000 0.02500000", "v nan 0.025 0.025", 1),
     "nan.obj: NaN or infinite vertex"),
    ("inf.obj", BOX_OBJ.replace("v 0.02500000 0.02500000 0.02500000", "v inf 0.025 0.025", 1),
     "inf.obj: NaN or infinite vertex"),
    ("flat.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n", "flat.obj: zero volume"),
])
def test_broken_obj_files_are_rejected_with_the_problem_named(tmp_path, name, content, message):
    if "nan" in name or "inf" in name:
        assert content != BOX_OBJ
    path = _obj(tmp_path, name, content)
    with pytest.raises(AssetError, match=message):
        load_library_asset(path, "block", cache_dir=tmp_path / "cache")


def test_open_surface_is_rejected_unless_allowed(tmp_path, cache):
    tube = trimesh.creation.cylinder(radius=0.03, height=0.1, sections=24)
    side = np.abs(tube.face_normals[:, 2]) < 0.5
    tube.update_faces(side)  # no caps: two 24-edge holes
    tube.remove_unreferenced_vertices()
    path = tmp_path / "tube.stl"
    tube.export(path)
    with pytest.raises(AssetError, match=r"tube.stl: not watertight \(an open surface with \d+ boundary edges"):
        load_library_asset(path, "can", cache_dir=cache)
    a = load_library_asset(path, "can", allow_open=True, cache_dir=cache, collision=CollisionConfig(method="hull"))
    assert a.params["physics"]["volume_from_hull"] is True and a.mass > 0


def test_small_holes_are_repaired(tmp_path, cache):
    box = trimesh.creation.box(extents=(0.05, 0.05, 0.05))
    box.update_faces(np.arange(len(box.faces)) != 0)  # one missing triangle
    assert not box.is_watertight
    path = tmp_path / "holey.obj"
    box.export(path)
    a = load_library_asset(path, "block", cache_dir=cache, collision=FAST)
    assert a.volume == pytest.approx(a.extents[0] * a.extents[1] * a.extents[2], rel=1e-6)


def test_non_manifold_mesh_is_rejected(tmp_path):
    a = trimesh.creation.box(extents=(0.05, 0.05, 0.05))
    b = a.copy()
    b.apply_translation((0.05, 0.05, 0))  # touches along one edge only
    path = tmp_path / "bowtie.obj"
    trimesh.util.concatenate([a, b]).export(path)
    with pytest.raises(AssetError, match="bowtie.obj: non-manifold"):
        load_library_asset(path, "block", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("name, data, message", [
    ("model.fbx", b"whatever", "model.fbx: unsupported mesh format '.fbx'"),
    ("noext", b"whatever", "noext: unsupported mesh format '\\(none\\)'"),
    ("garbage.glb", b"\x00\x01not a gltf at all" * 10, "garbage.glb: unreadable mesh file"),
    ("garbage.ply", b"ply\nformat nonsense\n", "garbage.ply: unreadable mesh file"),
])
def test_unsupported_or_unreadable_files(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AssetError, match=message):
        read_mesh(path)


def test_missing_file(tmp_path):
    with pytest.raises(AssetError, match="nothing.obj: file not found"):
        load_library_asset(tmp_path / "nothing.obj", "block")
