"""Where a read's result starts (``reading._scatter.placement``): off the 4K-aliasing
window, with the same bytes read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec
from fastsim_recording_format.reading import _numeric, _tables
from fastsim_recording_format.reading._scatter import ALIAS, ALIGN, PAGE, placement

RECORD = 8 * 5 + 4  # 44 bytes: rows land at every place mod 64 in turn
CHANNELS = 5


def _window_bytes(start: int, starts: np.ndarray, length: int) -> int:
    """Bytes of rows whose destination lies 1..ALIAS-1 bytes past their source (mod 4096)."""
    lag = (start + np.arange(len(starts)) * length - starts) % PAGE
    return int(((lag > 0) & (lag < ALIAS)).sum()) * length


def _breaks(starts: np.ndarray, length: int) -> np.ndarray:
    return np.flatnonzero(np.diff(starts) != length) + 1


@pytest.mark.parametrize("length", [8, 44, 2160, 4096, 5000])
@pytest.mark.parametrize("seed", range(6))
def test_placement_is_the_best_start(length: int, seed: int) -> None:
    """The start it picks puts the fewest bytes in the window of all starts (lowest on ties)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 400))
    gaps = rng.integers(0, 3, rows) * rng.integers(1, 9000, rows)  # most rows follow the last
    starts = np.cumsum(np.concatenate(([int(rng.integers(0, 1 << 20))], length + gaps[1:]))).astype(np.int64)
    got = placement(starts, length, _breaks(starts, length))
    costs = [_window_bytes(p, starts, length) for p in range(0, PAGE, ALIGN)]
    assert got % ALIGN == 0
    assert got == ALIGN * int(np.argmin(costs))


def test_placement_moves_a_stream_out_of_the_window() -> None:
    """Rows whose natural start (16 past a page, numpy's) puts every byte in the window move."""
    length = 2160
    starts = np.arange(300, dtype=np.int64) * length + (PAGE * 7 + 8)  # one stretch: lag 8 at start 16
    assert _window_bytes(16, starts, length) == 300 * length
    got = placement(starts, length, _breaks(starts, length))
    assert _window_bytes(got, starts, length) == 0


def test_empty_bytes_starts_where_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """An array asked to start at a place mod 4096 does, from numpy's memory and from a map."""
    for large in (False, True):
        if large:
            monkeypatch.setattr(_tables, "LARGE", 1)
        for at in (0, 64, 1472, PAGE - ALIGN):
            out = _tables.empty_bytes(50, 2160, at)
            assert out.shape == (50, 2160)
            assert out.flags.c_contiguous
            assert out.flags.writeable
            assert out.ctypes.data % PAGE == at
        assert _tables.empty_bytes(3, 7).shape == (3, 7)


@pytest.fixture(scope="module")
def odd_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """44-byte ticks, interrupted by another stream's 13-byte payloads (sources at odd places)."""
    path = tmp_path_factory.mktemp("place") / "odd.fsr"
    channels = [
        {"name": f"c{i}", "dtype": "<f8", "shape": [], "units": ["1"], "entity": "e",
         "layout": "C-contiguous little-endian", "offset": 8 * i, "nbytes": 8}
        for i in range(CHANNELS)
    ] + [{"name": "flag", "dtype": "<u4", "shape": [], "units": ["1"], "entity": "e",
          "layout": "C-contiguous little-endian", "offset": 40, "nbytes": 4}]
    spec = StreamSpec(1, "observations", "observations",
                      {"payload_codec": "numeric-tick/1", "record_bytes": RECORD}, {"channels": channels})
    events = StreamSpec(2, "events", "events", {"payload_codec": "json"}, {})
    values = np.random.default_rng(3).random((3000, CHANNELS))
    g = e = 0
    with FsrWriter(path, RunMetadata("r", "c"), [spec, events]) as writer:
        records: list[RecordIn] = []
        for t in range(3000):
            g += 1
            payload = values[t].astype("<f8").tobytes() + np.uint32(t).tobytes()
            records.append(RecordIn.data(1, g, t + 1, 0, t * 1000, payload))
            if t % 97 == 5:
                g += 1
                e += 1
                records.append(RecordIn.data(2, g, e, 0, t * 1000, b'{"p":"abcdefg"}'[:13]))
            if len(records) >= 500:
                writer.write_batch(records)
                records = []
        writer.write_batch(records)
        writer.seal()
    return path


def test_a_stream_is_read_into_its_placement_bit_exact(odd_rows: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``numeric_all`` reads into the array ``placement`` picks, and every byte is the tick's."""
    values = np.random.default_rng(3).random((3000, CHANNELS))
    for large in (False, True):
        if large:  # the result's own map (results above LARGE) is placed the same way
            monkeypatch.setattr(_tables, "LARGE", 1)
            monkeypatch.setattr(_numeric, "LARGE", 1 << 40)
        with fr.open(odd_rows) as rec:
            got = rec.numeric_all()
            f = rec._file()
            rows = f.tables.rows(f.streams["observations"].stream_id)
            starts = rows["payload_at"]
            expected = placement(starts, RECORD, _breaks(starts, RECORD))
            assert got["c0"].values.ctypes.data % PAGE == expected
            for i in range(CHANNELS):
                assert got[f"c{i}"].values.tobytes() == values[:, i].astype("<f8").tobytes()
            assert got["flag"].values.tolist() == list(range(3000))
