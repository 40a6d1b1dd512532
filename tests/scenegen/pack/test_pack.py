"""Scene packs: round trip, shared assets, atomic writes and crash recovery, resume, safety."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PIL import Image

import scenegen.pack.writer as pack_writer
from scenegen import __version__
from scenegen.assets.base import Asset
from scenegen.errors import PackError
from scenegen.graph import SceneGraph, content_hash
from scenegen.pack.reader import Pack, load_pack
from scenegen.pack.writer import PackWriter
from scenegen.scene import Camera, Pose, Scene

PROMPT = "put the banana in the bowl"
CONFIG = {"robot": "panda", "workers": 1, "settle_steps": 240}

URDF = """<?xml version="1.0"?>
<robot name="{name}">
  <link name="base">
    <inertial><origin xyz="0 0 {cz}"/><mass value="{mass}"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
    <visual><geometry><mesh filename="visual.obj"/></geometry></visual>
    <collision><geometry><mesh filename="collision/part_000.obj"/></geometry></collision>
  </link>
</robot>
"""


# --------------------------------------------------------------------------- fake-but-real data
def make_asset(base: Path, name: str, category: str, size: tuple[float, float, float]) -> Asset:
    """An asset folder built by hand: textured box OBJ (+ MTL, PNG), a collision part, URDF, asset.json."""
    folder = base / name
    (folder / "collision").mkdir(parents=True)
    box = trimesh.creation.box(size)
    box.apply_translation([0.0, 0.0, size[2] / 2])
    uv = np.random.default_rng(len(name)).random((len(box.vertices), 2))
    box.visual = trimesh.visual.TextureVisuals(uv=uv, image=Image.new("RGB", (4, 4), (200, 30, 30)))
    box.export(folder / "visual.obj")
    trimesh.creation.box(size).export(folder / "collision" / "part_000.obj")
    mass = 0.1 + size[0]
    (folder / "model.urdf").write_text(URDF.format(name=name, cz=size[2] / 2, mass=mass))
    asset = Asset(
        id=content_hash({"name": name, "category": category, "size": size}), category=category,
        source="procedural", seed=0, attributes={"color": "red"}, params={"size": list(size)}, extents=size,
        mass=mass, com=(0.0, 0.0, size[2] / 2), inertia=((1e-4, 0, 0), (0, 1e-4, 0), (0, 0, 1e-4)),
        friction=0.6, restitution=0.1, rgba=(0.8, 0.1, 0.1, 1.0), collision_method="primitive",
        collision=["collision/part_000.obj"], volume=float(np.prod(size)), visual_faces=12, path=folder,
    )
    (folder / "asset.json").write_text(json.dumps(asset.to_dict(), indent=2))
    return asset


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> dict[str, Asset]:
    base = tmp_path_factory.mktemp("asset_cache")
    return {
        "table": make_asset(base, "table", "table", (0.8, 1.2, 0.05)),
        "bowl": make_asset(base, "bowl", "bowl", (0.15, 0.15, 0.06)),
        "banana1": make_asset(base, "banana1", "banana", (0.18, 0.04, 0.04)),
        "banana2": make_asset(base, "banana2", "banana", (0.20, 0.05, 0.04)),
    }


def make_scene(banana: Asset, table: Asset, bowl: Asset, shift: float) -> Scene:
    g = SceneGraph(PROMPT)
    g.add_object("table", "table", "support")
    g.add_object("banana_1", "banana", "target", attributes={"color": "yellow"})
    g.add_object("bowl_1", "bowl", "receptacle", attributes={"color": "blue"})
    g.add_relation("banana_1", "on", "table")
    g.add_relation("bowl_1", "on", "table")
    g.add_goal("banana_1", "in", "bowl_1")
    poses = {"table": Pose((0.5, 0.0, 0.0)), "banana_1": Pose((0.45 + shift, 0.1, 0.05)),
             "bowl_1": Pose((0.55, -0.1 - shift, 0.05), (0.0, 0.0, 0.3826834, 0.9238795))}
    scene = Scene(id="", graph=g, assets={"table": table.id, "banana_1": banana.id, "bowl_1": bowl.id},
                  poses=poses, table_height=0.05, cameras=[Camera("front", (1.2, 0.0, 0.8), (0.5, 0.0, 0.05))],
                  settled={k: Pose((v.position[0], v.position[1], v.position[2] - 0.001)) for k, v in poses.items()},
                  seed=int(shift * 100))
    scene.id = scene.compute_id()
    return scene


@pytest.fixture(scope="module")
def scenes(assets) -> list[tuple[Scene, dict[str, Asset], Image.Image, dict]]:
    out = []
    for i, banana in enumerate([assets["banana1"], assets["banana2"], assets["banana1"]]):
        scene = make_scene(banana, assets["table"], assets["bowl"], 0.01 * (i + 1))
        used = {a.id: a for a in (banana, assets["table"], assets["bowl"])}
        preview = Image.fromarray(np.full((16, 16, 3), 40 * i, dtype=np.uint8))
        qa = {"passed": i != 1, "score": 0.5 + 0.1 * i,
              "checks": [{"name": "at_rest", "passed": True}, {"name": "overlap", "passed": i != 1}]}
        out.append((scene, used, preview, qa))
    return out


def write_pack(root: Path, items, prompt: str = PROMPT, seed: int = 7, config=None) -> Pack:
    with PackWriter(root, prompt, seed, CONFIG if config is None else config) as w:
        for scene, used, preview, qa in items:
            w.add_scene(scene, used, preview=preview, qa=qa)
        return w.finalize({"attempts": len(items), "failures": {}})


def fork_and_crash(action) -> int:
    """Run ``action`` in a forked child that must die with os._exit(17) midway; return its exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            action()
        finally:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def jd(scene: Scene) -> dict:
    """A scene as plain JSON data (Scene.from_dict keeps lists where the original had tuples)."""
    return json.loads(json.dumps(scene.to_dict()))


