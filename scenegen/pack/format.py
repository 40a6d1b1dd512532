"""Low-level pieces of the pack format: hashing, safe paths, JSON, the manifest schema, locking.

Used by :mod:`scenegen.pack.reader` (reading) and :mod:`scenegen.pack.writer` (writing); users
should not need this module.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema

from scenegen.errors import PackError
from scenegen.fileio import canonical_json, content_hash
from scenegen.validate import is_finite

PACK_FORMAT = "scenegen-pack"
PACK_SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
LOCK = ".lock"
"""Lock file held (flock) by the one open :class:`PackWriter`."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_HEX = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_FILES = {"type": "object", "minProperties": 1, "additionalProperties": _HEX}
_STR = {"type": "string", "minLength": 1}
MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format", "schema_version", "tool_version", "prompt", "seed", "config", "content_hash",
                 "scenes", "assets", "extras", "qa"],
    "properties": {
        "format": {"const": PACK_FORMAT},
        "schema_version": {"const": PACK_SCHEMA_VERSION},
        "tool_version": {"type": "string"},
        "prompt": {"type": "string"},
        "seed": {"type": "integer"},
        "config": {"type": "object"},
        "created": {"type": "string"},
        "finalized": {"type": "boolean"},
        "content_hash": {"anyOf": [_HEX, {"const": ""}]},
        "scenes": {"type": "array", "items": {
            "type": "object", "required": ["id", "path", "hash", "files", "assets", "status"],
            "properties": {"id": _STR, "path": _STR, "hash": _HEX, "files": _FILES,
                           "assets": {"type": "array", "items": _STR},
                           "status": {"enum": ["passed", "failed", "unchecked"]},
                           "qa": {"type": "object"}}}},
        "assets": {"type": "array", "items": {
            "type": "object", "required": ["id", "category", "path", "hash", "files"],
            "properties": {"id": _STR, "category": {"type": "string"}, "path": _STR, "hash": _HEX,
                           "files": _FILES}}},
        "extras": {"type": "object", "additionalProperties": _HEX},
        "qa": {"type": "object"},
        "summary": {"type": "object"},
    },
}


# --------------------------------------------------------------------------- hashing
def sha256_bytes(data: bytes) -> str:
    """SHA-256 hex digest of bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 hex digest of a regular file's bytes, read in chunks (a link or a FIFO is refused, never opened)."""
    regular_file(path, str(path))
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def regular_file(path: Path, what: str) -> Path:
    """Return ``path`` if it is a regular file itself (not a symbolic link, folder, FIFO or device).

    Raises:
        FileNotFoundError: nothing is there.
        PackError: something else than a regular file is there.

    """
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise PackError(f"{what} is {kind}; a pack holds regular files only, so it is unsafe or damaged: "
                        "regenerate it")
    return path


def tree_hash(files: dict[str, str]) -> str:
    """Hash of a folder: SHA-256 of the canonical JSON of its ``{relative path: sha256}`` map."""
    return content_hash(dict(sorted(files.items())))


def pack_content_hash(scenes: Iterable[dict], assets: Iterable[dict]) -> str:
    """The pack's content hash: scene hashes and the hashes of the assets scenes use, sorted by id."""
    scenes = list(scenes)
    used = {a for s in scenes for a in s["assets"]}
    return content_hash({"scenes": {s["id"]: s["hash"] for s in scenes},
                         "assets": {a["id"]: a["hash"] for a in assets if a["id"] in used}})


