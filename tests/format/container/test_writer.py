"""Writer: refuses invalid input without corrupting the file, states, metadata encoding."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import (
    FsrReader,
    FsrWriter,
    RecordIn,
    RecordKind,
    RunMetadata,
    StreamSpec,
    recover,
    validate,
)

from .helpers import RUN, STREAMS, small_batches


def _writer(buf: io.BytesIO | None = None) -> FsrWriter:
    return FsrWriter(buf or io.BytesIO(), RUN, STREAMS)


BAD_BATCHES = [
    ("empty", [], "at least one record"),
    ("undeclared stream", [RecordIn.data(2, 1, 1, 0, 0, b"")], "undeclared stream 2"),
    ("hole inside", [RecordIn.data(1, 1, 1, 0, 0, b""), RecordIn.data(1, 3, 2, 0, 0, b"")], "global sequence hole"),
    ("stream overlap", [RecordIn.data(1, 1, 1, 0, 0, b""), RecordIn.data(1, 2, 1, 0, 0, b"")], "stream sequence hole or overlap"),
    ("time backwards", [RecordIn.data(1, 1, 1, 0, 5, b""), RecordIn.data(1, 2, 2, 0, 4, b"")], "goes backwards"),
    ("generation backwards", [RecordIn.data(1, 1, 1, 1, 5, b""), RecordIn.data(1, 2, 2, 0, 9, b"")], "goes backwards"),
    ("gap with payload", [RecordIn(1, RecordKind.GAP, 1, 1, 0, 0, b"x")], "GAP record has a payload"),
    ("reversed gap", [RecordIn(1, RecordKind.GAP, 5, 1, 0, 0, b"", {}, 4, 1)], "reversed"),
    ("data with range", [RecordIn(1, RecordKind.DATA, 1, 1, 0, 0, b"", {}, 2, 1)], "more than one sequence"),
    ("negative sequence", [RecordIn.data(1, -1, 1, 0, 0, b"")], "out of range"),
    ("NaN metadata", [RecordIn.data(1, 1, 1, 0, 0, b"", {"x": math.nan})], "not JSON-able"),
    ("object metadata", [RecordIn.data(1, 1, 1, 0, 0, b"", {"x": object()})], "not JSON-able"),
]


@pytest.mark.parametrize(("label", "batch", "reason"), BAD_BATCHES, ids=[b[0] for b in BAD_BATCHES])
def test_invalid_batches_are_refused_and_the_file_stays_valid(label: str, batch: list[RecordIn], reason: str) -> None:
    """A refused batch raises ValueError and writes nothing; the file still seals valid."""
    buf = io.BytesIO()
    writer = _writer(buf)
    before = writer.position
    with pytest.raises(ValueError, match=reason):
        writer.write_batch(batch)
    assert writer.position == before == len(buf.getvalue())
    writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"ok")])
    writer.seal()
    validate(io.BytesIO(buf.getvalue()))


def test_continuity_is_checked_across_batches() -> None:
    """A batch that does not continue the previous one's global sequence is refused."""
    writer = _writer()
    writer.write_batch([RecordIn.data(1, 10, 1, 0, 0, b"")])
    with pytest.raises(ValueError, match="expected 11, found 12"):
        writer.write_batch([RecordIn.data(1, 12, 2, 0, 0, b"")])


@pytest.mark.parametrize(
    ("run", "streams", "reason"),
    [
        (RUN, [StreamSpec(1, "a", "k"), StreamSpec(1, "b", "k")], "strictly increasing"),
        (RUN, [StreamSpec(1, "a", "k"), StreamSpec(2, "a", "k")], "duplicate stream name"),
        (RUN, [StreamSpec(1, "", "k")], "name must be a non-empty string"),
        (RunMetadata("r", "c", mode="replay"), STREAMS, "mode must be one of"),
        (RunMetadata("r", "c", source_sha256="ABC"), STREAMS, "source_sha256"),
        (RunMetadata("", "c"), STREAMS, "run_id must be a non-empty string"),
        (RUN, [StreamSpec(1, "a", "k", {"x": math.inf})], "not JSON-able"),
    ],
)
def test_invalid_run_metadata_is_refused(run: RunMetadata, streams: list[StreamSpec], reason: str) -> None:
    """Bad stream tables and run metadata are refused before anything is written."""
    buf = io.BytesIO()
    with pytest.raises(ValueError, match=reason):
        FsrWriter(buf, run, streams)
    assert buf.getvalue() == b""


def test_writer_states() -> None:
    """After seal no batch or second seal is accepted; close is idempotent."""
    writer = _writer()
    writer.write_batch(small_batches()[0])
    writer.seal()
    with pytest.raises(ValueError, match="sealed"):
        writer.write_batch(small_batches()[1])
    with pytest.raises(ValueError, match="sealed"):
        writer.seal()
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.flush()


def test_empty_metadata_is_stored_as_zero_bytes() -> None:
    """The empty object costs no metadata bytes; other metadata is canonical JSON."""
    buf = io.BytesIO()
    writer = _writer(buf)
    writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"", {}), RecordIn.data(1, 2, 2, 0, 0, b"", {"b": 1, "a": "é"})])
    writer.seal()
    assert b'{"a":"\xc3\xa9","b":1}' in buf.getvalue()
    with FsrReader(io.BytesIO(buf.getvalue())) as reader:
        assert [r.metadata for r in reader.records()] == [{}, {"b": 1, "a": "é"}]


