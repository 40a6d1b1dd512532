"""Damaged and tampered packs, and whole CLI runs, for the fuzz campaign (:mod:`fuzz`).

A pack case copies the campaign's base pack, damages it one way (:data:`TAMPER`), optionally
rewrites the manifest to agree with the damage (a pack *written* damaged), runs one command on
it (:data:`COMMANDS`) and then looks for findings: files of the pack changed beyond what the
command may write, a user file gone, the canary token of a file outside the pack in anything
the command wrote or said.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz_cases import Ctx, classify

# --------------------------------------------------------------------------- tampering
Tamper = Callable[[Path, Ctx, random.Random], "str | None"]
"""Damages a pack copy; returns the pack-relative file it changed (rehashed in the 'written damaged' variant)."""


def _scene_dir(root: Path) -> Path:
    return next(p for p in sorted((root / "scenes").iterdir()) if p.is_dir())


def _asset_dir(root: Path, rng: random.Random) -> Path:
    return rng.choice(sorted(p for p in (root / "assets").iterdir() if p.is_dir()))


def _rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix()


def _edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text())
    path.write_text(json.dumps(edit(data) or data))


def _scene_edit(edit: Callable[[dict], Any]) -> Tamper:
    def tamper(root: Path, ctx: Ctx, rng: random.Random) -> str:
        path = _scene_dir(root) / "scene.json"
        _edit_json(path, edit)
        return _rel(root, path)
    return tamper


def _first_pose(d: dict, which: str = "poses") -> list:
    return d[which][sorted(k for k in d[which] if k != "table")[0]]


def _asset_file(name: str, write: Callable[[Path, Ctx, random.Random], None]) -> Tamper:
    def tamper(root: Path, ctx: Ctx, rng: random.Random) -> str | None:
        folder = _asset_dir(root, rng)
        path = folder / name if name != "part" else sorted((folder / "collision").glob("*.obj"))[0]
        write(path, ctx, rng)
        return _rel(root, path) if path.is_file() and not path.is_symlink() else None
    return tamper


def _link(target: str) -> Callable[[Path, Ctx, random.Random], None]:
    def write(path: Path, ctx: Ctx, rng: random.Random) -> None:
        path.unlink(missing_ok=True)
        os.symlink(ctx.secret_file if target == "file" else ctx.outside_dir, path)
    return write


def _manifest(edit: Callable[[dict], Any]) -> Tamper:
    def tamper(root: Path, ctx: Ctx, rng: random.Random) -> None:
        _edit_json(root / "manifest.json", edit)
    return tamper


def _user_folder(sub: str) -> Tamper:
    def tamper(root: Path, ctx: Ctx, rng: random.Random) -> None:
        (root / sub / "user_stuff").mkdir()
        (root / sub / "user_stuff" / "notes.txt").write_text("the user's own file")
    return tamper


NAN = math.nan
TAMPER: dict[str, Tamper] = {
    "poses_list": _scene_edit(lambda d: d.update(poses=[])),
    "settled_str": _scene_edit(lambda d: d.update(settled="x")),
    "nan_pose": _scene_edit(lambda d: _first_pose(d)[0].__setitem__(0, NAN)),
    "all_nan": _scene_edit(lambda d: d.update(poses={k: [[NAN] * 3, [NAN] * 4] for k in d["poses"]})),
    "zero_quat": _scene_edit(lambda d: _first_pose(d).__setitem__(1, [0, 0, 0, 0])),
    "far_z": _scene_edit(lambda d: _first_pose(d)[0].__setitem__(2, 1e308)),
    "nan_settled": _scene_edit(lambda d: _first_pose(d, "settled")[0].__setitem__(1, NAN)),
    "moved_5cm": _scene_edit(lambda d: _first_pose(d)[0].__setitem__(0, _first_pose(d)[0][0] + 0.05)),
    "bad_camera": _scene_edit(lambda d: d["cameras"][0].update(width=-3)),
    "scene_not_utf8": lambda r, c, g: _write(_scene_dir(r) / "scene.json", b"\xff\xfe{", r),
    "scene_truncated": lambda r, c, g: _write(_scene_dir(r) / "scene.json",
                                              (_scene_dir(r) / "scene.json").read_bytes()[:100], r),
    "scene_link": lambda r, c, g: _symlink(_scene_dir(r) / "scene.json", c.secret_file),
    "scene_fifo": lambda r, c, g: _fifo(_scene_dir(r) / "scene.json"),
    "scene_dir_link": lambda r, c, g: _symlink(_scene_dir(r), c.outside_dir, folder=True),
    "scene_deleted": lambda r, c, g: (_scene_dir(r) / "scene.json").unlink(),
    "asset_not_utf8": _asset_file("asset.json", lambda p, c, g: p.write_bytes(b"\xff\xfe\x00{")),
    "asset_list": _asset_file("asset.json", lambda p, c, g: p.write_text("[1]")),
    "asset_extents_5": _asset_file("asset.json", lambda p, c, g: _edit_json(p, lambda d: d.update(extents=5))),
    "asset_no_mass": _asset_file("asset.json", lambda p, c, g: _edit_json(p, lambda d: d.pop("mass"))),
    "asset_visual_escape": _asset_file("asset.json",
                                       lambda p, c, g: _edit_json(p, lambda d: d.update(visual="../../../x.obj"))),
    "urdf_truncated": _asset_file("model.urdf", lambda p, c, g: p.write_bytes(p.read_bytes()[:60])),
    "urdf_refs_outside": _asset_file("model.urdf", lambda p, c, g: p.write_text(
        p.read_text().replace('filename="', 'filename="../../../../', 1))),
    "part_deleted": _asset_file("part", lambda p, c, g: p.unlink()),
    "visual_garbage": _asset_file("visual.obj", lambda p, c, g: p.write_bytes(g.randbytes(500))),
    "visual_link": _asset_file("visual.obj", _link("file")),
    "notes_link": _asset_file("notes.txt", _link("file")),
    "etc_link": _asset_file("etc", _link("dir")),
    "unlisted_file": _asset_file("extra.bin", lambda p, c, g: p.write_bytes(b"unlisted")),
    "manifest_escape": _manifest(lambda m: m["scenes"][0].update(path="../../outside")),
    "manifest_absolute": _manifest(lambda m: m["assets"][0].update(path="/etc")),
    "manifest_extra_escape": _manifest(lambda m: m["extras"].update({"../x": "0" * 64})),
    "manifest_version": _manifest(lambda m: m.update(schema_version=99)),
    "manifest_dup_scene": _manifest(lambda m: m["scenes"].append(m["scenes"][0])),
    "manifest_hash": _manifest(lambda m: m.update(content_hash="0" * 64)),
    "manifest_garbage": lambda r, c, g: _write(r / "manifest.json", b"{\"format\": ", r),
    "manifest_missing": lambda r, c, g: (r / "manifest.json").unlink(),
    "user_scene_folder": _user_folder("scenes"),
    "user_asset_folder": _user_folder("assets"),
    "interrupted": _manifest(lambda m: m.update(finalized=False)),
}
"""Ways of damaging a pack, by name."""


def _write(path: Path, data: bytes, root: Path) -> str:
    path.write_bytes(data)
    return _rel(root, path)


def _symlink(path: Path, target: Path, folder: bool = False) -> None:
    if folder:
        shutil.rmtree(path)
    else:
        path.unlink()
    os.symlink(target, path, target_is_directory=folder)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def rehash(root: Path, rel: str) -> None:
    """Make the manifest agree with the file's bytes now (the pack as if written damaged)."""
    folder, name = rel.rsplit("/", 1)
    digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    m = json.loads((root / "manifest.json").read_text())
    for e in m["scenes"] + m["assets"]:
        if e["path"] == folder:
            e["files"][name] = digest
            if name == "scene.json":
                e["hash"] = digest
    (root / "manifest.json").write_text(json.dumps(m))


