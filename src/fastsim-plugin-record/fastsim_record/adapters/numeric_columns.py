"""The columnar numeric path: a run of observation carriers -> one ``RecordColumns``.

The writer worker drains the numeric lane as a list of carriers (contract envelopes
admitted by a pump).  For a run of them, ``numeric_columns`` reads every field with
C-level maps (``operator.attrgetter`` over the list, ``numpy.fromiter``), so no Python
object is built per tick.  The payload is the run's tick buffers themselves, as a tuple
(row 5): they are written to the file with one vectored write, never joined.  Each row is
still one atomic record, with the same bytes as ``NumericTickEncoder.encode``.

    | # | the run qualifies when every tick ...                               | else   |
    |---|---------------------------------------------------------------------|--------|
    | 1 | is an ``ObservationTick`` (the pump checked it) of a ``SampleBlock``  | None   |
    |   | over ``PackedValues``                                               |        |
    | 2 | shares one channel tuple, the stream's declared order                | None   |
    | 3 | shares one ``PackedLayout`` that is the record layout (rules 1-3 of  | None   |
    |   | ``payloads``), and a C-contiguous buffer                             |        |
    | 4 | is in one generation                                                 | None   |
    | 5 | has a read-only, C-contiguous numpy buffer of ``record_bytes`` (the   | joined |
    |   | ``PackedValues`` contract: nobody mutates it): the payload is the     | (one   |
    |   | tuple of buffers; otherwise one joined copy taken now                 | copy)  |

``None`` sends the run through the per-record path, which names any drift exactly.

A block carrier (issue 26: one envelope of a Core's ``ObservationBlock``, ``k`` ticks) needs
none of the passes above: ``block_columns`` builds its ``RecordColumns`` with numpy at once
-- the global and stream sequences by ``arange`` from the envelope's first ones, the block's
``sim_time_ns``, the block's buffer as one 1-D byte view (read-only, checked at the pump),
the channel sequences stepping by one -- when its layout is the record layout (rule 3);
``None`` otherwise, and the block's ticks then take the per-record path.
The diagnostic ``channel_sequence`` of each tick travels as a column (issue 27); whether it
steps by one over the whole run is found here, once (``RecordColumns.channel_steady``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fastsim_contract.values import PackedLayout, PackedValues
from fastsim_record.ports.sinks import RecordColumns

__all__ = ["block_columns", "numeric_columns"]

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
_FLAGS = operator.attrgetter("flags.c_contiguous", "flags.writeable", "nbytes")


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
    envelopes = carriers  # a carrier is its contract envelope
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
    buffers = tuple(map(_BUFFER, values))
    payload: tuple[Any, ...] | bytes
    try:  # rule 5: one C-level pass reads each buffer's flags and size
        frozen = list(map(_FLAGS, buffers)).count((True, False, record_bytes)) == n
    except AttributeError:  # not numpy arrays
        frozen = False
    if frozen and list(map(type, buffers)).count(np.ndarray) == n:
        payload = buffers
    else:
        try:
            payload = b"".join(buffers)  # one copy; a strided buffer refuses
        except (BufferError, TypeError, ValueError):
            return None
        if len(payload) != n * record_bytes:
            return None
    chan = np.fromiter(map(_CHANNEL_SEQ, blocks), np.int64, n)
    # rule CS1's steady state, found once per run: the ends n - 1 apart, strictly increasing
    steady = chan.item(-1) - chan.item(0) == n - 1 and (n == 1 or not np.count_nonzero(chan[1:] <= chan[:-1]))
    return RecordColumns(
        stream, int(generation),
        np.fromiter(map(_GLOBAL, envelopes), np.uint64, n),
        np.fromiter(map(_SOURCE_SEQ, envelopes), np.uint64, n),
        np.fromiter(map(_SIM_TIME, envelopes), np.int64, n),
        record_bytes, payload, chan, steady,
    )


def block_columns(
    stream: str, record_bytes: int, layout_ok: Callable[[PackedLayout], bool], carrier: Any
) -> RecordColumns | None:
    """A block carrier's ``k`` records column-wise (module doc), or ``None`` (rule 3 fails)."""
    block = carrier.payload
    layout = block.layout
    if layout.nbytes != record_bytes or not layout_ok(layout):
        return None
    k = len(block.ticks)
    first, capture, chan = carrier.global_sequence, carrier.source_sequence, block.channel_sequence
    return RecordColumns(
        stream, int(carrier.generation),
        np.arange(first, first + k, dtype=np.uint64),
        np.arange(capture, capture + k, dtype=np.uint64),
        block.sim_time_ns, record_bytes, block.buffer.reshape(-1).view(np.uint8),
        np.arange(chan, chan + k, dtype=np.int64), True, True,  # times: block rule 8, at admission
    )
