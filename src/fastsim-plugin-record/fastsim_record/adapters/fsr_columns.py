"""The FSR sink's records from a batch: rows for ``OutRecord`` values, blocks (or rows) for
record columns (``RecordColumns``, the columnar numeric path).

    | # | in the batch                                     | handed to ``FsrWriter``       |
    |---|--------------------------------------------------|-------------------------------|
    | 1 | an ``OutRecord``                                 | a ``RecordRow``               |
    | 2 | adjacent column runs of one stream, generation   | ONE ``RecordBlock``           |
    |   | and tick size (``_adjacent_runs``)               | (``_block``)                  |
    | 3 | ... that hold one record between other records   | a ``RecordRow`` (``_row``)    |
    |   | (a driven Run's tick between its command events) |                               |

Rows 2 and 3 give the writer the same records, so the file holds the same bytes (a test
writes driven Runs both ways and compares them); row 3 spares the writer a one-record
block's table template and column checks.  Row 3 is taken only when the record is
plainly a row: integer columns, a payload of exactly ``record_bytes`` bytes (bytes as
they are, a C-contiguous buffer copied); anything else stays a block, whose checks name
the problem.

A block's diagnostic ``channel_sequence`` is kept as record metadata, one value per block
plus the exceptions (rule CS1): the block's first record carries
``{"channel_sequence": n}``; a later record of the block carries its own value only when
it is not its predecessor's plus one.  A numeric record without the key has its
predecessor's (in the same batch) plus one.  A one-record row carries its value (what its
block's first record carries).  It is diagnostic only: nothing uses it for continuity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from fastsim_record.ports.sinks import OutRecord, RecordColumns
from fastsim_recording_format.model import RecordKind, RecordRow
from fastsim_recording_format.writer import RecordBlock

__all__ = ["batch_records", "channel_sequence_metadata"]

_KINDS = {"data": RecordKind.DATA, "gap": RecordKind.GAP, "barrier": RecordKind.BARRIER}
_DATA = RecordKind.DATA
_NO_METADATA: Mapping[str, object] = MappingProxyType({})
_ARRAY = np.ndarray
#: a ``RecordRow`` from its ten fields without the named tuple's Python ``__new__`` (one per record)
_ROW: Callable[[type[RecordRow], tuple[object, ...]], RecordRow] = tuple.__new__


def batch_records(ids: Mapping[str, int], records: Sequence[OutRecord | RecordColumns]) -> list[RecordRow | RecordBlock]:
    """Rows 1-3 of the module table over one batch, in order (``ids``: stream -> id)."""
    out: list[RecordRow | RecordBlock] = []
    append = out.append
    row = _ROW
    for r in _adjacent_runs(records):
        if r.__class__ is OutRecord:  # tuples, not RecordIn: one per record (unpacked: no field lookups)
            stream, kind, g, s, generation, t, payload, metadata, g_last, s_last = r
            append(row(RecordRow, (ids[stream], _KINDS[kind], g, s, generation, t, payload, metadata, g_last or g, s_last or s)))
            continue
        runs: list[RecordColumns] = r  # type: ignore[assignment]
        one = _row(ids, runs[0]) if len(runs) == 1 else None
        append(one if one is not None else _block(ids, runs))
    return out


def _row(ids: Mapping[str, int], run: RecordColumns) -> RecordRow | None:
    """Row 3: a one-record run as the ``RecordRow`` its one-record block stands for, or
    ``None`` (a block then)."""
    g, s, t = run.global_sequence, run.stream_sequence, run.sim_time_ns
    if len(g) != 1 or not (g.__class__ is s.__class__ is t.__class__ is _ARRAY) or len(s) != 1 or len(t) != 1:
        return None
    if not (g.dtype.kind in "iu" and s.dtype.kind in "iu" and t.dtype.kind in "iu"):
        return None
    payload = run.payload
    if payload.__class__ is tuple:
        if len(payload) != 1:
            return None
        payload = payload[0]
    if payload.__class__ is not bytes:
        try:
            view = memoryview(payload)
        except TypeError:
            return None
        if not view.c_contiguous:
            return None
        payload = view.tobytes()
    if len(payload) != run.record_bytes:
        return None
    chan = run.channel_sequence
    metadata: Mapping[str, object] = _NO_METADATA  # as _block's: _steady_metadata, else channel_sequence_metadata
    if chan is not None and len(chan):
        metadata = {"channel_sequence": int(chan[0])}
    g0, s0 = g.item(0), s.item(0)
    return RecordRow(ids[run.stream], _DATA, g0, s0, run.generation, t.item(0), payload, metadata, g0, s0)


def channel_sequence_metadata(channel_sequence: Any) -> dict[int, dict[str, int]]:
    """Rule CS1: the sparse record metadata that keeps a block's ``channel_sequence``."""
    n = len(channel_sequence) if channel_sequence is not None else 0
    if n == 0:
        return {}
    first = int(channel_sequence[0])
    if int(channel_sequence[-1]) - first == n - 1 and (
        n == 1 or not np.count_nonzero(channel_sequence[1:] != channel_sequence[:-1] + 1)
    ):
        return {0: {"channel_sequence": first}}  # the steady state: one value
    jumps = np.flatnonzero(np.diff(channel_sequence) != 1) + 1
    keep = [0, *jumps.tolist()]
    values = channel_sequence[keep].tolist()
    return {k: {"channel_sequence": v} for k, v in zip(keep, values)}


