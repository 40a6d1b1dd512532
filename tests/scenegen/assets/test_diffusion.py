"""Diffusers backends on tiny randomly initialised pipelines, mesh cleaning and texturing."""

from __future__ import annotations

import math
import sys

import numpy as np
import pybullet as p
import pytest
import trimesh
from PIL import Image

from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.diffusion.assets import describe, generate_shap_e_asset, textured_asset
from scenegen.assets.diffusion.pipelines import ShapEBackend, ShapEConfig, TextureBackend, TextureConfig
from scenegen.assets.diffusion.texturing import apply_texture, choose_projection
from scenegen.assets.mesh.cleanup import clean_mesh
from scenegen.assets.mesh.fit import fit_to_category
from scenegen.assets.mesh.orient import orient_z_up
from scenegen.assets.mesh.repair import (
    boundary_loops,
    edge_use,
    fill_holes,
    fix_winding,
    plain_geometry,
    remove_small_components,
)
from scenegen.assets.mesh.simplify import simplify
from scenegen.assets.model_urdf import write_visual
from scenegen.errors import AssetError, BackendError, ConfigError
from tests.helpers.tiny_diffusers import marching_cubes_table, tiny_shap_e, tiny_stable_diffusion

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
FAST = {"num_inference_steps": 2, "guidance_scale": 3.0, "grid_size": 24}


@pytest.fixture(scope="module")
def shap_pipe():
    return tiny_shap_e()


@pytest.fixture(scope="module")
def shap_backend(shap_pipe):
    return ShapEBackend(ShapEConfig(model="tiny/shap-e", **FAST), pipeline=shap_pipe)


@pytest.fixture(scope="module")
def raw_mesh(shap_backend):
    return shap_backend.generate_mesh("a bowl", 0)


@pytest.fixture(scope="module")
def sd_backend():
    pipe = tiny_stable_diffusion()
    cfg = TextureConfig(model="tiny/sd", num_inference_steps=2, size=32, prompt_template="{description}",
                        negative_prompt="")
    return TextureBackend(cfg, pipeline=pipe)


def _load_urdf(path) -> tuple[int, float]:
    cid = p.connect(p.DIRECT)
    try:
        body = p.loadURDF(str(path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid)
        return body, p.getDynamicsInfo(body, -1, physicsClientId=cid)[0]
    finally:
        p.disconnect(cid)


# --------------------------------------------------------------------------- the test decoder table

def test_marching_cubes_table_gives_closed_outward_surface(shap_pipe):
    decoder = shap_pipe.shap_e_renderer.mesh_decoder
    import torch

    cases, masks = marching_cubes_table()
    assert torch.equal(decoder.cases, cases) and torch.equal(decoder.masks, masks)
    g = torch.linspace(-1, 1, 24)
    x, y, z = torch.meshgrid(g, g, g, indexing="ij")
    field = torch.full((26, 26, 26), -1.0)
    field[1:-1, 1:-1, 1:-1] = 0.6 - torch.sqrt(x**2 + (y / 0.5) ** 2 + z**2)  # inside > 0
    out = decoder(field, torch.tensor([-1.0, -1.0, -1.0]), torch.tensor([2.0, 2.0, 2.0]))
    m = trimesh.Trimesh(out.verts.numpy(), out.faces.numpy())
    assert m.is_watertight and m.is_winding_consistent
    assert m.volume > 0  # outward normals
    assert m.extents[1] < 0.6 * m.extents[0]  # the field's second axis is y


# --------------------------------------------------------------------------- Shap-E backend

def test_shap_e_generates_raw_mesh_deterministically(shap_backend, raw_mesh):
    assert len(raw_mesh.faces) > 100
    assert np.all(np.abs(raw_mesh.vertices) <= 1.0 + 1e-6)  # the decoder's [-1, 1]^3 volume
    assert raw_mesh.visual.vertex_colors.shape == (len(raw_mesh.vertices), 4)
    again = shap_backend.generate_mesh("a bowl", 0)
    assert np.array_equal(again.vertices, raw_mesh.vertices) and np.array_equal(again.faces, raw_mesh.faces)
    other = shap_backend.generate_mesh("a bowl", 1)
    assert len(other.vertices) != len(raw_mesh.vertices) or not np.allclose(other.vertices, raw_mesh.vertices)


def test_shap_e_loads_saved_pipeline_from_folder(shap_pipe, raw_mesh, tmp_path):
    shap_pipe.save_pretrained(tmp_path / "shap-e")
    backend = ShapEBackend(ShapEConfig(model=str(tmp_path / "shap-e"), **FAST))
    mesh = backend.generate_mesh("a bowl", 0)
    assert np.allclose(mesh.vertices, raw_mesh.vertices) and np.array_equal(mesh.faces, raw_mesh.faces)


def test_missing_weights_error_names_path_and_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-such-model"
    with pytest.raises(BackendError) as err:
        ShapEBackend(ShapEConfig(model=str(missing))).generate_mesh("a mug", 0)
    msg = err.value.one_line()
    assert str(missing) in msg and "hf download openai/shap-e --local-dir DIR" in msg
    assert "huggingface-cli download" in msg and "--shap-e-model DIR" in msg and "SCENEGEN_SHAPE_MODEL" in msg
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendError, match="not available offline.*model_index.json"):
        TextureBackend(TextureConfig(model=str(tmp_path / "empty"))).generate_texture("wood", 0)