# --------------------------------------------------------------------------- names and paths
def check_name(name: Any, what: str) -> str:
    """Return ``name`` if it is a safe single folder/file name, else raise PackError."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise PackError(f"{what} {name!r} is not a safe name (1-128 letters, digits, '_', '.', '-', "
                        "not starting with '.'); fix the id")
    return name


def safe_path(root: Path, rel: Any, what: str = "path", known: set[str] | None = None) -> Path:
    """Resolve a manifest path inside ``root`` (absolute and resolved), refusing any escape.

    ``known`` (kept by the caller across calls over the same ``root``) holds the folders (relative
    paths) already proven to be real folders inside ``root``: their parts are not checked again, and
    a path whose folder is known needs no ``realpath`` (its last part is no link, so it cannot leave).

    Raises:
        PackError: ``rel`` is absolute, has a drive or scheme, a backslash, '.', '..' or an
            empty part, or resolves (through symlinks) outside ``root``.

    """
    if not isinstance(rel, str) or not rel or rel.startswith("/") or any(c in rel for c in "\\:\0"):
        raise PackError(f"{what} {rel!r} is not a relative POSIX path inside the pack; "
                        "the pack is unsafe or damaged, do not use it")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise PackError(f"{what} {rel!r} contains '..', '.' or an empty part; the pack is unsafe, do not use it")
    full = root
    prefixes = ["/".join(parts[:i + 1]) for i in range(len(parts))] if known is not None else []
    for i, part in enumerate(parts):  # a pack never holds links: refusing them all means no read can leave the pack
        full = full / part
        if known is not None and prefixes[i] in known:
            continue
        if full.is_symlink():
            raise PackError(f"{what} {rel!r} goes through a symbolic link ({full.relative_to(root).as_posix()} -> "
                            f"{os.readlink(full)}); a pack holds no links, so it is unsafe: do not use it")
    if known is not None and len(parts) > 1 and prefixes[-2] in known:
        return full
    real = os.path.realpath(full)
    if real != str(root) and not real.startswith(str(root).rstrip(os.sep) + os.sep):
        raise PackError(f"{what} {rel!r} resolves outside the pack (to {real}); the pack is unsafe, do not use it")
    if known is not None:
        known.update(prefixes[:-1])
    return full


_URDF_REF = re.compile(rb"""filename\s*=\s*["']([^"']*)["']""")
_OBJ_REF = re.compile(rb"^[ \t]*mtllib[ \t]+(.+?)[ \t]*$", re.M)
_MTL_KEYS = (b"map_", b"bump", b"disp", b"decal", b"refl", b"norm")


def bad_refs(rel: str, data: bytes, listed: set[str]) -> list[str]:
    """Problems with the file names a URDF, OBJ or MTL file refers to.

    Every reference must be a relative path without '..' that names one of ``listed``
    (the files of the same asset folder, relative to it).
    """
    kind = rel.rsplit(".", 1)[-1].lower()
    if kind == "urdf":
        refs = _URDF_REF.findall(data)
    elif kind == "obj":
        refs = [r for line in _OBJ_REF.findall(data) for r in line.split()]
    elif kind == "mtl":
        refs = [w[-1] for w in (line.split() for line in data.splitlines())
                if len(w) > 1 and w[0].lower().startswith(_MTL_KEYS)]
    else:
        return []
    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    out = []
    for raw in refs:
        ref = raw.decode("utf-8", "replace").strip()
        parts = ref.split("/")
        if ref.startswith("/") or any(c in ref for c in "\\:\0") or any(p in ("", ".", "..") for p in parts):
            out.append(f"refers to {ref!r}, which is not a relative path inside the asset")
        elif folder + ref not in listed:
            out.append(f"refers to {ref!r}, which is not a file of the asset")
    return out


# --------------------------------------------------------------------------- JSON and images
def dumps(data: Any, what: str) -> bytes:
    """Deterministic JSON bytes (sorted keys, 2-space indent, trailing newline, no NaN)."""
    text = canonical_json(data, float_digits=None, plain=True, allow_nan=False, indent=2, separators=None,
                          error=PackError, what=what)
    return (text + "\n").encode()


def dumps_manifest(manifest: dict, cache: dict | None = None) -> bytes:
    """Deterministic manifest JSON: sorted keys, one line per scene and per asset (fast and diffable).

    ``cache`` (kept by the caller between writes) remembers each entry's line, keyed by the
    entry object, so rewriting the manifest after each scene does not re-encode every entry.
    """
    def one(value: Any) -> str:
        return canonical_json(value, float_digits=None, plain=True, allow_nan=False, separators=None)

    def entry_line(entry: dict) -> str:
        if cache is None:
            return one(entry)
        hit = cache.get(id(entry))
        if hit is None or hit[0] is not entry:
            hit = cache[id(entry)] = (entry, one(entry))
        return hit[1]

    try:
        lines = []
        for key in sorted(manifest):
            value = manifest[key]
            if key in ("scenes", "assets") and value:
                body = ",\n".join(f"    {entry_line(e)}" for e in value)
                lines.append(f"  {one(key)}: [\n{body}\n  ]")
            else:
                lines.append(f"  {one(key)}: {one(value)}")
    except (TypeError, ValueError) as exc:
        raise PackError(f"the manifest cannot be stored as JSON ({exc}); pass a JSON config and summary") from None
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode()


def finite(data: Any) -> Any:
    """Copy of ``data`` with NaN and infinite floats replaced by None (for QA records)."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    if hasattr(data, "tolist"):
        return finite(data.tolist())
    return data


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file (a regular file, UTF-8), raising PackError when it is absent, not a file or malformed."""
    try:
        return json.loads(regular_file(path, what).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise PackError(f"{what} is missing from the pack; run `scenegen info` and regenerate the pack") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise PackError(f"{what} cannot be read ({str(exc)[:120]}); the pack is damaged, regenerate it") from None


def image_bytes(image: Any, fmt: str) -> bytes:
    """Encode a PIL image (or an HxW[xC] uint8 array) as PNG/JPEG bytes, deterministically."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        try:
            image = Image.fromarray(image)
        except (TypeError, ValueError, AttributeError) as exc:
            raise PackError(f"cannot store a {type(image).__name__} as an image ({exc}); pass a PIL image") from None
    buf = io.BytesIO()
    image.save(buf, format=fmt)
    return buf.getvalue()


