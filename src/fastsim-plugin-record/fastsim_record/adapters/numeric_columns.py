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
The diagnostic ``channel_sequence`` of each tick travels as a column (issue 27).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fastsim_contract.values import PackedLayout, PackedValues
from fastsim_record.ports.sinks import RecordColumns

__all__ = ["numeric_columns"]

#: one C-level pass over the run reads what every tick must share (rules 1-4): a tuple
#: per tick, compared with ``list.count`` (identity first: Core shares one channel tuple
#: and one layout per Run)
_SHARED = operator.attrgetter(
    "envelope.payload.samples.channels", "envelope.payload.samples.values.__class__",
    "envelope.payload.samples.values.layout", "envelope.generation",
)
#: one pass picks every numeric column into one structured array (``numpy.fromiter``)
_NUMBERS = operator.attrgetter(
    "envelope.global_sequence", "envelope.source_sequence", "envelope.sim_time_ns",
    "envelope.payload.samples.channel_sequence",
)
_PICK = np.dtype([("g", "<u8"), ("s", "<u8"), ("t", "<i8"), ("c", "<i8")])
_BUFFER = operator.attrgetter("envelope.payload.samples.values.buffer")
#: rule 5 in one pass: type, flag bits (one flags object per buffer) and size
_KIND = operator.attrgetter("__class__", "flags.num", "nbytes")
_FLAGS = operator.attrgetter("flags.c_contiguous", "flags.writeable", "nbytes")
_C_CONTIGUOUS = 0x1  # numpy's NPY_ARRAY_C_CONTIGUOUS
_WRITEABLE = 0x400  # numpy's NPY_ARRAY_WRITEABLE


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
    try:  # ticks were checked to be ObservationTick values at the pump (binding rule 4)
        shared = list(map(_SHARED, carriers))  # only a SampleBlock of PackedValues has these
    except AttributeError:
        return None
    channels, kind, layout, generation = first = shared[0]
    if shared.count(first) != n:  # rules 1-4: one channel tuple, type, layout, generation
        return None
    if (channels is not order and channels != order) or kind is not PackedValues or not layout_ok(layout):
        return None
    try:
        numbers = np.fromiter(map(_NUMBERS, carriers), _PICK, n)
    except (AttributeError, OverflowError, TypeError, ValueError):
        return None  # the per-record path names the field
    buffers = tuple(map(_BUFFER, carriers))
    payload: tuple[Any, ...] | bytes
    try:  # rule 5: one C-level pass reads each buffer's type, flags and size
        kinds = list(map(_KIND, buffers))
    except AttributeError:  # not numpy arrays
        kinds = []
    if kinds and kinds.count(kinds[0]) == n:  # one producer: every buffer alike (the steady state)
        cls, flags, size = kinds[0]
        frozen = cls is np.ndarray and size == record_bytes and flags & (_C_CONTIGUOUS | _WRITEABLE) == _C_CONTIGUOUS
    else:
        frozen = bool(kinds) and list(map(type, buffers)).count(np.ndarray) == n and (
            list(map(_FLAGS, buffers)).count((True, False, record_bytes)) == n
        )
    if frozen:
        payload = buffers
    else:
        try:
            payload = b"".join(buffers)  # one copy; a strided buffer refuses
        except (BufferError, TypeError, ValueError):
            return None
        if len(payload) != n * record_bytes:
            return None
    chan = numbers["c"]  # rule CS1's steady state, found once per run: steps by one
    steady = chan.item(-1) - chan.item(0) == n - 1 and (n == 1 or not np.count_nonzero(chan[1:] <= chan[:-1]))
    return RecordColumns(
        stream, int(generation), numbers["g"], numbers["s"], numbers["t"], record_bytes, payload, chan, steady,
    )
