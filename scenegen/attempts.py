"""Where a run's attempts execute, each under a wall-clock deadline: this process, a local process pool, or Ray.

:func:`attempt_results` yields the attempts' results in task order. With a deadline
(``PipelineConfig.attempt_timeout_s``), an attempt that has not returned when its time is up is
given up on and reported as a failed attempt naming the stage it was in (``timeout in layout:
...``), and the run goes on with the next attempt:

* in this process (``workers=1``), each attempt runs on a worker thread; at the deadline the
  thread is abandoned (an exception is raised in it at its next Python instruction, so a loop in
  Python code stops) and a fresh thread takes the next attempt. The thread is shared by every run
  of the process, so its thread-local caches last as the main thread's would. A hang inside native code that
  never releases the interpreter lock cannot be cut from inside the process: use process workers;
* on the local process pool (``workers > 1``), a late attempt's worker process is killed: the pool
  is replaced and the other attempts that were running are started again (attempts are pure
  functions of their task, so results do not change);
* on Ray, attempts run without a per-attempt deadline (the run's ``time_budget_s`` still holds).

Each attempt names the stage it enters with :func:`mark_stage`: a dict in this process, and a
small file per attempt under a temporary folder in pool workers.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from scenegen.errors import BackendError, ConfigError

RAY_CONNECT_S = 60.0
"""Wall-clock deadline (s) of connecting to (or starting) a Ray cluster."""
_MARKS: dict[int, str] = {}
_STAGE_DIR: list[str | None] = [None]


class AttemptTimeout(BaseException):  # noqa: N818 - not an error of the attempt: it is how it is stopped
    """Raised inside an abandoned attempt's thread so that it stops (not caught as an attempt failure)."""


def mark_stage(index: int, stage: str) -> None:
    """Record that attempt ``index`` is entering ``stage`` (what a timeout then names)."""
    _MARKS[index] = stage
    if _STAGE_DIR[0] is not None:
        try:
            Path(_STAGE_DIR[0], str(index)).write_text(stage)
        except OSError:  # the mark only names a stage in a timeout message
            pass


def _stage_of(index: int, stage_dir: str | None = None) -> str:
    if stage_dir is not None:
        try:
            return Path(stage_dir, str(index)).read_text().strip() or "start"
        except OSError:
            return "start"
    return _MARKS.get(index, "start")


def timeout_reason(index: int, stage: str, limit: float, what: str) -> str:
    """``timeout in STAGE: attempt I did not finish within its N s deadline; WHAT``."""
    return f"timeout in {stage}: attempt {index} did not finish within its {limit:g} s deadline; {what}"


def _worker_init(parent: int, stage_dir: str | None = None) -> None:
    """Pool-worker initializer: die with the parent (even by SIGKILL) and write stage marks to ``stage_dir``.

    A watcher thread polls the parent id twice a second; once the worker is re-parented the
    worker ends, so no worker (and no multiprocessing resource tracker kept alive by one) outlives a killed run.
    """
    _STAGE_DIR[0] = stage_dir

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def attempt_results(tasks: Iterator[tuple], config: Any, run: Callable[[tuple], Any],
                    failed: Callable[[int, str], Any]) -> tuple[Iterator[Any], Callable[[], None]]:
    """Results of ``run(task)`` for each task, in order, and a function that stops the workers.

    Args:
        tasks: attempt tasks; ``task[0]`` is the attempt index.
        config: the run's :class:`~scenegen.pipeline.PipelineConfig` (workers, backend, deadline).
        run: the attempt function (picklable for process workers); it never raises for a failed attempt.
        failed: ``(index, reason) -> result`` standing in for an attempt that passed its deadline (or whose
            worker process died twice); the reason starts ``timeout in STAGE:`` (``crash in STAGE:``).

    Raises:
        ConfigError: the Ray backend without Ray installed.
        BackendError: no Ray cluster at the address.

    """
    limit = config.attempt_timeout_s or None
    if config.workers == 1 and config.backend == "process":
        if limit is None:
            return (run(t) for t in tasks), lambda: None
        return (_RUNNER.run(run, t, limit, failed) for t in tasks), lambda: None
    if config.backend == "ray":
        try:
            import ray
            from ray.util.multiprocessing import Pool as RayPool
        except ImportError:
            raise ConfigError("backend 'ray' needs Ray: pip install 'scenegen[ray]'") from None
        if not ray.is_initialized():
            ray_connect(ray, config.ray_address)
        pool = RayPool(processes=config.workers)
        return pool.imap(run, tasks, chunksize=1), pool.terminate
    if limit is None:
        # Not multiprocessing.Pool: its workers are daemonic and could not start the CoACD helper process.
        ex = ProcessPoolExecutor(config.workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_worker_init, initargs=(os.getpid(),))
        return ex.map(run, list(tasks)), lambda: ex.shutdown(wait=False, cancel_futures=True)
    pool_runner = _PoolRunner(config.workers, run, limit, failed)
    return pool_runner.results(tasks), pool_runner.stop


