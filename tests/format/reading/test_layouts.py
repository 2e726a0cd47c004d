"""Files written with FsrWriter: every gather path, GAP and BARRIER records, raw and PNG frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format import (
    FormatError,
    FsrWriter,
    RecordIn,
    RecordKind,
    RunMetadata,
    StreamSpec,
)
from fastsim_recording_format.synth import write_synthetic

CHANNELS = 10  # scalar float64 channels: one channel is far smaller than a tick


def _numeric_spec(sid: int = 1) -> StreamSpec:
    channels = [
        {"name": f"c{i}", "dtype": "<f8", "shape": [], "units": ["1"], "entity": "e",
         "layout": "C-contiguous little-endian", "offset": 8 * i, "nbytes": 8}
        for i in range(CHANNELS)
    ]
    channels.append({"name": "v", "dtype": "<i4", "shape": [2, 3], "units": [], "entity": "e",
                     "layout": "C-contiguous little-endian", "offset": 8 * CHANNELS, "nbytes": 24})
    return StreamSpec(sid, "observations", "observations",
                      {"payload_codec": "numeric-tick/1", "record_bytes": 8 * CHANNELS + 24}, {"channels": channels})


def _tick(t: int) -> bytes:
    return np.arange(CHANNELS, dtype="<f8").__add__(t * 100).tobytes() + np.full(6, t, "<i4").tobytes()


def _write(path: Path, interleave: bool, ticks: int = 300, batch: int = 64) -> None:
    """Ticks (generation 1 from tick 150, after a BARRIER; a GAP at tick 7), optionally interleaved."""
    events = StreamSpec(2, "events", "events", {"payload_codec": "json"}, {})
    writer = FsrWriter(path, RunMetadata("r", "c"), [_numeric_spec(), events])
    g = s = e = 0
    records: list[RecordIn] = []
    for t in range(ticks):
        gen = int(t >= 150)
        if t == 150:
            g += 1
            s += 1
            records.append(RecordIn(1, RecordKind.BARRIER, g, s, 1, t * 1000))
        g += 1
        s += 1
        if t == 7:
            records.append(RecordIn.gap(1, (g, g), (s, s), gen, t * 1000))
        else:
            records.append(RecordIn.data(1, g, s, gen, t * 1000, _tick(t)))
        if interleave and t % 3 == 0:
            g += 1
            e += 1
            meta = {"pad": "x" * 9000} if t % 60 == 0 else {}  # a metadata blob over the read guess
            records.append(RecordIn.data(2, g, e, gen, t * 1000, b'{"event":"x","t":%d}' % t, meta))
        if len(records) >= batch or (t == 149):
            writer.write_batch(records)
            records = []
    if records:
        writer.write_batch(records)
    writer.seal({})
    writer.close()


@pytest.mark.parametrize("interleave", [False, True], ids=["contiguous", "interleaved"])
def test_every_gather_path_returns_the_written_values(tmp_path: Path, interleave: bool) -> None:
    """One channel, all channels, an (2, 3) int32 channel: GAP and BARRIER records are not samples."""
    path = tmp_path / "n.fsr"
    _write(path, interleave)
    ticks = [t for t in range(300) if t != 7]
    with fr.open(path) as rec:
        c3 = rec.numeric("c3")  # 8 of 104 bytes: gathered alone
        assert c3.values.dtype == np.float64
        assert c3.values.tolist() == [t * 100 + 3.0 for t in ticks]
        assert c3.time_ns.tolist() == [t * 1000 for t in ticks]
        assert c3.generation.tolist() == [int(t >= 150) for t in ticks]
        assert c3.names == ("c3",)
        v = rec.numeric("v")  # a (2, 3) int32 channel
        assert v.values.dtype == np.int32
        assert v.values.shape == (299, 2, 3)
        assert v.values[:, 1, 2].tolist() == ticks
        assert v.names[:2] == ("v[0,0]", "v[0,1]")
        every = rec.numeric_all()
        assert list(every) == [*(f"c{i}" for i in range(CHANNELS)), "v"]
        np.testing.assert_array_equal(every["c3"].values, c3.values)
        np.testing.assert_array_equal(every["v"].values, v.values)
        first, second = rec.segments()
        assert len(first.numeric("c0")) == 149
        assert second.numeric("c0").time_ns[0] == 150_000
        if interleave:
            assert [e.data["t"] for e in rec.events()] == list(range(0, 300, 3))


def test_a_payload_of_the_wrong_size_names_its_offset(tmp_path: Path) -> None:
    """A numeric-tick payload shorter than record_bytes is one FormatError with its file offset."""
    path = tmp_path / "short.fsr"
    writer = FsrWriter(path, RunMetadata("r", "c"), [_numeric_spec()])
    writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, _tick(0)), RecordIn.data(1, 2, 2, 0, 1, _tick(1)[:-8])])
    writer.seal({})
    writer.close()
    with fr.open(path) as rec, pytest.raises(FormatError, match=r"numeric-tick payload of 96 bytes, record_bytes is 104 at offset \d+"):
        rec.numeric("c0")


def test_raw_rgb_frames_from_fsr_synth(tmp_path: Path) -> None:
    """fsr synth's raw RGB camera: frames are the payload bytes as (H, W, 3)."""
    path = tmp_path / "synth.fsr"
    write_synthetic(path, 40, 16, numeric_streams=2, camera_every=4, camera_bytes=8 * 640 * 3)
    with fr.open(path) as rec:
        assert rec.cameras() == ("overview",)
        frames = list(rec.frames("overview"))
        assert len(frames) == 10
        assert frames[0].image.shape == (8, 640, 3)
        payloads = [r for r in rec._file().tables.reader.records("cameras.overview.rgb")]
        np.testing.assert_array_equal(frames[3].image.reshape(-1), np.frombuffer(payloads[3].payload, np.uint8))
        assert rec.channels() == ()
        with pytest.raises(fr.ReadError, match=r"unknown numeric channel 'obs\.0'; the recording has: \(none\)"):
            rec.numeric("obs.0")