def test_missing_diffusers_says_which_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "diffusers", None)  # import now fails
    with pytest.raises(BackendError, match=r"pip install 'scenegen\[diffusion\]'"):
        ShapEBackend(ShapEConfig(model=str(tmp_path))).pipeline  # noqa: B018


def test_hub_id_not_cached_offline_is_a_backend_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(BackendError, match="'someone/missing-model' are not available offline"):
        ShapEBackend(ShapEConfig(model="someone/missing-model")).pipeline  # noqa: B018


def test_env_variable_names_default_model(monkeypatch):
    monkeypatch.setenv("SCENEGEN_SHAPE_MODEL", "/models/shap-e")
    assert ShapEConfig().model == "/models/shap-e"
    monkeypatch.delenv("SCENEGEN_SHAPE_MODEL")
    assert ShapEConfig().model == "openai/shap-e"


@pytest.mark.parametrize("kwargs, word", [
    ({"dtype": "float16"}, "needs a GPU"), ({"grid_size": 4}, "grid_size"), ({"up_axis": "w"}, "up_axis"),
    ({"device": "tpu"}, "device"), ({"num_inference_steps": 0}, "num_inference_steps"),
    ({"prompt_template": "a thing"}, "description"), ({"prompt_template": "a {description} {x}"}, "description"),
    ({"max_attempts": 0}, "max_attempts"),
])
def test_shap_e_config_validation(kwargs, word):
    with pytest.raises(ConfigError, match=word):
        ShapEConfig(**kwargs)


def test_texture_config_validation():
    with pytest.raises(ConfigError, match="multiple of 8"):
        TextureConfig(size=100)
    with pytest.raises(ConfigError, match="projection"):
        TextureConfig(projection="spherical")


# --------------------------------------------------------------------------- cleaning

def test_clean_noise_mesh_from_random_weights(raw_mesh):
    mesh, report = clean_mesh(raw_mesh, max_faces=600)
    assert report.components_in > 1 and report.components_removed > 0
    assert mesh.is_watertight and mesh.volume > 0 and len(mesh.faces) <= 600
    assert report.faces_in == len(raw_mesh.faces) and report.faces_out == len(mesh.faces)
    assert mesh.extents[0] >= mesh.extents[1] - 1e-9  # long horizontal axis on x


def _broken_y_up_mesh() -> trimesh.Trimesh:
    """A y-up ellipsoid (long in x, tall in y), a hole, flipped faces, two specks, ~20k faces."""
    body = trimesh.creation.icosphere(subdivisions=5)
    body.apply_scale([0.5, 0.3, 0.1])  # y (up) extent 0.6, z depth 0.2
    keep = ~np.any(body.faces == 0, axis=1)  # the fan round vertex 0 leaves one hole
    body.update_faces(keep)
    body.remove_unreferenced_vertices()
    faces = body.faces.copy()
    faces[100:400] = faces[100:400, ::-1]  # inconsistent winding
    body = trimesh.Trimesh(body.vertices, faces, process=False)
    specks = [trimesh.creation.icosphere(subdivisions=1, radius=0.01).apply_translation(t)
              for t in ([0.9, 0.9, 0.9], [-0.9, 0.0, 0.5])]
    return trimesh.util.concatenate([body, *specks])


