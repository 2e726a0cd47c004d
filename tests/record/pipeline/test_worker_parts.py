"""The writer worker's two parts: the record encoder and the batch writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import pytest

from fastsim_record.core.batching import BatchLimits, FlushReason
from fastsim_record.core.captured import CapturedItem, EnvelopeKind, LaneName
from fastsim_record.core.gaps import GapReason, GapRecord
from fastsim_record.errors import OutputError, RecordingFailed
from fastsim_record.pipeline.batch_writer import BatchWriter
from fastsim_record.pipeline.record_encoder import RecordEncoder
from fastsim_record.ports.sinks import OutRecord


class ListSink:
    """Keeps every batch; fails on demand."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[OutRecord]] = []
        self.fail = fail

    def write_batch(self, records: Sequence[OutRecord]) -> int:
        if self.fail:
            raise OSError("disk full")
        self.batches.append(list(records))
        return 100

    def finish(self, *, degraded: bool, fence: object) -> dict[str, object]:
        return {}

    def abort(self) -> None:
        return None


class Bytes:
    codec: Mapping[str, object] = MappingProxyType({"payload_codec": "test"})

    def encode(self, payload: object) -> bytes:
        if payload is None:
            raise ValueError("nothing to encode")
        return str(payload).encode()


def _record(seq: int, generation: int = 0) -> OutRecord:
    return OutRecord("s", "data", seq, seq, generation, seq * 10, b"abcd")


def _item(seq: int, *, generation: int = 0, payload: object = 1, kind: EnvelopeKind = EnvelopeKind.RECORD) -> CapturedItem:
    return CapturedItem(
        global_sequence=seq, source="s", capture_sequence=seq, stream="s", lane=LaneName.NUMERIC,
        generation=generation, sim_time_ns=seq * 10, kind=kind, payload=payload,
    )


def _gap(seq: int, generation: int = 0) -> GapRecord:
    return GapRecord(
        stream="s", source="s", lane=LaneName.NUMERIC, reason=GapReason.DROP_NEWEST,
        generation=generation, required=False, first_global=seq, last_global=seq,
        first_capture=seq, last_capture=seq,
    )


def test_batch_writer_writes_each_closed_batch_and_counts_it() -> None:
    """Two-item batches: three records write one batch; closing writes the partial one."""
    sink = ListSink()
    writer = BatchWriter(sink, BatchLimits(max_items=2, max_bytes=1 << 20, max_sim_span_ns=1 << 62))
    for seq in (1, 2, 3):
        writer.add(_record(seq))
    assert [len(b) for b in sink.batches] == [2]
    writer.close(FlushReason.FINALIZE)
    counters = writer.counters()
    assert [len(b) for b in sink.batches] == [2, 1]
    assert (counters["batches"], counters["records"], counters["payload_bytes"]) == (2, 3, 12)
    assert counters["flush_reasons"] == {"items": 1, "finalize": 1}


def test_batch_writer_closes_a_held_batch_only_across_generations() -> None:
    """B5: a barrier into a new generation closes the held batch; the same generation does not."""
    sink = ListSink()
    writer = BatchWriter(sink, BatchLimits(max_items=64, max_bytes=1 << 20, max_sim_span_ns=1 << 62))
    writer.add(_record(1))
    writer.close_generation(0)
    assert sink.batches == []
    writer.close_generation(1)
    assert [len(b) for b in sink.batches] == [1]


def test_a_failing_sink_is_an_output_error_naming_the_batch() -> None:
    """An unexpected sink exception becomes one OutputError line with the batch number."""
    writer = BatchWriter(ListSink(fail=True), BatchLimits(max_items=1, max_bytes=1 << 20, max_sim_span_ns=1 << 62))
    with pytest.raises(OutputError, match="writing batch 0 failed: disk full"):
        writer.add(_record(1))


def test_a_gap_takes_the_previous_record_time_of_its_generation() -> None:
    """FSR gap rule: the stream's last record time in the same generation, else 0."""
    records = RecordEncoder({"s": Bytes()}, lambda _payload: b"{}")
    data, released_gil = records.data(_item(1))
    assert (data.kind, data.payload, released_gil) == ("data", b"1", False)
    assert records.gap(_gap(2)).sim_time_ns == 10
    assert records.gap(_gap(3, generation=1)).sim_time_ns == 0
    assert (records.ledger.gap_count, records.encoded) == (2, 1)


def test_an_encoder_exception_is_a_recording_failure_naming_the_stream() -> None:
    """Anything an encoder raises that is not a RecordError is RecordingFailed for its stream."""
    records = RecordEncoder({"s": Bytes()}, lambda _payload: b"{}")
    with pytest.raises(RecordingFailed, match="s: encoding failed"):
        records.data(_item(1, payload=None))


def test_a_barrier_record_carries_the_barrier_encoders_payload() -> None:
    """Row 2: a barrier becomes a BARRIER record with its tick and the encoded barrier."""
    records = RecordEncoder({}, lambda payload: repr(payload).encode())
    record = records.barrier(_item(4, generation=1, payload="b", kind=EnvelopeKind.BARRIER))
    assert (record.kind, record.payload, record.generation, dict(record.metadata)) == ("barrier", b"'b'", 1, {"tick": 0})
