"""Writing scene packs: :class:`PackWriter` (re-exported by :mod:`scenegen.pack.reader`).

Every scene and asset folder is written into a temporary sibling (``.tmp-*``) and renamed
into place; then ``manifest.json`` is replaced atomically. A crash therefore never leaves
a half scene, and reopening the folder with the same prompt, seed and config cleans the
leftovers, adopts complete folders the manifest missed, and keeps every finished scene.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenegen import __version__
from scenegen.assets.base import Asset
from scenegen.errors import AssetError, GraphError, PackError
from scenegen.fileio import TMP_PREFIX, Closeable, canonical_json, publish_dir, remove, write_atomic, write_file
from scenegen.pack.format import (
    LOCK,
    MANIFEST,
    PACK_FORMAT,
    PACK_SCHEMA_VERSION,
    QUARANTINE,
    bad_refs,
    check_name,
    dumps,
    dumps_manifest,
    finite,
    folder_files,
    image_bytes,
    lock_folder,
    pack_content_hash,
    qa_summary,
    read_json,
    safe_path,
    sha256_bytes,
    sha256_file,
    tree_hash,
    validate_manifest,
)
from scenegen.scene import Scene

if TYPE_CHECKING:
    from scenegen.pack.reader import Pack

log = logging.getLogger(__name__)


def _normalise_config(config: Any) -> dict:
    if config is None:
        return {}
    if hasattr(config, "__dataclass_fields__"):
        from dataclasses import asdict

        config = asdict(config)
    if not isinstance(config, Mapping):
        raise PackError(f"pack config must be a JSON dict, got {type(config).__name__}; pass a dict")
    return json.loads(dumps(dict(config), "pack config"))


class PackWriter(Closeable):
    """Create a pack folder, or reopen one with the same prompt, seed and config to resume it.

    One writer per folder at a time (an OS lock enforces it). Use as a context manager or
    call :meth:`finalize` / :meth:`close`.

    Args:
        root: Pack folder; created if absent. An existing non-pack, non-empty folder is refused.
        prompt: The prompt the scenes come from.
        seed: The run's seed.
        config: The pipeline configuration (a JSON dict or a dataclass), stored verbatim.

    Raises:
        PackError: the folder holds something else, another pack, or is locked by another writer.

    """

    def __init__(self, root: str | os.PathLike, prompt: str, seed: int, config: Any = None) -> None:
        if not isinstance(prompt, str):
            raise PackError(f"pack prompt must be a string, got {type(prompt).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise PackError(f"pack seed must be an int, got {seed!r}")
        cfg = _normalise_config(config)
        self._lock_fd: int | None = None
        self._line_cache: dict = {}
        self._checked_sources: set[tuple[str, str]] = set()
        self._update_only = False
        root = Path(root)
        try:
            if root.is_symlink() or (root.exists() and not root.is_dir()):
                raise PackError(f"{root} is a file or a link, not a folder; choose another -o")
            if root.is_dir() and not (root / MANIFEST).exists() and not _is_empty(root):
                raise PackError(f"{root} is not empty and holds no scene pack; choose another -o or delete it")
            root.mkdir(parents=True, exist_ok=True)
            self.root = root.resolve()
            """Absolute pack folder."""
            self._lock_fd = lock_folder(self.root)
        except OSError as exc:
            raise PackError(f"cannot create or open the pack folder {root} ({exc.strerror or exc}); "
                            "choose another -o") from None
        try:
            if (self.root / MANIFEST).exists():
                self._manifest = self._reopen(prompt, seed, cfg)
            else:
                self._manifest = {
                    "format": PACK_FORMAT, "schema_version": PACK_SCHEMA_VERSION, "tool_version": __version__,
                    "prompt": prompt, "seed": seed, "config": cfg, "created": _now(), "finalized": False,
                    "content_hash": "", "scenes": [], "assets": [], "extras": {}, "qa": {}, "summary": {},
                }
                self._scenes: dict[str, dict] = {}
                self._assets: dict[str, dict] = {}
                self._write_manifest()
            for sub in ("scenes", "assets"):
                (self.root / sub).mkdir(exist_ok=True)
        except OSError as exc:
            self.close()
            raise PackError(f"cannot write the pack folder {self.root} ({exc.strerror or exc}); check free disk "
                            "space and permissions") from None
        except BaseException:
            self.close()
            raise

    @classmethod
    def update(cls, root: str | os.PathLike) -> PackWriter:
        """Open an existing pack to record QA results only: reports (extras), scenes' ``qa.json``, the summary.

        Nothing else is touched: no leftover is cleaned, no folder adopted, moved or deleted, and
        ``finalized`` keeps its value (an interrupted pack stays interrupted).

        Raises:
            PackError: not a readable pack, or another writer holds it.

        """
        from scenegen.pack.reader import load_pack

        pack = load_pack(root)
        writer = cls.__new__(cls)
        writer._line_cache, writer._checked_sources, writer._update_only = {}, set(), True
        writer._lock_fd = None
        writer.root = pack.root
        writer._lock_fd = lock_folder(writer.root)
        try:
            m = read_json(writer.root / MANIFEST, MANIFEST)  # re-read under the lock
            validate_manifest(writer.root, m)
        except BaseException:
            writer.close()
            raise
        writer._manifest = m
        writer._scenes = {e["id"]: e for e in m["scenes"]}
        writer._assets = {e["id"]: e for e in m["assets"]}
        return writer

    def write_scene_qa(self, scene_id: str, qa: dict) -> dict:
        """Store a scene's QA record as its ``qa.json`` and its status in the manifest; return the entry.

        Only ``qa.json`` is written, atomically, into the scene's own folder; the other files stay as they are.

        Raises:
            PackError: the scene is not in the pack, or its folder is not a plain folder inside it.

        """
        self._check_open()
        if scene_id not in self._scenes:
            raise PackError(f"scene {scene_id[:12]} is not in {self.root}; `scenegen info` lists the scenes")
        entry = self._scenes[scene_id]
        folder = safe_path(self.root, entry["path"], "scene path")
        if not folder.is_dir():
            raise PackError(f"scene folder {entry['path']} is missing; the scene's QA record is kept in the report "
                            "only")
        payload = dumps(finite(qa), f"qa of scene {scene_id[:12]}")
        write_atomic(safe_path(self.root, f"{entry['path']}/qa.json", "scene file"), payload, error=PackError)
        entry = {**entry, "files": {**entry["files"], "qa.json": sha256_bytes(payload)}, **qa_summary(qa)}
        self._scenes[scene_id] = entry
        self._write_manifest()
        return copy.deepcopy(entry)

    def set_summary(self, summary: dict) -> None:
        """Replace the manifest's run summary (a JSON dict) without finalizing the pack."""
        self._check_open()
        self._manifest["summary"] = json.loads(dumps(finite(summary or {}), "summary"))
        self._write_manifest()

    # ------------------------------------------------------------ state
    @property
    def scene_ids(self) -> list[str]:
        """Ids of the finished scenes, sorted."""
        return sorted(self._scenes)

    def has_scene(self, scene_id: str) -> bool:
        """True if the scene is finished and recorded in the manifest."""
        return scene_id in self._scenes

    def has_asset(self, asset_id: str) -> bool:
        """True if the asset is stored in the pack."""
        return asset_id in self._assets

    @property
    def content_hash(self) -> str:
        """The pack's content hash as of the last manifest write."""
        return self._manifest["content_hash"]

    @property
    def prompt(self) -> str:
        """The pack's prompt."""
        return self._manifest["prompt"]

    @property
    def summary(self) -> dict:
        """A copy of the manifest's run summary."""
        return copy.deepcopy(self._manifest.get("summary") or {})

    # ------------------------------------------------------------ writing
    def add_scene(self, scene: Scene, assets: Mapping[str, Asset], preview: Any = None,
                  qa: dict | None = None) -> dict:
        """Store one scene with its assets, preview and QA record; return its manifest entry.

        Args:
            scene: The scene; ``scene.id`` names its folder.
            assets: Asset id -> Asset for every asset the scene names (those already in the
                pack may be left out); each asset folder is copied once and shared.
            preview: A PIL image (or HxWx3 uint8 array) saved as ``preview.png``, or None.
            qa: A JSON dict saved as ``qa.json``; its ``passed``, ``score`` and ``checks``
                give the scene's status in the manifest. Non-finite numbers become null.

        Raises:
            PackError: a missing asset, a scene id already stored with other content, or a write failure.

        """
        self._check_open()
        if self._update_only:
            raise PackError("a pack opened with PackWriter.update() records QA results only; add scenes through "
                            "`scenegen generate`")
        sid = check_name(scene.id, "scene id")
        scene_bytes = dumps(scene.to_dict(), f"scene {sid}")
        if sid in self._scenes:
            if self._scenes[sid]["hash"] == sha256_bytes(scene_bytes):
                return copy.deepcopy(self._scenes[sid])
            raise PackError(f"scene {sid} is already in the pack with other content; scene ids must be "
                            "content hashes (Scene.compute_id())")
        needed = sorted(set(scene.assets.values()))
        missing = [a for a in needed if a not in self._assets and a not in assets]
        if missing:
            raise PackError(f"scene {sid[:12]} uses asset {missing[0]} which is neither in the pack nor passed "
                            "to add_scene; pass every asset the scene names")
        files = {"scene.json": scene_bytes}
        if preview is not None:
            files["preview.png"] = image_bytes(preview, "PNG")
        if qa is not None:
            files["qa.json"] = dumps(finite(qa), f"qa of scene {sid[:12]}")
        for aid in needed:
            if aid in assets:
                self._store_asset(check_name(aid, "asset id"), assets[aid])
        hashes = {k: sha256_bytes(v) for k, v in sorted(files.items())}
        entry = {"id": sid, "path": f"scenes/{sid}", "hash": hashes["scene.json"], "files": hashes,
                 "assets": needed, **qa_summary(qa)}
        self._publish("scenes", sid, files)
        self._scenes[sid] = entry
        self._manifest["finalized"] = False
        self._write_manifest()
        return copy.deepcopy(entry)

    def _store_asset(self, aid: str, asset: Asset) -> None:
        if not isinstance(asset, Asset) or asset.id != aid:
            raise PackError(f"assets[{aid!r}] is not the Asset with that id; key the dict by Asset.id")
        if asset.path is None or not Path(asset.path).is_dir():
            raise PackError(f"asset {aid} has no folder on disk ({asset.path}); write the asset before packing it")
        source = (aid, str(Path(asset.path).resolve()))
        if aid in self._assets and source in self._checked_sources:
            return  # this very folder was already compared with the pack's copy
        self._checked_sources.add(source)
        data = {rel: p.read_bytes() for rel, p in folder_files(Path(asset.path))}
        hashes = {rel: sha256_bytes(b) for rel, b in data.items()}
        if aid in self._assets:
            if self._assets[aid]["files"] != hashes:
                log.warning("asset %s differs from the copy already in %s; keeping the pack's copy", aid, self.root)
            return
        if "asset.json" not in data:
            raise PackError(f"asset folder {asset.path} has no asset.json; regenerate the asset")
        bad = [f"{rel}: {why}" for rel, b in sorted(data.items()) for why in bad_refs(rel, b, set(data))]
        if bad:
            raise PackError(f"asset {aid} in {asset.path} is not self-contained ({bad[0]}); "
                            "asset files must name each other by relative paths inside the folder")
        self._publish("assets", aid, data)
        self._assets[aid] = {"id": aid, "category": asset.category, "path": f"assets/{aid}",
                             "hash": tree_hash(hashes), "files": hashes}

    def _publish(self, sub: str, name: str, files: Mapping[str, bytes]) -> None:
        """Write ``files`` into a temporary sibling folder, then rename it to ``sub/name`` (a stale one is replaced)."""
        publish_dir(self.root / sub / name, files, write=write_file, error=PackError)

    def write_extra(self, name: str, data: Any) -> Path:
        """Write a pack-level file such as ``qa_report.json`` or ``contact_sheet.png`` atomically.

        Args:
            name: A plain file name at the pack root.
            data: bytes, str, a PIL image (encoded by the name's suffix, PNG by default) or a JSON dict/list.

        """
        self._check_open()
        check_name(name, "extra file name")
        if name in (MANIFEST, LOCK, "scenes", "assets"):
            raise PackError(f"{name!r} is reserved in a pack; choose another file name")
        if isinstance(data, (bytes, bytearray)):
            payload = bytes(data)
        elif isinstance(data, str):
            payload = data.encode()
        elif isinstance(data, (dict, list)):
            payload = dumps(finite(data), name)
        else:
            fmt = {"jpg": "JPEG", "jpeg": "JPEG", "webp": "WEBP"}.get(name.rsplit(".", 1)[-1].lower(), "PNG")
            payload = image_bytes(data, fmt)
        write_atomic(self.root / name, payload, error=PackError)
        self._manifest["extras"][name] = sha256_bytes(payload)
        self._write_manifest()
        return self.root / name

    def finalize(self, summary: dict | None = None) -> Pack:
        """Record the run summary, drop assets no scene uses, close the writer and return the Pack."""
        self._check_open()
        if self._update_only:
            raise PackError("a pack opened with PackWriter.update() records QA results only and cannot be "
                            "finalized; resume it with `scenegen generate` instead")
        used = {a for e in self._scenes.values() for a in e["assets"]}
        for aid in sorted(set(self._assets) - used):
            remove(self.root / self._assets.pop(aid)["path"])
        self._manifest["summary"] = json.loads(dumps(finite(summary or {}), "summary"))
        self._manifest["finalized"] = True
        self._write_manifest()
        self.close()
        from scenegen.pack.reader import load_pack

        return load_pack(self.root)

    def _close(self) -> None:
        """Release the folder lock; the writer cannot write any more."""
        fd, self._lock_fd = getattr(self, "_lock_fd", None), None
        if fd is not None:
            os.close(fd)

    def _check_open(self) -> None:
        if self.closed:
            raise PackError(f"the PackWriter of {self.root} is closed; open a new PackWriter to add more")

    def _write_manifest(self) -> None:
        m = self._manifest
        m["scenes"] = [self._scenes[k] for k in sorted(self._scenes)]
        m["assets"] = [self._assets[k] for k in sorted(self._assets)]
        if not self._update_only:
            m["tool_version"] = __version__
        counts = Counter(e["status"] for e in m["scenes"])
        m["qa"] = {k: counts.get(k, 0) for k in ("passed", "failed", "unchecked")}
        m["content_hash"] = pack_content_hash(m["scenes"], m["assets"])
        write_atomic(self.root / MANIFEST, dumps_manifest(m, self._line_cache), error=PackError)

    # ------------------------------------------------------------ resume
    def _reopen(self, prompt: str, seed: int, cfg: dict) -> dict:
        try:
            m = read_json(self.root / MANIFEST, MANIFEST)
            validate_manifest(self.root, m)
        except PackError as exc:
            raise PackError(f"{self.root} holds a pack that cannot be resumed ({exc.one_line()}); "
                            "choose another -o or delete it") from None
        differ = [k for k, v in (("prompt", prompt), ("seed", seed), ("config", cfg))
                  if canonical_json(m[k]) != canonical_json(v)]
        if differ:
            raise PackError(f"{self.root} already holds a pack made with a different {' and '.join(differ)} "
                            f"(prompt {m['prompt']!r}, seed {m['seed']}); choose another -o or delete it")
        self._scenes = {e["id"]: e for e in m["scenes"]}
        self._assets = {e["id"]: e for e in m["assets"]}
        self._manifest = m
        if self._recover():
            self._write_manifest()
        return self._manifest

    def _recover(self) -> bool:
        """Clean temporary leftovers, adopt complete folders the manifest missed, quarantine broken ones.

        A damaged scene or asset folder, or any folder under ``scenes/`` or ``assets/`` that is not
        a complete scene or asset, is moved to ``quarantine/`` with a warning, never deleted.
        """
        before = (set(self._scenes), set(self._assets))
        for folder in (self.root, self.root / "scenes", self.root / "assets"):
            if folder.is_dir():
                for child in folder.iterdir():
                    if child.name.startswith(TMP_PREFIX):
                        remove(child)
        for sub in ("scenes", "assets"):
            (self.root / sub).mkdir(exist_ok=True)
        for aid, entry in sorted(self._assets.items()):
            folder = self.root / entry["path"]
            if folder.is_symlink() or not (folder / "asset.json").is_file() or _differs(folder, entry["files"]):
                log.warning("asset %s in %s is damaged or changed; it will be rebuilt", aid[:12], self.root)
                del self._assets[aid]
                self._quarantine(folder, "damaged or changed asset")
        for child in sorted((self.root / "assets").iterdir()):
            if not child.name.startswith(".") and child.name not in self._assets:
                self._adopt(child, self._adopt_asset)
        for sid, entry in sorted(self._scenes.items()):
            folder = self.root / entry["path"]
            if folder.is_symlink() or _differs(folder, {"scene.json": entry["hash"]}) or not set(
                    entry["assets"]) <= set(self._assets):
                log.warning("scene %s in %s is damaged or lacks an asset; it will be regenerated", sid, self.root)
                del self._scenes[sid]
                self._quarantine(folder, "damaged scene or a scene whose asset is damaged")
        for child in sorted((self.root / "scenes").iterdir()):
            if not child.name.startswith(".") and child.name not in self._scenes:
                self._adopt(child, self._adopt_scene)
        return before != (set(self._scenes), set(self._assets))

    def _adopt(self, folder: Path, adopt: Any) -> None:
        try:
            check_name(folder.name, "folder")
            if folder.is_symlink() or not folder.is_dir():
                raise PackError("not a plain folder")
            adopt(folder)
        except (PackError, AssetError, OSError, KeyError, TypeError, ValueError, GraphError) as exc:
            why = exc.one_line() if isinstance(exc, (PackError, AssetError, GraphError)) else type(exc).__name__
            self._quarantine(folder, f"not a complete scene or asset ({why[:200]})")

    def _quarantine(self, path: Path, why: str) -> None:
        """Move ``path`` (a file, link or folder) to ``quarantine/`` under a free name, with a warning; never delete."""
        if not (path.exists() or path.is_symlink()):
            return
        base = self.root / QUARANTINE / path.parent.name
        target = base / path.name
        k = 1
        while target.exists() or target.is_symlink():
            target, k = base / f"{path.name}.{k}", k + 1
        try:
            base.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
        except OSError as exc:
            raise PackError(f"cannot move the damaged {path} to {target} ({exc.strerror}); move it away by hand "
                            "and resume") from None
        log.warning("moved %s to %s (%s); inspect it, or delete it", path.relative_to(self.root).as_posix(),
                    target.relative_to(self.root).as_posix(), why)

    def _adopt_asset(self, folder: Path) -> None:
        asset = Asset.load(folder)
        if asset.id != folder.name:
            raise PackError("asset id differs from its folder")
        data = {rel: p.read_bytes() for rel, p in folder_files(folder)}
        if any(bad_refs(rel, b, set(data)) for rel, b in data.items()):
            raise PackError("asset refers outside its folder")
        hashes = {rel: sha256_bytes(b) for rel, b in data.items()}
        self._assets[asset.id] = {"id": asset.id, "category": asset.category, "path": f"assets/{asset.id}",
                                  "hash": tree_hash(hashes), "files": hashes}

    def _adopt_scene(self, folder: Path) -> None:
        scene = Scene.from_dict(read_json(folder / "scene.json", "scene.json"))
        needed = sorted(set(scene.assets.values()))
        if scene.id != folder.name or not set(needed) <= set(self._assets):
            raise PackError("scene id differs from its folder or an asset is missing")
        qa = read_json(folder / "qa.json", "qa.json") if (folder / "qa.json").is_file() else None
        hashes = {rel: sha256_file(p) for rel, p in folder_files(folder)}
        self._scenes[scene.id] = {"id": scene.id, "path": f"scenes/{scene.id}", "hash": hashes["scene.json"],
                                  "files": hashes, "assets": needed, **qa_summary(qa)}


def _differs(folder: Path, files: Mapping[str, str]) -> bool:
    """True when one of ``files`` (relative path -> sha256) of ``folder`` is missing, a link or of another hash."""
    for rel, expected in files.items():
        try:
            if sha256_file(folder.joinpath(*rel.split("/"))) != expected:
                return True
        except (OSError, PackError):
            return True
    return False


def _is_empty(root: Path) -> bool:
    return all(c.name == LOCK or c.name.startswith(TMP_PREFIX) for c in root.iterdir())


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