def visible(root: Path, sub: str) -> list[str]:
    return sorted(p.name for p in (root / sub).iterdir())


# --------------------------------------------------------------------------- round trip
def test_write_load_round_trip(tmp_path, scenes, assets):
    pack = write_pack(tmp_path / "pack", scenes)
    again = load_pack(tmp_path / "pack")
    assert len(again) == 3 and again.scene_ids == sorted(s.id for s, *_ in scenes)
    for scene, used, preview, qa in scenes:
        assert jd(again.scene(scene.id)) == jd(scene)
        assert again.qa(scene.id) == qa
        assert np.array_equal(np.asarray(Image.open(again.preview_path(scene.id))), np.asarray(preview))
        for aid, original in used.items():
            loaded = again.asset_lookup[aid]
            assert loaded.to_dict() == original.to_dict()
            assert loaded.path.parent.parent == again.root and loaded.urdf_path.is_file()
    assert [jd(s) for s in again.scenes()] == [jd(s) for s in sorted((s for s, *_ in scenes), key=lambda s: s.id)]
    m = json.loads((tmp_path / "pack" / "manifest.json").read_text())
    assert m["prompt"] == PROMPT and m["seed"] == 7 and m["config"] == CONFIG and m["tool_version"] == __version__
    assert m["qa"] == {"passed": 2, "failed": 1, "unchecked": 0} and m["finalized"] is True
    failed = [e for e in m["scenes"] if e["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["qa"]["failed_checks"] == ["overlap"]
    paths = [e["path"] + "/" + f for e in m["scenes"] + m["assets"] for f in e["files"]]
    assert all(not p.startswith("/") and ".." not in p.split("/") and "\\" not in p for p in paths)
    assert pack.info()["categories"] == {"banana": 2, "bowl": 1, "table": 1}
    assert pack.info()["scenes"] == 3 and pack.info()["size_bytes"] > 0
    assert pack.verify() == []
    assert pack.scene(scenes[0][0].id[:10]).id == scenes[0][0].id  # a unique prefix works


def test_extras_are_hashed_and_verified(tmp_path, scenes):
    with PackWriter(tmp_path / "p", PROMPT, 1, CONFIG) as w:
        w.add_scene(*scenes[0])
        w.write_extra("qa_report.json", {"accepted": 1, "ratio": float("nan")})
        w.write_extra("contact_sheet.png", Image.new("RGB", (8, 8), (1, 2, 3)))
        with pytest.raises(PackError, match="reserved"):
            w.write_extra("manifest.json", b"{}")
        with pytest.raises(PackError, match="not a safe name"):
            w.write_extra("../evil.txt", b"x")
        pack = w.finalize()
    assert json.loads(pack.extra_path("qa_report.json").read_text()) == {"accepted": 1, "ratio": None}
    assert Image.open(pack.extra_path("contact_sheet.png")).size == (8, 8)
    assert pack.info()["extras"] == ["contact_sheet.png", "qa_report.json"] and pack.verify() == []
    pack.extra_path("contact_sheet.png").write_bytes(b"not a png")
    assert [(m.path, m.problem) for m in pack.verify()] == [("contact_sheet.png", "modified")]


def test_assets_stored_once_across_scenes(tmp_path, scenes, assets):
    root = tmp_path / "pack"
    with PackWriter(root, PROMPT, 7, CONFIG) as w:
        w.add_scene(*scenes[0])
        table_json = root / "assets" / assets["table"].id / "asset.json"
        inode = table_json.stat().st_ino
        w.add_scene(*scenes[1])
        w.add_scene(*scenes[2])
        assert table_json.stat().st_ino == inode  # not rewritten
        # an asset already in the pack need not be passed again
        w.add_scene(make_scene(assets["banana2"], assets["table"], assets["bowl"], 0.3), {})
    assert visible(root, "assets") == sorted(a.id for a in assets.values())
    m = json.loads((root / "manifest.json").read_text())
    assert len(m["assets"]) == 4 and len(m["scenes"]) == 4
    assert all(assets["table"].id in e["assets"] for e in m["scenes"])
    assert load_pack(root).verify() == []


def test_add_scene_refuses_bad_input(tmp_path, scenes, assets):
    scene, used, _, _ = scenes[0]
    with PackWriter(tmp_path / "p", PROMPT, 1) as w:
        with pytest.raises(PackError, match="neither in the pack nor passed"):
            w.add_scene(scene, {k: v for k, v in used.items() if k != assets["bowl"].id})
        bad = make_asset(tmp_path / "cache", "bowl", "bowl", (0.15, 0.15, 0.06))
        (bad.path / "model.urdf").write_text(URDF.replace("visual.obj", "/etc/passwd").format(name="b", cz=0, mass=1))
        with pytest.raises(PackError, match="not self-contained"):
            w.add_scene(scene, {**used, bad.id: bad})
        nan_scene = make_scene(assets["banana1"], assets["table"], assets["bowl"], 0.5)
        nan_scene.poses["banana_1"] = Pose((float("nan"), 0.0, 0.0))
        with pytest.raises(PackError, match="cannot be stored as JSON"):
            w.add_scene(nan_scene, used)
        assert w.scene_ids == [] and visible(w.root, "scenes") == []
        w.add_scene(scene, used)
        assert w.add_scene(scene, used)["id"] == scene.id  # same content again: a no-op
        changed = Scene.from_dict(scene.to_dict())
        changed.meta = {"note": "other"}
        with pytest.raises(PackError, match="already in the pack with other content"):
            w.add_scene(changed, used)
    with pytest.raises(PackError, match="closed"):
        w.add_scene(scene, used)


# --------------------------------------------------------------------------- atomicity
def test_exception_midway_leaves_no_half_scene(tmp_path, scenes, monkeypatch):
    root = tmp_path / "pack"
    w = PackWriter(root, PROMPT, 7, CONFIG)
    w.add_scene(*scenes[0])
    before = (root / "manifest.json").read_bytes()

    def broken_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pack_writer.os, "rename", broken_rename)
    with pytest.raises(PackError, match="No space left"):
        w.add_scene(*scenes[1])
    monkeypatch.undo()
    assert (root / "manifest.json").read_bytes() == before
    assert visible(root, "scenes") == [scenes[0][0].id]
    assert not [p for p in root.rglob(".tmp-*")]
    w.add_scene(*scenes[1])  # the writer still works
    w.close()
    assert len(load_pack(root)) == 2


@pytest.mark.parametrize("where", ["scene_rename", "asset_copy", "manifest_replace"])
def test_crash_never_leaves_a_half_scene(tmp_path, scenes, where):
    root = tmp_path / "pack"
    w = PackWriter(root, PROMPT, 7, CONFIG)
    w.add_scene(*scenes[0])

    def die(*args, **kwargs):
        os._exit(17)

    def crash():
        if where == "scene_rename":
            pack_writer.os.rename = lambda src, dst: die() if "scenes" in str(dst) else os.replace(src, dst)
        elif where == "asset_copy":
            calls = []

            def write_two_then_die(path, data):
                calls.append(path)
                if len(calls) > 2:
                    die()
                Path(path).write_bytes(data)
            pack_writer.write_file = write_two_then_die
        else:
            pack_writer.write_atomic = die
        w.add_scene(*scenes[1])  # scenes[1] brings a new asset (banana2)

    assert fork_and_crash(crash) == 17
    leftovers = [p.name for p in root.rglob(".tmp-*")]
    if where != "manifest_replace":
        assert leftovers, "the crash should have left a temporary folder"
    pack = load_pack(root)  # the manifest is still valid and lists only the finished scene
    # what it lists is intact; the complete folders the crash left are reported as unlisted (resume adopts them)
    problems = pack.verify()
    assert pack.scene_ids == [scenes[0][0].id] and all(m.problem == "unlisted" for m in problems)
    assert all(m.path.split("/")[0] in ("assets", "scenes") for m in problems)
    for name in visible(root, "scenes"):  # anything else is a temp folder or a complete, unlisted scene
        if name not in (scenes[0][0].id,) and not name.startswith(".tmp-"):
            assert where == "manifest_replace" and name == scenes[1][0].id
            assert json.loads((root / "scenes" / name / "scene.json").read_text()) == jd(scenes[1][0])
    w.close()
    w = PackWriter(root, PROMPT, 7, CONFIG)  # reopen: clean leftovers, adopt complete folders
    assert not list(root.rglob(".tmp-*"))
    expected = [scenes[0][0].id] + ([scenes[1][0].id] if where == "manifest_replace" else [])
    assert w.scene_ids == sorted(expected)
    for item in scenes[1:]:
        w.add_scene(*item)
    pack = w.finalize()
    assert pack.verify() == [] and len(pack) == 3
    assert pack.content_hash == write_pack(tmp_path / "clean", scenes).content_hash


# --------------------------------------------------------------------------- resume and refusal
def test_resume_keeps_finished_scenes(tmp_path, scenes):
    root = tmp_path / "pack"
    w = PackWriter(root, PROMPT, 7, dict(CONFIG))
    w.add_scene(*scenes[0])
    w.add_scene(*scenes[1])
    created = json.loads((root / "manifest.json").read_text())["created"]
    w.close()  # an interrupted run: no finalize
    # same config given as a different-but-equal object (key order, tuple vs list) resumes
    w = PackWriter(root, PROMPT, 7, dict(reversed(list(CONFIG.items()))))
    assert w.scene_ids == sorted([scenes[0][0].id, scenes[1][0].id])
    assert w.has_scene(scenes[0][0].id) and not w.has_scene(scenes[2][0].id)
    w.add_scene(*scenes[2])
    pack = w.finalize()
    assert len(pack) == 3 and pack.manifest["created"] == created and pack.verify() == []
    shutil.rmtree(root / "scenes" / scenes[1][0].id)  # a scene lost on disk is dropped on reopen
    with PackWriter(root, PROMPT, 7, CONFIG) as w:
        assert w.scene_ids == sorted([scenes[0][0].id, scenes[2][0].id])


@pytest.mark.parametrize("change", [{"prompt": "stack the cups"}, {"seed": 8},
                                    {"config": {**CONFIG, "workers": 2}}])
def test_different_run_in_existing_folder_is_refused(tmp_path, scenes, change):
    write_pack(tmp_path / "pack", scenes[:1])
    args = {"prompt": PROMPT, "seed": 7, "config": CONFIG, **change}
    with pytest.raises(PackError, match=f"different {next(iter(change))}.*choose another -o or delete it"):
        PackWriter(tmp_path / "pack", **args)
    assert len(load_pack(tmp_path / "pack")) == 1


def test_non_pack_folder_and_second_writer_are_refused(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    with pytest.raises(PackError, match="not empty and holds no scene pack"):
        PackWriter(tmp_path / "notes", PROMPT, 1)
    assert sorted(os.listdir(tmp_path / "notes")) == ["todo.txt"]  # untouched, no lock file left
    (tmp_path / "afile").write_text("x")
    with pytest.raises(PackError, match="is a file"):
        PackWriter(tmp_path / "afile", PROMPT, 1)
    with PackWriter(tmp_path / "p", PROMPT, 1):
        with pytest.raises(PackError, match="being written by another"):
            PackWriter(tmp_path / "p", PROMPT, 1)
    PackWriter(tmp_path / "p", PROMPT, 1).close()  # free again once closed


# --------------------------------------------------------------------------- safety
def edit_manifest(root: Path, edit) -> None:
    m = json.loads((root / "manifest.json").read_text())
    edit(m)
    (root / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("edit", [
    lambda m: m["scenes"][0].update(path="../x"),
    lambda m: m["scenes"][0].update(path="/etc/passwd"),
    lambda m: m["assets"][0].update(path="assets/../../x"),
    lambda m: m["assets"][0]["files"].update({"../../../etc/passwd": "0" * 64}),
    lambda m: m["extras"].update({"..": "0" * 64}),
    lambda m: m["scenes"][0].update(path="C:\\Windows"),
], ids=["dotdot", "absolute", "nested_dotdot", "file_escape", "extra_escape", "windows"])
def test_manifest_path_escape_is_refused(tmp_path, scenes, edit):
    write_pack(tmp_path / "pack", scenes[:1])
    edit_manifest(tmp_path / "pack", edit)
    with pytest.raises(PackError, match="unsafe|not a safe name"):
        load_pack(tmp_path / "pack")


def test_symlink_out_of_the_pack_is_refused(tmp_path, scenes, assets):
    pack = write_pack(tmp_path / "pack", scenes[:1])
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    urdf = pack.root / "assets" / assets["table"].id / "model.urdf"
    urdf.unlink()
    urdf.symlink_to(secret)
    with pytest.raises(PackError, match="goes through a symbolic link"):
        load_pack(pack.root)
    urdf.unlink()
    shutil.rmtree(pack.root / "scenes" / scenes[0][0].id)
    (pack.root / "scenes" / scenes[0][0].id).symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(PackError, match="goes through a symbolic link"):
        load_pack(pack.root)


def test_a_linked_folder_deep_in_an_asset_is_refused_after_its_first_files(tmp_path, scenes, assets):
    # the manifest check proves each folder once; a link below a proven folder must still be found
    pack = write_pack(tmp_path / "pack", scenes[:1])
    folder = pack.root / "assets" / assets["bowl"].id
    listed = pack.manifest["assets"][[e["id"] for e in pack.manifest["assets"]].index(assets["bowl"].id)]["files"]
    deep = sorted({rel.rsplit("/", 1)[0] for rel in listed if "/" in rel})
    assert deep and sorted(listed)[0] == "asset.json"   # a file of the folder comes before the sub-folder
    outside = tmp_path / "outside"
    shutil.copytree(folder / deep[0], outside)
    shutil.rmtree(folder / deep[0])
    (folder / deep[0]).symlink_to(outside, target_is_directory=True)
    with pytest.raises(PackError, match=f"goes through a symbolic link \\({'assets/' + assets['bowl'].id}/{deep[0]}"):
        load_pack(pack.root)


def test_asset_file_references_outside_are_refused(tmp_path, scenes, assets):
    pack = write_pack(tmp_path / "pack", scenes[:1])
    urdf = pack.root / "assets" / assets["bowl"].id / "model.urdf"
    urdf.write_text(urdf.read_text().replace('filename="visual.obj"', 'filename="../../../etc/passwd"'))
    again = load_pack(pack.root)
    with pytest.raises(PackError, match="modified"):  # the hash check comes first
        again.asset(assets["bowl"].id)
    problems = {(m.path, m.problem) for m in again.verify()}
    assert (f"assets/{assets['bowl'].id}/model.urdf", "unsafe") in problems
    assert (f"assets/{assets['bowl'].id}/model.urdf", "modified") in problems
    rehash(pack.root, f"assets/{assets['bowl'].id}/model.urdf")  # a manifest written to match the bad file
    with pytest.raises(PackError, match="unsafe"):
        load_pack(pack.root).asset(assets["bowl"].id)
    asset_json = pack.root / "assets" / assets["table"].id / "asset.json"
    asset_json.write_text(asset_json.read_text().replace('"model.urdf"', '"x/../model.urdf"'))
    rehash(pack.root, f"assets/{assets['table'].id}/asset.json")
    with pytest.raises(PackError, match="'urdf'.*relative path inside the asset folder"):
        load_pack(pack.root).asset(assets["table"].id)
    asset_json.write_text(asset_json.read_text().replace('"x/../model.urdf"', '"other.urdf"'))
    rehash(pack.root, f"assets/{assets['table'].id}/asset.json")
    with pytest.raises(PackError, match="unlisted file"):
        load_pack(pack.root).asset(assets["table"].id)


def rehash(root: Path, rel: str) -> None:
    """Make the manifest agree with the file's current bytes (a pack damaged before its manifest was written)."""
    folder, name = rel.rsplit("/", 1)
    digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    edit_manifest(root, lambda m: [e["files"].update({name: digest}) for e in m["scenes"] + m["assets"]
                                    if e["path"] == folder])


def test_newer_schema_and_garbage_are_refused(tmp_path, scenes):
    write_pack(tmp_path / "pack", scenes[:1])
    edit_manifest(tmp_path / "pack", lambda m: m.update(schema_version=99))
    with pytest.raises(PackError, match="upgrade scenegen"):
        load_pack(tmp_path / "pack")
    with pytest.raises(PackError, match="cannot be resumed.*choose another -o"):
        PackWriter(tmp_path / "pack", PROMPT, 7, CONFIG)
    edit_manifest(tmp_path / "pack", lambda m: (m.update(schema_version=1), m.pop("scenes")))
    with pytest.raises(PackError, match="malformed"):
        load_pack(tmp_path / "pack")
    (tmp_path / "pack" / "manifest.json").write_text("{not json")
    with pytest.raises(PackError, match="cannot be read"):
        load_pack(tmp_path / "pack")
    with pytest.raises(PackError, match="no manifest.json"):
        load_pack(tmp_path)


# --------------------------------------------------------------------------- integrity, relocation, determinism
def test_verify_detects_modified_and_missing_files(tmp_path, scenes, assets):
    pack = write_pack(tmp_path / "pack", scenes)
    sid = scenes[0][0].id
    scene_json = pack.root / "scenes" / sid / "scene.json"
    scene_json.write_text(scene_json.read_text().replace("0.45", "0.46", 1))
    (pack.root / "assets" / assets["bowl"].id / "collision" / "part_000.obj").unlink()
    found = sorted((m.path, m.problem) for m in pack.verify())
    assert found == [(f"assets/{assets['bowl'].id}/collision/part_000.obj", "missing"),
                     (f"scenes/{sid}/scene.json", "modified")]
    edit_manifest(pack.root, lambda m: m.update(content_hash="0" * 64))
    assert ("manifest.json", "inconsistent") in {(m.path, m.problem) for m in load_pack(pack.root).verify()}


def test_moved_pack_loads_and_builds_in_pybullet(tmp_path, scenes):
    import pybullet as p

    write_pack(tmp_path / "a" / "pack", scenes)
    shutil.move(str(tmp_path / "a" / "pack"), str(tmp_path / "b"))
    shutil.rmtree(tmp_path / "a")
    pack = load_pack(tmp_path / "b")
    assert pack.verify() == []
    cid = p.connect(p.DIRECT)
    try:
        for scene in pack.scenes():
            for node, aid in scene.assets.items():
                asset = pack.asset_lookup[aid]
                assert str(asset.urdf_path).startswith(str(pack.root))
                pose = scene.poses[node]
                body = p.loadURDF(str(asset.urdf_path), pose.position, pose.orientation, physicsClientId=cid)
                assert body >= 0
                assert p.getDynamicsInfo(body, -1, physicsClientId=cid)[0] == pytest.approx(asset.mass)
    finally:
        p.disconnect(cid)


def test_same_content_gives_same_content_hash(tmp_path, scenes, assets):
    one = write_pack(tmp_path / "one", scenes)
    two = write_pack(tmp_path / "two", list(reversed(scenes)))  # other order, other folder, other time
    assert one.content_hash == two.content_hash
    strip = lambda m: {k: v for k, v in m.items() if k != "created"}  # noqa: E731
    assert strip(one.manifest) == strip(two.manifest)
    three = write_pack(tmp_path / "three", scenes[:2])
    assert three.content_hash != one.content_hash
    extra = make_scene(assets["banana2"], assets["table"], assets["bowl"], 0.9)
    with PackWriter(tmp_path / "one", PROMPT, 7, CONFIG) as w:
        w.add_scene(extra, {})
        assert w.content_hash != one.content_hash
