"""One batch: reading and checking its header and record table, and file-wide continuity.

Checks are vectorised over the record table with numpy; a failing check names the byte
offset of the first offending field.  Payload bytes are never read here.

Decision table: which check runs where

| # | check                                         | writer | reader | validator | recovery |
|---|-----------------------------------------------|--------|--------|-----------|----------|
| 1 | header magic/CRC/flags/ordinal, table CRC      |   -    |  yes   |    yes    |   yes    |
| 2 | record-local rules, tiling, header summary     |  yes   |  yes   |    yes    |   yes    |
| 3 | continuity with earlier batches (Accumulator)  |  yes   |   -    |    yes    |   yes    |
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import numpy as np

from fastsim_recording_format._batch_header import CRC_AT, BatchHeader, crc_ok
from fastsim_recording_format._batch_header import SIZE as _HDR
from fastsim_recording_format._layout import (
    FLAG_PAYLOAD_CRC32C,
    FLAG_PAYLOAD_SHA256,
    INDEX_DTYPE,
    MAX_RECORD_METADATA_BYTES,
    PROJECTION_DTYPE,
    RECORD_DTYPE,
    crc,
    pad8,
)
from fastsim_recording_format._source import Source
from fastsim_recording_format._table_rules import BatchFacts
from fastsim_recording_format._table_rules import analyse_table as _analyse
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import RecordKind

__all__ = [
    "Accumulator", "BatchFacts", "ParsedBatch", "RawBatch", "analyse_table", "check_index_entry", "parse_batch",
    "read_batch",
]


def analyse_table(
    table: Array, metadata_length: int, payload_length: int, header_offset: int, ordinal: int,
    stream_ids: Array, *, block: bool = False,
) -> BatchFacts:
    """Check 2 (record-local rules, ``_table_rules``) against this module's metadata bound;
    ``block``: the table was built from one ``RecordBlock``."""
    return _analyse(
        table, metadata_length, payload_length, header_offset, ordinal, stream_ids, MAX_RECORD_METADATA_BYTES,
        block=block,
    )


_FIELD = {name: int(spec[1]) for name, spec in (RECORD_DTYPE.fields or {}).items()}
_REC = RECORD_DTYPE.itemsize
#: field positions in a record row as ``tolist`` gives it (a tuple)
_SID, _SEQ, _LAST, _GEN, _TIME = (
    (RECORD_DTYPE.names or ()).index(name)
    for name in ("stream_id", "stream_sequence", "stream_last", "generation", "sim_time_ns")
)
_GAP = int(RecordKind.GAP)
_ZERO_SHA = bytes(32)
_U64_MAX = np.uint64(2**64 - 1)


@attrs.frozen
class ParsedBatch:
    """A batch whose header, record table and local rules were checked."""

    offset: int
    length: int
    ordinal: int
    flags: int
    table: Array = attrs.field(eq=False)
    metadata_blob: bytes
    metadata_offset: int  # file offset of the metadata blob
    payload_offset: int  # file offset of the payload area
    payload_length: int
    payload_sha256: bytes
    facts: BatchFacts
    payload_crc32c: int | None = None  # when the batch carries FLAG_PAYLOAD_CRC32C


class RawBatch(NamedTuple):
    """A batch whose header, lengths, CRCs and paddings were checked (``read_batch``); its
    record table is not analysed yet."""

    header: BatchHeader
    body: bytes  # record table, metadata blob and its padding
    length: int  # whole batch, padding included
    meta_at: int  # file offset of the metadata blob
    payload_at: int  # file offset of the payload area


def read_batch(src: Source, offset: int, ordinal: int, limit: int, flags_expected: int) -> RawBatch:
    """Read the batch at ``offset`` and run check 1 and the padding checks (no table rule).

    ``flags_expected`` is the file's batch flags (``Head.batch_flags``): the SHA-256 bit
    for strong files, the CRC-32C bit for files whose header sets the payload-CRC flag.
    """
    strong = bool(flags_expected & FLAG_PAYLOAD_SHA256)
    raw = src.read_at(offset, _HDR, "batch header")
    h = BatchHeader.read(raw)
    flags, count, payload_crc, meta_len, pay_len, sha = (
        h.flags, h.record_count, h.payload_crc32c, h.metadata_length, h.payload_length, h.payload_sha256)
    if not h.intact:
        raise FormatError(offset, "bad batch magic")
    if not crc_ok(raw, h):
        raise FormatError(offset + CRC_AT, "batch header CRC mismatch")
    if flags != flags_expected:
        raise FormatError(offset + 4, f"unexpected batch flags {flags} (the file header implies {flags_expected})")
    if h.ordinal != ordinal:
        raise FormatError(offset + 8, f"batch ordinal {h.ordinal}, expected {ordinal}")
    if count < 1:
        raise FormatError(offset + 16, "empty batch")
    if payload_crc and not flags & FLAG_PAYLOAD_CRC32C:
        raise FormatError(offset + 20, "non-zero payload CRC field without the payload-CRC flag")
    if not strong and sha != _ZERO_SHA:
        raise FormatError(offset + 80, "payload digest present without strong integrity")
    table_len = _REC * count
    length = _HDR + table_len + pad8(meta_len) + pad8(pay_len)
    if offset + length > limit:
        raise FormatError(offset + 16, f"batch of {length} bytes extends past the end of the batch area")
    body = src.read_at(offset + _HDR, table_len + pad8(meta_len), "record table")
    if crc(body) != h.table_crc:
        raise FormatError(offset + 112, "record table CRC mismatch")
    meta_at = offset + _HDR + table_len
    if any(body[table_len + meta_len:]):
        raise FormatError(meta_at + meta_len, "non-zero padding after metadata")
    pay_at = meta_at + pad8(meta_len)
    tail = pad8(pay_len) - pay_len
    if tail and any(src.read_at(pay_at + pay_len, tail, "payload padding")):
        raise FormatError(pay_at + pay_len, "non-zero padding after payload")
    return RawBatch(h, body, length, meta_at, pay_at)


def parse_batch(
    src: Source, offset: int, ordinal: int, limit: int, stream_ids: Array, flags_expected: int
) -> ParsedBatch:
    """Read and check the batch at ``offset``; it must end at or before ``limit``
    (``read_batch``, then rule 2 and the header summary against the records)."""
    h, body, length, meta_at, pay_at = read_batch(src, offset, ordinal, limit, flags_expected)
    count, meta_len, pay_len = h.record_count, h.metadata_length, h.payload_length
    table_len = _REC * count
    table = np.frombuffer(body, RECORD_DTYPE, count=count)
    facts = analyse_table(table, meta_len, pay_len, offset, ordinal, stream_ids)
    for field_offset, stored, derived, name in (
        (40, h.first_global, facts.first_global, "first global sequence"),
        (48, h.last_global, facts.last_global, "last global sequence"),
        (56, h.generation_min, facts.generation_min, "minimum generation"),
        (60, h.generation_max, facts.generation_max, "maximum generation"),
        (64, h.sim_time_min, facts.sim_time_min, "minimum simulation time"),
        (72, h.sim_time_max, facts.sim_time_max, "maximum simulation time"),
    ):
        if stored != derived:
            raise FormatError(offset + field_offset, f"batch header {name} disagrees with its records")
    return ParsedBatch(
        offset, length, ordinal, h.flags, table, body[table_len:table_len + meta_len],
        meta_at, pay_at, pay_len, h.payload_sha256, facts,
        h.payload_crc32c if h.flags & FLAG_PAYLOAD_CRC32C else None,
    )


@attrs.define(eq=False)
class Accumulator:
    """File-wide continuity state and the index/projection/footer totals built batch by batch."""

    stream_ids: Array
    last_global: int | None = None
    first_global: int | None = None
    state: dict[int, tuple[int, int, int]] = attrs.field(factory=dict)
    index_rows: list[tuple[int, ...]] = attrs.field(factory=list)
    projections: list[bytes] = attrs.field(factory=list)
    _projection_cache: Array | None = attrs.field(default=None, init=False)
    kind_counts: Array = attrs.field(init=False)
    payload: Array = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.kind_counts = np.zeros((len(self.stream_ids), 3), np.int64)
        self.payload = np.zeros(len(self.stream_ids), np.float64)

    def check(self, table: Array, facts: BatchFacts, header_offset: int) -> None:
        """Check continuity of this batch with everything accepted before it."""
        base = header_offset + _HDR
        if self.last_global is not None and facts.first_global != self.last_global + 1:
            raise FormatError(
                base + _FIELD["global_sequence"],
                f"global sequence hole or overlap: expected {self.last_global + 1}, "
                f"found {facts.first_global}",
            )
        edges = facts.edges
        if edges is not None:  # each stream's first record's fields, no table rows
            for k, first_record in edges[0]:
                self._continues(first_record, base + _REC * k)
            return
        first = facts.group_first.tolist()
        for k, row in zip(first, table[first].tolist(), strict=True):  # rows as tuples: one call
            self._continues((row[_SID], row[_SEQ], row[_GEN], row[_TIME]), base + _REC * k)

    def _continues(self, first: tuple[int, int, int, int], at: int) -> None:
        """A stream's first record in a batch (``stream_id``, sequence, generation, time at
        table offset ``at``) continues what the stream's last accepted record left."""
        prev = self.state.get(first[0])
        if prev is None:
            return
        if first[1] != prev[0] + 1:
            raise FormatError(at + _FIELD["stream_sequence"], "stream sequence hole or overlap")
        if first[2:] < prev[1:]:
            raise FormatError(at + _FIELD["sim_time_ns"], "stream generation or simulation time goes backwards")

    def add(self, offset: int, length: int, flags: int, table: Array, facts: BatchFacts) -> None:
        """Accept a checked batch."""
        self.index_rows.append((
            offset, length, len(table), flags, facts.first_global, facts.last_global,
            facts.generation_min, facts.generation_max, facts.sim_time_min, facts.sim_time_max,
        ))
        self.projections.append(facts.projections.tobytes())
        self._projection_cache = None
        self.kind_counts += facts.kind_counts
        self.payload += facts.payload_by_stream
        if self.first_global is None:
            self.first_global = facts.first_global
        self.last_global = facts.last_global
        edges = facts.edges
        if edges is not None:
            state = self.state
            for sid, last, generation, time in edges[1]:
                state[sid] = (last, generation, time)
            return
        for row in table[facts.group_last.tolist()].tolist():
            self.state[row[_SID]] = (row[_LAST], row[_GEN], row[_TIME])

    def absorb(
        self, index_rows: list[tuple[int, ...]], projections: Array, kind_counts: Array, payload: Array,
        last: dict[int, tuple[int, int, int]],
    ) -> None:
        """Accept many batches checked together (``_file_rules``), as ``add`` batch by batch
        would: their index rows, projections in ``projection_array`` order, per-stream kind
        counts and payload bytes, and each stream's last (sequence, generation, time)."""
        if not index_rows:
            return
        self.index_rows.extend(index_rows)
        self.projections.append(projections.tobytes())
        self._projection_cache = None
        self.kind_counts += kind_counts
        self.payload += payload
        if self.first_global is None:
            self.first_global = index_rows[0][4]
        self.last_global = index_rows[-1][5]
        self.state.update(last)

    @property
    def batches(self) -> int:
        """Number of accepted batches."""
        return len(self.index_rows)

    def index_array(self) -> Array:
        """The batch index as stored."""
        return np.array(self.index_rows, INDEX_DTYPE) if self.index_rows else np.empty(0, INDEX_DTYPE)

    def projection_array(self) -> Array:
        """The stream projections as stored: ordered by (stream, batch, generation)."""
        if self._projection_cache is None:
            rows = np.frombuffer(b"".join(self.projections), PROJECTION_DTYPE)
            self._projection_cache = rows[np.argsort(rows["stream_id"], kind="stable")]
        return self._projection_cache

    def footer_totals(self) -> dict[str, Any]:
        """The footer keys derived from the records."""
        proj = self.projection_array()
        sid = proj["stream_id"]  # sorted: each stream's rows are one slice (lists: no numpy call per stream)
        los = np.searchsorted(sid, self.stream_ids, "left").tolist()
        his = np.searchsorted(sid, self.stream_ids, "right").tolist()
        firsts, lasts = proj["first_stream_sequence"].tolist(), proj["last_stream_sequence"].tolist()
        gens = proj["generation"].tolist()
        streams = []
        for stream, (data, gap, barrier), payload, lo, hi in zip(
            self.stream_ids.tolist(), self.kind_counts.tolist(), self.payload.tolist(), los, his, strict=True
        ):
            streams.append({
                "stream_id": stream,
                "records": data + gap + barrier,
                "data": data,
                "gap": gap,
                "barrier": barrier,
                "payload_bytes": int(payload),
                "first_stream_sequence": firsts[lo] if hi > lo else None,
                "last_stream_sequence": lasts[hi - 1] if hi > lo else None,
                "generations": sorted(set(gens[lo:hi])),
            })
        totals = self.kind_counts.sum(axis=0)
        return {
            "batches": self.batches,
            "records": int(totals.sum()),
            "records_by_kind": {"data": int(totals[0]), "gap": int(totals[1]), "barrier": int(totals[2])},
            "payload_bytes": int(self.payload.sum()),
            "global_sequence": {"first": self.first_global, "last": self.last_global},
            "streams": streams,
        }


_INDEX_FIELDS = (
    ("length", 8), ("record_count", 16), ("flags", 20), ("first_global", 24), ("last_global", 32),
    ("generation_min", 40), ("generation_max", 44), ("sim_time_min", 48), ("sim_time_max", 56),
)


def check_index_entry(entry: Any, batch: ParsedBatch, entry_offset: int) -> None:
    """Cross-check one index entry against the batch header it points to."""
    facts = batch.facts
    actual = {
        "length": batch.length, "record_count": len(batch.table), "flags": batch.flags,
        "first_global": facts.first_global, "last_global": facts.last_global,
        "generation_min": facts.generation_min, "generation_max": facts.generation_max,
        "sim_time_min": facts.sim_time_min, "sim_time_max": facts.sim_time_max,
    }
    for name, off in _INDEX_FIELDS:
        if int(entry[name]) != actual[name]:
            raise FormatError(entry_offset + off, f"index entry {name} disagrees with the batch header")
