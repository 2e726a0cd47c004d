"""Vectorised access to a sealed file's record tables and payload bytes.

``FsrReader`` (the format package's public reader) opens the file and checks its head
and tail: header, run metadata, trailer, index, projections and footer.  Reading one
record at a time through it costs a Python object per record, so this module reads the
record tables of the batches a stream lives in (named by the projections) straight
from a read-only memory map, and keeps, per stream, one structured array of its records.

Checks made on every batch this module reads (each failure is one
:class:`~fastsim_recording_format.FormatError` naming the byte offset):

    | # | check                                                                      |
    |---|----------------------------------------------------------------------------|
    | 1 | batch magic and header CRC-32C; ordinal and record count equal the index's |
    | 2 | batch length implied by the header equals the index entry's                |
    | 3 | the record table and metadata blob match the header's table CRC-32C        |
    | 4 | every record's payload and metadata lie inside its batch's areas           |
    | 5 | with ``verify`` and a file that carries payload CRC-32Cs: the batch's whole |
    |   | payload area against its CRC (a mismatch names the file, the batch's       |
    |   | streams and the offset; a file without payload CRCs is read unchecked)      |

The full set of format rules is ``fsr validate``'s job; these are the ones that keep
every read in bounds and every table as written.
"""

from __future__ import annotations

import itertools
import mmap
import os

import numpy as np

from fastsim_recording_format import FormatError, FsrReader, RecordKind
from fastsim_recording_format._batch_header import CRC_AT, BatchHeader, crc_ok
from fastsim_recording_format._batch_header import SIZE as _HDR
from fastsim_recording_format._layout import RECORD_DTYPE, crc, pad8
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading import _reuse
from fastsim_recording_format.reading._scan import MAX_META_READ, check_bounds, scan_tables
from fastsim_recording_format.reading._scatter import PAGE, placement, read_rows

__all__ = ["LARGE", "ROWS_DTYPE", "FileTables", "empty_bytes"]


#: one record of one stream, as the reading API indexes it
ROWS_DTYPE = np.dtype(
    [
        ("kind", "<u2"),
        ("generation", "<u4"),
        ("time_ns", "<i8"),
        ("global_sequence", "<u8"),
        ("payload_at", "<i8"),  # file offset of the payload's first byte
        ("payload_length", "<i8"),
    ]
)
SPAN_SLACK = 1 << 16  # scattered rows closer than this are read through in one call
MAX_SPAN = 16 << 20  # the most bytes one such call reads
_ANON_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_POPULATE", 0)
LARGE = 256 << 20  # results at least this big get their own anonymous map (see ``empty_bytes``)
_REC = RECORD_DTYPE.itemsize
DATA = int(RecordKind.DATA)


def empty_bytes(rows: int, length: int, at: int | None = None) -> Array:
    """An uninitialised ``(rows, length)`` uint8 array for a read; with ``at``, one whose
    first byte lies at ``at`` modulo 4096 (see ``_scatter.placement``).

    From ``LARGE`` bytes on it lives in an anonymous memory map rather than numpy's
    allocator, which asks for transparent huge pages: on a kernel that compacts memory
    to serve that request (``defrag`` ``madvise``), first touching the pages of a large
    result took 5-7 times longer here (4.4-7.0 s against 0.6-1.3 s per GiB; perf-io
    again, 933 MB filled: numpy 9.5, 0.25, 3.0 s, the populated map 1.1-1.4 s).  Below
    it numpy's huge pages win (perf-io, a 93 MB read, medians of 5-7 rounds at load
    4-5: 33-61 ms against 110-126 ms for the populated map of 4 KiB pages), which is
    also what a plain numpy copy of the same bytes pays.  The map is
    populated when it is made (``MAP_POPULATE``, where the platform has it): every byte is
    written by the read anyway, and faulting the pages in one call took half the time of
    faulting them one by one (0.9 s against 1.7 s for 933 MB).  From ``_reuse.MIN_BYTES``
    up to ``LARGE`` it lives in a map of huge pages that ``_reuse`` keeps for the next
    read once nothing uses it: a read into pages already backed skips the kernel's
    zeroing and faulting of fresh ones.
    """
    size = rows * length
    room = size if at is None else size + PAGE
    if room < _reuse.MIN_BYTES or os.name != "posix":
        buffer = np.empty(room, np.uint8)
    elif room < LARGE:  # a map kept for the next read (see ``_reuse``)
        buffer = _reuse.take(room)
    else:
        buffer = np.frombuffer(mmap.mmap(-1, room, flags=_ANON_FLAGS), np.uint8)
    skip = 0 if at is None else (at - buffer.ctypes.data) % PAGE
    return buffer[skip:skip + size].reshape(rows, length)


