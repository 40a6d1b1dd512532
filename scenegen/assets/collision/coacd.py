"""Running CoACD safely: simplified input, a helper process, a time limit, a cache.

CoACD is native code: on some inputs it runs for minutes or crashes the process
(segmentation fault). Each decomposition therefore runs in a helper interpreter
(one per caller process, restarted when it dies) with a time limit. A crash or an
error is retried once on the unsimplified mesh, then reported as :class:`AssetError`
(the caller falls back to the convex hull). The input is first simplified to a tolerance
(:func:`~scenegen.assets.mesh.simplify.simplify_to_tolerance`). Results are cached by a hash
of the mesh and the settings in ``<cache root>/coacd/``.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

import numpy as np
import trimesh

from scenegen.assets.cache import cache_root, canonical_json
from scenegen.assets.collision.config import CollisionConfig
from scenegen.assets.collision.hulls import proxy_gap
from scenegen.assets.mesh.simplify import simplify_to_tolerance
from scenegen.errors import AssetError
from scenegen.fileio import write_atomic

log = logging.getLogger(__name__)

Parts = list[tuple[np.ndarray, np.ndarray]]
GAP_MIN = 0.001
"""Coverage gap (m) always accepted from a decomposition of the simplified mesh."""
GAP_FACTOR = 1.5
"""Coverage gap accepted, as a multiple of the simplification tolerance: the simplified
surface may move that far, but a thin blade lost to the simplification leaves a larger gap,
and then the unsimplified mesh is tried."""


def _digest(mesh: trimesh.Trimesh, settings: dict) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(mesh.vertices, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(mesh.faces, dtype="<i8").tobytes())
    h.update(canonical_json(settings).encode())
    return h.hexdigest()


def _load_parts(path: os.PathLike) -> list[trimesh.Trimesh] | None:
    try:
        with np.load(path) as data:
            n = int(data["count"])
            return [trimesh.Trimesh(data[f"v{i}"], data[f"f{i}"], process=False) for i in range(n)]
    except Exception as exc:  # a corrupt cache entry is recomputed
        log.warning("decomposition cache entry %s is unreadable (%s); recomputing", path, exc)
        return None


def _save_parts(path: os.PathLike, parts: Parts) -> None:
    arrays: dict = {"count": np.array(len(parts))}
    for i, (v, f) in enumerate(parts):
        arrays[f"v{i}"] = np.asarray(v, dtype=np.float64)
        arrays[f"f{i}"] = np.asarray(f, dtype=np.int64)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    write_atomic(path, buf.getvalue())  # a ScenegenError, not AssetError: no silent hull fallback


def _call(vertices: np.ndarray, faces: np.ndarray, settings: dict) -> Parts:
    import coacd

    coacd.set_log_level("error")
    raw = coacd.run_coacd(coacd.Mesh(vertices, faces), **settings)
    return [(np.asarray(v, dtype=np.float64), np.asarray(f, dtype=np.int64)) for v, f in raw]


CALL = _call
"""The function that runs CoACD (in the child process); tests replace it to simulate failures."""


class _Server:
    """A helper interpreter (:mod:`scenegen.assets.collision._coacd_server`) running CoACD requests one at a time.

    A fresh interpreter, so it never inherits a parent's running OpenMP/TBB thread pools and
    never re-runs the caller's script; started once per process, restarted after a crash or a
    timeout, and ended when its caller exits.
    """

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "scenegen.assets.collision._coacd_server", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.owner = os.getpid()
        atexit.register(self.close)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, call, vertices: np.ndarray, faces: np.ndarray, settings: dict, timeout: float) -> Parts:
        try:
            self.conn.send((call, vertices, faces, settings))
            ready = self.conn.poll(timeout)
        except OSError:  # the helper died before reading
            ready = True
        if not ready:
            self.close()
            raise AssetError(f"CoACD took longer than {timeout:.0f} s")
        try:
            status, payload = self.conn.recv()
        except (EOFError, OSError):
            try:
                code = self.proc.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            self.close()
            raise AssetError(f"CoACD crashed (exit code {code})") from None
        if status != "ok":
            raise AssetError(f"CoACD failed ({payload})")
        return payload

    def close(self) -> None:
        if self.owner != os.getpid():
            return
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a killed process always ends
            pass
        self.conn.close()


_SERVER: _Server | None = None
_LOCK = threading.Lock()


def _isolated(vertices: np.ndarray, faces: np.ndarray, settings: dict, timeout: float) -> Parts:
    """Run CoACD in the helper process; raise AssetError on error, crash or timeout."""
    global _SERVER
    with _LOCK:
        if _SERVER is not None and (_SERVER.owner != os.getpid() or not _SERVER.alive()):
            if _SERVER.owner == os.getpid():
                _SERVER.close()
            _SERVER = None  # inherited through fork, or dead: start our own
        if _SERVER is None:
            try:
                _SERVER = _Server()
            except (OSError, ValueError) as exc:  # no subprocesses here (a sandbox, an odd platform)
                log.info("cannot start the CoACD helper process (%s); running CoACD in-process", exc)
                return CALL(vertices, faces, settings)
        server = _SERVER
        try:
            return server.call(CALL, vertices, faces, settings, timeout)
        except AssetError:
            if not server.alive():
                _SERVER = None
            raise


def run_coacd(mesh: trimesh.Trimesh, config: CollisionConfig,
              cache_dir: str | os.PathLike | None = None) -> tuple[list[trimesh.Trimesh], float, bool]:
    """Decompose a mesh with CoACD, through the decomposition cache.

    Returns:
        ``(parts, seconds spent in CoACD now, served from cache)``.

    Raises:
        AssetError: CoACD is missing, failed, crashed or ran out of time (twice for the first two).

    """
    settings = config.coacd_settings()
    key = {**settings, "simplify": config.simplify}
    path = cache_root(cache_dir) / "coacd" / f"{_digest(mesh, key)}.npz"
    if path.is_file():
        parts = _load_parts(path)
        if parts:
            return parts, 0.0, True
    try:
        import coacd  # noqa: F401
    except ImportError as exc:
        raise AssetError(f"coacd is not installed ({exc}); `pip install coacd`") from None
    t0 = time.perf_counter()
    simple = simplify_to_tolerance(mesh, config.simplify * float(np.linalg.norm(mesh.extents)))
    attempts = [simple] if simple is mesh else [simple, mesh]
    limit = max(GAP_MIN, GAP_FACTOR * config.simplify * float(np.linalg.norm(mesh.extents)))
    verts = np.asarray(mesh.vertices, dtype=float)
    best: tuple[float, Parts] | None = None
    for i, m in enumerate(attempts):
        last = i + 1 == len(attempts)
        # CoACD's own manifold test flags closed meshes of higher genus (a mug, a basket) and
        # remeshes them at voxel resolution, several times slower: trust trimesh's test instead.
        st = {**settings, "preprocess_mode": "off" if m.is_watertight else "on"}
        v, f = np.asarray(m.vertices, dtype=np.float64), np.asarray(m.faces, dtype=np.int32)
        try:
            raw = _isolated(v, f, st, config.timeout_s) if config.isolate else CALL(v, f, st)
        except AssetError as exc:
            if last or "longer than" in str(exc):
                if best is not None:
                    break
                raise
            log.info("%s; retrying on the unsimplified mesh", exc)
            continue
        except Exception as exc:  # in-process CoACD raises plain RuntimeErrors
            if last and best is None:
                raise AssetError(f"CoACD failed ({exc})") from None
            continue
        raw = [(pv, pf) for pv, pf in raw if len(pv) >= 4 and len(pf) >= 4]
        if not raw:
            continue
        gap = proxy_gap([trimesh.Trimesh(pv, pf, process=False) for pv, pf in raw], verts)
        if best is None or gap < best[0]:
            best = (gap, raw)
        if gap <= limit:
            break
        if not last:
            log.info("CoACD parts leave the mesh %.1f mm uncovered; retrying on the unsimplified mesh",
                     gap * 1000)
    if best is None:
        raise AssetError("CoACD returned no parts")
    raw = best[1]
    seconds = time.perf_counter() - t0
    _save_parts(path, raw)
    return [trimesh.Trimesh(v, f, process=False) for v, f in raw], seconds, False
