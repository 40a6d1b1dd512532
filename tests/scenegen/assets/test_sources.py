"""The asset-source selector: procedural, shap-e (tiny injected pipeline), textured, library:DIR."""

from __future__ import annotations

import json
import pickle

import pybullet as p
import pytest
import trimesh

from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.diffusion.pipelines import ShapEBackend, ShapEConfig, TextureBackend, TextureConfig
from scenegen.assets.sources import (
    OPTIONS,
    SPECS,
    LibrarySource,
    ProceduralSource,
    ShapESource,
    TexturedSource,
    resolve_source,
)
from scenegen.errors import ConfigError
from tests.helpers.tiny_diffusers import tiny_shap_e, tiny_stable_diffusion

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
HULL = CollisionConfig(method="hull")


FAST = {"num_inference_steps": 2, "guidance_scale": 3.0, "grid_size": 24}


@pytest.fixture(scope="module")
def shap_pipe():
    return tiny_shap_e()


@pytest.fixture(scope="module")
def shap_backend(shap_pipe):
    return ShapEBackend(ShapEConfig(model="tiny/shap-e", **FAST), pipeline=shap_pipe)


def _loads(asset) -> bool:
    cid = p.connect(p.DIRECT)
    try:
        return p.loadURDF(str(asset.urdf_path), flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=cid) >= 0
    finally:
        p.disconnect(cid)


def test_procedural_is_the_default(tmp_path):
    for spec in ("procedural", "", None, "  procedural "):
        assert isinstance(resolve_source(spec, cache_dir=tmp_path), ProceduralSource)
    src = resolve_source("procedural", cache_dir=tmp_path, collision=HULL, max_faces=800)
    asset = src("banana", 3, {"color": "yellow"})
    assert src.name == "procedural" and asset.source == "procedural" and asset.category == "banana"
    assert asset.visual_faces <= 800 and _loads(asset)
    cfg = json.loads(json.dumps(src.config()))
    assert cfg["kind"] == "procedural" and cfg["max_faces"] == 800 and cfg["collision"]["method"] == "hull"
    assert src("banana", 3, {"color": "yellow"}).id == asset.id


def test_shap_e_source_with_injected_pipeline(shap_backend, tmp_path):
    src = resolve_source("shap-e", shap_e_backend=shap_backend, cache_dir=tmp_path, collision=HULL, max_faces=600)
    assert isinstance(src, ShapESource) and src.name == "shap-e"
    asset = src("bowl", 0, {"color": "white"})
    assert asset.source == "shap-e:tiny/shap-e" and asset.params["prompt"] == "a white bowl" and _loads(asset)
    cfg = json.loads(json.dumps(src.config()))
    assert cfg["model"] == "tiny/shap-e" and cfg["settings"]["grid_size"] == 24


def test_shap_e_source_from_folder_pickles_without_pipeline(shap_pipe, tmp_path):
    shap_pipe.save_pretrained(tmp_path / "weights")
    cfg = ShapEConfig(model=str(tmp_path / "weights"), **FAST)
    src = resolve_source("shap-e", shap_e_config=cfg, cache_dir=tmp_path / "a", collision=HULL, max_faces=600)
    first = src("mug", 5, {})
    assert src.backend._pipeline is not None
    clone = pickle.loads(pickle.dumps(src))  # what a worker process receives
    assert clone.backend._pipeline is None and clone.shap_e == cfg
    clone.cache_dir = tmp_path / "b"
    second = clone("mug", 5, {})  # regenerates; the weights load once per process
    assert clone.backend.pipeline is src.backend.pipeline and second.id == first.id
    assert (second.path / "visual.obj").read_bytes() == (first.path / "visual.obj").read_bytes()


def test_shap_e_source_model_option_and_missing_weights(tmp_path):
    src = resolve_source("shap-e", shap_e_model=str(tmp_path / "weights"), device="cpu", cache_dir=tmp_path)
    assert src.shap_e.model == str(tmp_path / "weights") and src.config()["model"] == str(tmp_path / "weights")
    from scenegen.errors import BackendError

    with pytest.raises(BackendError, match="does not exist.*--shap-e-model DIR"):
        src("mug", 0, {})
    with pytest.raises(ConfigError, match="shap_e_backend carries its own settings"):
        resolve_source("shap-e", shap_e_backend=ShapEBackend(ShapEConfig(model="x/y")), shap_e_model="a/b")


def test_textured_source(tmp_path):
    pipe = tiny_stable_diffusion()
    backend = TextureBackend(TextureConfig(model="tiny/sd", num_inference_steps=2, size=16,
                                           prompt_template="{description}", negative_prompt=""), pipeline=pipe)
    src = resolve_source("textured", texture_backend=backend, cache_dir=tmp_path, collision=HULL)
    assert isinstance(src, TexturedSource)
    asset = src("cereal_box", 1, {})
    assert asset.source == "procedural+texture:tiny/sd" and (asset.path / "texture.png").is_file()
    assert json.loads(json.dumps(src.config()))["settings"]["size"] == 16


def _library(folder):
    folder.mkdir()
    trimesh.creation.cylinder(radius=70, height=60, sections=24).export(folder / "bowl.obj")  # mm-sized
    trimesh.creation.box(extents=[0.09, 0.09, 0.1]).export(folder / "mug_2.glb")
    trimesh.creation.box(extents=[0.1, 0.1, 0.1]).export(folder / "spaceship.obj")
    (folder / "notes.txt").write_text("not a mesh")
    return folder


def test_library_source_uses_files_and_falls_back(tmp_path, caplog):
    lib = _library(tmp_path / "lib")
    src = resolve_source(f"library:{lib}", cache_dir=tmp_path / "cache", collision=HULL)
    assert isinstance(src, LibrarySource) and src.name == f"library:{lib.resolve()}"
    assert {c: [f.name for f in fs] for c, fs in src.index.items()} == {"bowl": ["bowl.obj"], "mug": ["mug_2.glb"]}
    assert src.ignored == ["spaceship.obj"]
    bowl = src("bowl", 0, {"color": "blue"})
    assert bowl.source.startswith("library:") and bowl.category == "bowl" and _loads(bowl)
    with caplog.at_level("INFO", logger="scenegen.assets.sources"):
        banana = src("banana", 0, {})
    assert banana.source == "procedural" and "no mesh for 'banana'" in caplog.text
    src("banana", 1, {})
    cfg = json.loads(json.dumps(src.config()))
    assert cfg["kind"] == "library" and cfg["dir"] == str(lib.resolve())
    assert cfg["files"] == {"bowl": ["bowl.obj"], "mug": ["mug_2.glb"]} and cfg["fallbacks"] == {"banana": 2}


def test_errors_list_the_choices(tmp_path):
    with pytest.raises(ConfigError) as err:
        resolve_source("dreamfusion")
    assert all(s in str(err.value) for s in SPECS)
    with pytest.raises(ConfigError, match="needs a folder"):
        resolve_source("library:")
    with pytest.raises(ConfigError, match="is not a folder"):
        resolve_source(f"library:{tmp_path / 'missing'}")
    with pytest.raises(ConfigError) as err:
        resolve_source("procedural", shape_model="x")
    assert "shape_model" in str(err.value) and all(o in str(err.value) for o in OPTIONS)
    with pytest.raises(ConfigError, match="max_faces"):
        resolve_source("procedural", max_faces=10)
