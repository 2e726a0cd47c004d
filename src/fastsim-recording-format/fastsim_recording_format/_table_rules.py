"""The record-local rules of one batch's record table, and the facts it implies.

``analyse_table`` is rule 2 of ``_batch``'s decision table (writer, reader, validator and
recovery all run it).  It first computes one combined verdict over every rule with a
handful of whole-table numpy operations; only a table that fails it goes through the
rule-by-rule chain (``_explain``), which names the first offending field's byte offset
exactly as each rule is listed:

    | # | rule                                                                    |
    |---|-------------------------------------------------------------------------|
    | 1 | kind is 0..2, record flags are 0, the stream is declared                |
    | 2 | DATA and BARRIER cover one sequence; a GAP range is not reversed and    |
    |   | carries no payload; record metadata is at most 1 MiB                    |
    | 3 | global sequences are contiguous within the batch                        |
    | 4 | metadata and payload offsets tile their areas exactly                   |
    | 5 | per stream: stream sequences contiguous; generation and simulation time |
    |   | never go backwards                                                      |

A batch of one stream (the common steady state) derives its facts without sorting.
``analyse_table(..., block=True)`` is the same check for a table the writer built from one
``RecordBlock`` (``_assemble``): kind, flags, single-sequence ranges and the tiling of
both areas hold by construction there, so only the stream id, the metadata bound and
rules 3 and 5 are computed; anything it does not accept goes through the rule-by-rule path,
so both accept and refuse exactly the same tables.
"""

from __future__ import annotations

import struct

import attrs
import numpy as np

from fastsim_recording_format._batch_header import SIZE as _HDR
from fastsim_recording_format._layout import (
    MAX_RECORD_METADATA_BYTES,
    PROJECTION_DTYPE,
    RECORD_DTYPE,
)
from fastsim_recording_format.encoding import Array, readonly
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import RecordKind

__all__ = ["BatchFacts", "analyse_table"]

_FIELD = {name: int(spec[1]) for name, spec in (RECORD_DTYPE.fields or {}).items()}
_REC = RECORD_DTYPE.itemsize
_GAP = int(RecordKind.GAP)
_U64_MAX = np.uint64(2**64 - 1)
_ONE = np.uint64(1)


def _first(mask: Array) -> int | None:
    return int(mask.argmax()) if np.count_nonzero(mask) else None


@attrs.frozen
class BatchFacts:
    """What a batch's record table implies: its summary, projections and per-stream counts."""

    first_global: int
    last_global: int
    generation_min: int
    generation_max: int
    sim_time_min: int
    sim_time_max: int
    projections: Array = attrs.field(eq=False)
    kind_counts: Array = attrs.field(eq=False)  # (streams, 3) int64
    payload_by_stream: Array = attrs.field(eq=False)  # (streams,) float64
    group_first: Array = attrs.field(eq=False)  # record index of each stream's first record
    group_last: Array = attrs.field(eq=False)
    #: each stream's continuity edges as Python integers, when the writer's batch builder
    #: or the one-stream check knows them (the ``Accumulator`` then reads no table row):
    #: for each stream, in ``group_first`` order, ``(record index, (stream_id,
    #: stream_sequence, generation, sim_time_ns))`` of its first record, and ``(stream_id,
    #: stream_last, generation, sim_time_ns)`` of its last; else None
    edges: tuple[list[tuple[int, tuple[int, int, int, int]]], list[tuple[int, int, int, int]]] | None = attrs.field(
        default=None, eq=False
    )


def analyse_table(
    table: Array,
    metadata_length: int,
    payload_length: int,
    header_offset: int,
    ordinal: int,
    stream_ids: Array,
    max_metadata: int = MAX_RECORD_METADATA_BYTES,
    *,
    block: bool = False,
) -> BatchFacts:
    """Check every record-local rule of a batch (module table) and derive its facts (no I/O).

    ``block``: the writer built ``table`` from one ``RecordBlock`` (``_block_facts`` first)."""
    if block:
        facts = _block_facts(table, metadata_length, ordinal, stream_ids, max_metadata)
        if facts is not None:
            return facts
    if not _clean(table, metadata_length, payload_length, stream_ids, max_metadata):
        _explain(table, metadata_length, payload_length, header_offset, stream_ids, max_metadata)
    sid = table["stream_id"]
    if sid[0] == sid[-1] and bool((sid == sid[0]).all()):
        facts = _one_stream(table, ordinal, stream_ids)
        if facts is not None:
            return facts
    return _facts(table, header_offset, ordinal, stream_ids)


