"""A batch that is one ``RecordBlock`` (a numeric recording's steady state), in few numpy calls.

``FsrWriter.write_batch`` of a single block first tries :func:`block_batch`: it builds the
record table as 8-byte words (a cached template, then the sequence and time columns in
three assignments), checks exactly what ``_block_facts`` checks (the stream is declared;
both sequences step by one; simulation time never goes down; the metadata bound) on the
block's own columns, and derives the batch facts from the end points as Python integers.
It accepts only what the general path (``assemble`` + ``_metadata`` + ``analyse_table``)
accepts, with the same table bytes, metadata blob and facts; anything else answers
``None`` and takes the general path, which refuses or accepts it rule by rule:

    | # | the block                                                      | else   |
    |---|----------------------------------------------------------------|--------|
    | 1 | two or more records; ``uint64`` sequences and ``int64`` times,  | None   |
    |   | one-dimensional numpy arrays of one length                     |        |
    | 2 | a declared stream, a generation within ``uint32``              | None   |
    | 3 | payload parts: C-contiguous numpy arrays of ``n * record_bytes``| None   |
    |   | bytes in all                                                    |        |
    | 4 | metadata: none, or one map for record 0 whose canonical JSON is | None   |
    |   | an object within the record bound and the unchecked JSON-items  |        |
    |   | size                                                            |        |
    | 5 | global and stream sequences step by one, times do not go down   | None   |
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format._assemble import RecordBlock, template_bytes
from fastsim_recording_format._layout import (
    MAX_JSON_ITEMS,
    PROJECTION_DTYPE,
    RECORD_DTYPE,
    canonical_json,
)
from fastsim_recording_format._table_rules import BatchFacts
from fastsim_recording_format.encoding import Array, readonly
from fastsim_recording_format.model import Payload

__all__ = ["BlockBatch", "block_batch", "block_metadata", "block_parts", "record_metadata"]

_FIELD = {name: int(spec[1]) for name, spec in (RECORD_DTYPE.fields or {}).items()}
_WORDS = RECORD_DTYPE.itemsize // 8
_G, _GL = _FIELD["global_sequence"] // 8, _FIELD["global_last"] // 8  # each pair: adjacent words
_S, _SL = _FIELD["stream_sequence"] // 8, _FIELD["stream_last"] // 8
_GEN = _FIELD["generation"] // 8  # the word of generation (low half) and metadata_length (high half)
_T = _FIELD["sim_time_ns"] // 8
_MO = _FIELD["metadata_offset"] // 8
_PROJECTION = struct.Struct("<IIIIQQqq")  # PROJECTION_DTYPE's fields, in order
if (  # pragma: no cover - layout
    RECORD_DTYPE.itemsize % 8 or _GL != _G + 1 or _SL != _S + 1 or _FIELD["metadata_length"] != 8 * _GEN + 4
    or _FIELD["generation"] != 8 * _GEN or _PROJECTION.size != PROJECTION_DTYPE.itemsize
):
    raise ImportError("_block_batch: the record or projection layout changed; update the word positions")
_U8, _I8 = np.dtype(np.uint64), np.dtype(np.int64)
_U32 = (1 << 32) - 1
_FIRST_ROW = readonly(np.zeros(1, np.intp))
_CONTIGUOUS = operator.attrgetter("flags.c_contiguous")
_NBYTES = operator.attrgetter("nbytes")


def block_parts(block: RecordBlock, nbytes: int) -> list[Any] | None:
    """Row 3: a block's payload parts when they are C-contiguous numpy arrays of
    ``nbytes`` in all (one C-level pass each over its many tick buffers), else ``None``."""
    parts: list[Any] = [block.payload, *block.more]
    count = len(parts)
    if list(map(type, parts)).count(np.ndarray) != count or list(map(_CONTIGUOUS, parts)).count(True) != count:
        return None
    if sum(map(_NBYTES, parts)) != nbytes:
        return None
    return parts


@attrs.frozen(eq=False)
class BlockBatch:
    """A one-block batch's parts, as ``assemble`` + ``_metadata`` + ``analyse_table`` give them."""

    table: Array  # the record table (RECORD_DTYPE), a view of ``raw``
    raw: bytearray  # the record table's bytes
    payloads: tuple[Payload, ...]
    payload_length: int
    metadata: bytes
    facts: BatchFacts


