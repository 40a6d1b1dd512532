"""Files and resources, done one way: atomic writes, folder publishing, canonical JSON, closing.

* :func:`write_atomic` writes one file through a temporary sibling, ``fsync`` and ``os.replace``.
* :func:`publish_dir` fills a temporary sibling folder and renames it into place.
* :func:`canonical_json` / :func:`content_hash` give deterministic JSON text and its sha256;
  :func:`read_json` reads a JSON file or raises one line naming it.
* :class:`Closeable` is the close / context-manager / ``__del__`` lifecycle of every resource owner.

Temporary names start with :data:`TMP_PREFIX` (a dot-name, so folder listings skip them), so a
crash leaves only ``.tmp-*`` debris that readers ignore and writers may sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from scenegen.errors import ConfigError, ScenegenError

TMP_PREFIX = ".tmp-"
"""Names starting with this are unfinished writes."""
_HINT = "check free disk space and permissions"
_C = TypeVar("_C", bound="Closeable")


def remove(path: str | os.PathLike) -> None:
    """Delete a file, link or folder if present (a folder with everything in it)."""
    path = Path(path)
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def _discard(path: Path) -> None:
    """:func:`remove`, ignoring failures (cleanup after an error must not hide it)."""
    try:
        remove(path)
    except OSError:
        pass


def write_file(path: str | os.PathLike, data: bytes | str, sync: bool = False) -> None:
    """Write ``data`` (str as UTF-8) to ``path`` in place; with ``sync``, flush it to the disk before returning."""
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def write_atomic(path: str | os.PathLike, data: bytes | str, *,
                 error: type[Exception] = ScenegenError) -> Path:
    """Write ``data`` (str is UTF-8 encoded) to ``path`` atomically: temp sibling, fsync, ``os.replace``.

    The parent folder is created when missing. The temporary file is removed on any failure,
    so readers see either the old file or the new one, never a part.

    Args:
        path: The file to write.
        data: Its content.
        error: The error class raised on an OS failure (e.g. ``PackError`` from pack code).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        error: ``could not write <path> (<reason>); check free disk space and permissions``.

    """
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(tmp, data, sync=True)
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise error(f"could not write {path} ({exc}); {_HINT}") from None
    except BaseException:
        _discard(tmp)
        raise
    return path


def publish_dir(final: str | os.PathLike, fill: Callable[[Path], Any] | Mapping[str, bytes | str], *,
                keep_existing: Callable[[Path], bool] | None = None,
                write: Callable[[Path, bytes | str], Any] = write_file,
                error: type[Exception] = ScenegenError) -> bool:
    """Fill a temporary sibling folder, then rename it to ``final`` so the folder appears whole or not at all.

    Args:
        final: The folder to publish.
        fill: Either a mapping of POSIX relative path -> content (bytes, or str written as UTF-8), or a
            callable that writes everything into the (empty, existing) folder it is given.
        keep_existing: When given, an existing ``final`` for which it returns True is kept and this
            build discarded (the first writer wins, also when another process renames first). Any other
            existing ``final`` (a stale or broken leftover) is replaced.
        write: Writes one file of a mapping ``fill`` (``write(path, content)``).
        error: The error class raised on an OS failure.

    Returns:
        True when this call published ``final``; False when an existing copy was kept.

    Raises:
        error: ``could not write <final> (<reason>); check free disk space and permissions``.
            Other errors raised by ``fill`` propagate unchanged (the temporary folder is removed).

    """
    final = Path(final)
    tmp = final.with_name(f"{TMP_PREFIX}{final.name[:24]}-{secrets.token_hex(4)}")
    trash = final.with_name(f"{TMP_PREFIX}old-{final.name[:24]}-{secrets.token_hex(4)}")
    try:
        tmp.mkdir(parents=True)
        if callable(fill):
            fill(tmp)
        else:
            for rel, content in sorted(fill.items()):
                path = tmp.joinpath(*rel.split("/"))
                path.parent.mkdir(parents=True, exist_ok=True)
                write(path, content)
        if final.exists() or final.is_symlink():
            if keep_existing is not None and keep_existing(final):
                return False
            os.replace(final, trash)  # out of the way first, deleted below
        try:
            os.rename(tmp, final)
        except OSError:
            if keep_existing is not None and keep_existing(final):
                return False  # another writer published it meanwhile
            raise
        return True
    except OSError as exc:
        raise error(f"could not write {final} ({exc}); {_HINT}") from None
    finally:
        _discard(tmp)
        _discard(trash)


# --------------------------------------------------------------------------- canonical JSON
def _norm(x: Any, digits: int | None, plain: bool) -> Any:
    if plain:
        if callable(getattr(x, "cache_key", None)):  # e.g. CollisionConfig: only the fields that matter
            return _norm(x.cache_key(), digits, plain)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return _norm(dataclasses.asdict(x), digits, plain)
    if isinstance(x, float):
        return x if digits is None else float(f"{x:.{digits}g}")
    if isinstance(x, dict):
        return {str(k): _norm(v, digits, plain) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_norm(v, digits, plain) for v in x]
    if plain:
        if callable(getattr(x, "tolist", None)):  # numpy arrays and scalars
            return _norm(x.tolist(), digits, plain)
        if isinstance(x, Path):
            return x.as_posix()
    return x


def canonical_json(data: Any, *, float_digits: int | None = 9, plain: bool = False, allow_nan: bool = True,
                   indent: int | None = None, separators: tuple[str, str] | None = (",", ":"),
                   default: Callable[[Any], Any] | None = None, error: type[Exception] | None = None,
                   what: str = "data") -> str:
    """Deterministic JSON text: keys sorted (and made strings), tuples as lists, ASCII only.

    The defaults give the scene graph's hashing form: no whitespace, floats rounded to 9
    significant digits. Other callers pick the options that reproduce their bytes.

    Args:
        data: Plain JSON-like data.
        float_digits: Round floats to this many significant digits; None keeps them as Python writes them.
        plain: Also turn numpy arrays/scalars into lists/numbers, Paths into POSIX strings and dataclasses
            into dicts (through their ``cache_key()`` when they have one).
        allow_nan: Write NaN/Infinity (as ``json`` does) instead of failing.
        indent: Pretty-print with this indent.
        separators: As ``json.dumps``; None for its defaults (``", "``/``": "``, or ``","`` when indented).
        default: As ``json.dumps``: called for objects it cannot encode.
        error: Raise this class (one line naming ``what``) instead of the raw ``TypeError``/``ValueError``.
        what: Names the data in that message.

    Returns:
        The JSON text.

    """
    try:
        return json.dumps(_norm(data, float_digits, plain), sort_keys=True, separators=separators, indent=indent,
                          allow_nan=allow_nan, default=default, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        if error is None:
            raise
        raise error(f"{what} cannot be stored as JSON ({exc}); use finite numbers, strings, lists "
                    "and dicts") from None


def read_json(path: str | os.PathLike, what: str, hint: str = "") -> Any:
    """A JSON file's content; missing or unreadable files raise one-line :class:`ConfigError` naming ``what``."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"no {what} at {path}" + (f"; {hint}" if hint else "")) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} {path} ({exc})") from None


def content_hash(data: Any, **options: Any) -> str:
    """SHA-256 hex digest of :func:`canonical_json` of ``data`` (``options`` as there)."""
    return hashlib.sha256(canonical_json(data, **options).encode()).hexdigest()


# --------------------------------------------------------------------------- lifecycle
class Closeable:
    """Close lifecycle: idempotent :meth:`close` (runs :meth:`_close` once), ``with`` support, :attr:`closed`.

    Subclasses put their release code in :meth:`_close`; ``__del__`` closes a forgotten
    instance and never raises (a half-built instance, interpreter shutdown).
    """

    _closed: bool = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    def close(self) -> None:
        """Release what the object holds; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._close()

    def _close(self) -> None:
        """Release hook, called once by :meth:`close`."""

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - best effort in a finaliser
            pass