def _block_facts(
    table: Array, metadata_length: int, ordinal: int, stream_ids: Array, max_metadata: int
) -> BatchFacts | None:
    """The facts of a table built from one ``RecordBlock`` (module header), or ``None``:
    then ``analyse_table`` checks it rule by rule.

    Five whole-table operations: the global and stream sequences step by one together
    (one subtraction over both columns; the end points, compared as Python integers,
    rule out a wrap past 2**64 - 1), the simulation times do not go down, and each
    record's metadata is within the bound (only when the batch's whole metadata area is
    above it: the lengths tile that area, by construction)."""
    n = len(table)
    words = table.view(np.uint64).reshape(n, _WORDS)
    g0, s0 = int(words[0, _G]), int(words[0, _S])
    sid = int(table["stream_id"][0])
    k = int(np.searchsorted(stream_ids, sid)) if len(stream_ids) else 0
    t = table["sim_time_ns"]
    t0, t1 = int(t[0]), int(t[-1])
    if (  # rules 1-5 that do not hold by construction (the module header)
        k < len(stream_ids) and int(stream_ids[k]) == sid
        and int(words[-1, _G]) - g0 == n - 1 and int(words[-1, _S]) - s0 == n - 1
        and (n == 1 or (not np.count_nonzero(  # count_nonzero: ~5x cheaper than any() on a batch
            (words[1:, _G:_S + 1:_S - _G] - words[:-1, _G:_S + 1:_S - _G]) != _ONE  # rules 3 and 5
        ) and not np.count_nonzero(t[1:] < t[:-1])))
        and (metadata_length <= max_metadata or not np.count_nonzero(table["metadata_length"] > max_metadata))
    ):
        generation = int(table["generation"][0])
        streams = len(stream_ids)
        kinds = np.zeros((streams, 3), np.int64)
        kinds[k, 0] = n
        payload = np.zeros(streams, np.float64)
        payload[k] = float(n * int(table["payload_length"][0]))
        proj = np.frombuffer(_PROJECTION.pack(sid, generation, ordinal, n, s0, s0 + n - 1, t0, t1), PROJECTION_DTYPE)
        return BatchFacts(
            g0, g0 + n - 1, generation, generation, t0, t1, proj, kinds, payload,
            _FIRST_ROW, np.array((n - 1,), np.intp),
            ([(0, (sid, s0, generation, t0))], [(sid, s0 + n - 1, generation, t1)]),
        )
    return None


#: the record table as rows of little-endian 8-byte words: the sequence columns' places
_WORDS = RECORD_DTYPE.itemsize // 8
_G = _FIELD["global_sequence"] // 8
_S = _FIELD["stream_sequence"] // 8
_PROJECTION = struct.Struct("<IIIIQQqq")  # PROJECTION_DTYPE's fields, in order
if _PROJECTION.size != PROJECTION_DTYPE.itemsize or RECORD_DTYPE.itemsize % 8:  # pragma: no cover - layout
    raise ImportError("_table_rules: the projection or record layout changed; update _PROJECTION and _WORDS")
_FIRST_ROW = readonly(np.zeros(1, np.intp))


_STEPS: list[Array] = [np.arange(0, dtype=np.uint64)]


def _steps(n: int) -> Array:
    """``0 .. n-1`` as uint64 (cached: batches are about the same size)."""
    steps = _STEPS[0]
    if len(steps) < n:
        steps = _STEPS[0] = np.arange(max(n, 2 * len(steps)), dtype=np.uint64)
    return steps[:n]


def projection_rows(
    stream: Array, generation: Array, first: Array, last: Array, time: Array, starts: Array, stops: Array,
    batch_ordinal: Array | int,
) -> Array:
    """One projection row per stretch ``starts[k]:stops[k]`` of records sorted by stream
    (one stream and generation each): the stretch's stream, generation, batch, count, first
    and last stream sequence and simulation time."""
    proj = np.empty(len(starts), PROJECTION_DTYPE)
    proj["stream_id"] = stream[starts]
    proj["generation"] = generation[starts]
    proj["batch_ordinal"] = batch_ordinal
    proj["record_count"] = stops - starts
    proj["first_stream_sequence"] = first[starts]
    proj["last_stream_sequence"] = last[stops - 1]
    proj["sim_time_first"] = time[starts]
    proj["sim_time_last"] = time[stops - 1]
    return proj


