"""Damaged and tampered packs (issue 12): one-line PackErrors naming file and field, no read outside the pack.

Each case damages a freshly written pack in one way; where the point is the validation of a
file's content (not its hash), the manifest is rewritten to match the damaged bytes, as if the
pack had been written damaged.
"""

from __future__ import annotations

import json
import logging
import math
import os

import pytest

from scenegen.cli import main
from scenegen.errors import ExportError, PackError
from scenegen.export import export
from scenegen.pack.reader import load_pack
from scenegen.pack.writer import PackWriter
from tests.scenegen.pack.test_pack import CONFIG, PROMPT, edit_manifest, make_asset, make_scene, rehash, write_pack

SECRET = "canary-secret-9b74c9897bac770ffc029102a200c5de"


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    base = tmp_path_factory.mktemp("fault_assets")
    return {"table": make_asset(base, "table", "table", (0.8, 1.2, 0.05)),
            "bowl": make_asset(base, "bowl", "bowl", (0.15, 0.15, 0.06)),
            "banana": make_asset(base, "banana", "banana", (0.18, 0.04, 0.04))}


@pytest.fixture
def pack(tmp_path, assets):
    scene = make_scene(assets["banana"], assets["table"], assets["bowl"], 0.01)
    used = {a.id: a for a in assets.values()}
    return write_pack(tmp_path / "pack", [(scene, used, None, {"passed": True, "checks": []})])


def _scene_json(pack):
    return pack.root / pack.scene_entry(pack.scene_ids[0])["path"] / "scene.json"


