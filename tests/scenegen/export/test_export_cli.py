from __future__ import annotations

import json
import shutil

import mujoco
import pybullet as p
import pytest

from scenegen.cli import main
from scenegen.errors import ExportError
from scenegen.export import EXPORTERS, export, formats, get_exporter
from scenegen.export.urdf import load_scene
from scenegen.pack.writer import PackWriter
from tests.helpers.export_scenes import settled_scene
from tests.helpers.scene_assets import cache_dir


@pytest.fixture(scope="module")
def settled(tmp_path_factory):
    return settled_scene(cache_dir(tmp_path_factory))


@pytest.fixture(scope="module")
def moved_pack(settled, tmp_path_factory):
    """A one-scene pack, written in one folder and then moved to another (the original deleted)."""
    scene, lookup = settled
    base = tmp_path_factory.mktemp("packs")
    with PackWriter(base / "pack", "put the banana in the bowl", 0) as writer:
        writer.add_scene(scene, lookup)
        writer.finalize()
    shutil.copytree(base / "pack", base / "elsewhere" / "pack")
    shutil.rmtree(base / "pack")
    return base / "elsewhere" / "pack", scene


def test_registry_lists_formats_and_rejects_unknown():
    assert formats() == ["urdf", "mjcf", "sdf", "usd", "gltf"] == list(EXPORTERS)
    assert get_exporter("GLB") is get_exporter("gltf")
    with pytest.raises(ExportError, match="unknown export format 'obj'; choose one of urdf, mjcf, sdf, usd, gltf"):
        get_exporter("obj")


def test_missing_asset_is_a_typed_error(settled, tmp_path):
    scene, lookup = settled
    partial = {k: v for k, v in lookup.items() if v.category != "bowl"}
    with pytest.raises(ExportError, match="node 'bowl_1' is not in the asset lookup"):
        export(scene, partial, "mjcf", tmp_path)


def test_cli_exports_moved_pack_and_the_output_moves_too(moved_pack, tmp_path, capsys):
    pack, scene = moved_pack
    out = tmp_path / "out"
    main(["export", str(pack), "--format", "mjcf", "-o", str(out)])
    assert "exported 1 scene(s) as mjcf" in capsys.readouterr().out
    index = json.loads((out / "exports.json").read_text())
    assert index["scenes"] == {scene.id: f"{scene.id}/scene.xml"}
    shutil.move(str(out), tmp_path / "copied")
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "copied" / scene.id / "scene.xml"))
    assert model.nbody == 1 + len(scene.assets)


def test_cli_scene_prefix_urdf_with_robot(moved_pack, tmp_path):
    pack, scene = moved_pack
    main(["export", str(pack), "-f", "urdf", "--scene", scene.id[:8], "--with-robot", "-o", str(tmp_path)])
    c = p.connect(p.DIRECT)
    try:
        bodies = load_scene(tmp_path / scene.id / "scene.json", c)
    finally:
        p.disconnect(c)
    assert set(bodies) == set(scene.assets) | {"robot"}


@pytest.mark.parametrize("args, message", [
    (["--format", "obj"], "unknown export format 'obj'"),
    (["--format", "mjcf", "--scene", "zzzz"], "zzzz"),
])
def test_cli_errors_are_one_line_exit_2(moved_pack, tmp_path, capsys, args, message):
    pack, _ = moved_pack
    with pytest.raises(SystemExit) as exc:
        main(["export", str(pack), *args, "-o", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_cli_not_a_pack(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path), "--format", "sdf", "-o", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "not a scene pack" in capsys.readouterr().err