def rows_clean(table: Array, stream_ids: Array, max_metadata: int) -> bool:
    """Rules 1-3 over consecutive records (a batch's, or a whole file's): kinds, flags,
    known streams, the shape of gaps, the metadata bound and the global sequence's chain.
    True when none is broken; ``stream_ids`` sorted and not empty."""
    kind, sid = table["kind"], table["stream_id"]
    g, gl = table["global_sequence"], table["global_last"]
    s, sl = table["stream_sequence"], table["stream_last"]
    plen, ml = table["payload_length"], table["metadata_length"].astype(np.uint64)
    gap = kind == _GAP
    pos = np.searchsorted(stream_ids, sid)
    bad = (kind > 2) | (table["flags"] != 0) | (stream_ids[np.minimum(pos, len(stream_ids) - 1)] != sid)
    bad |= np.where(gap, (gl < g) | (sl < s) | (plen != 0), (gl != g) | (sl != s))
    bad |= ml > np.uint64(max_metadata)
    if np.count_nonzero(bad):  # count_nonzero: ~5x cheaper than any() on a batch
        return False
    return not (len(table) > 1 and np.count_nonzero((g[1:] != gl[:-1] + _ONE) | (gl[:-1] == _U64_MAX)))


def _clean(
    table: Array, metadata_length: int, payload_length: int, stream_ids: Array, max_metadata: int
) -> bool:
    """Rules 1-4 at once: True when none is broken (then ``_explain`` has nothing to say)."""
    if not len(stream_ids) or not rows_clean(table, stream_ids, max_metadata):
        return False
    plen, ml = table["payload_length"], table["metadata_length"].astype(np.uint64)
    for lengths, offsets, total in (
        (ml, table["metadata_offset"], metadata_length), (plen, table["payload_offset"], payload_length),
    ):
        ends = np.cumsum(lengths, dtype=np.uint64)
        if int(ends[-1]) != total or int(lengths.max()) > total or np.count_nonzero(offsets != ends - lengths):
            return False
    return True


def _explain(
    table: Array, metadata_length: int, payload_length: int, header_offset: int, stream_ids: Array,
    max_metadata: int,
) -> None:
    """Rules 1-4 one by one: raise for the first broken one (its field's byte offset)."""
    n = len(table)
    base = header_offset + _HDR

    def fail(k: int, field: str, reason: str) -> FormatError:
        return FormatError(base + _REC * k + _FIELD[field], reason)

    kind = table["kind"]
    sid = table["stream_id"]
    if (k := _first(kind > 2)) is not None:
        raise fail(k, "kind", f"unknown record kind {int(kind[k])}")
    if (k := _first(table["flags"] != 0)) is not None:
        raise fail(k, "flags", "non-zero record flags")
    if not len(stream_ids):
        raise fail(0, "stream_id", f"record names undeclared stream {int(sid[0])}")
    pos = np.searchsorted(stream_ids, sid)
    if (k := _first(stream_ids[np.minimum(pos, len(stream_ids) - 1)] != sid)) is not None:
        raise fail(k, "stream_id", f"record names undeclared stream {int(sid[k])}")
    g, gl = table["global_sequence"], table["global_last"]
    s, sl = table["stream_sequence"], table["stream_last"]
    plen, ml = table["payload_length"], table["metadata_length"].astype(np.uint64)
    gap = kind == _GAP
    if (k := _first(~gap & ((gl != g) | (sl != s)))) is not None:
        raise fail(k, "global_last", "DATA or BARRIER record covers more than one sequence")
    if (k := _first(gap & ((gl < g) | (sl < s)))) is not None:
        raise fail(k, "global_last", "GAP record range is reversed")
    if (k := _first(gap & (plen != 0))) is not None:
        raise fail(k, "payload_length", "GAP record has a payload")
    if (k := _first(ml > np.uint64(max_metadata))) is not None:
        raise fail(
            k, "metadata_length",
            f"record metadata of {int(ml[k])} bytes exceeds the {max_metadata}-byte bound",
        )
    if n > 1 and (k := _first((g[1:] != gl[:-1] + np.uint64(1)) | (gl[:-1] == _U64_MAX))) is not None:
        raise fail(
            k + 1, "global_sequence",
            f"global sequence hole or overlap: expected {int(gl[k]) + 1}, found {int(g[k + 1])}",
        )
    for lengths, offsets, total, field, what, hdr_field in (
        (ml, table["metadata_offset"], metadata_length, "metadata_offset", "metadata", 24),
        (plen, table["payload_offset"], payload_length, "payload_offset", "payload", 32),
    ):
        if (k := _first(lengths > np.uint64(total))) is not None:
            raise fail(k, field, f"record {what} length exceeds the batch's {what} area")
        ends = np.cumsum(lengths, dtype=np.uint64)
        if (k := _first(offsets != ends - lengths)) is not None:
            raise fail(k, field, f"record {what} offset does not tile the {what} area")
        if int(ends[-1]) != total:
            raise FormatError(header_offset + hdr_field, f"batch {what} length disagrees with its records")