def test_clean_synthetic_broken_mesh():
    raw = _broken_y_up_mesh()
    assert not raw.is_watertight and not raw.is_winding_consistent and len(raw.faces) > 20000
    mesh, report = clean_mesh(raw, max_faces=1000, up="y")
    assert report.components_in == 3 and report.components_removed == 2
    assert report.holes_filled and report.simplifier == "quadric" and not report.hull_fallback
    assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0
    assert len(mesh.faces) <= 1000
    ext = mesh.extents
    assert ext[2] == pytest.approx(0.6, rel=0.03)  # the y-up height is now z
    assert ext[0] == pytest.approx(1.0, rel=0.03) and ext[1] == pytest.approx(0.2, rel=0.05)
    assert mesh.volume == pytest.approx(4 / 3 * math.pi * 0.5 * 0.3 * 0.1, rel=0.05)


def test_orient_z_up_axes():
    pts = trimesh.Trimesh([[0, 1, 0], [1, 0, 0], [0, 0, 1]], [[0, 1, 2]], process=False)
    assert np.allclose(orient_z_up(pts, "y").vertices[0], [0, 0, 1])
    assert np.allclose(orient_z_up(pts, "x").vertices[1], [0, 0, 1])
    assert np.allclose(orient_z_up(pts, "-z").vertices[2], [0, 0, -1])
    with pytest.raises(AssetError, match="up axis"):
        orient_z_up(pts, "up")


def test_long_axis_turned_onto_x():
    box = trimesh.creation.box(extents=[0.1, 0.4, 0.05])
    box.apply_transform(trimesh.transformations.rotation_matrix(0.3, [0, 0, 1]))
    mesh, report = clean_mesh(box, max_faces=100)
    assert mesh.extents == pytest.approx([0.4, 0.1, 0.05], rel=1e-6)
    assert abs(report.yaw_deg) > 1


def test_fix_winding_restores_consistency():
    m = trimesh.creation.icosphere(subdivisions=3)
    faces = m.faces.copy()
    rng = np.random.default_rng(0)
    flip = rng.random(len(faces)) < 0.3
    faces[flip] = faces[flip][:, ::-1]
    bad = trimesh.Trimesh(m.vertices, faces, process=False)
    assert not bad.is_winding_consistent
    flipped = fix_winding(bad)
    assert bad.is_winding_consistent and flipped in (int(flip.sum()), len(faces) - int(flip.sum()))


def test_remove_small_components_keeps_largest_by_area():
    big = trimesh.creation.box(extents=[1, 1, 1])
    small = trimesh.creation.box(extents=[0.1, 0.1, 0.1]).apply_translation([3, 0, 0])
    kept, removed, total = remove_small_components(trimesh.util.concatenate([small, big]), 0.05)
    assert (removed, total) == (1, 2) and kept.extents == pytest.approx([1, 1, 1])


def test_simplify_falls_back_to_vertex_clustering(monkeypatch):
    monkeypatch.setitem(sys.modules, "fast_simplification", None)  # import now fails
    sphere = trimesh.creation.icosphere(subdivisions=5)
    out, method = simplify(sphere, 500)
    assert method == "clustering" and 0 < len(out.faces) <= 500
    assert out.extents == pytest.approx(sphere.extents, rel=0.15)


def test_hole_touching_itself_is_split_and_filled():
    m = trimesh.creation.icosphere(subdivisions=5)
    keep = np.ones(len(m.faces), bool)
    keep[:30] = False  # leaves a hole whose rim passes twice through one vertex (and an island)
    m.update_faces(keep)
    body, _, _ = remove_small_components(plain_geometry(m), 0.05)
    loops = boundary_loops(body)
    rim = np.concatenate(loops)
    assert len(loops) >= 2 and len(set(rim.tolist())) < len(rim)  # the pinch vertex is on two loops
    closed, n = fill_holes(body)
    assert n == len(loops) and closed.is_watertight and closed.is_winding_consistent


