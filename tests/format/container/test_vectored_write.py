"""Vectored batch writes (issue 26, w26): a block of many tick buffers goes to a target that
has ``writev`` in one call, unjoined, and the file is the one a plain target gets; the
embedded write lease's ``writev`` finishes a short ``os.writev`` part by part."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService
from fastsim_recording_format import FsrWriter, RecordIn
from fastsim_recording_format.writer import RecordBlock

from .helpers import RUN, STREAMS

SIZE = 1280  # 160 float64: parts big enough for the vectored write


class VectoredTarget(io.BytesIO):
    """A binary target with ``writev``: records the parts of each call."""

    def __init__(self, short: int | None = None) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.short = short  # report this many bytes written (a broken target)

    def writev(self, parts: Any, nbytes: int) -> int:
        self.calls.append(len(parts))
        written = sum(self.write(memoryview(p).cast("B")) for p in parts)
        assert written == nbytes
        return written if self.short is None else self.short


def _ticks(first: int, n: int) -> RecordBlock:
    rng = np.random.default_rng(first)
    buffers = [rng.random(SIZE // 8) for _ in range(n)]
    for b in buffers:
        b.flags.writeable = False
    g = np.arange(first, first + n, dtype=np.uint64)
    return RecordBlock(1, 0, g, g, g.astype(np.int64) * 10, SIZE, buffers[0], {0: {"channel_sequence": first}},
                       tuple(buffers[1:]))


def _rows(block: RecordBlock) -> list[RecordIn]:
    payloads = [np.asarray(p).tobytes() for p in (block.payload, *block.more)]
    return [
        RecordIn.data(1, int(g), int(g), 0, int(t), payloads[k], dict(block.metadata.get(k, {})))
        for k, (g, t) in enumerate(zip(block.global_sequence, block.sim_time_ns))
    ]


def _file(target: Any, batches: list[list[Any]], integrity: str, payload_crc: bool) -> bytes:
    writer = FsrWriter(target, RUN, STREAMS, integrity=integrity, payload_crc=payload_crc)
    for batch in batches:
        writer.write_batch(batch)
    writer.seal()
    return bytes(target.getvalue())


@pytest.mark.parametrize("integrity", ["structural", "strong"])
@pytest.mark.parametrize("payload_crc", [False, True])
def test_tick_buffers_written_vectored_make_the_plain_file(integrity: str, payload_crc: bool) -> None:
    """One vectored call per batch of tick buffers; the bytes of a plain target and of rows."""
    batches = [_ticks(1, 120), _ticks(121, 7)]
    target = VectoredTarget()
    vectored = _file(target, [[b] for b in batches], integrity, payload_crc)
    assert target.calls == [1 + 1 + 120 + 1, 1 + 1 + 7 + 1]  # header, table+metadata, ticks, padding
    plain = _file(io.BytesIO(), [[b] for b in batches], integrity, payload_crc)
    rows = _file(io.BytesIO(), [_rows(b) for b in batches], integrity, payload_crc)
    assert vectored == plain == rows


def test_small_parts_are_joined_not_vectored() -> None:
    """Rows of small payloads (JSON-sized) go out joined, as before."""
    target = VectoredTarget()
    rows = [RecordIn.data(1, k, k, 0, 10 * k, b"x" * 40) for k in range(1, 50)]
    assert _file(target, [rows], "structural", True) == _file(io.BytesIO(), [rows], "structural", True)
    assert target.calls == []


def test_a_short_vectored_write_fails_the_writer() -> None:
    """A target that takes fewer bytes than the batch: the writer is failed, nothing more is appended."""
    writer = FsrWriter(VectoredTarget(short=10), RUN, STREAMS)
    with pytest.raises(OSError, match="vectored write took 10 of"):
        writer.write_batch([_ticks(1, 8)])
    with pytest.raises(ValueError, match="failed"):
        writer.write_batch([_ticks(9, 8)])


def test_the_write_lease_finishes_a_short_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``FileWriteLease.writev``: a short ``os.writev`` is finished part by part; the file holds every byte."""
    service = FileOutputService(tmp_path / "out", RunOutputPolicy(), "cid")
    lease = service.open_write("episode.fsr")
    parts = [bytes([k]) * 1000 for k in range(1, 6)]
    real = os.writev
    monkeypatch.setattr(os, "writev", lambda fd, chunk: real(fd, [bytes(chunk[0])[:300]]))
    assert lease.writev(parts, 5000) == 5000
    lease.flush()
    staged = [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".incomplete")]
    assert len(staged) == 1
    assert staged[0].read_bytes() == b"".join(parts)


def test_a_lease_without_writev_gets_one_joined_write() -> None:
    """``LeaseWriter.writev`` over a lease that has only ``write``: one call with every byte, in order."""
    from fastsim_record.adapters.fsr_sink import LeaseWriter

    class PlainLease:
        def __init__(self) -> None:
            self.calls: list[bytes] = []

        def write(self, data: Any) -> int:
            self.calls.append(bytes(data))
            return len(self.calls[-1])

        def flush(self) -> None:
            """Nothing buffered."""

    lease = PlainLease()
    parts = [b"head", np.arange(3.0), b"pad"]
    assert LeaseWriter(lease).writev(parts, 4 + 24 + 3) == 31  # type: ignore[arg-type]
    assert lease.calls == [b"head" + np.arange(3.0).tobytes() + b"pad"]


def test_a_lease_without_writev_gets_large_parts_one_write_each() -> None:
    """``LeaseWriter.writev`` of a few large blocks over a lease with only ``write``: one byte call per part, unjoined."""
    from fastsim_record.adapters.fsr_sink import LeaseWriter

    class PlainLease:
        def __init__(self) -> None:
            self.calls: list[bytes] = []

        def write(self, data: Any) -> int:
            self.calls.append(bytes(data))
            return len(data)  # elements, not bytes, for a view of wider items: the writer must pass bytes

        def flush(self) -> None:
            """Nothing buffered."""

    lease = PlainLease()
    blocks = [np.full(5_000, k, np.float64) for k in range(3)]
    parts = [b"header", *blocks, b""]
    assert LeaseWriter(lease).writev(parts, 6 + 120_000) == 120_006  # type: ignore[arg-type]
    assert lease.calls == [b"header", *(b.tobytes() for b in blocks)]
