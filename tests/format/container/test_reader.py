"""Reader: streams, records by stream, seek through the index, lazy payloads."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fastsim_recording_format import FormatError, FsrReader, RecordKind
from fastsim_recording_format.synth import CAMERA_STREAM, write_synthetic

from .helpers import STREAMS, CountingFile, regions, small_batches, small_file, write_bytes


def _many_batches() -> bytes:
    buf = io.BytesIO()
    write_synthetic(buf, 1200, 100, camera_every=6, camera_bytes=3000, generations=3, batch_items=50)
    return buf.getvalue()


def test_streams_and_run_metadata_are_listed() -> None:
    """The stream table, run metadata, mode and integrity are available after open."""
    with FsrReader(io.BytesIO(small_file())) as reader:
        assert [s.name for s in reader.streams] == ["obs.joints", "cameras.front.rgb", "events"]
        assert reader.stream("events").stream_id == 9
        assert reader.stream(7).name == "cameras.front.rgb"
        assert reader.run.completion_id == "completion-1"
        assert (reader.mode, reader.integrity, reader.recovered) == ("record", "strong", False)
        with pytest.raises(KeyError):
            reader.stream("nope")


def test_records_come_in_global_order_with_kinds() -> None:
    """Records are yielded in global order and keep their kind, ranges and metadata."""
    with FsrReader(io.BytesIO(small_file())) as reader:
        records = list(reader.records())
    assert [r.global_sequence for r in records] == [1, 2, 3, 4, 5, 7, 8, 9, 10]
    gap = records[4]
    assert (gap.kind, gap.global_last, gap.stream_last, gap.metadata) == (
        RecordKind.GAP, 6, 3, {"reason": "drop_oldest"}
    )
    assert records[2].metadata == {"event": "start", "note": "é"}


def test_iterating_reads_no_payload_until_asked() -> None:
    """Iterating records reads no payload byte; .payload reads exactly that record's bytes."""
    data = small_file("structural")
    payload = [(a, b) for a, b, n in regions(data) if n == "payload"]
    counting = CountingFile(data)
    with FsrReader(counting) as reader:  # type: ignore[arg-type]
        records = list(reader.records())
        assert not any(at < b and a < at + n for at, n in counting.reads for a, b in payload)
        before = counting.bytes_read
        assert records[0].payload == b"j" * 13
        assert counting.bytes_read == before + 13


def test_seek_reads_only_the_batch_it_needs() -> None:
    """seek() binary-searches the projections and reads one batch's header and table."""
    data = _many_batches()
    counting = CountingFile(data)
    with FsrReader(counting) as reader:  # type: ignore[arg-type]
        index = reader.batch_index
        opened = len(counting.reads)
        first = next(reader.seek(CAMERA_STREAM, 1, 2_000_000_000))
        touched = {
            k for at, n in counting.reads[opened:]
            for k, e in enumerate(index) if int(e["offset"]) <= at < int(e["offset"]) + int(e["length"])
        }
        assert len(touched) == 1
        assert (first.generation, first.stream_id) == (1, CAMERA_STREAM)
        assert first.sim_time_ns >= 2_000_000_000
        everything = [r for r in reader.records(CAMERA_STREAM) if (r.generation, r.sim_time_ns) >= (1, 2_000_000_000)]
        assert first == everything[0]


def test_seek_past_the_end_yields_nothing() -> None:
    """A target after the stream's last record yields no records."""
    with FsrReader(io.BytesIO(_many_batches())) as reader:
        assert list(reader.seek("obs.1", 99, 0)) == []


def test_records_by_stream_skip_batches_without_that_stream() -> None:
    """records(stream) reads only batches whose projections list that stream."""
    batches = small_batches()
    data = write_bytes(STREAMS, [*batches, [batches[0][0].__class__.data(9, 11, 3, 1, 9, b"x")]])
    counting = CountingFile(data)
    with FsrReader(counting) as reader:  # type: ignore[arg-type]
        last = reader.batch_index[-1]
        opened = len(counting.reads)
        assert [r.global_sequence for r in reader.records("obs.joints")] == [1, 4, 8, 9]
        assert not any(int(last["offset"]) <= at for at, _ in counting.reads[opened:])


def test_unsealed_file_is_not_readable_but_named() -> None:
    """An unsealed file is a FormatError saying it is not sealed."""
    data = write_bytes(STREAMS, small_batches(), seal=False)
    with pytest.raises(FormatError, match="not sealed"):
        FsrReader(io.BytesIO(data))


def test_reader_opens_a_path(tmp_path: Path) -> None:
    """FsrReader accepts a path and closes the file it opened."""
    path = tmp_path / "x.fsr"
    path.write_bytes(small_file())
    with FsrReader(path) as reader:
        assert reader.footer["records"] == 9