class FileTables:
    """One sealed file: its checked head and tail, its memory map and per-stream rows."""

    def __init__(self, path: str | os.PathLike[str], verify: bool = True) -> None:
        self.path = os.fspath(path)
        self.reader = FsrReader(self.path)
        self.verify = verify and self.reader.payload_crc
        try:
            self.fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            self.size = os.fstat(self.fd).st_size
        except BaseException:
            self.reader.close()
            raise
        if self.size != self.reader.size:
            self.close()
            raise FormatError(self.size, f"{self.path} changed while it was being opened")
        self._map: mmap.mmap | None = None  # the file, mapped read-only for ``verify``
        self._loaded: set[int] = set()  # batch ordinals whose tables were read
        # tables read together, each with every record's payload area offset
        self._chunks: list[tuple[Array, Array]] = []
        self._rows: dict[int, Array] = {}

    def read(self, at: int, length: int, what: str = "payload") -> bytes:
        """Exactly ``length`` bytes at file offset ``at`` (bounded by the file size)."""
        if at < 0 or length < 0 or at + length > self.size:
            raise FormatError(at, f"truncated: {what} needs {length} bytes")
        data = os.pread(self.fd, length, at)
        while len(data) < length:  # a short read is not the end of the file
            more = os.pread(self.fd, length - len(data), at + len(data))
            if not more:
                raise FormatError(at, f"truncated: {what} needs {length} bytes")
            data += more
        return data

    def read_into(self, view: memoryview, at: int) -> None:
        """Fill ``view`` with the bytes at file offset ``at``."""
        length = view.nbytes
        if at < 0 or at + length > self.size:
            raise FormatError(at, f"truncated: payload needs {length} bytes")
        got = os.preadv(self.fd, [view], at)
        while got < length:
            more = os.preadv(self.fd, [view[got:]], at + got)
            if more <= 0:
                raise FormatError(at, f"truncated: payload needs {length} bytes")
            got += more

    # -- batches ------------------------------------------------------------------------
    def _load(self, ordinals: list[int]) -> None:
        """Read and check the record tables of ``ordinals`` (checks 1-5), all at once.

        The tables are read by :func:`~._scan.scan_tables` (one ``preadv`` per batch
        straight into one array, the header fields checked with numpy).  A batch it does
        not pass is read again here one check at a time, in order, so a damaged file is
        refused with the same error (and byte offset) whichever path met it first.
        """
        todo = [o for o in ordinals if o not in self._loaded]
        if not todo:
            return
        scanned = scan_tables(self.fd, self.size, self.reader.batch_index, todo)
        if scanned is None:
            tables, base = self._load_one_by_one(todo)
        else:
            tables, base, counts = scanned.tables, scanned.base, scanned.counts
            if self.verify:  # check 5, batch after batch
                firsts = np.concatenate(([0], np.cumsum(counts))).tolist()
                for k, (off, at, expected) in enumerate(zip(scanned.offsets, scanned.payload_at, scanned.payload_crc)):
                    self._check_payload(off, at, int(scanned.limits[k, 1]), expected, tables[firsts[k]:firsts[k + 1]])
            check_bounds(tables, counts, scanned.limits, np.array(scanned.offsets, np.int64) + _HDR)
        self._chunks.append((tables, base))
        self._loaded.update(todo)

    def _load_one_by_one(self, todo: list[int]) -> tuple[Array, Array]:
        """``_load``'s checks 1-5 batch by batch, each failure its own error (the slow path)."""
        index = self.reader.batch_index
        size = self.size
        read_header = BatchHeader.read
        guess = 4096
        bodies: list[bytes | memoryview] = []
        facts: list[tuple[int, int, int, int]] = []  # table offset, count, payload area, limits
        limits: list[tuple[int, int]] = []
        for ordinal, off, count, length in zip(
            todo, index["offset"][todo].tolist(), index["record_count"][todo].tolist(),
            index["length"][todo].tolist(),
        ):
            if off + _HDR > size:
                raise FormatError(off, "truncated: batch header")
            # the metadata blob's size is a guess until the header is read: the previous
            # batches' largest (a steady stream's batches look alike); a short guess costs a read
            head_len = min(length, _HDR + _REC * count + guess)
            chunk = memoryview(self.read(off, max(_HDR, head_len), "batch header and record table"))
            raw = chunk[:_HDR]
            h = read_header(raw)
            meta_len, pay_len = h.metadata_length, h.payload_length
            guess = min(max(guess, pad8(meta_len) + 64), MAX_META_READ)
            if not h.intact:  # (slices of the chunk are views: no copies)
                raise FormatError(off, "bad batch magic")
            if not crc_ok(raw, h):
                raise FormatError(off + CRC_AT, "batch header CRC mismatch")
            if h.ordinal != ordinal:
                raise FormatError(off + 8, f"batch ordinal {h.ordinal}, expected {ordinal}")
            if h.record_count != count:
                raise FormatError(off + 16, "batch record count disagrees with the index")
            table_len = _REC * count
            body_len = table_len + pad8(meta_len)
            if _HDR + body_len + pad8(pay_len) != length or off + length > size:
                raise FormatError(off + 24, "batch length disagrees with the index")
            body = (
                chunk[_HDR:_HDR + body_len] if _HDR + body_len <= len(chunk)
                else memoryview(self.read(off + _HDR, body_len, "record table"))
            )
            if crc(body) != h.table_crc:
                raise FormatError(off + 112, "record table CRC mismatch")
            if self.verify:
                self._check_payload(off, off + _HDR + body_len, pay_len, h.payload_crc32c, body[:table_len])
            bodies.append(body[:table_len])
            facts.append((off + _HDR, count, off + _HDR + body_len, 0))
            limits.append((meta_len, pay_len))
        tables = np.frombuffer(b"".join(bodies), RECORD_DTYPE)
        counts = np.array([f[1] for f in facts], np.int64)
        check_bounds(tables, counts, np.array(limits, np.uint64).reshape(-1, 2), np.array([f[0] for f in facts], np.int64))
        return tables, np.repeat(np.array([f[2] for f in facts], np.int64), counts)

    def _check_payload(self, off: int, at: int, length: int, expected: int, table: bytes | memoryview | Array) -> None:
        """Check 5: the payload area's CRC-32C, computed over the read-only map (no copy)."""
        if at < 0 or at + length > self.size:
            raise FormatError(at, "truncated: payload area outside the file")
        if self._map is None:  # read in place: no copy of the payload bytes
            self._map = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ) if self.size else None
        if self._map is not None and length and hasattr(mmap, "MADV_WILLNEED"):
            page = at - at % mmap.PAGESIZE  # ask for the whole area at once: a cold read is not page by page
            self._map.madvise(mmap.MADV_WILLNEED, page, at + length - page)
        view = memoryview(self._map) if self._map is not None else memoryview(b"")
        try:
            value = crc(view[at:at + length])
        finally:
            view.release()
        if value != expected:
            ids = sorted(set(np.frombuffer(table, RECORD_DTYPE)["stream_id"].tolist()))
            names = {s.stream_id: s.name for s in self.reader.streams}
            streams = ", ".join(names.get(i, str(i)) for i in ids[:6]) + (
                f" and {len(ids) - 6} more" if len(ids) > 6 else "")
            raise FormatError(off + 20, f"{self.path}: batch payload CRC-32C mismatch (streams {streams}); "
                                        "the payload bytes changed after they were written")

    # -- streams ------------------------------------------------------------------------
    def rows(self, stream_id: int) -> Array:
        """Every record of a stream in file order (``ROWS_DTYPE``), read once and cached (read-only)."""
        known = self._rows.get(stream_id)
        if known is not None:
            return known
        proj = self.reader.projections
        lo, hi = np.searchsorted(proj["stream_id"], [stream_id, stream_id + 1])
        ordinals = np.unique(proj["batch_ordinal"][lo:hi]).tolist()
        self._load(ordinals)
        # a stream's records live only in the batches its projections name, all loaded
        parts: list[Array] = []
        for table, base in self._chunks:
            hits = np.flatnonzero(table["stream_id"] == stream_id)
            if not len(hits):
                continue
            part = np.empty(len(hits), ROWS_DTYPE)
            part["kind"] = table["kind"][hits]
            part["generation"] = table["generation"][hits]
            part["time_ns"] = table["sim_time_ns"][hits]
            part["global_sequence"] = table["global_sequence"][hits]
            part["payload_at"] = table["payload_offset"][hits].astype(np.int64) + base[hits]
            part["payload_length"] = table["payload_length"][hits].astype(np.int64)
            parts.append(part)
        if len(parts) == 1:
            rows = parts[0]
        elif parts:
            rows = np.concatenate(parts)
            rows = rows[np.argsort(rows["global_sequence"], kind="stable")]
        else:
            rows = np.empty(0, ROWS_DTYPE)
        rows.flags.writeable = False  # shared by every caller (``Scope.data_rows`` returns it as is)
        self._rows[stream_id] = rows
        return rows

    def record_bound(self, stream_id: int, generation: int | None) -> int:
        """At least the number of DATA records of a stream (in one generation), from the
        projections alone: no batch is read."""
        proj = self.reader.projections
        lo, hi = np.searchsorted(proj["stream_id"], [stream_id, stream_id + 1])
        rows = proj[lo:hi]
        if generation is not None:
            rows = rows[rows["generation"] == generation]
        return int(rows["record_count"].sum())

    def gather(self, starts: Array, length: int, out: Array | None = None) -> Array:
        """``length`` bytes at each file offset in ``starts``: a ``(len(starts), length)`` array.

        Rows that follow each other in the file are read as one block straight into the
        result; scattered rows are read one covering span at a time and picked out of it
        with one vectorised index.  ``out`` (uint8, at least that many rows, C-contiguous)
        receives the rows when given.
        """
        count = len(starts)
        breaks = np.flatnonzero(np.diff(starts) != length) + 1
        runs = len(breaks) * 16 <= count  # rows mostly in runs: read straight into the result
        if out is None or out.shape[0] < count or out.shape[1:] != (length,) or not out.flags.c_contiguous:
            out = empty_bytes(count, length, placement(starts, length, breaks) if runs and count * length >= PAGE else None)
        else:
            out = out[:count]
        if count == 0 or length == 0:
            return out
        if int(starts.min()) < 0 or int(starts.max()) + length > self.size:
            raise FormatError(int(starts.max()), "truncated: payload outside the file")
        flat = out.reshape(-1).data.cast("B")
        if runs and read_rows(self.fd, flat, starts, length):
            return out
        if runs:  # rows out of file order
            cuts = [0, *breaks.tolist(), count]
            for a, b, at in zip(cuts[:-1], cuts[1:], starts[cuts[:-1]].tolist()):
                self.read_into(flat[a * length:b * length], at)
            return out
        # spans: runs of rows whose gaps are small enough to read through, each bounded
        ends = starts + length
        cut = np.flatnonzero((starts[1:] < ends[:-1]) | (starts[1:] - ends[:-1] > SPAN_SLACK)) + 1
        cuts = [0, *cut.tolist(), count]
        word = next(w for w in (8, 4, 2, 1) if length % w == 0)
        for a, b in itertools.pairwise(cuts):
            while a < b:
                lo = int(starts[a])
                c = a + max(1, int(np.searchsorted(ends[a:b], lo + MAX_SPAN, side="right")))
                span = np.frombuffer(self.read(lo, int(ends[c - 1]) - lo), np.uint8)
                rows = np.ndarray(
                    (len(span) - length + 1, length // word), dtype=f"<u{word}", buffer=span,
                    strides=(1, word),
                )
                out[a:c] = rows[starts[a:c] - lo].view(np.uint8).reshape(c - a, length)
                a = c
        return out

    def close(self) -> None:
        """Close the reader and the file."""
        self.reader.close()
        self._chunks.clear()
        self._loaded.clear()
        self._rows.clear()
        if self._map is not None:
            self._map.close()
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
