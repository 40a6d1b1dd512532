import json
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PIL import Image

import scenegen.assets.build as gen
from scenegen.assets import cache as cache_mod
from scenegen.assets.base import Asset
from scenegen.assets.build import finalize_asset, generate_asset
from scenegen.assets.cache import asset_key, cache_root, canonical_json, lookup, store
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.model_urdf import ROLLING_FRICTION, SPINNING_FRICTION
from scenegen.assets.preview import contact_sheet, render_urdf_thumbnail
from scenegen.assets.procedural import GENERATOR_VERSION, ProceduralMesh
from scenegen.catalog import load_catalog
from scenegen.errors import AssetError, CatalogError, ConfigError
from tests.helpers.asset_shapes import annulus_pm, box_pm, bullet_client

CAT = load_catalog()
FAST = CollisionConfig.fast()


def l_shape() -> ProceduralMesh:
    a = trimesh.creation.box(extents=(0.08, 0.02, 0.02), transform=trimesh.transformations.translation_matrix(
        (0.04, 0.01, 0.01)))
    b = trimesh.creation.box(extents=(0.02, 0.06, 0.02), transform=trimesh.transformations.translation_matrix(
        (0.01, 0.05, 0.01)))
    return ProceduralMesh(trimesh.boolean.union([a, b]), {"shape": "L"}, grasp={"mode": "side", "width": 0.02})


def textured_box() -> ProceduralMesh:
    pm = box_pm((0.1, 0.06, 0.04))
    v = pm.mesh.vertices
    uv = (v[:, [0, 2]] - v[:, [0, 2]].min(0)) / np.ptp(v[:, [0, 2]], axis=0)
    img = np.zeros((32, 32, 3), np.uint8)
    img[:, :] = (20, 200, 20)
    img[:, :16] = (220, 20, 20)
    pm.mesh.visual = trimesh.visual.TextureVisuals(uv=uv, image=Image.fromarray(img))
    return pm


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    root = tmp_path_factory.mktemp("urdf")
    out = {}
    for name, pm, cat, attrs in [("L", l_shape(), "hammer", {"color": "red"}), ("ring", annulus_pm(), "washer", {}),
                                 ("tex", textured_box(), "block", {}), ("box", box_pm(), "block", {})]:
        out[name] = finalize_asset(pm, cat, "test", 0, attrs, asset_id=name * 64, out_dir=root / name,
                                   collision=FAST, cache_dir=root)
    return out


def test_urdf_has_inertial_visual_collisions_and_contact(assets):
    a = assets["ring"]
    root = ET.parse(a.urdf_path).getroot()
    (link,) = root.findall("link")
    assert link.get("name") == "base"
    inertial = link.find("inertial")
    assert float(inertial.find("mass").get("value")) == pytest.approx(a.mass)
    np.testing.assert_allclose([float(x) for x in inertial.find("origin").get("xyz").split()], a.com, atol=1e-8)
    it = inertial.find("inertia")
    i = np.array(a.inertia)
    for key, (r, c) in {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2),
                        "izz": (2, 2)}.items():
        assert float(it.get(key)) == pytest.approx(i[r, c], rel=1e-6, abs=1e-14)
    assert link.find("visual/geometry/mesh").get("filename") == "visual.obj"
    rgba = [float(x) for x in link.find("visual/material/color").get("rgba").split()]
    np.testing.assert_allclose(rgba, a.rgba)
    meshes = [c.find("geometry/mesh").get("filename") for c in link.findall("collision")]
    assert meshes == a.collision and len(meshes) >= 2
    assert all((a.path / m).is_file() for m in meshes)
    contact = link.find("contact")
    assert float(contact.find("lateral_friction").get("value")) == pytest.approx(a.friction)
    assert float(contact.find("restitution").get("value")) == pytest.approx(a.restitution)
    assert contact.find("rolling_friction") is not None and contact.find("spinning_friction") is not None


def test_primitive_collision_is_a_native_shape(assets):
    a = assets["box"]
    assert a.collision_method == "primitive" and a.collision == ["collision/part_000.obj"]
    link = ET.parse(a.urdf_path).getroot().find("link")
    (col,) = link.findall("collision")
    size = [float(x) for x in col.find("geometry/box").get("size").split()]
    np.testing.assert_allclose(size, a.extents, rtol=1e-6)
    np.testing.assert_allclose([float(x) for x in col.find("origin").get("xyz").split()],
                               [0, 0, a.extents[2] / 2], atol=1e-9)