def test_non_manifold_edge_is_healed():
    def fine_box(center):
        b = trimesh.creation.box(extents=[1, 1, 1])
        for _ in range(3):
            b = b.subdivide()
        return b.apply_translation(center)

    bowtie = plain_geometry(trimesh.util.concatenate([fine_box([0, 0, 0]), fine_box([1, 1, 0])]))
    assert (edge_use(bowtie)[1] == 4).sum() > 0  # the two boxes share one edge
    mesh, report = clean_mesh(bowtie, max_faces=2000)
    assert report.healed and not report.hull_fallback and mesh.is_watertight
    assert mesh.volume == pytest.approx(2.0, rel=0.02)  # two unit boxes, not their hull (3.0)


def test_unrepairable_mesh_falls_back_to_hull():
    pages = []  # three sheets sharing one edge: non-manifold, cannot be closed
    for ang in (0.0, 2.0, 4.0):
        d = [math.cos(ang), math.sin(ang), 0.0]
        pages.append(trimesh.Trimesh([[0, 0, 0], [0, 0, 1], d, [d[0], d[1], 1]], [[0, 2, 3], [0, 3, 1]]))
    mesh, report = clean_mesh(trimesh.util.concatenate(pages), max_faces=200)
    assert report.hull_fallback and mesh.is_watertight and mesh.volume > 0


def test_empty_mesh_is_an_asset_error():
    with pytest.raises(AssetError, match="empty"):
        clean_mesh(trimesh.Trimesh(), max_faces=100)


def test_fit_to_category_scales_into_range(catalog):
    bowl = catalog.get("bowl")
    m = trimesh.creation.icosphere(subdivisions=2)
    m.apply_scale([1.0, 1.0, 0.45])
    out, params = fit_to_category(m, bowl, np.random.default_rng(3), {})
    lo, hi = out.bounds
    assert np.all(out.extents >= np.array(bowl.size_min) - 1e-9)
    assert np.all(out.extents <= np.array(bowl.size_max) + 1e-9)
    assert lo[2] == pytest.approx(0.0, abs=1e-12) and (lo[:2] + hi[:2]) == pytest.approx([0, 0], abs=1e-12)
    again, _ = fit_to_category(m, bowl, np.random.default_rng(3), {})
    assert np.array_equal(again.vertices, out.vertices)
    small, _ = fit_to_category(m, bowl, np.random.default_rng(3), {"size": "small"})
    large, _ = fit_to_category(m, bowl, np.random.default_rng(3), {"size": "large"})
    assert small.extents[0] < large.extents[0]
    assert len(set(np.round(params["scale"], 9))) == 1  # proportions kept: one uniform factor


# --------------------------------------------------------------------------- Shap-E assets

def test_shap_e_asset_end_to_end(shap_backend, tmp_path, catalog):
    timings = {}
    kw = {"cache_dir": tmp_path, "backend": shap_backend, "collision": CollisionConfig.fast(), "max_faces": 800}
    asset = generate_shap_e_asset("mug", 0, {"color": "red"}, timings=timings, **kw)
    assert asset.source == "shap-e:tiny/shap-e" and not timings["cached"]
    mug = catalog.get("mug")
    assert np.all(np.array(asset.extents) >= np.array(mug.size_min) - 1e-6)
    assert np.all(np.array(asset.extents) <= np.array(mug.size_max) + 1e-6)
    assert asset.visual_faces <= 800 and asset.params["prompt"] == "a red mug"
    assert asset.params["cleanup"]["watertight"] and asset.params["cleanup"]["faces_in"] > 800
    assert mug.mass_range[0] <= asset.mass <= mug.mass_range[1]
    assert asset.collision_method in ("coacd", "hull") and asset.collision
    body, mass = _load_urdf(asset.urdf_path)
    assert body >= 0 and mass == pytest.approx(asset.mass)
    again = generate_shap_e_asset("mug", 0, {"color": "red"}, timings=timings, **kw)
    assert timings["cached"] and again.id == asset.id


