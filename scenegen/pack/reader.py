"""Scene packs: a folder of accepted scenes and their assets, with a manifest of hashes.

On disk (see ``docs/pack_format.md``)::

    pack/
      manifest.json                     schema, prompt, seed, config, scenes, assets, hashes
      scenes/<scene_id>/scene.json      the whole Scene; preview.png; qa.json
      assets/<asset_id>/                visual.obj (+ .mtl, texture), collision/*.obj, asset.json, model.urdf
      qa_report.json, contact_sheet.png extras written through :meth:`PackWriter.write_extra`

:class:`PackWriter` writes every scene and asset folder into a temporary sibling and
renames it into place, then replaces ``manifest.json`` atomically, so a crash never
leaves a half scene; reopening the folder cleans leftovers and resumes. :func:`load_pack`
reads a pack, refusing any manifest path that points outside the pack.
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from scenegen.assets.base import Asset
from scenegen.errors import AssetError, GraphError, PackError
from scenegen.pack.format import (
    MANIFEST,
    PACK_SCHEMA_VERSION,
    bad_refs,
    pack_content_hash,
    read_json,
    regular_file,
    safe_path,
    sha256_file,
    unlisted,
    validate_manifest,
)
from scenegen.scene import Scene

__all__ = ["PACK_SCHEMA_VERSION", "AssetLookup", "Mismatch", "Pack", "load_pack"]


@dataclass(frozen=True)
class Mismatch:
    """One problem found by :meth:`Pack.verify`."""

    path: str
    """Pack-relative path of the file (or ``manifest.json``)."""
    problem: str
    """``missing``, ``modified``, ``unsafe``, ``unlisted`` or ``inconsistent``."""
    detail: str = ""
    """What exactly differs."""

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" + (f" ({self.detail})" if self.detail else "")


# --------------------------------------------------------------------------- reading
class AssetLookup(Mapping):
    """Read-only mapping asset id -> :class:`Asset`, loaded lazily from the pack."""

    def __init__(self, pack: Pack) -> None:
        self._pack = pack

    def __getitem__(self, asset_id: str) -> Asset:
        if asset_id not in self._pack._assets:
            raise KeyError(asset_id)
        return self._pack.asset(asset_id)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._pack._assets))

    def __len__(self) -> int:
        return len(self._pack._assets)


class Pack:
    """A scene pack read from disk; build it with :func:`load_pack`."""

    def __init__(self, root: Path, manifest: dict) -> None:
        self.root = root
        """Absolute, resolved pack folder."""
        self.manifest = manifest
        """The validated manifest (treat as read-only)."""
        self._scenes = {e["id"]: e for e in manifest["scenes"]}
        self._assets = {e["id"]: e for e in manifest["assets"]}
        self._asset_cache: dict[str, Asset] = {}

    # ------------------------------------------------------------ basic facts
    @property
    def prompt(self) -> str:
        """The prompt the pack was generated from."""
        return self.manifest["prompt"]

    @property
    def seed(self) -> int:
        """The seed the pack was generated with."""
        return self.manifest["seed"]

    @property
    def config(self) -> dict:
        """The pipeline configuration (a JSON dict)."""
        return copy.deepcopy(self.manifest["config"])

    @property
    def content_hash(self) -> str:
        """Hash of the scene and asset hashes: equal for equal content, whatever the timestamps."""
        return self.manifest["content_hash"]

    @property
    def scene_ids(self) -> list[str]:
        """Scene ids, sorted."""
        return sorted(self._scenes)

    @property
    def asset_ids(self) -> list[str]:
        """Asset ids, sorted."""
        return sorted(self._assets)

    def __len__(self) -> int:
        return len(self._scenes)

    def __contains__(self, scene_id: object) -> bool:
        return scene_id in self._scenes

    def __repr__(self) -> str:
        return f"Pack({str(self.root)!r}, {len(self._scenes)} scenes, {len(self._assets)} assets)"

    # ------------------------------------------------------------ scenes
    def _entry(self, table: dict, kind: str, key: str) -> dict:
        if key in table:
            return table[key]
        hits = [k for k in table if len(key) >= 4 and k.startswith(key)]
        if len(hits) == 1:
            return table[hits[0]]
        why = f"{len(hits)} {kind}s start with it" if hits else f"no {kind} has this id"
        raise PackError(f"{kind} {key!r} not in pack {self.root} ({why}); `scenegen info {self.root}` lists them")

    def scene_entry(self, scene_id: str) -> dict:
        """The manifest entry of a scene (a unique id prefix of 4+ characters works too)."""
        return self._entry(self._scenes, "scene", scene_id)

    def scene_dir(self, scene_id: str) -> Path:
        """Folder of a scene inside the pack."""
        return safe_path(self.root, self.scene_entry(scene_id)["path"], "scene path")

    def scene(self, scene_id: str) -> Scene:
        """Load one scene (``scene.json``) as a :class:`Scene`, every field checked (poses finite, unit, in the world).

        Raises:
            PackError: ``<scenes/<id>/scene.json>: scene field <where> ...`` naming the file and the field.

        """
        entry = self.scene_entry(scene_id)
        rel = f"{entry['path']}/scene.json"
        data = read_json(safe_path(self.root, rel, "scene file"), rel)
        try:
            return Scene.from_dict(data)
        except (PackError, GraphError) as exc:
            raise PackError(f"{rel}: {exc.one_line()}; run `scenegen info {self.root} --verify` and regenerate "
                            "the pack") from None

    def scene_problems(self, scene_id: str) -> list[Mismatch]:
        """What differs between a scene's files and the manifest (empty when it is as the pack wrote it)."""
        entry = self.scene_entry(scene_id)
        return self._file_problems(entry["path"], entry["files"])

    def _file_problems(self, folder: str, files: dict[str, str]) -> list[Mismatch]:
        out: list[Mismatch] = []
        for rel, expected in sorted(files.items()):
            full = f"{folder}/{rel}" if folder else rel
            try:
                path = safe_path(self.root, full, "file")
                got = sha256_file(path)
            except PackError as exc:
                out.append(Mismatch(full, "unsafe", exc.one_line()))
                continue
            except FileNotFoundError:
                out.append(Mismatch(full, "missing"))
                continue
            except OSError as exc:
                out.append(Mismatch(full, "unsafe", f"cannot be read ({exc.strerror})"))
                continue
            if got != expected:
                out.append(Mismatch(full, "modified", f"sha256 {got[:12]}, manifest says {expected[:12]}"))
        return out

    def scenes(self) -> list[Scene]:
        """All scenes, sorted by id."""
        return [self.scene(s) for s in self.scene_ids]

    def _optional_file(self, scene_id: str, name: str) -> Path | None:
        entry = self.scene_entry(scene_id)
        return safe_path(self.root, f"{entry['path']}/{name}", "scene file") if name in entry["files"] else None

    def preview_path(self, scene_id: str) -> Path | None:
        """Path of the scene's ``preview.png``, or None when the pack has none."""
        return self._optional_file(scene_id, "preview.png")

    def qa(self, scene_id: str) -> dict | None:
        """The scene's full QA record (``qa.json``), or None."""
        path = self._optional_file(scene_id, "qa.json")
        return None if path is None else read_json(path, f"{self.scene_entry(scene_id)['path']}/qa.json")

    def extra_path(self, name: str) -> Path | None:
        """Path of an extra file (``qa_report.json``, ``contact_sheet.png``...), or None."""
        return safe_path(self.root, name, "extra file") if name in self.manifest["extras"] else None

    # ------------------------------------------------------------ assets
    def asset(self, asset_id: str) -> Asset:
        """Load an asset from its folder inside the pack (its files stay in the pack).

        Raises:
            PackError: unknown id, unreadable ``asset.json``, or a file reference leaving the asset.

        """
        entry = self._entry(self._assets, "asset", asset_id)
        if entry["id"] in self._asset_cache:
            return self._asset_cache[entry["id"]]
        folder = safe_path(self.root, entry["path"], "asset path")
        damaged = self._file_problems(entry["path"], entry["files"])  # every file: regular, in the pack, its hash
        if damaged:
            raise PackError(f"asset file {damaged[0]}; the pack was changed after it was written: run "
                            f"`scenegen info {self.root} --verify` and regenerate the pack")
        try:
            asset = Asset.load(folder)
        except AssetError as exc:
            raise PackError(f"asset {entry['path']} cannot be read ({exc.one_line()}); run `scenegen info`") from None
        problems = self._asset_problems(entry, asset)
        if problems:
            raise PackError(f"asset {entry['path']} is unsafe: {problems[0]}; do not use this pack")
        asset.files = dict(entry["files"])
        self._asset_cache[entry["id"]] = asset
        return asset

    def _asset_problems(self, entry: dict, asset: Asset | None = None) -> list[Mismatch]:
        listed = set(entry["files"])
        out: list[Mismatch] = []
        if asset is not None:
            for rel in [asset.visual, asset.urdf, *asset.collision]:
                if rel not in listed:
                    out.append(Mismatch(f"{entry['path']}/asset.json", "unsafe", f"names unlisted file {rel!r}"))
        for rel in sorted(listed):
            if rel.rsplit(".", 1)[-1].lower() in ("urdf", "obj", "mtl"):
                try:
                    data = regular_file(safe_path(self.root, f"{entry['path']}/{rel}", "asset file"), rel).read_bytes()
                except (PackError, OSError):
                    continue  # reported as missing or unsafe by the file checks
                out += [Mismatch(f"{entry['path']}/{rel}", "unsafe", why) for why in bad_refs(rel, data, listed)]
        return out

    @property
    def asset_lookup(self) -> AssetLookup:
        """Mapping asset id -> Asset for the world builder (lazy, cached)."""
        return AssetLookup(self)

    # ------------------------------------------------------------ integrity and summary
    def verify(self) -> list[Mismatch]:
        """Re-hash every listed file and walk the whole folder; return what is wrong (empty if intact).

        Problems are ``missing``, ``modified``, ``unsafe`` (a symbolic link or other non-regular
        file anywhere, a reference leaving an asset), ``unlisted`` (a file the manifest does not
        list, outside ``rejected/``, ``quarantine/`` and dot-names) or ``inconsistent``.
        """
        out: list[Mismatch] = []
        listed: set[str] = set(self.manifest["extras"])
        for e in [*self.manifest["scenes"], *self.manifest["assets"]]:
            out += self._file_problems(e["path"], e["files"])
            listed |= {f"{e['path']}/{rel}" for rel in e["files"]}
        out += self._file_problems("", self.manifest["extras"])
        reported = {m.path for m in out}
        out += [Mismatch(rel, problem, detail) for rel, problem, detail in unlisted(self.root, listed)
                if rel not in reported]
        for entry in self.manifest["assets"]:
            out += self._asset_problems(entry)
        expected = pack_content_hash(self.manifest["scenes"], self.manifest["assets"])
        if expected != self.content_hash:
            out.append(Mismatch(MANIFEST, "inconsistent", "content_hash does not match the listed hashes"))
        return out

    def info(self) -> dict:
        """Counts, categories, QA summary and size on disk, as a JSON-ready dict."""
        m = self.manifest
        size = sum(os.lstat(Path(d, f)).st_size for d, _, files in os.walk(self.root) for f in files)
        return {
            "root": str(self.root), "prompt": m["prompt"], "seed": m["seed"], "config": m["config"],
            "tool_version": m["tool_version"], "schema_version": m["schema_version"],
            "created": m.get("created"), "finalized": m.get("finalized", False),
            "scenes": len(self._scenes), "assets": len(self._assets),
            "categories": dict(sorted(Counter(e["category"] for e in m["assets"]).items())),
            "qa": m["qa"], "summary": m.get("summary", {}), "extras": sorted(m["extras"]),
            "size_bytes": size, "content_hash": m["content_hash"],
        }


def load_pack(path: str | os.PathLike) -> Pack:
    """Read and validate a pack folder.

    Raises:
        PackError: not a pack, an unsupported schema version, missing keys, or a path outside the pack.

    """
    root = Path(path)
    if not root.is_dir():
        raise PackError(f"{path} is not a folder; give the folder written by `scenegen generate -o`")
    root = root.resolve()
    manifest_path = safe_path(root, MANIFEST, "manifest")
    if not manifest_path.is_file():
        raise PackError(f"{root} has no {MANIFEST}, so it is not a scene pack; give a pack folder")
    manifest = read_json(manifest_path, MANIFEST)
    validate_manifest(root, manifest)
    return Pack(root, manifest)