def _set(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


NAN = float("nan")
SCENE_DAMAGE = {
    "poses_list": (lambda d: d.update(poses=[]), "poses must be a JSON object"),
    "settled_str": (lambda d: d.update(settled="x"), "settled must be a JSON object"),
    "nan_pose": (lambda d: d["poses"]["banana_1"][0].__setitem__(0, NAN), "poses/banana_1/position/0"),
    "all_nan": (lambda d: d.update(poses={k: [[NAN] * 3, [NAN] * 4] for k in d["poses"]}), "position/0"),
    "zero_quat": (lambda d: d["poses"]["bowl_1"].__setitem__(1, [0, 0, 0, 0]), "unit quaternion"),
    "far_away": (lambda d: d["poses"]["banana_1"][0].__setitem__(2, 1e308), "poses/banana_1/position/2"),
    "nan_settled": (lambda d: d["settled"]["banana_1"][1].__setitem__(3, NAN), "settled/banana_1/orientation/3"),
    "no_graph": (lambda d: d.pop("graph"), "graph is missing"),
    "bad_graph": (lambda d: d.update(graph={"objects": 3}), "graph is not a valid scene graph"),
    "bad_camera": (lambda d: d["cameras"][0].update(fov_deg="wide"), "cameras/0/fov_deg"),
    "camera_field": (lambda d: d["cameras"][0].update(zoom=2), "cameras/0/zoom"),
    "bad_seed": (lambda d: d.update(seed=1.5), "seed"),
    "not_object": (lambda d: d.clear() or d.update({"": [1]}), "id is missing"),
}


@pytest.mark.parametrize("case", sorted(SCENE_DAMAGE))
def test_damaged_scene_json_is_a_pack_error_naming_file_and_field(pack, case, capsys):
    change, field = SCENE_DAMAGE[case]
    path = _scene_json(pack)
    _set(path, change)  # json.dumps writes NaN as a damaged writer would
    with pytest.raises(PackError) as info:
        load_pack(pack.root).scene(pack.scene_ids[0])
    assert "scene.json" in str(info.value) and field in str(info.value)
    with pytest.raises(SystemExit) as code:
        main(["show", str(pack.root), "--scene", pack.scene_ids[0]])
    err = capsys.readouterr().err
    assert code.value.code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("data", [b"\xff\xfe{not utf8", b'{"poses": ', b""])
def test_unreadable_scene_json_is_a_pack_error(pack, data):
    _scene_json(pack).write_bytes(data)
    with pytest.raises(PackError, match="scene.json cannot be read"):
        load_pack(pack.root).scene(pack.scene_ids[0])


ASSET_DAMAGE = {
    "not_utf8": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "a_list": (b"[1]", "must be a JSON object"),
    "extents_5": ("extents", 5, "'extents' = 5"),
    "nan_mass": ("mass", NAN, "'mass'"),
    "negative_friction": ("friction", -1.0, "'friction'"),
    "unknown_field": ("colour", "red", "'colour' is not an Asset field"),
    "visual_escape": ("visual", "../../../etc/passwd", "'visual'"),
    "rgba_short": ("rgba", [1, 0, 0], "'rgba'"),
}


@pytest.mark.parametrize("case", sorted(ASSET_DAMAGE))
def test_damaged_asset_json_is_a_pack_error_naming_file_and_field(pack, assets, case):
    folder = f"assets/{assets['bowl'].id}"
    path = pack.root / folder / "asset.json"
    spec = ASSET_DAMAGE[case]
    if len(spec) == 2:
        path.write_bytes(spec[0])
    else:
        _set(path, lambda d: d.update({spec[0]: spec[1]}))
    with pytest.raises(PackError, match="modified"):  # as damaged after writing: the hash says so
        load_pack(pack.root).asset(assets["bowl"].id)
    rehash(pack.root, f"{folder}/asset.json")  # as written damaged: the content check says what is wrong
    with pytest.raises(PackError) as info:
        load_pack(pack.root).asset(assets["bowl"].id)
    assert "asset.json" in str(info.value) and spec[-1] in str(info.value)


@pytest.mark.parametrize("damage", ["truncate_urdf", "delete_part", "garbage_obj", "fifo_part"])
def test_damaged_asset_files_are_refused_before_pybullet_sees_them(pack, assets, damage, tmp_path):
    folder = pack.root / "assets" / assets["bowl"].id
    if damage == "truncate_urdf":
        (folder / "model.urdf").write_text((folder / "model.urdf").read_text()[:40])
    elif damage == "delete_part":
        (folder / "collision" / "part_000.obj").unlink()
    elif damage == "garbage_obj":
        (folder / "visual.obj").write_bytes(os.urandom(300))
    else:
        (folder / "collision" / "part_000.obj").unlink()
        os.mkfifo(folder / "collision" / "part_000.obj")  # reading it would block forever
    with pytest.raises(PackError, match="modified|missing|not a regular file"):
        load_pack(pack.root).asset(assets["bowl"].id)
    with pytest.raises(PackError):
        export(load_pack(pack.root).scene(pack.scene_ids[0]), load_pack(pack.root).asset_lookup, "urdf",
               tmp_path / "out")


def test_export_copies_only_listed_regular_files(pack, assets, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET)
    folder = pack.root / "assets" / assets["bowl"].id
    os.symlink(secret, folder / "notes.txt")
    os.symlink(outside, folder / "etc")
    (folder / "extra.txt").write_text("a file the manifest does not list")
    problems = {(m.path.rsplit("/", 1)[-1], m.problem) for m in load_pack(pack.root).verify()}
    assert {("notes.txt", "unsafe"), ("etc", "unsafe"), ("extra.txt", "unlisted")} <= problems
    loaded = load_pack(pack.root)
    out = export(loaded.scene(pack.scene_ids[0]), loaded.asset_lookup, "urdf", tmp_path / "out")
    files = [p for p in (tmp_path / "out").rglob("*")]
    assert out.is_file() and not [p for p in files if p.is_symlink()]
    assert not [p for p in files if p.is_file() and SECRET in p.read_text(errors="ignore")]
    assert not [p for p in files if p.name in ("notes.txt", "extra.txt", "etc", "passwd")]
    listed = set(loaded.manifest["assets"][0]["files"])
    copied = {p.relative_to(tmp_path / "out" / "assets" / assets["bowl"].id).as_posix()
              for p in (tmp_path / "out" / "assets" / assets["bowl"].id).rglob("*") if p.is_file()}
    assert copied == listed


def test_export_refuses_a_listed_file_changed_after_loading(pack, assets, tmp_path):
    loaded = load_pack(pack.root)
    lookup = {aid: loaded.asset(aid) for aid in loaded.asset_ids}  # checked at load
    (pack.root / "assets" / assets["bowl"].id / "visual.obj").write_text("v 0 0 0\n")  # then swapped
    with pytest.raises(ExportError, match="differs from the pack's manifest"):
        export(loaded.scene(pack.scene_ids[0]), lookup, "urdf", tmp_path / "out")


def test_a_fifo_in_place_of_scene_json_does_not_hang(pack):
    path = _scene_json(pack)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(PackError, match="not a regular file"):
        load_pack(pack.root).scene(pack.scene_ids[0])
    assert any(m.problem == "unsafe" for m in load_pack(pack.root).verify())


def test_resume_quarantines_damage_and_never_deletes(pack, assets, caplog):
    caplog.set_level(logging.WARNING)
    sid = pack.scene_ids[0]
    _set(_scene_json(pack), lambda d: d["poses"]["banana_1"][0].__setitem__(0, 0.47))
    user = pack.root / "scenes" / "my_notes"
    user.mkdir()
    (user / "todo.txt").write_text("mine")
    (pack.root / "assets" / "my_mesh").mkdir()
    (pack.root / "assets" / "my_mesh" / "mesh.obj").write_text("v 0 0 0\n")
    with PackWriter(pack.root, PROMPT, 7, CONFIG) as w:
        assert w.scene_ids == []  # the damaged scene is not kept: it will be regenerated
    q = pack.root / "quarantine"
    assert (q / "scenes" / sid / "scene.json").is_file()
    assert (q / "scenes" / "my_notes" / "todo.txt").read_text() == "mine"
    assert (q / "assets" / "my_mesh" / "mesh.obj").is_file()
    assert "quarantine" in caplog.text
    assert not [m for m in load_pack(pack.root).verify() if m.problem != "unlisted"]


def test_update_writes_only_reports_qa_json_and_keeps_finalized(pack):
    edit_manifest(pack.root, lambda m: m.update(finalized=False))  # an interrupted pack
    sid = pack.scene_ids[0]
    (pack.root / "scenes" / "user_folder").mkdir()
    before = {p: p.read_bytes() for p in pack.root.rglob("*") if p.is_file()}
    with PackWriter.update(pack.root) as w:
        w.write_scene_qa(sid, {"passed": False, "score": math.nan, "checks": [{"name": "x", "passed": False}]})
        w.write_extra("qa_report.json", {"ok": 1})
        w.set_summary({"qa": {"mode": "recheck"}})
        with pytest.raises(PackError, match="cannot be finalized"):
            w.finalize()
    after = {p: p.read_bytes() for p in pack.root.rglob("*") if p.is_file()}
    changed = {p.relative_to(pack.root).as_posix() for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed == {"manifest.json", f"scenes/{sid}/qa.json", "qa_report.json"}
    reloaded = load_pack(pack.root)
    assert reloaded.manifest["finalized"] is False and (pack.root / "scenes" / "user_folder").is_dir()
    assert reloaded.scene_entry(sid)["status"] == "failed" and reloaded.verify() == []
