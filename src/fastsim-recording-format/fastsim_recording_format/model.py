"""Values of the FSR model: record kinds, streams, run metadata, records in and out.

Decision table: what a record's ranges mean

| # | kind    | global range                    | stream range                    | payload |
|---|---------|---------------------------------|---------------------------------|---------|
| 1 | DATA    | exactly ``global_sequence``     | exactly ``stream_sequence``     | any     |
| 2 | BARRIER | exactly ``global_sequence``     | exactly ``stream_sequence``     | any     |
| 3 | GAP     | ``[global_sequence, global_last]`` | ``[stream_sequence, stream_last]`` | empty |
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import attrs

__all__ = [
    "INTEGRITY_PROFILES",
    "Payload",
    "MODES",
    "Record",
    "RecordIn",
    "RecordKind",
    "RecordRow",
    "RunMetadata",
    "SealResult",
    "StreamSpec",
]

#: what a writer accepts as a payload: any contiguous bytes-like object
Payload = bytes | bytearray | memoryview

INTEGRITY_PROFILES = ("structural", "fast", "strong")
MODES = ("record", "render")


class RecordKind(enum.IntEnum):
    """What a record is: data, an exact stand-in for lost records, or a generation barrier."""

    DATA = 0
    GAP = 1
    BARRIER = 2


def _as_dict(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value) if value else {}


@attrs.frozen
class StreamSpec:
    """One entry of the stream table: id, unique name, kind, codec description, attributes."""

    stream_id: int
    name: str
    kind: str
    codec: dict[str, Any] = attrs.field(factory=dict, converter=_as_dict, hash=False)
    attributes: dict[str, Any] = attrs.field(factory=dict, converter=_as_dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """The stream table entry as stored in the run metadata (the fields, in order)."""
        return attrs.asdict(self, recurse=False)


@attrs.frozen
class RunMetadata:
    """Who produced the file and for which run and completion; written once at open."""

    run_id: str
    completion_id: str
    producer: dict[str, Any] = attrs.field(factory=dict, converter=_as_dict, hash=False)
    mode: str = "record"
    source_sha256: str | None = None
    attributes: dict[str, Any] = attrs.field(factory=dict, converter=_as_dict, hash=False)


class RecordRow(NamedTuple):
    """A record handed to the writer, every field given: what a producer that writes one
    record per tick builds (the writer worker).  ``RecordIn`` is the same row with
    defaults; ``FsrWriter.write_batch`` accepts either."""

    stream_id: int
    kind: RecordKind
    global_sequence: int
    stream_sequence: int
    generation: int
    sim_time_ns: int
    payload: Payload
    metadata: Mapping[str, Any]
    global_last: int
    stream_last: int


class RecordIn(RecordRow):
    """A ``RecordRow`` with defaults: an empty payload and metadata, and
    ``global_last``/``stream_last`` equal to the firsts (a BARRIER record is
    ``RecordIn(stream_id, RecordKind.BARRIER, ...)``).

    ``payload`` may be any contiguous bytes-like object (bytes, bytearray, memoryview,
    a C-contiguous numpy array); its length is its byte count.
    """

    __slots__ = ()

    def __new__(
        cls, stream_id: int, kind: RecordKind, global_sequence: int, stream_sequence: int, generation: int,
        sim_time_ns: int, payload: Payload = b"", metadata: Mapping[str, Any] | None = None,
        global_last: int | None = None, stream_last: int | None = None,
    ) -> RecordIn:
        return super().__new__(
            cls, stream_id, kind, global_sequence, stream_sequence, generation, sim_time_ns, payload,
            {} if metadata is None else metadata,
            global_sequence if global_last is None else global_last,
            stream_sequence if stream_last is None else stream_last,
        )

    @classmethod
    def data(
        cls,
        stream_id: int,
        global_sequence: int,
        stream_sequence: int,
        generation: int,
        sim_time_ns: int,
        payload: Payload,
        metadata: dict[str, Any] | None = None,
    ) -> RecordIn:
        """A DATA record."""
        return cls(
            stream_id, RecordKind.DATA, global_sequence, stream_sequence, generation,
            sim_time_ns, payload, metadata or {},
        )

    @classmethod
    def gap(
        cls,
        stream_id: int,
        global_range: tuple[int, int],
        stream_range: tuple[int, int],
        generation: int,
        sim_time_ns: int,
        metadata: dict[str, Any] | None = None,
    ) -> RecordIn:
        """A GAP record explaining inclusive global and stream sequence ranges."""
        return cls(
            stream_id, RecordKind.GAP, global_range[0], stream_range[0], generation,
            sim_time_ns, b"", metadata or {}, global_range[1], stream_range[1],
        )


@attrs.frozen
class Record:
    """A record read back from a file; ``payload`` is read from the file on first access."""

    stream_id: int
    kind: RecordKind
    global_sequence: int
    global_last: int
    stream_sequence: int
    stream_last: int
    generation: int
    sim_time_ns: int
    metadata: dict[str, Any] = attrs.field(hash=False)
    payload_length: int
    batch_ordinal: int
    _load: Callable[[], bytes] = attrs.field(eq=False, repr=False, hash=False)
    #: file offset of the payload's first byte (-1 when the record was not read from a file)
    payload_offset: int = attrs.field(default=-1, eq=False, hash=False)

    @property
    def payload(self) -> bytes:
        """The payload bytes (read lazily, on every access)."""
        return self._load()

    def as_record_in(self) -> RecordIn:
        """This record as writer input (reads the payload)."""
        return RecordIn(
            self.stream_id, self.kind, self.global_sequence, self.stream_sequence,
            self.generation, self.sim_time_ns, self.payload, dict(self.metadata),
            self.global_last, self.stream_last,
        )


@attrs.frozen
class SealResult:
    """What ``FsrWriter.seal`` wrote."""

    size: int
    batches: int
    records: int
    degraded: bool
    footer_identity: str
