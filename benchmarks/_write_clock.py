"""The writer worker's CPU inside the write lease's ``os.write``/``os.writev`` (the kernel's
copy into the page cache, which runs without the GIL): ``write_clock()`` swaps the lease
module's ``os`` for a counting one while it is open."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import fastsim_embedded.output.leases as leases

__all__ = ["WriteClock", "write_clock"]


class WriteClock:
    """``os`` for the write lease, counting the worker thread's CPU inside ``os.write`` and
    ``os.writev`` (the kernel's copy into the page cache; both release the GIL)."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.worker: int | None = None  # the thread counted (the writer worker's ident)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        t0 = time.thread_time()
        try:
            return os.write(fd, data)
        finally:
            if threading.get_ident() == self.worker:
                self.cpu += time.thread_time() - t0

    def writev(self, fd: int, parts: Any) -> int:
        t0 = time.thread_time()
        try:
            return os.writev(fd, parts)
        finally:
            if threading.get_ident() == self.worker:
                self.cpu += time.thread_time() - t0


@contextmanager
def write_clock() -> Iterator[WriteClock]:
    """A ``WriteClock`` counting while the block is open (set its ``worker`` to the thread to count)."""
    clock = WriteClock()
    names = vars(leases)  # the lease module's own ``os`` (not exported)
    real = names["os"]
    names["os"] = clock
    try:
        yield clock
    finally:
        names["os"] = real
