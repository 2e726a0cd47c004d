"""Disk blocks reserved ahead of a staging file's end (``fallocate(FALLOC_FL_KEEP_SIZE)``).

A buffered write past a file's end makes the filesystem reserve a block for every page
it dirties (ext4's delayed allocation: the reservation, the quota charge, the extent
status tree), inside the ``write`` call.  Reserving a few megabytes ahead in one call
costs far less: measured on this kind of machine (ext4), writing 610-KB batches took
0.81 us of kernel CPU per 5,040-byte record with 8-MiB reservations, against 1.11 us
without (the reservations' own calls included); the Record worker's CPU per numeric
record fell to 0.93 of what it was (``benchmarks/bench_worker.py``, issue 26, stop 41).

    | # | rule                                                                        |
    |---|-----------------------------------------------------------------------------|
    | 1 | nothing until the file has passed ``START`` bytes: an episode of a few KB   |
    |   | never reserves anything                                                     |
    | 2 | after a write, when fewer than ``CHUNK / 2`` reserved bytes are left ahead of|
    |   | the end, ``CHUNK`` more are reserved after what is reserved already          |
    | 3 | ``KEEP_SIZE``: the file's size stays the bytes written, so an               |
    |   | ``.incomplete`` left by a kill holds exactly what was written (the reserved |
    |   | blocks after it -- at most ``CHUNK`` -- show in ``du``, not in its size)     |
    | 4 | a reservation that fails (no ``fallocate``, a filesystem without it, a full |
    |   | disk) turns reservations off for the file; the write itself was made and     |
    |   | reports its own errors, so nothing changes but the cost                     |
    | 5 | ``release()`` at seal and at disposal: ``ftruncate`` to the file's own size |
    |   | (``fstat``) frees the blocks reserved after it and never changes a byte (an |
    |   | error leaves them)                                                          |
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable

__all__ = ["CHUNK", "START", "Preallocation"]

#: rule 1: the file size below which nothing is reserved
START = 1 << 20
#: rule 2: the bytes reserved at a time
CHUNK = 8 << 20
_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE (linux/falloc.h)


def _load() -> Callable[[int, int, int, int], int] | None:
    """glibc's ``fallocate`` (Linux only; ``os.posix_fallocate`` cannot keep the size)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.fallocate64 if hasattr(libc, "fallocate64") else libc.fallocate
    except (OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    call.restype = ctypes.c_int
    return call


_FALLOCATE = _load()


class Preallocation:
    """The blocks reserved ahead of one staging file (module table); the write lease calls
    :meth:`wrote` after each write, ``seal`` and disposal :meth:`release`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd  # the transaction's; never closed here
        self.reserved = 0  # the end of what is reserved (0: nothing)
        self.enabled = _FALLOCATE is not None
        self.calls = 0  # reservations made (tests and reports)

    def wrote(self, size: int) -> None:
        """Rules 1, 2 and 4, after a write left the file ``size`` bytes long."""
        if size < START or size + CHUNK // 2 <= self.reserved or not self.enabled:
            return
        start = max(size, self.reserved)
        fallocate = _FALLOCATE
        if fallocate is None or fallocate(self._fd, _KEEP_SIZE, start, CHUNK) != 0:
            self.enabled = False  # rule 4
            return
        self.reserved = start + CHUNK
        self.calls += 1

    def release(self) -> None:
        """Rule 5: free what was reserved after the file's end."""
        if self.reserved:  # an error leaves the blocks reserved; the bytes and size are untouched
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, os.fstat(self._fd).st_size)
        self.reserved = 0
        self.enabled = False
