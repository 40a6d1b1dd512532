"""``scenegen qa`` writes its reports and each scene's qa.json, nothing else (issue 12)."""

from __future__ import annotations

import json

import pytest

from qa.config import QAConfig
from qa.recheck import INTEGRITY, recheck_pack
from scenegen.cli import main
from scenegen.pack.reader import load_pack
from tests.scenegen.pack.test_pack import edit_manifest, make_asset, make_scene, write_pack


@pytest.fixture
def pack(tmp_path_factory, tmp_path):
    base = tmp_path_factory.mktemp("qa_delete_assets")
    table = make_asset(base, "table", "table", (0.8, 1.2, 0.05))
    bowl = make_asset(base, "bowl", "bowl", (0.15, 0.15, 0.06))
    bananas = [make_asset(base, f"banana{i}", "banana", (0.18 + 0.01 * i, 0.04, 0.04)) for i in range(2)]
    items = []
    for i, banana in enumerate(bananas):
        scene = make_scene(banana, table, bowl, 0.02 * (i + 1))
        items.append((scene, {a.id: a for a in (banana, table, bowl)}, None, {"passed": True, "checks": []}))
    return write_pack(tmp_path / "pack", items)


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_qa_reports_a_moved_object_and_deletes_nothing(pack, capsys):
    moved, kept = pack.scene_ids
    path = pack.root / "scenes" / moved / "scene.json"
    data = json.loads(path.read_text())
    data["poses"]["banana_1"][0][0] += 0.05  # the user moved an object 5 cm
    path.write_text(json.dumps(data))
    (pack.root / "scenes" / "my_folder").mkdir()
    (pack.root / "scenes" / "my_folder" / "notes.txt").write_text("mine")
    (pack.root / "assets" / "my_assets").mkdir()
    edit_manifest(pack.root, lambda m: m.update(finalized=False))  # an interrupted pack
    before = _files(pack.root)

    with pytest.raises(SystemExit) as code:
        main(["qa", str(pack.root), "--checks", "geometry,physics", "--quiet"])
    out = capsys.readouterr()
    assert code.value.code == 2 and "modified since the pack was written" in out.err
    assert out.err.startswith("error:") and len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err

    after = _files(pack.root)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert set(before) <= set(after), f"QA deleted {set(before) - set(after)}"
    assert changed <= {"manifest.json", "qa_report.json", "qa_report.md", f"scenes/{moved}/qa.json",
                       f"scenes/{kept}/qa.json"}
    assert (pack.root / "assets" / "my_assets").is_dir() and (pack.root / "scenes" / "my_folder").is_dir()
    reloaded = load_pack(pack.root)
    assert reloaded.manifest["finalized"] is False
    assert reloaded.scene_entry(moved)["status"] == "failed"
    record = reloaded.qa(moved)
    assert record["failed"] == [INTEGRITY] and "modified since the pack was written" in record["reason"]
    report = json.loads((pack.root / "qa_report.json").read_text())
    assert report["integrity"][0]["id"] == moved and report["scenes"][kept]["checks"][0]["name"] == "geometry"


def test_qa_without_write_changes_nothing(pack):
    before = _files(pack.root)
    report = recheck_pack(pack.root, QAConfig(checks=("geometry",)), progress=False, write=False)
    assert report["scenes_checked"] == 2 and not report["integrity"]
    assert _files(pack.root) == before