class _ThreadRunner:
    """Attempts on one worker thread kept for the process's life; a late thread is abandoned and replaced.

    Its thread-local caches (the layout's collision client) are reused across attempts and runs, as the
    main thread's were.
    """

    def __init__(self) -> None:
        self._jobs: queue.Queue | None = None
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        jobs: queue.Queue = queue.Queue()

        def loop() -> None:
            while (job := jobs.get()) is not None:
                fn, task, box, done = job
                try:
                    box["value"] = fn(task)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread (or dropped if late)
                    box["error"] = exc
                finally:
                    done.set()
                if box.get("abandoned") or isinstance(box.get("error"), AttemptTimeout):
                    return

        self._jobs = jobs
        self._thread = threading.Thread(target=loop, name="scenegen-attempt", daemon=True)
        self._thread.start()

    def run(self, fn: Callable[[tuple], Any], task: tuple, limit: float, failed: Callable[[int, str], Any]) -> Any:
        """``fn(task)``, or ``failed(...)`` once ``limit`` seconds pass (the thread is then abandoned)."""
        if self._thread is None or not self._thread.is_alive():
            self._start()
        box: dict = {}
        done = threading.Event()
        self._jobs.put((fn, task, box, done))
        if done.wait(limit):
            if "error" in box:
                raise box["error"]
            return box["value"]
        stage = _stage_of(task[0])
        box["abandoned"] = True
        self._jobs.put(None)
        _raise_in(self._thread, AttemptTimeout)
        self._thread = self._jobs = None
        return failed(task[0], timeout_reason(task[0], stage, limit, "its thread was abandoned"))



_RUNNER = _ThreadRunner()


def _raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Raise ``exc`` in ``thread`` at its next Python instruction (best effort: native code runs on)."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc))


