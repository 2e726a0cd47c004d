"""``FsrWriter``: write a run's records as self-delimiting batches, then seal the file.

The hot path packs a whole batch's record table with numpy in a handful of vectorised
operations; Python touches each record only to pick up its fields and payload.

Decision table: writer states

| # | state   | write_batch | flush | seal              | close        |
|---|---------|-------------|-------|-------------------|--------------|
| 1 | open    | append      | yes   | -> sealed         | -> closed    |
| 2 | sealed  | ValueError  | yes   | ValueError        | -> closed    |
| 3 | failed  | ValueError  | ValueError | ValueError   | -> closed    |
| 4 | closed  | ValueError  | ValueError | ValueError   | no-op        |

A write to the file that raises (disk full, a revoked lease) moves the writer to
``failed``: the file may end in a torn batch, so nothing more is appended to it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

import attrs
import numpy as np
from crc32c import crc32c as _crc32c

from fastsim_recording_format._assemble import RecordBlock, assemble
from fastsim_recording_format._batch import Accumulator, analyse_table
from fastsim_recording_format._batch_header import BatchHeader
from fastsim_recording_format._block_batch import block_batch
from fastsim_recording_format._json import json_items
from fastsim_recording_format._layout import (
    BATCH_MAGIC,
    MAX_FOOTER_BYTES,
    MAX_JSON_ITEMS,
    MAX_RECORD_METADATA_BYTES,
    TRAILER,
    canonical_json,
    crc,
    pad8,
)
from fastsim_recording_format._sections import encode_head, encode_tail, footer_identity
from fastsim_recording_format._segment_batch import segment_batch
from fastsim_recording_format._source import Closing
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import (
    INTEGRITY_PROFILES,
    Payload,
    RecordIn,
    RecordRow,
    RunMetadata,
    SealResult,
    StreamSpec,
)

__all__ = ["FsrWriter", "RecordBlock"]

_NO_SHA = bytes(32)
#: a batch with at most this many payload parts writes them without joining them first
#: (with more, a target with ``writev`` takes them in one vectored write, others a joined
#: copy); a few parts of at least ``_BIG_PART`` bytes each also go out in one vectored write
_FEW_PARTS = 4
#: average payload size from which a batch's payloads are written without joining them
_SPLIT_AVERAGE = 64 * 1024
#: payload parts at least this big on average are written as they are: one more write
#: call costs less than copying them into a joined buffer
_BIG_PART = 16 * 1024
#: payload parts at least this big on average go out in one vectored write (a target with
#: ``writev``), not joined; smaller ones (JSON rows) are joined, one CRC over the whole
_VECTOR_PART = 1024
#: a batch of blocks with at most this many rows is built segment by segment
#: (``_segment_batch``); more rows are cheaper column-wise (``assemble``)
_FEW_ROWS = 32
#: a batch of rows alone (a driven Run's ticks between its command events, issue 24) of
#: at most this many records is built segment by segment too: ~0.7 of the column-wise
#: cost per record at 45-90 records, the same at ~300, dearer past (perf41's note)
_ROWS_ALONE = 192


def _sync_if_possible(file: BinaryIO) -> None:
    """fsync a file that has a descriptor (a real file); others (a lease, memory) cannot be."""
    try:
        fd = file.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return
    os.fsync(fd)


def _metadata(table: Any, metas: Sequence[tuple[int, Any]]) -> bytes:
    """Canonical JSON of each record's non-empty metadata; fills its table columns."""
    if not metas:
        return b""
    try:
        blobs = [canonical_json(m) for _, m in metas]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record metadata is not JSON-able: {exc}") from None
    for blob in blobs:
        if blob[:1] != b"{":  # what a reader decodes (``decode_record_metadata``) is an object
            raise ValueError("record metadata is not a JSON object")
        if len(blob) > MAX_JSON_ITEMS and json_items(blob) > MAX_JSON_ITEMS:
            raise ValueError(f"record metadata has more than {MAX_JSON_ITEMS} JSON items")
    if len(metas) == 1:  # one record's metadata (a column block's first): no cumulative sum
        k, size = metas[0][0], len(blobs[0])
        table["metadata_length"][k] = size
        table["metadata_offset"][k + 1:] = size
        return blobs[0]
    mlen = np.zeros(len(table), np.uint64)
    mlen[[k for k, _ in metas]] = [len(b) for b in blobs]
    table["metadata_length"] = mlen
    table["metadata_offset"] = np.cumsum(mlen, dtype=np.uint64) - mlen
    return b"".join(blobs)