def qa_summary(qa: dict | None) -> dict:
    """The manifest's status and QA summary of a scene from its QA record.

    Reads ``passed`` (bool), ``score`` (number) and ``checks`` (a list of ``{name, passed}``
    or a dict name -> ``{passed}`` / bool); anything else is left to ``qa.json``.
    """
    if not isinstance(qa, dict):
        return {"status": "unchecked", "qa": {}}
    passed = qa.get("passed")
    status = "passed" if passed is True else "failed" if passed is False else "unchecked"
    out: dict = {}
    score = qa.get("score")
    if is_finite(score):
        out["score"] = float(score)
    checks = qa.get("checks")
    if isinstance(checks, dict):
        items = [(k, v.get("passed") if isinstance(v, dict) else v) for k, v in checks.items()]
    elif isinstance(checks, list):
        items = [(c.get("name"), c.get("passed")) for c in checks if isinstance(c, dict)]
    else:
        items = []
    failed = sorted(str(k) for k, ok in items if ok is False)
    if items:
        out["checks"] = len(items)
        out["failed_checks"] = failed
    return {"status": status, "qa": out}


# --------------------------------------------------------------------------- manifest
@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Validator:
    return jsonschema.Draft202012Validator(MANIFEST_SCHEMA)


def validate_manifest(root: Path, m: Any) -> None:
    """Check a manifest's schema, ids, cross-references and that every path stays inside ``root``.

    Raises:
        PackError: naming the first problem.

    """
    if not isinstance(m, dict) or m.get("format") != PACK_FORMAT:
        raise PackError(f"{root}/{MANIFEST} is not a scenegen pack manifest; give a pack folder")
    version = m.get("schema_version")
    if version != PACK_SCHEMA_VERSION:
        newer = isinstance(version, int) and version > PACK_SCHEMA_VERSION
        raise PackError(f"pack schema_version {version!r} is not supported (this scenegen reads "
                        f"{PACK_SCHEMA_VERSION}); " + ("upgrade scenegen" if newer else "regenerate the pack"))
    error = jsonschema.exceptions.best_match(_validator().iter_errors(m))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "<root>"
        raise PackError(f"{MANIFEST} is malformed at {where}: {error.message[:160]}; regenerate the pack")
    for kind in ("scenes", "assets"):
        ids = [e["id"] for e in m[kind]]
        if len(ids) != len(set(ids)):
            raise PackError(f"{MANIFEST} lists a {kind[:-1]} twice; regenerate the pack")
        known: set[str] = set()  # folders already proven inside the pack: each path part is checked once
        for e in m[kind]:
            check_name(e["id"], f"{kind[:-1]} id")
            safe_path(root, e["path"], f"{kind[:-1]} path", known)
            for rel in e["files"]:
                safe_path(root, f"{e['path']}/{rel}", f"{kind[:-1]} file", known)
    assets = {e["id"] for e in m["assets"]}
    for e in m["scenes"]:
        if e["files"].get("scene.json") != e["hash"]:
            raise PackError(f"scene {e['id']} in {MANIFEST} has no scene.json of its hash; regenerate the pack")
        if not set(e["assets"]) <= assets:
            raise PackError(f"scene {e['id']} names an asset the manifest does not list; regenerate the pack")
    for e in m["assets"]:
        if "asset.json" not in e["files"]:
            raise PackError(f"asset {e['id']} in {MANIFEST} has no asset.json; regenerate the pack")
    for name in m["extras"]:
        check_name(name, "extra file name")
        safe_path(root, name, "extra file")