class _PoolRunner:
    """Attempts on a local process pool with a deadline each; a late attempt's pool is killed and replaced."""

    def __init__(self, workers: int, run: Callable[[tuple], Any], limit: float,
                 failed: Callable[[int, str], Any]) -> None:
        self.workers, self.run, self.limit, self.failed = workers, run, limit, failed
        self.stage_dir = tempfile.mkdtemp(prefix="scenegen-stages-")
        self.ex: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self.ex is None:
            self.ex = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                          initializer=_worker_init, initargs=(os.getpid(), self.stage_dir))
        return self.ex

    def _kill(self) -> None:
        ex, self.ex = self.ex, None
        if ex is None:
            return
        _kill_all(list(getattr(ex, "_processes", {}).values()))
        ex.shutdown(wait=False, cancel_futures=True)

    def results(self, tasks: Iterator[tuple]) -> Iterator[Any]:
        """The attempts' results in task order; at most ``workers`` attempts run at once."""
        todo = iter(tasks)
        order: list[int] = []
        running: dict = {}  # future -> (task, deadline)
        ready: dict[int, Any] = {}
        crashes: dict[int, int] = {}
        exhausted = False
        while True:
            while not exhausted and len(running) < self.workers:
                task = next(todo, None)
                if task is None:
                    exhausted = True
                    break
                order.append(task[0])
                running[self._pool().submit(self.run, task)] = (task, time.monotonic() + self.limit)
            while order and order[0] in ready:
                yield ready.pop(order.pop(0))
            if not running:
                return
            first = min(d for _, d in running.values())
            done, _ = wait(list(running), timeout=max(0.0, first - time.monotonic()), return_when=FIRST_COMPLETED)
            broken, dead = [], False
            for fut in done:
                task, _ = running.pop(fut)
                try:
                    ready[task[0]] = fut.result()
                except BrokenProcessPool:
                    dead = True
                    crashes[task[0]] = crashes.get(task[0], 0) + 1
                    if crashes[task[0]] < 2:
                        broken.append(task)
                        continue
                    ready[task[0]] = self.failed(task[0], f"crash in {_stage_of(task[0], self.stage_dir)}: the "
                                                 f"worker process of attempt {task[0]} died twice")
            now = time.monotonic()
            late = [f for f, (_, d) in running.items() if d <= now]
            for fut in late:
                task, _ = running.pop(fut)
                ready[task[0]] = self.failed(task[0], timeout_reason(task[0], _stage_of(task[0], self.stage_dir),
                                                                     self.limit, "its worker process was killed"))
            if late or dead:  # the late attempts' workers die with the pool; the others start again
                again = broken + [t for t, _ in running.values()]
                self._kill()
                running = {self._pool().submit(self.run, t): (t, time.monotonic() + self.limit) for t in again}

    def stop(self) -> None:
        """Cancel the attempts not started and let running ones end, killing those still running at the deadline."""
        ex, self.ex = self.ex, None
        if ex is not None:
            procs = list(getattr(ex, "_processes", {}).values())
            ex.shutdown(wait=False, cancel_futures=True)
            reaper = threading.Timer(self.limit, _kill_all, (procs,))
            reaper.daemon = True  # never keeps the interpreter alive
            reaper.start()
        shutil.rmtree(self.stage_dir, ignore_errors=True)


def _kill_all(procs: list) -> None:
    for proc in procs:
        try:
            if proc.is_alive():
                proc.kill()
        except (OSError, AttributeError, ValueError):  # already gone or closed
            pass


def ray_connect(ray: Any, address: str | None) -> None:
    """``ray.init``: a new local cluster on this thread; a cluster address under :data:`RAY_CONNECT_S`, probed first.

    Raises:
        BackendError: naming the stage (``ray connect``) and the address that failed.

    """
    from scenegen.secrets import call_with_deadline

    where = address or "a new local cluster"
    host, _, port = (address or "").removeprefix("ray://").rpartition(":")
    if host and port.isdigit():
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5.0).close()
        except OSError as exc:
            raise BackendError(f"stage ray connect: cannot reach the Ray cluster at {address} "
                               f"({exc.strerror or exc}); check --ray-address and that the cluster is up") from None
    def init() -> None:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)

    try:
        if address is None:
            # a new local cluster: its GCS and raylet die with the thread that starts them (Linux parent-death
            # signal), so they are started here, not on a deadline thread that ends after the call
            init()
        else:
            call_with_deadline(init, RAY_CONNECT_S, what=f"connecting to the Ray cluster at {where}")
    except TimeoutError:
        raise BackendError(f"stage ray connect: no Ray cluster answered at {where} within {RAY_CONNECT_S:.0f} s; "
                           "check --ray-address and that the cluster is up") from None
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; each becomes one line naming the address
        raise BackendError(f"stage ray connect: connecting to the Ray cluster at {where} failed "
                           f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