def block_batch(
    block: RecordBlock, rows: Mapping[int, int], ordinal: int, max_metadata: int
) -> BlockBatch | None:
    """Rows 1-5 of the module table: the batch of ``block`` (batch ``ordinal``; ``rows``
    maps each declared stream id to its row in the stream table), or ``None``."""
    g, s, t = block.global_sequence, block.stream_sequence, block.sim_time_ns
    if g.__class__ is not np.ndarray or s.__class__ is not np.ndarray or t.__class__ is not np.ndarray:
        return None
    n = len(g)
    if n < 2 or g.dtype != _U8 or s.dtype != _U8 or t.dtype != _I8 or not g.shape == s.shape == t.shape == (n,):
        return None  # row 1
    sid, generation, size = block.stream_id, block.generation, block.record_bytes
    row = rows.get(sid)
    if row is None or generation.__class__ is not int or not 0 <= generation <= _U32 or size.__class__ is not int:
        return None  # row 2
    parts = block_parts(block, n * size)
    if parts is None:
        return None  # row 3
    meta = block_metadata(block.metadata, max_metadata)
    if meta is None:
        return None  # row 4
    g0, g1, s0, s1, t0, t1 = g.item(0), g.item(-1), s.item(0), s.item(-1), t.item(0), t.item(-1)
    if g1 - g0 != n - 1 or s1 - s0 != n - 1:
        return None  # row 5: the end points (Python integers: no wrap past 2**64 - 1)
    # row 5: with the end points n - 1 apart, a strictly increasing sequence steps by one
    if np.count_nonzero(g[1:] <= g[:-1]) or np.count_nonzero(s[1:] <= s[:-1]) or np.count_nonzero(t[1:] < t[:-1]):
        return None
    raw = template_bytes(sid, generation, size, n)
    words = np.frombuffer(raw, np.uint64).reshape(n, _WORDS)
    words[:, _G:_GL + 1] = g[:, None]
    words[:, _S:_SL + 1] = s[:, None]
    words[:, _T] = t  # int64 bits as they are
    if meta:
        words[0, _GEN] = generation | len(meta) << 32
        words[1:, _MO] = len(meta)
    kinds, payload, last_row = _counts(len(rows), row, n, size)
    proj = np.frombuffer(_PROJECTION.pack(sid, generation, ordinal, n, s0, s1, t0, t1), PROJECTION_DTYPE)
    facts = BatchFacts(
        g0, g1, generation, generation, t0, t1, proj, kinds, payload, _FIRST_ROW, last_row,
        ([(0, (sid, s0, generation, t0))], [(sid, s1, generation, t1)]),
    )
    return BlockBatch(np.frombuffer(raw, RECORD_DTYPE), raw, tuple(parts), n * size, meta, facts)


_COUNTS: dict[tuple[int, int, int, int], tuple[Array, Array, Array]] = {}


def _counts(streams: int, row: int, n: int, size: int) -> tuple[Array, Array, Array]:
    """A one-block batch's per-stream kind counts, payload bytes and last-record row
    (read-only, cached: a steady recording's batches share a handful)."""
    key = (streams, row, n, size)
    cached = _COUNTS.get(key)
    if cached is None:
        if len(_COUNTS) >= 64:
            _COUNTS.clear()
        kinds = np.zeros((streams, 3), np.int64)
        kinds[row, 0] = n
        payload = np.zeros(streams, np.float64)
        payload[row] = float(n * size)
        cached = _COUNTS[key] = (readonly(kinds), readonly(payload), readonly(np.array((n - 1,), np.intp)))
    return cached


def block_metadata(metadata: Mapping[int, Any], max_metadata: int) -> bytes | None:
    """A block's metadata: none, or one map for its record 0 (``b""`` when empty)."""
    if not metadata:
        return b""
    if len(metadata) != 1 or 0 not in metadata:
        return None
    return record_metadata(metadata[0], max_metadata)


def record_metadata(meta: Any, max_metadata: int) -> bytes | None:
    """Row 4 (``_segment_batch``: row 6): a record's canonical metadata JSON (``b""`` when empty), or ``None``."""
    if not meta:
        return b""
    try:
        blob = _one_int(meta) or canonical_json(meta)
    except (TypeError, ValueError):
        return None
    if len(blob) > max_metadata or len(blob) > MAX_JSON_ITEMS or blob[:1] != b"{":
        return None
    return blob


_KEY_PREFIX: dict[str, bytes] = {}


def _one_int(meta: Any) -> bytes | None:
    """``canonical_json`` of a map of one string key to an ``int`` (a block's
    ``{"channel_sequence": n}``) from the key's cached prefix, or ``None`` for any other value."""
    if meta.__class__ is not dict or len(meta) != 1:
        return None
    ((key, value),) = meta.items()
    if key.__class__ is not str or value.__class__ is not int:
        return None
    prefix = _KEY_PREFIX.get(key)
    if prefix is None:
        if len(_KEY_PREFIX) >= 64:
            _KEY_PREFIX.clear()
        prefix = _KEY_PREFIX[key] = canonical_json({key: 0})[:-2]  # b'{"key":'
    return b"%s%d}" % (prefix, value)
