"""Round trips: whatever is written is read back identically, and validates."""

from __future__ import annotations

import io

from hypothesis import given

from fastsim_record.testing.strategies import fsr_recordings
from fastsim_recording_format import FsrReader, RecordIn, RecordKind, StreamSpec, validate

from .helpers import RUN, write_bytes


def _as_in(reader: FsrReader) -> list[RecordIn]:
    return [r.as_record_in() for r in reader.records()]


@given(fsr_recordings())
def test_any_recording_round_trips(recording: tuple[list[StreamSpec], list[list[RecordIn]]]) -> None:
    """Every stream and record written (fields, metadata, payload) is read back identically."""
    streams, batches = recording
    data = write_bytes(streams, batches, "strong", {"n": len(batches)})
    written = [r for batch in batches for r in batch]
    with FsrReader(io.BytesIO(data)) as reader:
        assert reader.streams == tuple(sorted(streams, key=lambda s: s.stream_id))
        assert reader.run == RUN
        assert _as_in(reader) == written
        for spec in streams:
            got = [r.as_record_in() for r in reader.records(spec.name)]
            assert got == [r for r in written if r.stream_id == spec.stream_id]
        assert reader.footer["records"] == len(written)
        assert reader.footer["batches"] == len(batches)
        assert reader.footer["terminal_fence"] == {"n": len(batches)}
        assert reader.degraded == any(r.kind is RecordKind.GAP for r in written)
    validate(io.BytesIO(data))
    validate(io.BytesIO(data), "strong", "sha256")


@given(fsr_recordings(max_records=30))
def test_seek_matches_a_linear_filter(recording: tuple[list[StreamSpec], list[list[RecordIn]]]) -> None:
    """seek(stream, generation, t) yields exactly the stream's records at or after (generation, t)."""
    streams, batches = recording
    data = write_bytes(streams, batches)
    written = [r for batch in batches for r in batch]
    with FsrReader(io.BytesIO(data)) as reader:
        for spec in streams:
            mine = [r for r in written if r.stream_id == spec.stream_id]
            targets = {(r.generation, r.sim_time_ns) for r in mine} | {(0, -(2**62)), (2**31, 0)}
            targets |= {(g, t + 1) for g, t in list(targets)}
            ordered = sorted(targets)
            for gen, t in ordered[:: max(1, len(ordered) // 6)]:
                expected = [r for r in mine if (r.generation, r.sim_time_ns) >= (gen, t)]
                assert [r.as_record_in() for r in reader.seek(spec.stream_id, gen, t)] == expected
