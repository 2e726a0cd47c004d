"""Adapters of the executor port (``fastsim_record.ports.executors``).

    | # | adapter        | runs                                                         |
    |---|----------------|--------------------------------------------------------------|
    | 1 | ``ProcessPool``| ``concurrent.futures.ProcessPoolExecutor`` (``forkserver``)  |
    |   |                | with J workers; J = 1 runs in this process, no pool; each    |
    |   |                | worker ends with the driver (``kill -9`` of it included) and |
    |   |                | is stopped at once when the driver is interrupted            |
    | 2 | ``RayTasks``   | one plain ``@ray.remote`` task per chunk of items; attaches  |
    |   |                | to a running Ray (``ray.is_initialized()``), else            |
    |   |                | ``ray.init(address)`` and shuts that connection down again   |

Items are sent in chunks (a few per worker) so that per-task overhead stays small for
thousands of small files.  Ray is optional (the ``[ray]`` extra); asking for it without
it installed raises ``MissingRay`` with the ``pip install`` line.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

import attrs

from fastsim_contract.lifetime import end_with_parent

__all__ = ["MissingRay", "ProcessPool", "RayTasks", "choose", "run_chunk"]

T = TypeVar("T")
R = TypeVar("R")


class MissingRay(RuntimeError):
    """``--ray`` without Ray installed."""


def _chunks(items: Sequence[T], workers: int, idempotent: bool = True) -> list[list[T]]:
    size = max(1, min(32, len(items) // max(1, workers * 4))) if idempotent else 1
    return [list(items[k:k + size]) for k in range(0, len(items), size)]


class ParentGone(KeyboardInterrupt):
    """Raised in a pool worker whose driver died (or stopped it) in the middle of a job: the
    job's ``finally`` blocks remove its staging, then the worker exits."""


_in_job = False  # whether this pool worker is running a chunk now


def _on_stop(signum: int, frame: object) -> None:
    if not _in_job:
        os._exit(128 + signum)  # idle: nothing to clean up
    raise ParentGone(signum)


def _worker_init(environ: dict[str, str], driver: int) -> None:
    """A pool worker's initializer: the caller's environment at the time the pool started
    (a forkserver keeps the one it was started with; credentials and endpoints may have
    changed since), and an end with the driver (``fastsim_contract.lifetime``): SIGTERM
    when the driver or the forkserver dies, or when the driver stops the pool."""
    os.environ.clear()
    os.environ.update(environ)
    signal.signal(signal.SIGTERM, _on_stop)
    end_with_parent(signal.SIGTERM, watch=driver)


#: imported once by the forkserver, inherited by every worker it forks
_PRELOAD = ["fastsim_record.batch.jobs", "fastsim_record.batch.upload", "fastsim_record.batch.sweep",
            "fastsim_recording_format.reading.summary"]


def _ready(_: int) -> int:
    return os.getpid()


def run_chunk(fn: Callable[[T], R], chunk: list[T]) -> list[R]:
    """One task: ``fn`` over a chunk of items (module-level, so it pickles).  In a pool
    worker whose driver is gone, the worker exits once the item's cleanup has run."""
    global _in_job
    _in_job = True
    try:
        return [fn(item) for item in chunk]
    except ParentGone as exc:
        os._exit(128 + int(exc.args[0]) if exc.args else 143)
    finally:
        _in_job = False


@attrs.define(eq=False)
class ProcessPool:
    """The default executor: a local pool of ``jobs`` processes."""

    jobs: int = 1
    _pool: ProcessPoolExecutor | None = None

    @property
    def name(self) -> str:
        """``pool(J)``."""
        return f"pool({self.jobs})"

    @property
    def workers(self) -> int:
        """How many items run at once (1 in this process)."""
        return max(1, self.jobs)

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, idempotent: bool = True) -> Iterator[R]:
        """In order; in-process when ``jobs`` is 1 or there is one item."""
        if self.jobs <= 1 or len(items) <= 1:
            for item in items:
                yield fn(item)
            return
        self.start()
        if self._pool is None:  # pragma: no cover - start() made it
            return
        chunks = _chunks(items, self.jobs, idempotent)
        for results in self._pool.map(run_chunk, [fn] * len(chunks), chunks):
            yield from results

    def start(self) -> None:
        """Start the workers now (else on first use): ``forkserver`` processes forked from
        a server that has already imported the jobs' modules, so a worker is ready in
        milliseconds, not after a fresh interpreter's imports."""
        if self._pool is not None or self.jobs <= 1:
            return
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=context,
                                         initializer=_worker_init, initargs=(dict(os.environ), os.getpid()))
        list(self._pool.map(_ready, range(self.jobs)))

    def close(self, abort: bool = False) -> None:
        """Stop the workers: after their running chunks, or at once (``abort``: SIGTERM,
        each removes its staging) when the driver was interrupted."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abort:
            for process in list(getattr(pool, "_processes", {}).values()):
                with contextlib.suppress(OSError, AttributeError):
                    process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingRay("Ray is not installed: pip install 'fastsim-plugin-record[ray]'") from None
    return ray


def _reachable(address: str | None, timeout_s: float = 5.0) -> None:
    """``HOST:PORT`` (or ``ray://HOST:PORT``) must accept a TCP connection within
    ``timeout_s``: Ray itself retries an unreachable GCS for minutes."""
    if not address or address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConnectionError(f"cannot reach Ray at {address}: {exc.strerror or exc}") from None


@attrs.define(eq=False)
class RayTasks:
    """Plain ``@ray.remote`` tasks on the cluster at ``address`` (``None``: Ray's own
    resolution, ``RAY_ADDRESS`` first)."""

    address: str | None = None
    _opened: bool = False
    _workers: int = 0

    @property
    def name(self) -> str:
        """``ray`` and the address."""
        return f"ray({self.address})" if self.address else "ray"

    @property
    def workers(self) -> int:
        """How many items run at once: the cluster's CPUs once connected (else 1)."""
        return max(1, self._workers)

    def start(self) -> None:
        """Connect (or start a local Ray) unless this process is already connected."""
        ray = _ray()
        if not ray.is_initialized():
            _reachable(self.address)
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            ray.init(address=self.address, include_dashboard=False, logging_level=logging.ERROR,
                     log_to_driver=False)
            self._opened = True
        self._workers = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, idempotent: bool = True) -> Iterator[R]:
        """One task per chunk; results in order.  A failed task is retried (twice) only
        when its items are idempotent: a retried episode would find its file committed."""
        if not items:
            return
        ray = _ray()
        self.start()
        task = ray.remote(num_cpus=1, max_retries=2 if idempotent else 0)(run_chunk)
        refs = [task.remote(fn, chunk) for chunk in _chunks(items, self._workers, idempotent)]
        try:
            for ref in refs:
                yield from ray.get(ref)
        except BaseException:  # interrupted, or a task failed: cancel what is still running
            for ref in refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            raise

    def close(self) -> None:
        """Shut down the connection this executor opened (never one it found)."""
        if self._opened:
            _ray().shutdown()
            self._opened = False


def choose(jobs: int | None, ray: str | None) -> ProcessPool | RayTasks:
    """``--ray`` (``""``: no address given; then ``RAY_ADDRESS``) wins over ``--jobs``."""
    if ray is not None:
        return RayTasks(address=ray or os.environ.get("RAY_ADDRESS") or None)
    return ProcessPool(jobs=jobs or 1)