def _one_stream(table: Array, ordinal: int, stream_ids: Array) -> BatchFacts | None:
    """The facts of a batch of one stream (no sort); ``None`` when rule 5 may be broken
    (then ``_facts`` names the record) or the batch spans generations."""
    n = len(table)
    s, sl = table["stream_sequence"], table["stream_last"]
    gen, t = table["generation"], table["sim_time_ns"]
    if gen[0] != gen[-1]:
        return None
    if n > 1 and np.count_nonzero(
        (s[1:] != sl[:-1] + _ONE) | (sl[:-1] == _U64_MAX) | (gen[1:] != gen[:-1]) | (t[1:] < t[:-1])
    ):
        return None
    sid = int(table["stream_id"][0])
    kind = table["kind"]
    proj = np.empty(1, PROJECTION_DTYPE)
    proj["stream_id"] = sid
    proj["generation"] = gen[0]
    proj["batch_ordinal"] = ordinal
    proj["record_count"] = n
    proj["first_stream_sequence"] = s[0]
    proj["last_stream_sequence"] = sl[-1]
    proj["sim_time_first"] = t[0]
    proj["sim_time_last"] = t[-1]
    streams = len(stream_ids)
    row = int(np.searchsorted(stream_ids, sid))
    kinds = np.zeros((streams, 3), np.int64)
    kinds[row] = np.bincount(kind, minlength=3)[:3]
    payload = np.zeros(streams, np.float64)
    payload[row] = float(table["payload_length"].sum())
    g, gl = table["global_sequence"], table["global_last"]
    generation = int(gen[0])
    return BatchFacts(
        int(g[0]), int(gl[-1]), generation, generation, int(t.min()), int(t.max()),
        proj, kinds, payload, np.zeros(1, np.intp), np.full(1, n - 1, np.intp),
        ([(0, (sid, int(s[0]), generation, int(t[0])))], [(sid, int(sl[-1]), generation, int(t[-1]))]),
    )


def _facts(table: Array, header_offset: int, ordinal: int, stream_ids: Array) -> BatchFacts:
    """Rule 5 (raising for the first broken record) and the facts, for any batch."""
    n = len(table)
    base = header_offset + _HDR

    def fail(k: int, field: str, reason: str) -> FormatError:
        return FormatError(base + _REC * k + _FIELD[field], reason)

    sid, kind = table["stream_id"], table["kind"]
    s, sl = table["stream_sequence"], table["stream_last"]
    g, gl = table["global_sequence"], table["global_last"]
    plen = table["payload_length"]
    pos = np.searchsorted(stream_ids, sid)
    order = np.argsort(sid, kind="stable")
    ss, so, slo = sid[order], s[order], sl[order]
    gen, t = table["generation"], table["sim_time_ns"]
    geno, to = gen[order], t[order]
    same = ss[1:] == ss[:-1]
    if (k := _first(same & ((so[1:] != slo[:-1] + np.uint64(1)) | (slo[:-1] == _U64_MAX)))) is not None:
        raise fail(int(order[k + 1]), "stream_sequence", "stream sequence hole or overlap")
    back = (geno[1:] < geno[:-1]) | ((geno[1:] == geno[:-1]) & (to[1:] < to[:-1]))
    if (k := _first(same & back)) is not None:
        raise fail(int(order[k + 1]), "sim_time_ns", "stream generation or simulation time goes backwards")

    cut = np.flatnonzero(~same | (geno[1:] != geno[:-1])) + 1
    starts = np.concatenate(([0], cut))
    stops = np.concatenate((cut, [n]))
    proj = projection_rows(ss, geno, so, slo, to, starts, stops, ordinal)

    streams = len(stream_ids)
    dense = pos.astype(np.int64)
    kinds = np.bincount(dense * 3 + kind, minlength=3 * streams).reshape(streams, 3)
    payload = np.bincount(dense, weights=plen.astype(np.float64), minlength=streams)
    gcut = np.flatnonzero(~same) + 1
    group_first = order[np.concatenate(([0], gcut))]
    group_last = order[np.concatenate((gcut, [n])) - 1]
    return BatchFacts(
        int(g[0]), int(gl[-1]), int(gen.min()), int(gen.max()), int(t.min()), int(t.max()),
        proj, kinds, payload, group_first, group_last,
    )


