"""The batch tables read together (``reading._scan``) and the rows read with few calls
(``reading._scatter``): bit-exact reads of interleaved streams, and the same refusals."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format import (
    FormatError,
    FsrReader,
    FsrWriter,
    RecordIn,
    RunMetadata,
    StreamSpec,
)
from fastsim_recording_format._layout import crc
from fastsim_recording_format.reading import _scatter

CHANNELS = 6
RECORD = 8 * CHANNELS
TICKS = 1200
BATCH = 200


def _spec() -> StreamSpec:
    channels = [
        {"name": f"c{i}", "dtype": "<f8", "shape": [], "units": ["1"], "entity": "e",
         "layout": "C-contiguous little-endian", "offset": 8 * i, "nbytes": 8}
        for i in range(CHANNELS)
    ]
    return StreamSpec(1, "observations", "observations",
                      {"payload_codec": "numeric-tick/1", "record_bytes": RECORD}, {"channels": channels})


def _values() -> np.ndarray:
    return np.random.default_rng(7).random((TICKS, CHANNELS))


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ticks whose payloads are interrupted inside each batch by another stream's: small
    ones (read through), 40 KB ones (above ``GAP_READ``: a new call), and metadata blobs
    above the table read's first guess."""
    path = tmp_path_factory.mktemp("scan") / "interleaved.fsr"
    values = _values()
    events = StreamSpec(2, "events", "events", {"payload_codec": "json"}, {})
    g = e = 0
    with FsrWriter(path, RunMetadata("r", "c"), [_spec(), events]) as writer:
        records: list[RecordIn] = []
        for t in range(TICKS):
            g += 1
            records.append(RecordIn.data(1, g, t + 1, 0, t * 1000, values[t].astype("<f8").tobytes()))
            if t % 20 == 7:
                g += 1
                e += 1
                size = 40_000 if t % 100 == 7 else 90
                meta = {"pad": "x" * 3000} if t % 400 == 7 else {}
                records.append(RecordIn.data(2, g, e, 0, t * 1000, b'{"p":"' + b"x" * size + b'"}', meta))
            if len(records) >= BATCH:
                writer.write_batch(records)
                records = []
        writer.write_batch(records)
        writer.seal()
    return path


def _check(path: Path) -> None:
    values = _values()
    with fr.open(path) as rec:
        got = rec.numeric_all()
        for i in range(CHANNELS):
            assert got[f"c{i}"].values.tobytes() == values[:, i].tobytes()
        assert got["c0"].time_ns.tolist() == [t * 1000 for t in range(TICKS)]
    with fr.open(path) as rec:  # one channel (the scattered path)
        assert rec.numeric("c3").values.tobytes() == values[:, 3].tobytes()


@pytest.mark.parametrize(("iov", "gap"), [(1024, 32 << 10), (3, 32 << 10), (1024, 0)])
def test_an_interleaved_stream_reads_back_bit_exact(
    interleaved: Path, monkeypatch: pytest.MonkeyPatch, iov: int, gap: int,
) -> None:
    """Every call split (buffer limit, gap limit) reads the same bytes, through few calls."""
    monkeypatch.setattr(_scatter, "IOV_LIMIT", iov)
    monkeypatch.setattr(_scatter, "GAP_READ", gap)
    calls: list[int] = []
    real = _scatter.preadv_all

    def counted(fd: int, buffers: list[memoryview], at: int, total: int) -> None:
        calls.append(len(buffers))
        real(fd, buffers, at, total)

    monkeypatch.setattr(_scatter, "preadv_all", counted)
    _check(interleaved)
    assert calls
    assert max(calls) <= iov
    stretches = TICKS // 20 + 1
    if (iov, gap) == (1024, 32 << 10):  # only the 40 KB gaps (and batch boundaries with them) cut a call
        assert len(calls) <= TICKS // 100 + 1 < stretches
    if gap == 0:  # every stretch its own call
        assert len(calls) == sum(1 for n in calls if n == 1) >= stretches - 1