# --------------------------------------------------------------------------- commands
def _export(fmt: str) -> Callable[[Ctx, Path, Path], str]:
    def run(ctx: Ctx, root: Path, out: Path) -> str:
        from scenegen.export.cli import export_pack

        written = export_pack(root, fmt, out, progress=False)
        return " ".join(str(p) for p in written.values())
    return run


def _verify(ctx: Ctx, root: Path, out: Path) -> str:
    from scenegen.pack.reader import load_pack

    pack = load_pack(root)
    problems = [str(m) for m in pack.verify()]
    return json.dumps({"info": pack.info(), "problems": problems}, default=str)


def _show(ctx: Ctx, root: Path, out: Path) -> str:
    from scenegen.pack.cli import show

    try:
        scene = json.loads((root / "manifest.json").read_text())["scenes"][0]["id"]
    except (KeyError, IndexError, TypeError, ValueError, OSError):
        scene = None  # the manifest itself is damaged: show the pack
    show.main([str(root)] + (["--scene", scene] if isinstance(scene, str) else []), standalone_mode=False)
    return ""


def _qa(ctx: Ctx, root: Path, out: Path) -> str:
    from qa.config import QAConfig
    from qa.recheck import recheck_pack

    report = recheck_pack(root, QAConfig(checks=("geometry", "physics", "semantic")), progress=False)
    crashed = [c["reason"] for q in report["scenes"].values() for c in q["checks"]
               if str(c.get("reason", "")).startswith("internal error")]
    if crashed:
        raise AssertionError(f"a QA check crashed: {crashed[0][:200]}")
    return json.dumps(report, default=str)