@attrs.define(eq=False, init=False)
class FsrWriter(Closing):
    """Writes one FSR 1.2 file over a binary file object (or a path it opens and owns)."""

    _file: BinaryIO
    _owned: bool
    _pos: int
    _acc: Accumulator
    _strong: bool
    _crc: bool
    _flags: int
    _integrity: str
    _run: RunMetadata
    _degraded: bool
    _state: str
    _vectored: Any
    _rows: dict[int, int]

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        run: RunMetadata,
        streams: Sequence[StreamSpec],
        integrity: str = "structural",
        *,
        payload_crc: bool = True,
    ) -> None:
        if integrity not in INTEGRITY_PROFILES:
            raise ValueError(f"integrity must be one of {list(INTEGRITY_PROFILES)}, not {integrity!r}")
        ordered = tuple(sorted(streams, key=lambda s: s.stream_id))
        raw, head = encode_head(run, ordered, integrity, payload_crc)
        if isinstance(target, (str, os.PathLike)):
            self._file, self._owned = open(target, "wb"), True  # noqa: SIM115 - owned
        else:
            self._file, self._owned = target, False
        self._file.write(raw)
        self._file.flush()
        _sync_if_possible(self._file)  # the header is durable before any batch exists
        self._pos = len(raw)
        self._acc = Accumulator(head.stream_ids)
        sids = head.stream_ids.tolist()
        #: each declared stream id's row in the stream table (a one-block batch's facts)
        self._rows = {sid: k for k, sid in enumerate(sids)} if len(set(sids)) == len(sids) else {}
        self._strong = integrity == "strong"
        self._crc = payload_crc
        self._flags = head.batch_flags
        self._integrity = integrity
        self._run = run
        self._degraded = False
        self._state = "open"
        #: ``writev(parts, nbytes) -> int`` of a target that writes many buffers in one
        #: call (the FSR sink's lease file): a batch of many payload parts goes out unjoined
        self._vectored = getattr(self._file, "writev", None)

    @property
    def position(self) -> int:
        """Bytes written so far."""
        return self._pos

    @property
    def records(self) -> int:
        """Records written so far."""
        return int(self._acc.kind_counts.sum())

    def _require(self, *states: str) -> None:
        if self._state not in states:
            raise ValueError(f"FSR writer is {self._state}")

    def write_batch(self, records: Sequence[RecordIn | RecordRow | RecordBlock]) -> int:
        """Write ``records`` (in global order) as one batch; returns the bytes written.

        Records are rows (one object each) or :class:`RecordBlock` values (many DATA
        records of one stream, column-wise); both give the same bytes."""
        self._require("open")
        one = records[0] if len(records) == 1 and records[0].__class__ is RecordBlock else None
        if one is not None:
            fast = block_batch(one, self._rows, self._acc.batches, MAX_RECORD_METADATA_BYTES)
        else:
            blocks = list(map(type, records)).count(RecordBlock)
            rows = len(records) - blocks
            # blocks between a few rows (a Run's ticks between its commands and events), or
            # rows alone (a driven Run: each tick a row between its command events)
            segment = rows <= _FEW_ROWS if blocks else 1 < rows <= _ROWS_ALONE
            fast = segment_batch(records, self._rows, self._acc.batches, MAX_RECORD_METADATA_BYTES) if segment else None
        if fast is not None:  # a numeric recording's steady state: the same bytes in fewer steps
            table, payloads, pay_len, meta, facts = fast.table, fast.payloads, fast.payload_length, fast.metadata, fast.facts
            n = len(table)
            raw_table: bytes | bytearray = fast.raw
        else:
            n = sum(len(r) if r.__class__ is RecordBlock else 1 for r in records)
            if n == 0:
                raise ValueError("a batch needs at least one record")
            parts_in = assemble(records)
            table, payloads = parts_in.table, parts_in.payloads
            meta = _metadata(table, parts_in.metadata)
            pay_len = parts_in.payload_length
            raw_table = table.tobytes()
        try:
            if fast is None:
                facts = analyse_table(
                    table, len(meta), pay_len, self._pos, self._acc.batches, self._acc.stream_ids, block=one is not None,
                )
            self._acc.check(table, facts, self._pos)
        except FormatError as exc:
            raise ValueError(f"invalid batch: {exc.reason}") from None
        body = b"".join((raw_table, meta, bytes(pad8(len(meta)) - len(meta))))
        pad = bytes(pad8(pay_len) - pay_len)
        payload_crc, sha = 0, _NO_SHA
        digests = self._crc or self._strong
        parts_n = len(payloads)
        # many parts (a batch of tick buffers), or a few large ones (a batch of column
        # blocks): one vectored write, never a joined copy of the payload area
        vectored = self._vectored if (
            parts_n and (parts_n > _FEW_PARTS or pay_len >= _BIG_PART * parts_n) and pay_len >= _VECTOR_PART * parts_n
        ) else None
        if pay_len >= _SPLIT_AVERAGE * n or vectored is not None:
            # Large payloads (frames), or many parts for a file that takes a vectored
            # write (a block's tick buffers): written as they are, no joined copy; the CRC
            # and digest run over each one in turn (chained), so the payload bytes are
            # read once for checking and once for writing, never copied in between.
            parts: tuple[Payload, ...] = (body, *payloads, pad)
            digest = hashlib.sha256() if self._strong else None
            for part in payloads if digests else ():
                if self._crc:
                    payload_crc = _crc32c(part, payload_crc)
                if digest is not None:
                    digest.update(part)
            sha = digest.digest() if digest is not None else _NO_SHA
        elif digests:
            buf = b"".join((body, *payloads, pad))
            parts = (buf,)
            payload_area = memoryview(buf)[len(body):len(body) + pay_len]
            sha = hashlib.sha256(payload_area).digest() if self._strong else _NO_SHA
            payload_crc = crc(payload_area) if self._crc else 0
        else:  # no payload digest: the header goes first (one write, or a few without a joined copy)
            parts = ()
        header = self._header(n, payload_crc, len(meta), pay_len, facts, sha, crc(body))
        length = len(header) + len(body) + pay_len + len(pad)
        if vectored is not None:  # one call: the lease's vectored write (os.writev)
            self._write_vectored(vectored, (header, *parts), length)
        elif parts:
            self._write(header, *parts)
        elif len(payloads) <= _FEW_PARTS or pay_len >= _BIG_PART * len(payloads):
            # column blocks: their payload buffers as they are
            self._write(header + body, *(p for p in (*payloads, pad) if len(p)))
        else:
            self._write(b"".join((header, body, *payloads, pad)))
        self._acc.add(self._pos, length, self._flags, table, facts)
        self._pos += length
        if fast is None and np.count_nonzero(facts.kind_counts[:, 1]):  # a block holds DATA only
            self._degraded = True
        return length

    def _header(
        self, n: int, payload_crc: int, meta_len: int, pay_len: int, facts: Any, sha: bytes, table_crc: int
    ) -> bytes:
        return BatchHeader(
            BATCH_MAGIC, self._flags, self._acc.batches, n, payload_crc, meta_len, pay_len, facts.first_global,
            facts.last_global, facts.generation_min, facts.generation_max, facts.sim_time_min,
            facts.sim_time_max, sha, table_crc, 0,
        ).pack()

    def _write(self, *parts: Payload) -> None:
        try:
            for part in parts:
                self._file.write(part)
        except BaseException:
            self._state = "failed"
            raise

    def _write_vectored(self, writev: Any, parts: tuple[Payload, ...], length: int) -> None:
        try:
            written = writev(parts, length)
        except BaseException:
            self._state = "failed"
            raise
        if written != length:
            self._state = "failed"
            raise OSError(f"vectored write took {written} of {length} bytes")

    def flush(self, fsync: bool = False) -> None:
        """Flush buffered bytes to the OS; with ``fsync`` also to stable storage."""
        self._require("open", "sealed")
        try:
            self._file.flush()
            if fsync:
                os.fsync(self._file.fileno())
        except BaseException:
            self._state = "failed"
            raise

    def seal(
        self,
        terminal_fence: Mapping[str, Any] | None = None,
        degraded: bool = False,
        fsync: bool = False,
    ) -> SealResult:
        """Write index, projections, footer and trailer; the file is then complete."""
        self._require("open")
        acc = self._acc
        footer = acc.footer_totals()
        footer.update(
            integrity=self._integrity,
            mode=self._run.mode,
            source_sha256=self._run.source_sha256,
            completion_id=self._run.completion_id,
            degraded=self._degraded or bool(degraded),
            recovered=False,
            terminal_fence=None if terminal_fence is None else dict(terminal_fence),
        )
        try:
            fb = canonical_json(footer)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"terminal fence is not JSON-able: {exc}") from None
        if len(fb) > MAX_FOOTER_BYTES or json_items(fb) > MAX_JSON_ITEMS:
            raise ValueError(
                f"footer of {len(fb)} bytes exceeds the {MAX_FOOTER_BYTES}-byte or "
                f"{MAX_JSON_ITEMS}-item bound (is the terminal fence that large?)"
            )
        tail = encode_tail(self._pos, acc.index_array(), acc.projection_array(), footer)
        self._write(tail)
        self._pos += len(tail)
        self._state = "sealed"
        self.flush(fsync)
        return SealResult(
            self._pos, acc.batches, int(acc.kind_counts.sum()), footer["degraded"],
            footer_identity(fb, tail[-TRAILER.size:]),
        )

    def close(self) -> None:
        """Close the file if this writer opened it (does not seal)."""
        if self._state == "closed":
            return
        self._state = "closed"
        if self._owned:
            self._file.close()