def test_short_reads_are_continued(interleaved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that returns fewer bytes than asked (at most 1000 a call) still fills every row."""
    real = os.preadv

    def short(fd: int, buffers: list[memoryview], at: int) -> int:
        room, taken = 1000, []
        for b in buffers:
            taken.append(memoryview(b)[:room])
            room -= taken[-1].nbytes
            if room <= 0:
                break
        return real(fd, taken, at)

    monkeypatch.setattr(os, "preadv", short)
    _check(interleaved)


def _batches(path: Path) -> list[tuple[int, int, int]]:
    """(offset, record count, metadata length) of each batch."""
    with FsrReader(path) as reader:
        index = reader.batch_index
        data = path.read_bytes()
        return [(int(o), int(n), struct.unpack_from("<Q", data, int(o) + 24)[0])
                for o, n in zip(index["offset"], index["record_count"])]


def _corrupt(path: Path, tmp_path: Path, edits: dict[int, int]) -> Path:
    data = bytearray(path.read_bytes())
    for at, mask in edits.items():
        data[at] ^= mask
    bad = tmp_path / "bad.fsr"
    bad.write_bytes(bytes(data))
    return bad


def _refused(path: Path, message: str) -> None:
    with fr.open(path) as rec, pytest.raises(FormatError, match=message):
        rec.numeric_all()


def test_a_corrupt_table_in_a_later_batch_is_refused_with_its_offset(interleaved: Path, tmp_path: Path) -> None:
    """A corrupt table in a later batch is refused with its offset."""
    batches = _batches(interleaved)
    off3, _, _ = batches[3]
    _refused(_corrupt(interleaved, tmp_path, {off3 + 120 + 48: 0xFF}), f"record table CRC mismatch at offset {off3 + 112}")
    # the metadata blob is under the table CRC too (batch 2 carries one above the first guess)
    off2, n2, meta2 = batches[2]
    assert meta2 > 512
    _refused(_corrupt(interleaved, tmp_path, {off2 + 120 + 80 * n2 + meta2 - 3: 0x01}),
             f"record table CRC mismatch at offset {off2 + 112}")
    # two faults: the earlier batch's is the one named, whichever check meets it
    off5, _, _ = batches[5]
    _refused(_corrupt(interleaved, tmp_path, {off3 + 120 + 48: 0xFF, off5: 0xFF}),
             f"record table CRC mismatch at offset {off3 + 112}")
    _refused(_corrupt(interleaved, tmp_path, {off3 + 3: 0xFF, off5 + 120 + 8: 0x01}), f"bad batch magic at offset {off3}")
    _refused(_corrupt(interleaved, tmp_path, {off5 + 40: 0x01}), f"batch header CRC mismatch at offset {off5 + 116}")


@pytest.mark.parametrize(("field", "fmt", "value"), [
    (72, "<Q", 1 << 40),  # payload_length past the area
    (64, "<Q", 2**64 - 8),  # payload_offset whose end wraps past 2**64
    (44, "<I", 1 << 20),  # metadata_length past the blob
    (56, "<Q", 2**64 - 1),  # metadata_offset
])
def test_a_record_outside_its_batch_is_refused_with_its_offset(
    interleaved: Path, tmp_path: Path, field: int, fmt: str, value: int,
) -> None:
    """Check 4 with both CRCs made to match: the record's table row is named."""
    off, count, meta = _batches(interleaved)[4]
    data = bytearray(interleaved.read_bytes())
    k = 17
    row = off + 120 + 80 * k
    struct.pack_into(fmt, data, row + field, value)
    body = bytes(data[off + 120:off + 120 + 80 * count + ((meta + 7) & ~7)])
    struct.pack_into("<I", data, off + 112, crc(body))
    struct.pack_into("<I", data, off + 116, crc(bytes(data[off:off + 116])))
    bad = tmp_path / "outside.fsr"
    bad.write_bytes(bytes(data))
    _refused(bad, f"record payload or metadata lies outside its batch at offset {row}")


def test_a_changed_payload_in_a_later_batch_is_refused_with_its_batch(interleaved: Path, tmp_path: Path) -> None:
    """Check 5 (the file carries payload CRCs): the batch's header offset + 20 is named, and a table fault in an earlier batch is still the one reported."""
    with FsrReader(interleaved) as reader:
        assert reader.payload_crc
    batches = _batches(interleaved)
    off4, n4, meta4 = batches[4]
    payload = off4 + 120 + 80 * n4 + ((meta4 + 7) & ~7)
    _refused(_corrupt(interleaved, tmp_path, {payload + 5: 0x01}),
             r"bad\.fsr: batch payload CRC-32C mismatch \(streams observations, events\)"
             rf"; the payload bytes changed after they were written at offset {off4 + 20}")
    off2, _, _ = batches[2]
    _refused(_corrupt(interleaved, tmp_path, {payload + 5: 0x01, off2 + 120 + 48: 0xFF}),
             f"record table CRC mismatch at offset {off2 + 112}")