# --------------------------------------------------------------------------- files
QUARANTINE = "quarantine"
"""Pack folder where resuming moves damaged scene and asset folders (never deleted)."""
SIDE_FOLDERS = ("rejected", QUARANTINE)
"""Pack folders outside the manifest's content: rejected attempts kept for inspection, quarantined damage."""


def unlisted(root: Path, listed: set[str]) -> list[tuple[str, str, str]]:
    """Everything in a pack the manifest does not account for, as ``(path, problem, detail)``.

    Symbolic links and other non-regular files are ``unsafe`` wherever they are (dot-folders
    and side folders included); regular files outside ``listed``, dot-names and the
    :data:`SIDE_FOLDERS` are ``unlisted``. Links are never followed.
    """
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            path = here / name
            rel = path.relative_to(root).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out.append((rel, "unsafe", f"symbolic link to {os.readlink(path)}"))
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                out.append((rel, "unsafe", "not a regular file"))
            elif stat.S_ISREG(mode) and rel not in listed and not _side(rel):
                out.append((rel, "unlisted", "a file the manifest does not list"))
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
    return sorted(out)


def _side(rel: str) -> bool:
    parts = rel.split("/")
    return any(p.startswith(".") for p in parts) or parts[0] in SIDE_FOLDERS or rel == MANIFEST


def folder_files(folder: Path) -> list[tuple[str, Path]]:
    """Files of a folder, recursively and sorted, as (POSIX relative path, path); skips dot-names.

    Raises:
        PackError: the folder holds a symbolic link or another non-regular file (never followed).

    """
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            if not name.startswith(".") and Path(dirpath, name).is_symlink():
                raise PackError(f"{Path(dirpath, name)} is a symbolic link; asset and scene folders hold regular "
                                "files only, so it is not packed")
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                path = regular_file(Path(dirpath, name), str(Path(dirpath, name)))
                out.append((path.relative_to(folder).as_posix(), path))
    return sorted(out)


def lock_folder(root: Path) -> int | None:
    """Take an exclusive, non-blocking OS lock on ``root/.lock``; return its descriptor.

    Raises:
        PackError: another writer holds the lock.

    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        return None
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise PackError(f"{root} is being written by another PackWriter or process; wait for it to finish, "
                        "close it, or choose another -o") from None
    return fd