@pytest.mark.parametrize("name", ["L", "ring", "tex", "box"])
def test_urdf_loads_in_pybullet_with_mass_friction_and_inertia(assets, name):
    a = assets[name]
    p, cid = bullet_client()
    try:
        body = p.loadURDF(str(a.urdf_path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)
        info = p.getDynamicsInfo(body, -1, physicsClientId=cid)
        assert info[0] == pytest.approx(a.mass, rel=1e-6)
        assert info[1] == pytest.approx(a.friction, rel=1e-6)
        assert info[5] == pytest.approx(a.restitution, rel=1e-6)
        assert info[6] == pytest.approx(ROLLING_FRICTION) and info[7] == pytest.approx(SPINNING_FRICTION)
        # PyBullet diagonalises the tensor: its principal moments are our eigenvalues
        np.testing.assert_allclose(sorted(info[2]), np.linalg.eigvalsh(np.array(a.inertia)), rtol=1e-5)
        np.testing.assert_allclose(info[3], a.com, atol=1e-6)
        shapes = p.getCollisionShapeData(body, -1, physicsClientId=cid)
        assert len(shapes) == len(a.collision)
        vis = p.getVisualShapeData(body, physicsClientId=cid)
        assert vis and vis[0][4].decode().endswith("visual.obj")
    finally:
        p.disconnect(cid)


def test_products_of_inertia_are_written_for_asymmetric_shapes(assets):
    i = np.array(assets["L"].inertia)
    assert abs(i[0, 1]) > 0.1 * i[0, 0]
    it = ET.parse(assets["L"].urdf_path).getroot().find("link/inertial/inertia")
    assert float(it.get("ixy")) == pytest.approx(i[0, 1], rel=1e-6)


def test_visual_obj_and_mtl(assets):
    a = assets["L"]
    obj = (a.path / "visual.obj").read_text()
    assert obj.startswith("mtllib visual.mtl") and "usemtl material_0" in obj
    mtl = (a.path / "visual.mtl").read_text()
    kd = [float(x) for x in next(ln for ln in mtl.splitlines() if ln.startswith("Kd")).split()[1:]]
    np.testing.assert_allclose(kd, a.rgba[:3], atol=1e-6)
    assert not (a.path / "texture.png").exists()
    back = trimesh.load(a.path / "visual.obj", force="mesh")
    back.merge_vertices(merge_tex=True, merge_norm=True)  # the loader splits vertices at crease normals
    assert back.is_watertight and len(back.faces) == a.visual_faces
    assert back.volume == pytest.approx(a.volume, rel=1e-5)
    np.testing.assert_allclose(back.extents, a.extents, atol=1e-7)


def test_textured_visual_writes_texture_and_pybullet_renders_it(assets):
    a = assets["tex"]
    assert (a.path / "texture.png").is_file()
    assert "map_Kd texture.png" in (a.path / "visual.mtl").read_text()
    assert "\nvt " in (a.path / "visual.obj").read_text()
    rgba = ET.parse(a.urdf_path).getroot().find("link/visual/material/color").get("rgba")
    assert rgba.split()[:3] == ["1", "1", "1"]  # the texture carries the colour
    img = np.asarray(render_urdf_thumbnail(a.urdf_path, 96)).reshape(-1, 3).astype(int)
    reddish = ((img[:, 0] > 120) & (img[:, 1] < 80)).sum()
    greenish = ((img[:, 1] > 120) & (img[:, 0] < 80)).sum()
    assert reddish > 50 and greenish > 50, "both texture colours should be visible"
    plain = np.asarray(render_urdf_thumbnail(assets["box"].urdf_path, 96)).reshape(-1, 3).astype(int)
    assert ((plain[:, 1] > 120) & (plain[:, 0] < 80)).sum() == 0


def test_contact_sheet_tiles_and_labels(assets):
    tiles = [render_urdf_thumbnail(a.urdf_path, 64) for a in assets.values()]
    sheet = contact_sheet(tiles, list(assets), cols=2)
    assert sheet.size == (128, 2 * (64 + 18))
    with pytest.raises(AssetError, match="4 images but 1 labels"):
        contact_sheet(tiles, ["x"])


def test_asset_json_round_trip_and_every_field_filled(assets):
    a = assets["L"]
    back = Asset.load(a.path)
    assert back.to_dict() == a.to_dict()
    d = json.loads((a.path / "asset.json").read_text())
    assert d["schema_version"] == 1
    assert a.id == "L" * 64 and a.category == "hammer" and a.source == "test"
    assert a.attributes == {"color": "red"} and a.rgba == CAT.color_rgba("red")
    assert a.params["shape"] == "L" and a.params["physics"]["material"] == "metal"
    assert a.params["collision"]["hulls"] == len(a.collision)
    assert all(x > 0 for x in a.extents) and a.mass > 0 and a.volume > 0 and a.visual_faces > 0
    assert a.collision_method == "coacd" and len(a.collision) >= 2  # the L is concave
    assert a.grasp["mode"] == "side" and a.grasp["width"] == 0.02 and a.grasp["height"] > 0
    default_grasp = assets["box"].grasp
    assert default_grasp == {"mode": "top", "width": pytest.approx(0.05), "height": pytest.approx(0.02)}
    assert assets["box"].rgba == CAT.color_rgba(CAT.get("block").colors[0])


# ------------------------------------------------------------------ cache


def _key(**over):
    args = dict(category=CAT.get("mug"), source="procedural", seed=1, attributes={"color": "red"},
                collision=FAST, max_faces=5000, generator_version=GENERATOR_VERSION,
                material=CAT.materials["ceramic"])
    args.update(over)
    return asset_key(args.pop("category"), args.pop("source"), args.pop("seed"), args.pop("attributes"), **args)


def test_cache_key_is_stable_and_sensitive_to_every_input():
    base = _key()
    assert base == _key() and len(base) == 64
    assert _key(attributes={"color": "red"}) == base
    variants = [_key(category=CAT.get("cup")), _key(source="library:abc"), _key(seed=2),
                _key(attributes={"color": "blue"}), _key(collision=CollisionConfig.fast(threshold=0.2)),
                _key(max_faces=4000), _key(generator_version="999"), _key(material=CAT.materials["metal"])]
    assert len({base, *variants}) == len(variants) + 1
    assert canonical_json({"b": 1, "a": (1, 2)}) == canonical_json({"a": [1, 2], "b": 1})


def test_cache_root_argument_env_and_default(monkeypatch, tmp_path):
    monkeypatch.delenv("SCENEGEN_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "scenegen" / "assets"
    monkeypatch.setenv("SCENEGEN_CACHE", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"


def _writer(asset_id, pm=None):
    def build(folder: Path) -> Asset:
        return finalize_asset(pm or box_pm(), "block", "test", 0, {}, asset_id=asset_id, out_dir=folder,
                              collision=FAST)
    return build


def test_store_is_atomic_when_the_build_fails(tmp_path):
    def broken(folder: Path) -> Asset:
        (folder / "half_written.obj").write_text("v 0 0 0\n")
        raise AssetError("synthetic")

    with pytest.raises(AssetError, match="synthetic"):
        store("k" * 64, broken, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no final folder and no temporary leftovers


def test_concurrent_writer_keeps_the_first_copy(tmp_path):
    key = "c" * 64
    inner = {}

    def racing(folder: Path) -> Asset:
        # Another writer finishes the same key while this build is running.
        inner["asset"] = store(key, _writer(key), tmp_path)
        (folder / "marker_of_the_loser").write_text("x")
        return _writer(key)(folder)

    a = store(key, racing, tmp_path)
    assert a.path == tmp_path / key and not (a.path / "marker_of_the_loser").exists()
    assert a.to_dict() == inner["asset"].to_dict()
    assert sorted(p.name for p in tmp_path.iterdir()) == [key]


def test_threads_writing_one_key_agree(tmp_path):
    key = "t" * 64
    results, errors = [], []

    def slow_build(folder: Path) -> Asset:
        time.sleep(0.05)
        return _writer(key)(folder)

    def run():
        try:
            results.append(store(key, slow_build, tmp_path))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert {r.id for r in results} == {key} and len({json.dumps(r.to_dict()) for r in results}) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [key]


def test_broken_cache_entry_is_rebuilt(tmp_path):
    key = "b" * 64
    a = store(key, _writer(key), tmp_path)
    (a.path / "asset.json").write_text("{not json")
    assert lookup(key, tmp_path) is None
    (a.path / "asset.json").unlink()
    again = store(key, _writer(key), tmp_path)
    assert again.id == key and Asset.load(tmp_path / key).mass == pytest.approx(a.mass)
    assert sorted(p.name for p in tmp_path.iterdir()) == [key]


def test_generate_asset_second_call_is_a_file_read(monkeypatch, tmp_path):
    cfg = CollisionConfig.fast(threshold=0.15, max_hulls=8, method="coacd")  # the costly cold path
    t0 = time.perf_counter()
    first = generate_asset("bowl", 4, {"color": "blue"}, cache_dir=tmp_path, collision=cfg)
    cold = time.perf_counter() - t0
    assert first.collision_method == "coacd" and first.path.parent == tmp_path

    import coacd

    monkeypatch.setattr(coacd, "run_coacd", lambda *a, **k: pytest.fail("CoACD ran on a cache hit"))
    monkeypatch.setattr(gen, "build_mesh", lambda *a, **k: pytest.fail("mesh rebuilt on a cache hit"))
    monkeypatch.setattr(cache_mod, "store", lambda *a, **k: pytest.fail("store called on a cache hit"))
    timings: dict = {}
    t0 = time.perf_counter()
    second = generate_asset("bowl", 4, {"color": "blue"}, cache_dir=tmp_path, collision=cfg, timings=timings)
    warm = time.perf_counter() - t0
    assert second.id == first.id and second.path == first.path and second.to_dict() == first.to_dict()
    assert timings["cached"] is True
    assert warm < 0.25 and warm < cold / 5
    assert first.rgba == CAT.color_rgba("blue")


def test_generate_asset_validates_inputs(tmp_path):
    with pytest.raises(CatalogError, match="unknown category 'bowlz'"):
        generate_asset("bowlz", cache_dir=tmp_path)
    with pytest.raises(AssetError, match="unknown colour 'mauve'"):
        generate_asset("block", 0, {"color": "mauve"}, cache_dir=tmp_path)
    with pytest.raises(AssetError, match="unknown material 'adamant'"):
        generate_asset("block", 0, {"material": "adamant"}, cache_dir=tmp_path)
    with pytest.raises(AssetError, match="unknown size 'huge'"):
        generate_asset("block", 0, {"size": "huge"}, cache_dir=tmp_path)
    with pytest.raises(AssetError, match="scale 2 is out of range"):
        generate_asset("block", 0, {"scale": 2}, cache_dir=tmp_path)
    with pytest.raises(AssetError, match="unknown asset attribute"):
        generate_asset("block", 0, {"flavour": "lime"}, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="max_faces=10"):
        generate_asset("block", 0, cache_dir=tmp_path, max_faces=10)
    assert list(tmp_path.iterdir()) == []


def test_seed_and_attributes_change_the_asset(tmp_path):
    a = generate_asset("block", 0, cache_dir=tmp_path, collision=FAST)
    b = generate_asset("block", 1, cache_dir=tmp_path, collision=FAST)
    c = generate_asset("block", 0, {"material": "metal"}, cache_dir=tmp_path, collision=FAST)
    assert len({a.id, b.id, c.id}) == 3
    assert c.params["physics"]["material"] == "metal" and c.friction == CAT.materials["metal"].friction
    again = generate_asset("block", 0, cache_dir=tmp_path / "other", collision=FAST)
    assert again.id == a.id and again.to_dict() == a.to_dict()  # deterministic across caches


# ------------------------------------------------------------------ CLI


def test_cli_asset_writes_folder_summary_and_preview(tmp_path):
    from click.testing import CliRunner

    from scenegen.assets.cli import asset

    out, png = tmp_path / "red_block", tmp_path / "block.png"
    res = CliRunner().invoke(asset, ["block", "--seed", "2", "--color", "red", "--size", "large", "-o", str(out),
                                     "--preview", str(png), "--cache", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    a = Asset.load(out)
    assert a.attributes == {"size": "large", "color": "red"} and a.seed == 2
    for word in ("extents", "mass", "hulls", "faces", str(out)):
        assert word in res.output
    assert f"{a.mass:.3f} kg" in res.output
    assert Image.open(png).size == (384, 384)
    again = CliRunner().invoke(asset, ["block", "--seed", "2", "--color", "red", "--size", "large",
                                       "--cache", str(tmp_path / "cache")])
    assert again.exit_code == 0 and str(tmp_path / "cache" / a.id) in again.output


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys, monkeypatch):
    from scenegen.cli import main

    monkeypatch.setenv("SCENEGEN_CACHE", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        main(["asset", "blok"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown category 'blok'" in err[0] and "block" in err[0]
    with pytest.raises(SystemExit) as exc:
        main(["asset", "block", "--color", "mauve"])
    assert exc.value.code == 2 and "unknown colour 'mauve'" in capsys.readouterr().err


def test_cli_build_all_contact_sheet(tmp_path):
    from click.testing import CliRunner

    from scenegen.assets.cli import assets

    sheet = tmp_path / "sheet.png"
    res = CliRunner().invoke(assets, ["build-all", "--category", "block", "--category", "can", "--seeds", "2",
                                      "--tile", "64", "-o", str(sheet), "--cache", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    assert "4/4 assets" in res.output and "2 categories" in res.output
    assert Image.open(sheet).size == (2 * 64, 64 + 18)
    assert len([p for p in (tmp_path / "cache").iterdir() if len(p.name) == 64]) == 4