def _adjacent_runs(records: Sequence[OutRecord | RecordColumns]) -> list[OutRecord | RecordColumns | list[RecordColumns]]:
    """``records`` with each stretch of adjacent column runs of one stream, generation and
    tick size gathered into a list: it becomes ONE block (the same records, so the same
    table bytes and the same checks), and a batch the worker filled from several drains
    takes the writer's one-block path instead of the mixed one."""
    out: list[OutRecord | RecordColumns | list[RecordColumns]] = []
    last: list[RecordColumns] | None = None
    for r in records:
        if r.__class__ is OutRecord:
            out.append(r)
            last = None
        elif last is not None and _same_run_kind(last[0], r):  # type: ignore[arg-type]
            last.append(r)  # type: ignore[arg-type]
        else:
            last = [r]  # type: ignore[list-item]
            out.append(last)
    return out


def _same_run_kind(a: RecordColumns, b: RecordColumns) -> bool:
    return a.stream == b.stream and a.generation == b.generation and a.record_bytes == b.record_bytes


def _steady_metadata(runs: list[RecordColumns]) -> dict[int, dict[str, int]] | None:
    """Rule CS1 for runs whose makers found each ``channel_sequence`` stepping by one: one
    value when each run continues the previous one; ``None`` (a pass is needed) otherwise."""
    first = prev = None
    for r in runs:
        chan = r.channel_sequence
        if not r.channel_steady or chan is None or not len(chan):
            return None
        head = chan.item(0)
        if prev is None:
            first = head
        elif head != prev + 1:
            return None
        prev = chan.item(-1)
    return {0: {"channel_sequence": first}} if first is not None else None


def _block(ids: Mapping[str, int], runs: list[RecordColumns]) -> RecordBlock:
    first = runs[0]
    metadata = _steady_metadata(runs)
    if len(runs) == 1:
        g, s, t, cs = first.global_sequence, first.stream_sequence, first.sim_time_ns, first.channel_sequence
    else:  # the columns are joined (8 bytes a record each); the payload buffers are not
        g = np.concatenate([r.global_sequence for r in runs])
        s = np.concatenate([r.stream_sequence for r in runs])
        t = np.concatenate([r.sim_time_ns for r in runs])
        cs = (None if metadata is not None or any(r.channel_sequence is None for r in runs)
              else np.concatenate([r.channel_sequence for r in runs]))
    parts: list[Any] = []  # payload buffers in order: a run's tick buffers (a tuple) or its one buffer
    for r in runs:
        if r.payload.__class__ is tuple:
            parts.extend(r.payload)
        else:
            parts.append(r.payload)
    return RecordBlock(
        ids[first.stream], first.generation, g, s, t, first.record_bytes, parts[0],
        channel_sequence_metadata(cs) if metadata is None else metadata, tuple(parts[1:]),
    )