def _env(ctx: Ctx, root: Path, out: Path) -> str:
    import numpy as np

    from rl.envs.pick_place import PickPlaceEnv

    env = PickPlaceEnv(root, image_keys=(), max_episode_steps=5)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step(np.zeros(env.action_space.shape))
    finally:
        env.close()
    return ""


def _resume(ctx: Ctx, root: Path, out: Path) -> str:
    from scenegen.pack.reader import load_pack
    from scenegen.pack.writer import PackWriter

    m = load_pack(root).manifest
    PackWriter(root, m["prompt"], m["seed"], m["config"]).close()
    return ""


COMMANDS: dict[str, Callable[[Ctx, Path, Path], str]] = {
    "verify": _verify, "show": _show, "export_urdf": _export("urdf"), "export_mjcf": _export("mjcf"),
    "export_sdf": _export("sdf"), "export_gltf": _export("gltf"), "export_usd": _export("usd"), "qa": _qa,
    "env": _env, "resume": _resume,
}
"""Commands run on a damaged pack; each returns the text it produced (scanned for the canary token)."""
MAY_WRITE = {"qa": ("manifest.json", "qa_report.json", "qa_report.md", "qa.json")}
"""Pack files a command may change (by name); ``resume`` may also move damage to ``quarantine/``."""


