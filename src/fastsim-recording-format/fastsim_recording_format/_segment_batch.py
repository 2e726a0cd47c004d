"""A batch of column blocks and a few rows (a Run's numeric ticks between its commands and
events), built and checked per segment instead of per record.

In a real Run a 1-s batch holds ~120 numeric ticks and a handful of other records
(commands, events), so the ticks arrive as several ``RecordBlock`` values between
``RecordRow`` values and the batch cannot take the one-block path (``_block_batch``).
The general path (``assemble`` + ``_metadata`` + ``analyse_table``) then spends ~60
numpy calls on strided fields of the whole table, and sorts it by stream.
:func:`segment_batch` builds the same table as 8-byte words, one segment (a block or a
row) at a time, and checks each rule on a segment's end points as Python integers (a
block's inside is checked as in ``block_batch``); the facts come from per-stream
running totals.  A driven Run's batch (FastSimRun-v0, issue 24) is rows alone, each tick a
row between its two command events, and is built the same way.  It accepts only what the
general path accepts, with the same table bytes, metadata blob and facts; anything else answers ``None`` and takes the general
path, which refuses or accepts it rule by rule:

    | # | the batch                                                        | else |
    |---|------------------------------------------------------------------|------|
    | 1 | blocks and ``RecordRow``/``RecordIn`` rows only, or rows alone     | None |
    |   | (a driven Run: each tick a row between its command events);       |      |
    |   | records of two streams or more                                    |      |
    | 2 | a block: as ``block_batch`` rows 1-5, one record or more           | None |
    | 3 | a row: DATA, one sequence, Python ``int`` fields within their     | None |
    |   | columns, a ``bytes``/``bytearray`` payload                        |      |
    | 4 | every record of one generation, of a declared stream              | None |
    | 5 | the global sequence steps by one across segments; each stream's    | None |
    |   | sequence steps by one and its time never goes down                |      |
    | 6 | metadata: canonical JSON of an object, within the record bound and | None |
    |   | the unchecked JSON-items size                                     |      |
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fastsim_recording_format._assemble import RecordBlock, template_bytes
from fastsim_recording_format._block_batch import (
    BlockBatch,
    block_metadata,
    block_parts,
    record_metadata,
)
from fastsim_recording_format._layout import (
    PROJECTION_DTYPE,
    RECORD_DTYPE,
)
from fastsim_recording_format._table_rules import BatchFacts
from fastsim_recording_format.model import RecordIn, RecordKind, RecordRow

__all__ = ["segment_batch"]

_FIELD = {name: int(spec[1]) for name, spec in (RECORD_DTYPE.fields or {}).items()}
_WORDS = RECORD_DTYPE.itemsize // 8
_G, _S, _T = _FIELD["global_sequence"] // 8, _FIELD["stream_sequence"] // 8, _FIELD["sim_time_ns"] // 8
_GEN, _MO, _PO = _FIELD["generation"] // 8, _FIELD["metadata_offset"] // 8, _FIELD["payload_offset"] // 8
_ROW = struct.Struct("<IHHQQQQIIqQQQ")  # RECORD_DTYPE's fields, in order
_PROJECTION = struct.Struct("<IIIIQQqq")  # PROJECTION_DTYPE's fields, in order
if (  # pragma: no cover - layout
    _ROW.size != RECORD_DTYPE.itemsize or _PROJECTION.size != PROJECTION_DTYPE.itemsize or RECORD_DTYPE.itemsize % 8
    or _FIELD["global_last"] != 8 * _G + 8 or _S != _G + 2 or _FIELD["stream_last"] != 8 * _S + 8
    or _FIELD["generation"] != 8 * _GEN or _FIELD["metadata_length"] != 8 * _GEN + 4
):
    raise ImportError("_segment_batch: the record or projection layout changed; update _ROW and _PROJECTION")
_U8, _I8 = np.dtype(np.uint64), np.dtype(np.int64)
_U32, _U64, _I64 = (1 << 32) - 1, (1 << 64) - 1, 1 << 63
_ROWS = (RecordRow, RecordIn)
_BYTES = (bytes, bytearray)
_DATA = RecordKind.DATA


def segment_batch(
    records: Sequence[Any], rows: Mapping[int, int], ordinal: int, max_metadata: int
) -> BlockBatch | None:
    """Rows 1-6 of the module table: the batch of ``records`` (batch ``ordinal``; ``rows``
    maps each declared stream id to its row in the stream table), or ``None``.

    Each segment's table bytes come with their payload and metadata offsets already set
    (running totals as Python integers: a row is packed with them, a block's columns are
    shifted by them), so the table needs no pass of its own after the segments."""
    pieces: list[bytes | bytearray] = []
    parts: list[Any] = []
    metas: list[bytes] = []
    # per stream: [first index, last index, count, first seq, last seq, first time, last time, bytes]
    streams: dict[int, list[int]] = {}
    gen = -1
    next_g = first_g = -1
    base = pay_at = meta_at = 0
    tmin, tmax = _I64, -_I64
    for r in records:
        if r.__class__ is RecordBlock:
            segment = _block(r, max_metadata, pay_at, meta_at)
            if segment is None:
                return None
            raw, some, sid, generation, n, g0, g1, s0, s1, t0, t1, plen, meta = segment
            parts.extend(some)
        elif r.__class__ in _ROWS:
            segment = _row(r, max_metadata, pay_at, meta_at)
            if segment is None:
                return None
            raw, sid, generation, g0, s0, t0, plen, meta = segment
            n, g1, s1, t1 = 1, g0, s0, t0
            parts.append(r.payload)
        else:
            return None  # row 1
        if sid not in rows or (generation != gen and gen >= 0):
            return None  # row 4
        gen = generation
        if next_g < 0:
            first_g = g0
        elif g0 != next_g:
            return None  # row 5: a global hole or overlap
        next_g = g1 + 1
        st = streams.get(sid)
        if st is None:
            streams[sid] = [base, base + n - 1, n, s0, s1, t0, t1, plen]
        elif s0 != st[4] + 1 or t0 < st[6]:
            return None  # row 5: a stream hole or overlap, time going back
        else:
            st[1], st[2], st[4], st[6], st[7] = base + n - 1, st[2] + n, s1, t1, st[7] + plen
        tmin, tmax = min(tmin, t0), max(tmax, t1)
        if meta:
            metas.append(meta)
            meta_at += len(meta)
        pieces.append(raw)
        base += n
        pay_at += plen
    if len(streams) < 2:
        return None  # row 1: one block alone or one stream take the other paths
    raw_table = bytearray(b"".join(pieces))
    table = np.frombuffer(raw_table, RECORD_DTYPE)
    count = len(rows)
    kinds = np.zeros((count, 3), np.int64)
    payload = np.zeros(count, np.float64)
    order = sorted(streams)
    for sid in order:
        st = streams[sid]
        kinds[rows[sid], 0] = st[2]
        payload[rows[sid]] = float(st[7])
    proj = np.frombuffer(b"".join(
        _PROJECTION.pack(sid, gen, ordinal, streams[sid][2], streams[sid][3], streams[sid][4], streams[sid][5],
                         streams[sid][6]) for sid in order
    ), PROJECTION_DTYPE)
    facts = BatchFacts(
        first_g, next_g - 1, gen, gen, tmin, tmax, proj, kinds, payload,
        np.array([streams[sid][0] for sid in order], np.intp), np.array([streams[sid][1] for sid in order], np.intp),
        (  # the Accumulator's continuity facts, from the running totals (no table rows)
            [(streams[sid][0], (sid, streams[sid][3], gen, streams[sid][5])) for sid in order],
            [(sid, streams[sid][4], gen, streams[sid][6]) for sid in order],
        ),
    )
    return BlockBatch(table, raw_table, tuple(parts), pay_at, b"".join(metas), facts)


def _block(block: RecordBlock, max_metadata: int, pay_at: int, meta_at: int) -> tuple[Any, ...] | None:
    """Row 2: a block's table bytes (its payload at ``pay_at``, its metadata at ``meta_at``
    of the batch's areas), parts and end points, or ``None``."""
    g, s, t = block.global_sequence, block.stream_sequence, block.sim_time_ns
    if g.__class__ is not np.ndarray or s.__class__ is not np.ndarray or t.__class__ is not np.ndarray:
        return None
    n = len(g)
    if n < 1 or g.dtype != _U8 or s.dtype != _U8 or t.dtype != _I8 or not g.shape == s.shape == t.shape == (n,):
        return None
    sid, generation, size = block.stream_id, block.generation, block.record_bytes
    if sid.__class__ is not int or generation.__class__ is not int or size.__class__ is not int:
        return None
    if not 0 <= sid <= _U32 or not 0 <= generation <= _U32 or size < 0:
        return None
    parts = block_parts(block, n * size)
    if parts is None:
        return None
    meta = block_metadata(block.metadata, max_metadata)
    if meta is None:
        return None
    g0, g1, s0, s1, t0, t1 = g.item(0), g.item(-1), s.item(0), s.item(-1), t.item(0), t.item(-1)
    if g1 - g0 != n - 1 or s1 - s0 != n - 1:
        return None  # the end points n - 1 apart (Python integers: no wrap past 2**64 - 1) ...
    if n > 1 and (  # ... and strictly increasing: they step by one
        np.count_nonzero(g[1:] <= g[:-1]) or np.count_nonzero(s[1:] <= s[:-1]) or np.count_nonzero(t[1:] < t[:-1])
    ):
        return None
    raw = template_bytes(sid, generation, size, n)
    words = np.frombuffer(raw, np.uint64).reshape(n, _WORDS)
    words[:, _G:_G + 2] = g[:, None]
    words[:, _S:_S + 2] = s[:, None]
    words[:, _T] = t
    if pay_at:
        words[:, _PO] += np.uint64(pay_at)
    if meta:  # on record 0 only (``block_metadata``)
        words[0, _GEN] = generation | len(meta) << 32
        words[0, _MO] = meta_at
        words[1:, _MO] = meta_at + len(meta)
    elif meta_at:
        words[:, _MO] = meta_at
    return raw, parts, sid, generation, n, g0, g1, s0, s1, t0, t1, n * size, meta


def _row(r: RecordRow, max_metadata: int, pay_at: int, meta_at: int) -> tuple[Any, ...] | None:
    """Row 3: a row's table bytes (its payload at ``pay_at``, its metadata at ``meta_at``)
    and facts, or ``None``."""
    sid, kind, g, s, generation, t, payload, metadata, gl, sl = r
    if kind is not _DATA or gl != g or sl != s:
        return None
    if (sid.__class__ is not int or g.__class__ is not int or s.__class__ is not int
            or generation.__class__ is not int or t.__class__ is not int or payload.__class__ not in _BYTES):
        return None
    if not (0 <= sid <= _U32 and 0 <= g <= _U64 and 0 <= s <= _U64 and 0 <= generation <= _U32 and -_I64 <= t < _I64):
        return None
    meta = record_metadata(metadata, max_metadata)
    if meta is None:
        return None
    plen = len(payload)
    raw = _ROW.pack(sid, 0, 0, g, g, s, s, generation, len(meta), t, meta_at, pay_at, plen)
    return raw, sid, generation, g, s, t, plen, meta
