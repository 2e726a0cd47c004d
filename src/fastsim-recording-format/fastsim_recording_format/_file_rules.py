"""Every batch of a sealed file checked together: ``validate``'s fast path.

``validate`` checks a file batch by batch (``parse_batch``, ``check_index_entry``,
``check_record_metadata``, ``Accumulator.check``/``add``), which costs a few dozen numpy
calls per batch.  :func:`check_file` runs the same checks over the records of many
batches at once: a chunk of consecutive batches whose record tables and metadata hold at
most ``MAX_HELD`` bytes (or one batch, if it alone holds more), so memory stays bounded
however long the file:

    | # | batch-by-batch check                           | here, over a chunk's records                  |
    |---|------------------------------------------------|-----------------------------------------------|
    | 1 | header, CRCs, paddings (``read_batch``)        | the same function, batch by batch             |
    | 2 | rules 1-2 of ``_table_rules``                   | one mask over every record                    |
    | 3 | rule 3; the global sequence continues the      | neighbouring records compared; the first one  |
    |   | last batch                                     | with the last before the chunk                |
    | 4 | rule 4 (tiling), the header's area lengths      | one cumulative sum, less each batch's start   |
    | 5 | rule 5; each stream continues its last batch   | one stable sort by stream, neighbours         |
    |   |                                                | compared; each stream's first record with its |
    |   |                                                | last before the chunk (``_Carry``)            |
    | 6 | header summary, index entry                    | per-batch reductions (``reduceat``)           |
    | 7 | record metadata is canonical JSON              | one ``json.loads`` of them all                |

Each row accepts exactly what its batch-by-batch check accepts (module arithmetic included:
both sum lengths in uint64).  This is the fast path only: :func:`check_file` returns
``None`` as soon as anything fails, and ``validate`` then checks the file again batch by
batch, which raises the first failure with its own message and byte offset, exactly as
before (the pattern of ``reading._scan``).
"""

from __future__ import annotations

import attrs
import numpy as np

from fastsim_recording_format._batch import Accumulator, RawBatch, read_batch
from fastsim_recording_format._json import canonical_record_metadata
from fastsim_recording_format._layout import (
    INDEX_DTYPE,
    MAX_RECORD_METADATA_BYTES,
    RECORD_DTYPE,
)
from fastsim_recording_format._sections import Head, Tail
from fastsim_recording_format._source import Source
from fastsim_recording_format._table_rules import projection_rows, rows_clean
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import FormatError

__all__ = ["MAX_HELD", "check_file"]

#: The most record-table and metadata bytes :func:`check_file` holds at once (one chunk;
#: a single larger batch is a chunk alone, as batch-by-batch checking holds it too): memory
#: does not grow with the file, validation never holds a whole file's tables.
MAX_HELD = 1 << 20

_REC = RECORD_DTYPE.itemsize
_U64_MAX = np.uint64(2**64 - 1)
_ONE = np.uint64(1)
_EXACT = 1 << 53  # float64 sums of integers below this are exact (the payload totals)
_SUMMARY = (  # index entry field, header field
    ("first_global", "first_global"), ("last_global", "last_global"),
    ("generation_min", "generation_min"), ("generation_max", "generation_max"),
    ("sim_time_min", "sim_time_min"), ("sim_time_max", "sim_time_max"),
)


def check_file(src: Source, head: Head, tail: Tail) -> Accumulator | None:
    """The file's accumulated totals if every batch passes every check of the module
    table, else ``None`` (then check batch by batch for the error)."""
    stream_ids = head.stream_ids
    index = tail.index
    if not len(index) or not len(stream_ids):
        return None
    acc = Accumulator(stream_ids)
    carry = _Carry(stream_ids)
    raws: list[RawBatch] = []
    held = first = 0
    try:
        for k, off in enumerate(index["offset"].tolist()):
            raw = read_batch(src, off, k, tail.index_offset, head.batch_flags)
            if raws and held + len(raw.body) > MAX_HELD:  # a chunk is full: check it, drop it
                if not _check_chunk(raws, first, index[first:k], acc, carry):
                    return None
                raws, held, first = [], 0, k
            raws.append(raw)
            held += len(raw.body)
    except FormatError:
        return None
    return acc if _check_chunk(raws, first, index[first:], acc, carry) else None


