"""Rows of equal length at ascending file offsets, read with few ``preadv`` calls.

A numeric stream's payloads follow each other inside a batch, interrupted by the other
streams' payloads and, between batches, by the next batch's header and record table.
``read_rows`` reads each stretch of consecutive rows straight into the result and each
gap of at most :data:`GAP_READ` bytes into one small scratch buffer (the iovecs may all
name the same scratch: its bytes are dropped), so that a whole file's stream is a handful
of system calls instead of one per stretch.  A gap above :data:`GAP_READ` (where copying
it would cost more than a call) or :data:`IOV_LIMIT` buffers end a call; a call the
kernel cuts short (Linux reads at most 2 GiB - 4 KiB at once) is continued.

Where the result starts matters: the kernel copies a stretch from the page cache at the
file offset's place in its page, and when the destination lies just past the source in
the 4 KiB address space (``(dst - src) % 4096`` from 1 to 31 bytes), every load waits on
an earlier store to the same low address bits (4K aliasing): on this machine's AMD EPYC
such a copy took 2.0-2.3 times as long (23-26 ms against 10-11.6 ms for 40 MiB,
``benchmarks/results/2026-12-05-read26c-*``).  :func:`placement` picks the start (mod
4096, a multiple of :data:`ALIGN`) that leaves the fewest bytes in that window.
"""

from __future__ import annotations

import os

import numpy as np

from fastsim_recording_format import FormatError
from fastsim_recording_format.encoding import Array

__all__ = ["ALIGN", "ALIAS", "GAP_READ", "IOV_LIMIT", "placement", "preadv_all", "read_rows"]

GAP_READ = 32 << 10  # gaps up to this many bytes are read through into the scratch buffer
IOV_LIMIT = 1024  # buffers per call (Linux's IOV_MAX; os.preadv refuses more)
ALIGN = 64  # a result starts on this many bytes (a cache line)
ALIAS = 64  # a destination less than this many bytes past its source (mod 4096) is avoided
PAGE = 4096


def placement(starts: Array, length: int, breaks: Array) -> int:
    """Where (mod 4096, a multiple of :data:`ALIGN`) a result of rows read from ``starts``
    should start: the place that puts the fewest bytes at a destination 1 to ``ALIAS - 1``
    bytes past its source (mod 4096).  ``breaks``: the rows that do not follow the row
    before them in the file (each begins a stretch).  Ties: the lowest place."""
    if len(starts) == 0:
        return 0
    firsts = np.concatenate(([0], breaks)).astype(np.int64)
    rows = np.diff(np.append(firsts, len(starts)))  # rows per stretch: its weight
    # row k lands at start + k * length, from starts[k]: within a stretch the lag between
    # the two (mod 4096) stays the same
    lag = (firsts * length - starts[firsts]) % PAGE
    # a start p (a multiple of ALIGN) puts the stretch at p + lag (mod 4096), inside the
    # window 1..ALIAS-1 (ALIAS == ALIGN) only when lag is not a multiple of ALIGN and
    # p == -(lag - lag % ALIGN) (mod 4096): one slot per stretch
    off = lag % ALIGN
    slots = PAGE // ALIGN
    bad = (-((lag - off) // ALIGN)) % slots
    hits = np.bincount(bad[off != 0], weights=rows[off != 0], minlength=slots)
    return int(hits.argmin()) * ALIGN


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
    cuts = [0, *(breaks + 1).tolist(), count]  # stretch k is rows cuts[k]:cuts[k + 1]
    sizes = gaps[breaks].tolist()  # the gap after stretch k
    ats = starts[cuts[:-1]].tolist()
    bounds = (np.asarray(cuts) * length).tolist()  # stretch k is flat[bounds[k]:bounds[k + 1]]
    scratch = memoryview(bytearray(min(GAP_READ, max(sizes, default=0))))
    # a call ends at a gap above GAP_READ, and after (IOV_LIMIT + 1) // 2 stretches (their
    # gaps between them read through: at most IOV_LIMIT buffers); the buffers of a call
    # are built by two comprehensions, not one Python step per buffer; the gaps of one
    # size share one view of the scratch
    per_call = max(1, (IOV_LIMIT + 1) // 2)
    skip = {gap: scratch[:gap] for gap in set(sizes) if gap <= GAP_READ}  # one view per gap size
    ends = [k + 1 for k, gap in enumerate(sizes) if gap > GAP_READ] + [len(ats)]
    first = 0
    for end in ends:
        for lo in range(first, end, per_call):
            hi = min(lo + per_call, end)
            buffers: list[memoryview] = [scratch] * (2 * (hi - lo) - 1)
            buffers[0::2] = [flat[a:b] for a, b in zip(bounds[lo:hi], bounds[lo + 1:hi + 1])]
            buffers[1::2] = [skip[gap] for gap in sizes[lo:hi - 1]]
            preadv_all(fd, buffers, ats[lo], ats[hi - 1] + bounds[hi] - bounds[hi - 1] - ats[lo])
        first = end
    return True
