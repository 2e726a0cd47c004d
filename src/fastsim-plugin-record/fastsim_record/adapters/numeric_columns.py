"""The columnar numeric path: a run of observation carriers -> one ``RecordColumns``.

The writer worker drains the numeric lane as a list of carriers (contract envelopes
admitted by a pump).  For a run of them, ``numeric_columns`` reads every field with
C-level maps (``operator.attrgetter`` over the list, ``numpy.fromiter``) and joins the
packed tick buffers into one payload buffer, so no Python object is built per tick.
Each row is still one atomic record, with the same bytes as ``NumericTickEncoder.encode``.

    | # | the run qualifies when every tick ...                               | else   |
    |---|---------------------------------------------------------------------|--------|
    | 1 | is an ``ObservationTick`` (the pump checked it) of a ``SampleBlock``  | None   |
    |   | over ``PackedValues``                                               |        |
    | 2 | shares one channel tuple, the stream's declared order                | None   |
    | 3 | shares one ``PackedLayout`` that is the record layout (rules 1-3 of  | None   |
    |   | ``payloads``), and a C-contiguous buffer                             |        |
    | 4 | is in one generation                                                 | None   |

``None`` sends the run through the per-record path, which names any drift exactly.
The diagnostic ``channel_sequence`` of each tick travels as a column (issue 27).

A run whose tick buffers are consecutive slots of Core's tick arena (by identity, rule
A5 of ``fastsim_contract.arena``; the arena is bound to one channel tuple and layout,
rules 1-3) takes its payload as the arena's existing memory range and its sequences and
times from the arena's columns: one attribute path and one identity comparison per
tick, no joined copy (but for a run that wraps past the arena's last row: its two
ranges are joined).  The run keeps its tick buffers (``RecordColumns.hold``) until it
is written, so Core cannot refill those rows (rule A2).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fastsim_contract.arena import tick_arena_of
from fastsim_contract.values import PackedLayout, PackedValues
from fastsim_record.ports.sinks import RecordColumns

__all__ = ["numeric_columns"]

_ENVELOPE = operator.attrgetter("envelope")
_BLOCK = operator.attrgetter("payload.samples")
_CHANNELS = operator.attrgetter("channels")
_VALUES = operator.attrgetter("values")
_LAYOUT = operator.attrgetter("layout")
_BUFFER = operator.attrgetter("buffer")
_GLOBAL = operator.attrgetter("global_sequence")
_SOURCE_SEQ = operator.attrgetter("source_sequence")
_SIM_TIME = operator.attrgetter("sim_time_ns")
_GENERATION = operator.attrgetter("generation")
_CHANNEL_SEQ = operator.attrgetter("channel_sequence")
_TICK_BUFFER = operator.attrgetter("envelope.payload.samples.values.buffer")


def numeric_columns(
    stream: str,
    order: tuple[str, ...],
    record_bytes: int,
    layout_ok: Callable[[PackedLayout], bool],
    carriers: Sequence[Any],
) -> RecordColumns | None:
    """Rules 1-4 over ``carriers``: their records column-wise, or ``None``."""
    n = len(carriers)
    if n == 0:
        return None
    columns = _arena_columns(stream, order, record_bytes, layout_ok, carriers)
    if columns is not None:
        return columns
    envelopes = list(map(_ENVELOPE, carriers))
    try:  # ticks were checked to be ObservationTick values at the pump (binding rule 4)
        blocks = list(map(_BLOCK, envelopes))
        channel_rows = list(map(_CHANNELS, blocks))  # only a SampleBlock has channels
        values = list(map(_VALUES, blocks))
    except AttributeError:
        return None
    # ``list.count`` compares by identity first (Core shares one tuple and one layout per
    # Run), then by equality: one C-level pass each, no set built per tick
    channels = channel_rows[0]
    if channel_rows.count(channels) != n or (channels is not order and channels != order):  # rule 2
        return None
    if list(map(type, values)).count(PackedValues) != n:  # rule 1
        return None
    layout = values[0].layout
    if list(map(_LAYOUT, values)).count(layout) != n or not layout_ok(layout):  # rule 3
        return None
    generation = envelopes[0].generation
    if list(map(_GENERATION, envelopes)).count(generation) != n:  # rule 4
        return None
    try:
        payload = b"".join(map(_BUFFER, values))  # one copy; a strided buffer refuses
    except (BufferError, TypeError, ValueError):
        return None
    if len(payload) != n * record_bytes:
        return None
    return RecordColumns(
        stream, int(generation),
        np.fromiter(map(_GLOBAL, envelopes), np.uint64, n),
        np.fromiter(map(_SOURCE_SEQ, envelopes), np.uint64, n),
        np.fromiter(map(_SIM_TIME, envelopes), np.int64, n),
        record_bytes, payload, np.fromiter(map(_CHANNEL_SEQ, blocks), np.int64, n),
    )


def _arena_columns(
    stream: str,
    order: tuple[str, ...],
    record_bytes: int,
    layout_ok: Callable[[PackedLayout], bool],
    carriers: Sequence[Any],
) -> RecordColumns | None:
    """The run from Core's tick arena (module header), or ``None``: not one arena range."""
    try:
        buffers = list(map(_TICK_BUFFER, carriers))
    except AttributeError:
        return None
    arena = tick_arena_of(buffers[0])
    if arena is None:
        return None
    n = len(buffers)
    start = arena.index.get(id(buffers[0]), -1)
    if start < 0:
        return None
    stop = start + n
    wrap = max(0, stop - arena.size)  # the run's rows past the last one restart at row 0

    def rows(column: list[Any]) -> list[Any]:
        return column[start:stop] if not wrap else column[start:] + column[:wrap]

    if list(map(id, buffers)) != rows(arena.ids):  # rule A5
        return None
    channels, layout = arena.channels, arena.layout
    if (channels is not order and channels != order) or arena.nbytes != record_bytes:  # rules 2-3
        return None
    if not isinstance(layout, PackedLayout) or not layout_ok(layout):  # rule 3
        return None
    generations = rows(arena.generation)
    generation = generations[0]
    if generations.count(generation) != n:  # rule 4
        return None
    payload = (arena.payload(start, stop) if not wrap  # one existing range
               else b"".join((arena.payload(start, arena.size), arena.payload(0, wrap))))
    return RecordColumns(
        stream, int(generation),
        np.array(rows(arena.global_sequence), np.uint64),
        np.array(rows(arena.capture_sequence), np.uint64),
        np.array(rows(arena.sim_time_ns), np.int64),
        record_bytes, payload, np.array(rows(arena.channel_sequence), np.int64), buffers,
    )