def test_shap_e_retries_then_fails_on_empty_decodes(shap_pipe, tmp_path):
    decoder = shap_pipe.shap_e_renderer.mesh_decoder
    saved = decoder.masks.clone()
    decoder.masks.zero_()  # every latent now decodes to no surface
    try:
        backend = ShapEBackend(ShapEConfig(model="tiny/empty", max_attempts=2, **FAST), pipeline=shap_pipe)
        with pytest.raises(AssetError, match="no surface"):
            backend.generate_mesh("a cup", 0)
        with pytest.raises(AssetError, match="no usable mesh in 2 attempts"):
            generate_shap_e_asset("cup", 0, {}, cache_dir=tmp_path, backend=backend,
                                  collision=CollisionConfig(method="hull"))
    finally:
        decoder.masks.copy_(saved)
    assert not any(tmp_path.glob("*/asset.json"))


def test_describe(catalog):
    assert describe(catalog.get("bowl"), {"size": "small", "color": "red"}) == "small red bowl"
    assert describe(catalog.get("bowl"), {}, with_material=True) == "ceramic bowl"
    assert describe(catalog.get("banana"), {}, with_material=True) == "banana"


# --------------------------------------------------------------------------- textures

def test_generate_texture_is_deterministic(sd_backend):
    a = sd_backend.generate_texture("red wood", 0)
    assert isinstance(a, Image.Image) and a.mode == "RGB" and a.size == (32, 32)
    assert np.array_equal(np.asarray(a), np.asarray(sd_backend.generate_texture("red wood", 0)))
    assert not np.array_equal(np.asarray(a), np.asarray(sd_backend.generate_texture("red wood", 1)))
    with pytest.raises(ConfigError, match="multiple of 8"):
        sd_backend.generate_texture("red wood", 0, size=20)


def test_projection_choice_and_uvs(tmp_path):
    box = trimesh.creation.box(extents=[0.2, 0.1, 0.15])
    can = trimesh.creation.cylinder(radius=0.04, height=0.12, sections=32)
    plate = trimesh.creation.cylinder(radius=0.1, height=0.02, sections=32)
    assert [choose_projection(m) for m in (box, can, plate)] == ["box", "cylindrical", "planar"]
    img = Image.new("RGB", (8, 8), (200, 30, 30))
    for m in (box, can, plate):
        out = apply_texture(m, img)
        uv = out.visual.uv
        assert uv.shape == (len(m.vertices), 2) and uv.min() >= 0 and uv.max() <= 1
        assert out.is_watertight and np.array_equal(out.faces, m.faces)
    # box wrap: u is the arc length round the footprint, so the +x wall spans 0.1/0.6 of u
    wall = apply_texture(box, img, "box")
    px = wall.vertices[:, 0] > 0.099
    assert np.ptp(wall.visual.uv[px, 0]) == pytest.approx(0.1 / 0.6)
    files = write_visual(wall, tmp_path, (1, 1, 1, 1))
    assert "texture.png" in files and "map_Kd texture.png" in (tmp_path / "visual.mtl").read_text()
    assert "vt " in (tmp_path / "visual.obj").read_text()


def test_textured_asset_end_to_end(sd_backend, tmp_path):
    kw = {"cache_dir": tmp_path, "collision": CollisionConfig(method="hull")}
    asset = textured_asset("mug", 2, {"color": "blue"}, sd_backend, **kw)
    assert asset.source == "procedural+texture:tiny/sd"
    assert asset.params["texture"]["prompt"] == "blue ceramic mug"
    assert asset.params["texture"]["projection"] in ("box", "cylindrical", "planar")
    assert (asset.path / "texture.png").is_file() and Image.open(asset.path / "texture.png").size == (32, 32)
    body, mass = _load_urdf(asset.urdf_path)
    assert body >= 0 and mass == pytest.approx(asset.mass)
    assert textured_asset("mug", 2, {"color": "blue"}, sd_backend, **kw).id == asset.id