def test_png_frames_are_decoded_to_rgb(tmp_path: Path) -> None:
    """A PNG camera stream decodes to the RGB image that was encoded."""
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (12, 16, 3), np.uint8) for _ in range(3)]
    spec = StreamSpec(1, "cameras.top.rgb", "camera.rgb",
                      {"payload_codec": "png", "media_type": "image/png", "width": 16, "height": 12},
                      {"camera": "top", "role": "rgb"})
    path = tmp_path / "png.fsr"
    writer = FsrWriter(path, RunMetadata("r", "c"), [spec])
    payloads: list[Any] = [cv2.imencode(".png", img[:, :, ::-1])[1].tobytes() for img in images]
    writer.write_batch([RecordIn.data(1, k + 1, k + 1, 0, k, p) for k, p in enumerate(payloads)])
    writer.seal({})
    writer.close()
    with fr.open(path) as rec:
        for k, image in enumerate(images):
            np.testing.assert_array_equal(rec.frame("top", k).image, image)
        with pytest.raises(fr.ReadError, match="camera 'top' has no intrinsics stream"):
            rec.calibration("top")


@pytest.mark.parametrize("interleave", [False, True], ids=["contiguous", "interleaved"])
def test_large_reads_use_a_prepared_map_with_the_same_values(
    tmp_path: Path, interleave: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every read counted as large, the anonymous-map path returns exactly the same values."""
    import fastsim_recording_format.reading._numeric as numeric
    import fastsim_recording_format.reading._tables as tables

    path = tmp_path / "n.fsr"
    _write(path, interleave)
    with fr.open(path) as rec:
        small = rec.numeric_all()
        episode = rec.segments()[1].numeric_all()
    monkeypatch.setattr(tables, "LARGE", 1)
    monkeypatch.setattr(numeric, "LARGE", 1)
    with fr.open(path) as rec:
        large = rec.numeric_all()
        assert isinstance(large["c0"].values.base, np.ndarray)
        for name, series in small.items():
            np.testing.assert_array_equal(large[name].values, series.values)
            np.testing.assert_array_equal(large[name].time_ns, series.time_ns)
        second = rec.segments()[1].numeric_all()
        for name, series in episode.items():
            np.testing.assert_array_equal(second[name].values, series.values)
        np.testing.assert_array_equal(rec.numeric("c3").values, small["c3"].values)
