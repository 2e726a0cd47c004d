"""The sink side of the pipeline: encoded records out, a validated artifact at the end.

The writer worker is the only caller.  It hands the sink whole batches of records that
are already encoded and ordered by global sequence; the sink owns the container format
(FSR 1.2) and drives it over the opaque write lease.

The columnar numeric path: a ``ColumnEncoder`` (the numeric-tick encoder) turns a run of
carriers into one :class:`RecordColumns` -- many DATA records of one stream held
column-wise, payloads as one buffer or as the tick buffers themselves -- with no Python
object per record.  Each row is
still one atomic record and the file holds the same bytes as for per-record
``OutRecord`` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import attrs

__all__ = [
    "ColumnEncoder", "ColumnSink", "OutRecord", "PayloadEncoder", "RecordColumns", "RecordSink", "StreamDecl",
]

_NO_METADATA: Mapping[str, object] = MappingProxyType({})


@attrs.frozen
class StreamDecl:
    """One output stream: declared once, before the first record."""

    name: str
    kind: str  # lifecycle | events | control | observations | gap ...
    codec: Mapping[str, object]
    attributes: Mapping[str, object] = attrs.field(factory=dict)
    required: bool = True


class OutRecord(NamedTuple):
    """One record ready for the container: encoded exactly once, in global order.

    A named tuple, not an attrs class: the writer worker builds one per record, and a
    tuple costs a tenth of a frozen instance to build (``bench_unpaced``)."""

    stream: str
    kind: str  # "data" | "gap" | "barrier"
    global_sequence: int
    stream_sequence: int
    generation: int
    sim_time_ns: int
    payload: bytes
    metadata: Mapping[str, object] = _NO_METADATA
    global_last: int = 0  # gaps: last global sequence covered (0: same as first)
    stream_last: int = 0  # gaps: last stream sequence covered (0: same as first)


@attrs.frozen(eq=False)
class RecordColumns:
    """Many DATA records of one stream and generation, column-wise (module header).

    ``global_sequence``, ``stream_sequence`` (uint64), ``sim_time_ns`` and
    ``channel_sequence`` (int64; the diagnostic live sequence of each tick, or ``None``)
    are numpy arrays with one value per record; ``payload`` is one contiguous buffer of
    ``count * record_bytes`` bytes (bytes-like, or a one-dimensional ``uint8`` array, which
    ``part`` slices as itself), or a tuple of ``count`` buffers of ``record_bytes``
    each (the tick buffers as Core published them: read-only, never joined).
    ``channel_steady``: the maker found ``channel_sequence`` stepping by one over every
    record (so does any part of it; the sink then needs no pass over it, rule CS1).
    ``times_ordered``: the maker knows ``sim_time_ns`` never goes down (a block carrier's
    times, checked at admission: ``core_binding`` block rule 8), so the batch writer needs no pass."""

    stream: str
    generation: int
    global_sequence: Any
    stream_sequence: Any
    sim_time_ns: Any
    record_bytes: int
    payload: Any
    channel_sequence: Any = None
    channel_steady: bool = False
    times_ordered: bool = False

    @property
    def count(self) -> int:
        """Records held."""
        return len(self.global_sequence)

    def part(self, start: int, stop: int) -> RecordColumns:
        """Records ``start .. stop-1`` (views, no copy)."""
        size = self.record_bytes
        chan = self.channel_sequence
        payload = self.payload
        part: Any
        if payload.__class__ is tuple:
            part = payload[start:stop]
        elif isinstance(payload, bytes | bytearray | memoryview):
            part = memoryview(payload)[start * size:stop * size]
        else:  # a one-dimensional byte array (a columnar block): a view of the same class
            part = payload[start * size:stop * size]
        return RecordColumns(
            self.stream, self.generation, self.global_sequence[start:stop],
            self.stream_sequence[start:stop], self.sim_time_ns[start:stop], size, part,
            None if chan is None else chan[start:stop], self.channel_steady, self.times_ordered,
        )


class ColumnEncoder(Protocol):
    """A payload encoder that also encodes a run of carriers column-wise (worker only)."""

    def encode_columns(self, carriers: Sequence[Any]) -> RecordColumns | None:
        """The run's records, or ``None`` when the run does not fit the columnar form
        (then each item takes the per-record path, which names any problem)."""
        ...


class PayloadEncoder(Protocol):
    """Turns one captured payload into bytes; runs only in the writer worker."""

    @property
    def codec(self) -> Mapping[str, object]:
        """The stream's codec description (recorded in the stream table)."""
        ...

    def encode(self, payload: object) -> bytes: ...


class RecordSink(Protocol):
    """The artifact being written; every method runs on the writer worker."""

    def write_batch(self, records: Sequence[OutRecord]) -> int:
        """Append one batch (records in global order); returns the bytes written."""
        ...

    def finish(
        self, *, degraded: bool, fence: Mapping[str, object]
    ) -> Mapping[str, object]:
        """Seal, validate through the exact readback lease, confirm and commit.

        Returns the summary facts (committed name, receipt, readback elapsed).
        """
        ...

    def abort(self) -> None:
        """Abort the output transaction (never after a host deadline cancel)."""
        ...


class ColumnSink(RecordSink, Protocol):
    """A sink that also takes ``RecordColumns`` in a batch (the FSR sink); the worker forms
    column runs only for a sink that says so (``accepts_columns``)."""

    accepts_columns: bool

    def write_batch(self, records: Sequence[OutRecord | RecordColumns]) -> int:
        """Append one batch of records and column runs, in global order."""
        ...
