"""The sink side of the pipeline: encoded records out, a validated artifact at the end.

The writer worker is the only caller.  It hands the sink whole batches of records that
are already encoded and ordered by global sequence; the sink owns the container format
(FSR 1.2) and drives it over the opaque write lease.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple, Protocol

import attrs

__all__ = ["OutRecord", "PayloadEncoder", "RecordSink", "StreamDecl"]

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
        """Append one batch; returns the payload bytes written."""
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