@attrs.define(eq=False)
class _Carry:
    """What a chunk of batches must continue: each stream's last record so far (stream
    sequence, generation, simulation time; ``seen`` once it has one, columns indexed like
    ``stream_ids``) and a bound on the payload bytes summed (float64 sums stay exact)."""

    stream_ids: Array
    seen: Array = attrs.field(init=False)
    sequence: Array = attrs.field(init=False)
    generation: Array = attrs.field(init=False)
    time: Array = attrs.field(init=False)
    payload_bound: int = 0

    def __attrs_post_init__(self) -> None:
        n = len(self.stream_ids)
        self.seen = np.zeros(n, bool)
        self.sequence = np.zeros(n, RECORD_DTYPE["stream_last"])
        self.generation = np.zeros(n, RECORD_DTYPE["generation"])
        self.time = np.zeros(n, RECORD_DTYPE["sim_time_ns"])

    def continued(self, sid: Array, sequence: Array, generation: Array, time: Array) -> bool:
        """Each stream's first record in a chunk (one per stream) continues its last one
        before it (``Accumulator.check``: ``sequence`` is one more, ``(generation, time)``
        does not go back); a stream seen first here continues nothing."""
        k = np.searchsorted(self.stream_ids, sid)
        seen, last = self.seen[k], self.sequence[k]
        gen, t = self.generation[k], self.time[k]
        broken = (sequence != last + _ONE) | (last == _U64_MAX)
        broken |= (generation < gen) | ((generation == gen) & (time < t))
        return not np.count_nonzero(seen & broken)

    def update(self, sid: Array, sequence: Array, generation: Array, time: Array) -> None:
        """Each stream's last record in a chunk (one per stream) is now the one to continue."""
        k = np.searchsorted(self.stream_ids, sid)
        self.seen[k] = True
        self.sequence[k], self.generation[k], self.time[k] = sequence, generation, time


def _check_chunk(raws: list[RawBatch], first: int, index: Array, acc: Accumulator, carry: _Carry) -> bool:
    """Every check of the module table over consecutive batches ``raws`` (index entries
    ``index``, the first of ordinal ``first``) continuing what ``acc`` and ``carry`` hold
    from the batches before them; on success ``acc`` and ``carry`` take them in."""
    stream_ids = acc.stream_ids
    counts = np.array([r.header.record_count for r in raws], np.int64)
    # one join of the tables' bytes (a concatenation of structured arrays costs more)
    table = np.frombuffer(
        b"".join([memoryview(r.body)[:_REC * r.header.record_count] for r in raws]), RECORD_DTYPE
    )
    if acc.last_global is not None and int(table["global_sequence"][0]) != acc.last_global + 1:
        return False
    firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lasts = firsts + counts - 1
    facts = _record_rules(table, raws, counts, firsts, lasts, stream_ids)
    if facts is None or not _matches_index(index, raws, counts, facts):
        return False
    order, same = facts["order"], facts["same"]
    heads = order[np.concatenate(([0], np.flatnonzero(~same) + 1))]  # each stream's first record
    if not carry.continued(
        table["stream_id"][heads], table["stream_sequence"][heads], table["generation"][heads],
        table["sim_time_ns"][heads],
    ):
        return False
    with_meta = np.flatnonzero(table["metadata_length"])
    blob_of = np.searchsorted(lasts, with_meta)  # each such record's batch
    starts = (_REC * counts)[blob_of] + table["metadata_offset"][with_meta].astype(np.int64)  # tiled: fits
    parts = [
        raws[b].body[start:start + length]
        for b, start, length in zip(
            blob_of.tolist(), starts.tolist(), table["metadata_length"][with_meta].tolist(), strict=True
        )
    ]
    if not canonical_record_metadata(parts):
        return False
    carry.payload_bound += int(table["payload_length"].max()) * len(table)
    if carry.payload_bound >= _EXACT:  # ``add`` sums payload bytes in float64: not exact here
        return False
    _accumulate(table, raws, counts, first, index["offset"], acc, carry, facts)
    return True


