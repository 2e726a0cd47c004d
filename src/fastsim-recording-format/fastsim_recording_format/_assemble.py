"""A batch's record table, metadata blob and payload parts, from rows and columnar blocks.

``FsrWriter.write_batch`` takes records in global order as rows (``RecordIn`` or
``RecordRow``, one object per record) or as :class:`RecordBlock` values (many DATA
records of one stream held column-wise).  Both produce the same bytes: a block is only
a cheaper way to hand the writer the records it stands for.

    | # | part             | rows                                 | a block                      |
    |---|------------------|--------------------------------------|------------------------------|
    | 1 | record table     | fields picked per row (``fromiter``)  | columns assigned at once      |
    | 2 | payload lengths  | each payload's byte count            | ``record_bytes`` each         |
    | 3 | payload parts    | each payload, in order               | one contiguous buffer, then   |
    |   |                  |                                      | ``more`` buffers, back to back|
    | 4 | metadata         | each non-empty map, by record index  | each entry of ``metadata``    |
    |   |                  |                                      | (sparse: record index -> map) |

Field values out of range raise ``ValueError`` (the writer's contract), never wrap.
A batch that is one block (the steady state of a numeric recording) starts from a cached
template table of its stream, generation and size: one copy, then the sequence and
time columns.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format._layout import RECORD_DTYPE
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.model import Payload, RecordIn, RecordKind, RecordRow

__all__ = ["Assembled", "RecordBlock", "assemble", "template_bytes"]

_FIELDS = (
    "stream_id", "kind", "global_sequence", "global_last", "stream_sequence", "stream_last",
    "generation", "sim_time_ns",
)
_GET = operator.attrgetter(*_FIELDS)
_PICK = np.dtype([(name, RECORD_DTYPE.fields[name][0]) for name in _FIELDS])  # type: ignore[index]
_BYTES = frozenset({bytes, bytearray})
_U64 = np.iinfo(np.uint64).max
_U32 = np.iinfo(np.uint32).max


@attrs.frozen(eq=False)
class RecordBlock:
    """Many DATA records of one stream and generation, column-wise (module table).

    ``global_sequence``, ``stream_sequence`` and ``sim_time_ns`` hold one value per
    record; ``payload`` is every record's payload back to back (``record_bytes`` each,
    one contiguous buffer), or their first part when ``more`` holds further buffers
    written after it (adjacent runs of one stream become one block without a joined
    copy; a record may straddle two parts); ``metadata`` maps a record's index in the block to its
    metadata (records not named have none)."""

    stream_id: int
    generation: int
    global_sequence: Array
    stream_sequence: Array
    sim_time_ns: Array
    record_bytes: int
    payload: Payload | Array
    metadata: Mapping[int, Mapping[str, Any]] = attrs.field(factory=dict)
    more: tuple[Payload | Array, ...] = ()

    def __len__(self) -> int:
        return len(self.global_sequence)


@attrs.frozen(eq=False)
class Assembled:
    """One batch's parts: its record table, payload parts (in order) and the records'
    non-empty metadata as ``(record index, mapping)`` pairs, ascending (the writer
    encodes them: ``metadata_length``/``metadata_offset`` are still zero here)."""

    table: Array
    payloads: tuple[Payload, ...]
    payload_length: int
    metadata: tuple[tuple[int, Any], ...]


def _rows_table(rows: Sequence[RecordIn | RecordRow], base: int, metas: list[tuple[int, Any]]) -> tuple[Array, list[Payload]]:
    n = len(rows)
    table = np.zeros(n, RECORD_DTYPE)
    try:
        picked = np.fromiter(map(_GET, rows), _PICK, n)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError(f"record field out of range: {exc}") from None
    for name in _FIELDS:
        table[name] = picked[name]
    payloads = [r.payload for r in rows]
    if set(map(type, payloads)) <= _BYTES:
        table["payload_length"] = np.fromiter(map(len, payloads), np.uint64, n)
    else:  # memoryviews and other buffers: count bytes, not items
        table["payload_length"] = np.fromiter((memoryview(p).nbytes for p in payloads), np.uint64, n)
    row_metas = [r.metadata for r in rows]
    if any(row_metas):
        metas.extend((base + k, m) for k, m in enumerate(row_metas) if m)
    return table, payloads


def _column(values: Array, limit: int, name: str) -> Array:
    array = np.asarray(values)
    if array.dtype == np.uint64:  # every value fits the u8 field
        return array
    if array.dtype.kind not in "iu" or (len(array) and (int(array.min()) < 0 or int(array.max()) > limit)):
        raise ValueError(f"record field out of range: block {name}")
    return array


_CONTIGUOUS = operator.attrgetter("flags.c_contiguous")
_NBYTES = operator.attrgetter("nbytes")


def _block_payload(block: RecordBlock) -> tuple[list[Payload], int]:
    """A block's payload parts (``payload``, then each of ``more``) and their byte count:
    C-contiguous numpy arrays as they are (one C-level pass over many tick buffers), any
    other buffer as a byte view."""
    parts: list[Any] = [block.payload, *block.more]
    n = len(parts)
    if list(map(type, parts)).count(np.ndarray) == n and list(map(_CONTIGUOUS, parts)).count(True) == n:
        return parts, sum(map(_NBYTES, parts))
    views: list[Payload] = [memoryview(p).cast("B") for p in parts]
    return views, sum(len(v) for v in views)


def _block_table(block: RecordBlock, base: int, metas: list[tuple[int, Any]]) -> tuple[Array, list[Payload]]:
    n = len(block)
    if not (len(block.stream_sequence) == len(block.sim_time_ns) == n) or n == 0:
        raise ValueError("a record block needs one or more records and equally long columns")
    if not (0 <= block.stream_id <= _U32 and 0 <= block.generation <= _U32 and block.record_bytes >= 0):
        raise ValueError("record field out of range: block stream_id, generation or record_bytes")
    payload, size = _block_payload(block)
    if size != n * block.record_bytes:
        raise ValueError(f"record block payload of {size} bytes, expected {n} x {block.record_bytes}")
    table = _template(block.stream_id, block.generation, block.record_bytes, n)
    g = _column(block.global_sequence, int(_U64), "global_sequence")
    s = _column(block.stream_sequence, int(_U64), "stream_sequence")
    table["global_sequence"] = table["global_last"] = g
    table["stream_sequence"] = table["stream_last"] = s
    t = np.asarray(block.sim_time_ns)
    if t.dtype.kind not in "iu" or (t.dtype.kind == "u" and len(t) and int(t.max()) > np.iinfo(np.int64).max):
        raise ValueError("record field out of range: block sim_time_ns")
    table["sim_time_ns"] = t
    for k, meta in sorted(block.metadata.items()):
        if not 0 <= k < n:
            raise ValueError(f"record block metadata names record {k} of {n}")
        if meta:
            metas.append((base + k, meta))
    return table, payload


_TEMPLATES: dict[tuple[int, int, int, int], bytes] = {}


def template_bytes(stream_id: int, generation: int, record_bytes: int, n: int) -> bytearray:
    """A new block table's bytes with every column that does not vary by record filled in,
    copied from cached bytes (a steady recording's batches share a handful; a byte copy is
    ten times cheaper than copying a structured array)."""
    key = (stream_id, generation, record_bytes, n)
    raw = _TEMPLATES.get(key)
    if raw is None:
        if len(_TEMPLATES) >= 64:
            _TEMPLATES.clear()
        table = np.zeros(n, RECORD_DTYPE)
        table["stream_id"] = stream_id
        table["kind"] = int(RecordKind.DATA)
        table["generation"] = generation
        table["payload_length"] = record_bytes
        table["payload_offset"] = np.arange(n, dtype=np.uint64) * np.uint64(record_bytes)
        raw = _TEMPLATES[key] = table.tobytes()
    return bytearray(raw)


def _template(stream_id: int, generation: int, record_bytes: int, n: int) -> Array:
    """``template_bytes`` as a record table."""
    return np.frombuffer(template_bytes(stream_id, generation, record_bytes, n), RECORD_DTYPE)


def _mixed(records: Sequence[RecordIn | RecordRow | RecordBlock], metas: list[tuple[int, Any]]) -> tuple[Array, list[Payload]]:
    """Rows and blocks: every row's fields in one pass (``_rows_table``), each block from its
    template, then the table as bytes in record order (concatenating structured arrays is
    slow in numpy; bytes are not)."""
    rows = [r for r in records if r.__class__ is not RecordBlock]
    row_metas: list[tuple[int, Any]] = []
    row_table, row_payloads = _rows_table(rows, 0, row_metas) if rows else (None, [])  # type: ignore[arg-type]
    row_meta = dict(row_metas)
    pieces: list[bytes] = []
    parts: list[Payload] = []
    base = 0  # records so far
    k = 0  # rows so far
    run = 0  # rows waiting to be copied as one slice
    for record in (*records, None):
        if record is not None and record.__class__ is not RecordBlock:
            if k + run in row_meta:
                metas.append((base + run, row_meta[k + run]))
            run += 1
            continue
        if run:
            pieces.append(row_table[k:k + run].tobytes())  # type: ignore[index]
            parts.extend(row_payloads[k:k + run])
            base, k, run = base + run, k + run, 0
        if record is not None:
            t, some = _block_table(record, base, metas)
            pieces.append(t.tobytes())
            parts.extend(some)
            base += len(t)
    return np.frombuffer(bytearray(b"".join(pieces)), RECORD_DTYPE), parts


def assemble(records: Sequence[RecordIn | RecordRow | RecordBlock]) -> Assembled:
    """Rows 1-4 of the module table over ``records`` (rows and blocks in any mix)."""
    metas: list[tuple[int, Any]] = []  # (record index, metadata), ascending
    if len(records) == 1 and records[0].__class__ is RecordBlock:  # one block: offsets are the template's
        table, some = _block_table(records[0], 0, metas)
        return Assembled(table, tuple(some), len(table) * records[0].record_bytes, tuple(metas))
    if not any(r.__class__ is RecordBlock for r in records):
        table, payloads = _rows_table(records, 0, metas)  # type: ignore[arg-type]
        parts: list[Payload] = payloads
    else:
        table, parts = _mixed(records, metas)
    plen = table["payload_length"]
    table["payload_offset"] = np.cumsum(plen, dtype=np.uint64) - plen
    return Assembled(table, tuple(parts), int(plen.sum()), tuple(metas))
