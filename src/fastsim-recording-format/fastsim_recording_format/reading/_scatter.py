"""Rows of equal length at ascending file offsets, read with few ``preadv`` calls.

A numeric stream's payloads follow each other inside a batch, interrupted by the other
streams' payloads and, between batches, by the next batch's header and record table.
``read_rows`` reads each stretch of consecutive rows straight into the result and each
gap of at most :data:`GAP_READ` bytes into one small scratch buffer (the iovecs may all
name the same scratch: its bytes are dropped), so that a whole file's stream is a handful
of system calls instead of one per stretch.  A gap above :data:`GAP_READ` (where copying
it would cost more than a call) or :data:`IOV_LIMIT` buffers end a call; a call the
kernel cuts short (Linux reads at most 2 GiB - 4 KiB at once) is continued.
"""

from __future__ import annotations

import os

import numpy as np

from fastsim_recording_format import FormatError
from fastsim_recording_format.encoding import Array

__all__ = ["GAP_READ", "IOV_LIMIT", "preadv_all", "read_rows"]

GAP_READ = 32 << 10  # gaps up to this many bytes are read through into the scratch buffer
IOV_LIMIT = 1024  # buffers per call (Linux's IOV_MAX; os.preadv refuses more)


def preadv_all(fd: int, buffers: list[memoryview], at: int, total: int) -> None:
    """Fill ``buffers`` (``total`` bytes) from file offset ``at``; a short read is continued."""
    first = 0
    while True:
        got = os.preadv(fd, buffers[first:] if first else buffers, at)
        if got == total:
            return
        if got <= 0:
            raise FormatError(at, f"truncated: payload needs {total} bytes")
        at, total = at + got, total - got
        while got >= buffers[first].nbytes:
            got -= buffers[first].nbytes
            first += 1
        buffers[first] = buffers[first][got:]


def read_rows(fd: int, flat: memoryview, starts: Array, length: int) -> bool:
    """Fill ``flat`` (``len(starts)`` rows of ``length`` bytes, format ``B``) with the bytes
    at each file offset in ``starts``; ``False`` (nothing read) unless the rows ascend
    without overlapping.  The caller checks that every row lies inside the file."""
    count = len(starts)
    gaps = np.diff(starts) - length
    if bool((gaps < 0).any()):
        return False
    breaks = np.flatnonzero(gaps)
    cuts = [0, *(breaks + 1).tolist(), count]
    sizes = gaps[breaks].tolist()
    ats = starts[cuts[:-1]].tolist()
    scratch = memoryview(bytearray(min(GAP_READ, max(sizes, default=0))))
    buffers: list[memoryview] = []
    call_at, total = ats[0], 0
    for k, gap in enumerate([*sizes, -1]):
        a, b = cuts[k] * length, cuts[k + 1] * length
        buffers.append(flat[a:b])
        total += b - a
        if gap < 0:
            break
        if gap <= GAP_READ and len(buffers) < IOV_LIMIT - 1:
            buffers.append(scratch[:gap])
            total += gap
        else:
            preadv_all(fd, buffers, call_at, total)
            buffers, call_at, total = [], ats[k + 1], 0
    preadv_all(fd, buffers, call_at, total)
    return True