def test_seal_reports_and_marks_degraded(tmp_path: Path) -> None:
    """seal() returns size, counts and footer identity; a GAP or an explicit flag degrades."""
    path = tmp_path / "a.fsr"
    with FsrWriter(path, RUN, STREAMS) as writer:
        writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"abc")])
        writer.flush(fsync=True)
        sealed = writer.seal({"cut": 1}, degraded=True)
    assert sealed.size == path.stat().st_size
    assert (sealed.batches, sealed.records, sealed.degraded) == (1, 1, True)
    assert validate(path).footer_identity == sealed.footer_identity
    with FsrReader(path) as reader:
        assert reader.degraded
        assert reader.footer["terminal_fence"] == {"cut": 1}


def test_render_mode_and_source_digest_are_recorded() -> None:
    """mode 'render' and the source SHA-256 reach the footer."""
    buf = io.BytesIO()
    run = RunMetadata("r", "c", mode="render", source_sha256="ab" * 32)
    writer = FsrWriter(buf, run, STREAMS)
    writer.seal()
    with FsrReader(io.BytesIO(buf.getvalue())) as reader:
        assert (reader.mode, reader.footer["source_sha256"]) == ("render", "ab" * 32)
        assert reader.footer["global_sequence"] == {"first": None, "last": None}


def test_buffer_payloads_are_counted_in_bytes() -> None:
    """memoryview and numpy payloads are stored by byte count, not item count."""
    values = np.arange(5, dtype=np.float64)
    buf = io.BytesIO()
    writer = _writer(buf)
    writer.write_batch([
        RecordIn.data(1, 1, 1, 0, 0, values.data),
        RecordIn.data(1, 2, 2, 0, 0, bytearray(b"ab")),
    ])
    writer.seal()
    validate(io.BytesIO(buf.getvalue()))
    with FsrReader(io.BytesIO(buf.getvalue())) as reader:
        payloads = [r.payload for r in reader.records()]
    assert payloads == [values.tobytes(), b"ab"]


def test_sequences_do_not_wrap_around() -> None:
    """A global or stream sequence cannot continue past 2**64 - 1 by wrapping to 0."""
    top = 2**64 - 1
    with pytest.raises(ValueError, match="global sequence hole"):
        _writer().write_batch([RecordIn.data(1, top, 1, 0, 0, b""), RecordIn.data(9, 0, 1, 0, 0, b"")])
    with pytest.raises(ValueError, match="stream sequence hole"):
        _writer().write_batch([RecordIn.data(1, 1, top, 0, 0, b""), RecordIn.data(1, 2, 0, 0, 0, b"")])


class _FullDisk(io.BytesIO):
    """A file that accepts ``room`` bytes, then fails every write like a full disk."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        if self.tell() + n > self.room:
            super().write(bytes(data)[: max(0, self.room - self.tell())])
            raise OSError(28, "No space left on device")
        return super().write(data)


def test_a_failed_write_latches_the_writer_and_recovery_keeps_the_whole_batches(tmp_path: Path) -> None:
    """After a write error nothing more is appended (no batch after a torn one); recovery keeps what was whole."""
    first = [RecordIn.data(1, 1, 1, 0, 0, b"a" * 100)]
    probe = io.BytesIO()
    _writer(probe).write_batch(first)
    disk = _FullDisk(len(probe.getvalue()) + 150)
    writer = _writer(disk)
    writer.write_batch(first)
    with pytest.raises(OSError, match="No space left"):
        writer.write_batch([RecordIn.data(1, 2, 2, 0, 1, b"b" * 400)])
    disk.room = 1 << 20  # space again: still nothing may follow the torn batch
    for action in (lambda: writer.write_batch([RecordIn.data(1, 3, 3, 0, 2, b"c")]), writer.seal, writer.flush):
        with pytest.raises(ValueError, match="FSR writer is failed"):
            action()
    writer.close()
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(disk.getvalue())
    report = recover(src, tmp_path / "a.fsr")
    assert (report.records_kept, report.batches_kept, report.lossless) == (1, 1, False)
    validate(tmp_path / "a.fsr")


class _ShortReads(io.BytesIO):
    """A file whose reads return at most 7 bytes at a time (allowed for raw files and pipes)."""

    def read(self, n: int | None = -1) -> bytes:
        return super().read(7 if n is None or n < 0 else min(n, 7))


def test_short_reads_are_not_mistaken_for_truncation() -> None:
    """A reader on a file that returns short reads still validates and reads every payload."""
    data = _writer_bytes()
    validate(_ShortReads(data))
    with FsrReader(_ShortReads(data)) as reader:
        assert [r.payload for r in reader.records()] == [b"x" * 40, b"y" * 3]


def _writer_bytes() -> bytes:
    buf = io.BytesIO()
    writer = _writer(buf)
    writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"x" * 40, {"k": 1}), RecordIn.data(7, 2, 1, 0, 0, b"y" * 3)])
    writer.seal()
    return buf.getvalue()


def test_the_header_is_written_and_fsynced_when_the_writer_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a writer on a real file writes the header and metadata and fsyncs them before any batch."""
    import os

    synced: list[int] = []
    monkeypatch.setattr("fastsim_recording_format.writer.os.fsync", lambda fd: synced.append(os.fstat(fd).st_size))
    path = tmp_path / "open.fsr"
    with FsrWriter(path, RUN, STREAMS) as writer:
        assert synced == [writer.position]
        assert path.stat().st_size == writer.position > 32