def _snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if p.is_symlink():
                out[_rel(root, p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[_rel(root, p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif not p.is_dir():
                out[_rel(root, p)] = "special"
    return out


def case_packs(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Damage a copy of the base pack one way, run one command on it, and look for findings."""
    kinds, commands = sorted(TAMPER), sorted(COMMANDS)
    # every (kind, command) pair once per len(kinds) * len(commands) cases, the commands mixed from the start
    kind, command = kinds[i % len(kinds)], commands[(i + i // len(kinds)) % len(commands)]
    written_damaged = (i // (len(kinds) * len(commands))) % 2 == 1
    case = ctx.work / "cases" / f"pack-{i}"
    shutil.rmtree(case, ignore_errors=True)
    root, out = case / "pack", case / "out"
    shutil.copytree(ctx.base, root, symlinks=True)
    changed_file = TAMPER[kind](root, ctx, rng)
    if written_damaged and changed_file and "/" in changed_file and (root / changed_file).is_file():
        rehash(root, changed_file)
    before = _snapshot(root)
    try:
        text = COMMANDS[command](ctx, root, out) or ""
        outcome, error = "success", ""
    except Exception as exc:  # noqa: BLE001 - classified below, with the findings of this very case
        outcome, error = classify(exc)
        text = str(exc)
    result = {"outcome": outcome, "error": error, "detail": f"{kind} / {command}"}
    result.update(_findings(ctx, command, before, _snapshot(root), out, text))
    shutil.rmtree(case, ignore_errors=True)
    return result


def _findings(ctx: Ctx, command: str, before: dict, after: dict, out: Path, text: str) -> dict:
    found: dict[str, Any] = {}
    allowed = MAY_WRITE.get(command, ())
    moved = {v for k, v in after.items() if k.startswith("quarantine/")} if command == "resume" else set()
    changed = []
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel) or rel.rsplit("/", 1)[-1] in allowed or rel.startswith("quarantine/"):
            continue
        if rel.split("/")[-1].startswith(".tmp-") or rel == ".lock":
            continue
        if rel not in after and before[rel] in moved:
            continue  # resume moved it to quarantine, content intact
        if command == "resume" and rel == "manifest.json":
            continue
        changed.append(rel)
    if changed:
        found["changed"] = changed[:5]
    gone = [rel for rel, h in before.items() if "user_stuff" in rel and rel not in after and h not in moved]
    if gone:
        found["deleted"] = gone
    texts = [text]
    if out.is_dir():
        texts += [p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*") if p.is_file()]
        if [p for p in out.rglob("*") if p.is_symlink()]:
            found["outside_read"] = "the output holds a link"
    if any(ctx.token in t for t in texts):
        found["outside_read"] = "the canary token of a file outside the pack is in the output"
    return found


# --------------------------------------------------------------------------- whole CLI runs
def cli_cases(ctx: Ctx) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, argv after ``scenegen``, extra environment) of every CLI case."""
    base, work = str(ctx.base), ctx.work
    (work / "a_file").write_text("x")
    p = "put the banana in the bowl"
    out = [
        ("design_sys", ["design", p, "-n", "2", "-o", "/sys/x"], {}),
        ("design_file_sub", ["design", p, "-n", "2", "-o", str(work / "a_file" / "sub")], {}),
        ("generate_sys", ["generate", p, "-n", "1", "-o", "/sys/x", "--quiet"], {}),
        ("generate_file_sub", ["generate", p, "-n", "1", "-o", str(work / "a_file" / "sub"), "--quiet"], {}),
        ("generate_n_huge", ["generate", p, "-n", "100000", "-o", str(work / "cli" / "huge")], {}),
        ("generate_n_zero", ["generate", p, "-n", "0", "-o", str(work / "cli" / "zero")], {}),
        ("generate_ray_bad", ["generate", p, "-n", "1", "-o", str(work / "cli" / "ray"), "--backend", "ray",
                              "--workers", "2", "--ray-address", "127.0.0.1:9", "--quiet"], {}),
        ("design_long_prompt", ["design", p * 4000, "-n", "1"], {}),
        ("design_80_goals", ["design", "put the 20 apples in the bowl and the 20 bananas in the basket and 20 "
                             "cups on the plate and 20 cans in the bin", "-n", "1"], {}),
        ("design_empty", ["design", "   ", "-n", "1"], {}),
        ("info_verify", ["info", base, "--verify"], {}),
        ("show", ["show", base], {}),
        ("export_bad_format", ["export", base, "-f", "obj", "-o", str(work / "cli" / "ex")], {}),
        ("export_urdf", ["export", base, "-f", "urdf", "-o", str(work / "cli" / "ex_urdf")], {}),
        ("qa_not_a_pack", ["qa", str(work / "cli")], {}),
        ("show_unknown_scene", ["show", base, "--scene", "zzzz"], {}),
        ("unknown_option", ["design", p, "--frobnicate"], {}),
        ("design_llm_unreachable", ["design", p, "-n", "1", "--designer", "llm"],
         {"SCENEGEN_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SCENEGEN_LLM_MODEL": "m",
          "SCENEGEN_LLM_API_KEY": ctx.key}),
        ("design_llm_creds_url", ["design", p, "-n", "1", "--designer", "llm"],
         {"SCENEGEN_LLM_BASE_URL": f"http://user:{ctx.password}@127.0.0.1:9/v1", "SCENEGEN_LLM_MODEL": "m"}),
        ("demos_bad_n", ["demos", base, "-n", "0", "-o", str(work / "cli" / "demos")], {}),
    ]
    for kind in ("poses_list", "nan_settled", "asset_extents_5", "urdf_truncated", "etc_link"):
        out.append((f"show_{kind}", ["show", "{pack:" + kind + "}", "--scene", "{scene}"], {}))
        out.append((f"export_{kind}", ["export", "{pack:" + kind + "}", "-f", "mjcf", "-o", "{out}"], {}))
    return out


def case_cli(ctx: Ctx, i: int, rng: random.Random) -> dict:
    """Run one whole ``scenegen`` command in a fresh interpreter: exit 0, or 2 with one ``error:`` line."""
    cases = cli_cases(ctx)
    name, argv, env = cases[i % len(cases)]
    case = ctx.work / "cases" / f"cli-{i}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    if any(a.startswith("{pack:") for a in argv):
        kind = next(a for a in argv if a.startswith("{pack:"))[6:-1]
        root = case / "pack"
        shutil.copytree(ctx.base, root, symlinks=True)
        scene = json.loads((root / "manifest.json").read_text())["scenes"][0]["id"]
        TAMPER[kind](root, ctx, rng)
        argv = [str(root) if a.startswith("{pack:") else scene if a == "{scene}" else str(case / "out")
                if a == "{out}" else a for a in argv]
    full_env = {**os.environ, **env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "scenegen.cli", *argv], capture_output=True, text=True,
                          env=full_env, timeout=150, cwd=case)
    err_lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    texts = [proc.stdout, proc.stderr] + [p.read_text(errors="replace") for p in case.rglob("*") if p.is_file()
                                          and p.stat().st_size < 2_000_000]
    result: dict[str, Any] = {"outcome": "success", "detail": name, "leak": ctx.leaks(*texts)}
    if any(ctx.token in t for t in texts):
        result["outside_read"] = name
    shutil.rmtree(case, ignore_errors=True)
    if "Traceback" in proc.stderr or proc.returncode not in (0, 2):
        raise AssertionError(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    if proc.returncode == 2:
        if not err_lines or not (err_lines[-1].startswith("error:") or err_lines[-1].startswith("Error:")):
            raise AssertionError(f"{name}: exit 2 without a one-line error: {proc.stderr.strip()[-300:]}")
        result["outcome"] = "error"
    return result