def _record_rules(
    table: Array, raws: list[RawBatch], counts: Array, firsts: Array, lasts: Array, stream_ids: Array
) -> dict[str, Array] | None:
    """Rows 2-6 of the module table over every record; each batch's summary, or ``None``."""
    if not rows_clean(table, stream_ids, MAX_RECORD_METADATA_BYTES):
        return None
    sid = table["stream_id"]
    g, gl = table["global_sequence"], table["global_last"]
    s, sl = table["stream_sequence"], table["stream_last"]
    plen, ml = table["payload_length"], table["metadata_length"].astype(np.uint64)
    for lengths, offsets, field in (
        (ml, table["metadata_offset"], "metadata_length"), (plen, table["payload_offset"], "payload_length"),
    ):
        totals = np.array([getattr(r.header, field) for r in raws], np.uint64)
        if np.count_nonzero(lengths > np.repeat(totals, counts)):
            return None
        ends = np.cumsum(lengths, dtype=np.uint64)  # wraps like each batch's own sum: modulo 2**64
        before = np.concatenate((np.zeros(1, np.uint64), ends[lasts[:-1]]))
        within = ends - np.repeat(before, counts)
        if np.count_nonzero(offsets != within - lengths) or np.count_nonzero(within[lasts] != totals):
            return None
    order = np.argsort(sid, kind="stable")
    ss, so, slo = sid[order], s[order], sl[order]
    geno, to = table["generation"][order], table["sim_time_ns"][order]
    same = ss[1:] == ss[:-1]
    if np.count_nonzero(same & ((so[1:] != slo[:-1] + _ONE) | (slo[:-1] == _U64_MAX))):
        return None
    back = (geno[1:] < geno[:-1]) | ((geno[1:] == geno[:-1]) & (to[1:] < to[:-1]))
    if np.count_nonzero(same & back):
        return None
    gen, t = table["generation"], table["sim_time_ns"]
    facts = {
        "first_global": g[firsts], "last_global": gl[lasts],
        "generation_min": np.minimum.reduceat(gen, firsts), "generation_max": np.maximum.reduceat(gen, firsts),
        "sim_time_min": np.minimum.reduceat(t, firsts), "sim_time_max": np.maximum.reduceat(t, firsts),
        "order": order, "same": same,
    }
    for name, field in _SUMMARY:
        stored = np.array([getattr(r.header, field) for r in raws], facts[name].dtype)
        if np.count_nonzero(stored != facts[name]):
            return None
    return facts


def _matches_index(index: Array, raws: list[RawBatch], counts: Array, facts: dict[str, Array]) -> bool:
    """Row 6: every index entry agrees with its batch (``check_index_entry``)."""
    actual = {
        "length": np.array([r.length for r in raws], np.int64), "record_count": counts,
        "flags": np.array([r.header.flags for r in raws], np.int64),
        **{name: facts[name] for name, _ in _SUMMARY},
    }
    return all(not np.count_nonzero(index[name] != values) for name, values in actual.items())


def _accumulate(
    table: Array, raws: list[RawBatch], counts: Array, first: int, offsets: Array, acc: Accumulator, carry: _Carry,
    facts: dict[str, Array],
) -> None:
    """Take a checked chunk into ``acc`` (the totals ``Accumulator.add`` would have built
    batch by batch; batch ordinals from ``first``) and ``carry``."""
    stream_ids = acc.stream_ids
    plen = table["payload_length"]
    order, same = facts["order"], facts["same"]
    batch = np.repeat(np.arange(first, first + len(raws), dtype=np.int64), counts)[order]
    sid, gen = table["stream_id"][order], table["generation"][order]
    s, sl, t = table["stream_sequence"][order], table["stream_last"][order], table["sim_time_ns"][order]
    n = len(table)
    cut = np.flatnonzero(~same | (batch[1:] != batch[:-1]) | (gen[1:] != gen[:-1])) + 1
    starts = np.concatenate(([0], cut))
    stops = np.concatenate((cut, [n]))
    proj = projection_rows(sid, gen, s, sl, t, starts, stops, batch[starts])
    streams = len(stream_ids)
    dense = np.searchsorted(stream_ids, table["stream_id"]).astype(np.int64)
    kinds = np.bincount(dense * 3 + table["kind"], minlength=3 * streams).reshape(streams, 3)
    payload = np.bincount(dense, weights=plen.astype(np.float64), minlength=streams)
    ends = np.concatenate((np.flatnonzero(~same), [n - 1]))
    carry.update(sid[ends], sl[ends], gen[ends], t[ends])
    last = {
        a: (b, c, d)
        for a, b, c, d in zip(sid[ends].tolist(), sl[ends].tolist(), gen[ends].tolist(), t[ends].tolist(), strict=True)
    }
    rows = np.empty(len(raws), INDEX_DTYPE)
    rows["offset"] = offsets
    rows["length"] = [r.length for r in raws]
    rows["record_count"] = counts
    rows["flags"] = [r.header.flags for r in raws]
    for name, _ in _SUMMARY:
        rows[name] = facts[name]
    acc.absorb([tuple(row) for row in rows.tolist()], proj, kinds, payload, last)
