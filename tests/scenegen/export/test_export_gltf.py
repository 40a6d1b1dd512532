from __future__ import annotations

import shutil

import numpy as np
import pytest
import trimesh

from scenegen.export import export
from scenegen.export._common import pose_matrix, visual_texture
from tests.helpers.export_scenes import check_golden, golden_scene, settled_scene
from tests.helpers.scene_assets import cache_dir


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


def test_glb_loads_back_with_meshes_transforms_colours_textures(settled, tmp_path):
    scene, lookup = settled
    path = export(scene, lookup, "gltf", tmp_path / "orig")
    moved = tmp_path / "moved.glb"
    shutil.move(str(path), moved)  # one self-contained file: textures are embedded
    loaded = trimesh.load(moved)
    assert isinstance(loaded, trimesh.Scene)
    assert len(loaded.geometry) == len(scene.assets)
    for node, aid in scene.assets.items():
        a = lookup[aid]
        transform, geom_name = loaded.graph.get(node)
        assert np.allclose(transform, pose_matrix(scene.settled[node]), atol=1e-6)
        mesh = loaded.geometry[geom_name]
        assert len(mesh.faces) == len(trimesh.load(a.file(a.visual), force="mesh").faces)
        material = mesh.visual.material
        if visual_texture(a):
            assert material.baseColorTexture is not None
        else:
            assert np.allclose(np.asarray(material.baseColorFactor[:3]) / 255.0, a.rgba[:3], atol=1 / 255)


def test_glb_with_robot_at_home(settled, tmp_path):
    scene, lookup = settled
    path = export(scene, lookup, "gltf", tmp_path, with_robot=True)
    loaded = trimesh.load(path)
    robot = [n for n in loaded.graph.nodes_geometry if n.startswith("robot/")]
    assert len(robot) == 11
    # the hand sits above the table at the home pose, in front of the base
    transform, _ = loaded.graph.get(next(n for n in robot if "panda_hand" in n))
    assert 0.2 < transform[0, 3] < 0.6 and transform[2, 3] > 0.3


def _gltf_json(path) -> dict:
    import json
    import struct

    data = path.read_bytes()
    n = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[20:20 + n])


def test_glb_cameras_have_the_scene_view(settled, tmp_path):
    from scenegen.sim.camera import camera_world
    from scenegen.sim.world import World

    scene, lookup = settled
    path = export(scene, lookup, "gltf", tmp_path, with_robot=True)
    doc = _gltf_json(path)
    nodes = {n["name"]: n for n in doc["nodes"] if "camera" in n}
    assert set(nodes) == {f"camera/{c.name}" for c in scene.cameras}
    roots = doc["scenes"][doc.get("scene", 0)]["nodes"]
    with World.build(scene, lookup) as world:
        for cam in scene.cameras:
            index = next(i for i, n in enumerate(doc["nodes"]) if n["name"] == f"camera/{cam.name}")
            assert index in roots
            persp = doc["cameras"][doc["nodes"][index]["camera"]]["perspective"]
            assert persp["yfov"] == pytest.approx(np.radians(cam.fov_deg))
            assert persp["aspectRatio"] == pytest.approx(cam.width / cam.height)
            assert (persp["znear"], persp["zfar"]) == pytest.approx((cam.near, cam.far))
            m = np.asarray(doc["nodes"][index]["matrix"]).reshape(4, 4).T
            eye, target, up = camera_world(world, cam)
            assert np.allclose(m[:3, 3], eye, atol=1e-4)  # glTF cameras look along -z
            assert np.allclose(-m[:3, 2], (target - eye) / np.linalg.norm(target - eye), atol=1e-4)
    assert len(trimesh.load(path).geometry) > len(scene.assets)  # still a valid GLB for trimesh


def test_gltf_golden(tmp_path_factory):
    scene, lookup = golden_scene(cache_dir(tmp_path_factory))
    path = export(scene, lookup, "glb", tmp_path_factory.mktemp("golden_gltf"))
    loaded = trimesh.load(path)
    summary = {"nodes": sorted(loaded.graph.nodes_geometry),
               "textured": sorted(n for n in loaded.graph.nodes_geometry
                                  if getattr(loaded.geometry[loaded.graph.get(n)[1]].visual.material,
                                             "baseColorTexture", None) is not None)}
    check_golden("export_gltf", summary, lookup)
