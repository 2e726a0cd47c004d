"""Cameras through the whole pipeline: embedded host -> pumps -> media lane -> worker -> FSR."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from tests.decode import decode_frame

from fastsim_record.adapters import codecs
from fastsim_record.ports.encoders import ImageDescriptor, RgbFrame
from fastsim_recording_format import FsrReader, RecordKind

from .support import ROLE_STREAMS, CameraRun, camera_alias

SCENE = {"synthetic": {"cameras": 2, "camera_width": 64, "camera_height": 48, "numeric_channels": 3}}
TWO = {"cam00": camera_alias("cam00"), "cam01": camera_alias("cam01", encoding="png")}


def _spy(monkeypatch: pytest.MonkeyPatch, cls: type[Any], calls: list[str]) -> None:
    original: Callable[[Any, RgbFrame], bytes] = cls.encode

    def encode(self: Any, frame: RgbFrame) -> bytes:
        calls.append(threading.current_thread().name)
        return original(self, frame)

    monkeypatch.setattr(cls, "encode", encode)


def test_default_jpeg_and_explicit_png_encode_only_in_the_worker(
    camera_run: CameraRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default alias records JPEG q92 4:4:4, the png alias PNG level 1, both encoded on the writer thread."""
    jpeg_calls: list[str] = []
    png_calls: list[str] = []
    _spy(monkeypatch, codecs.JpegEncoder, jpeg_calls)
    _spy(monkeypatch, codecs.PngEncoder, png_calls)
    result = camera_run(inner="synthetic+cameras", scene=SCENE, cameras=TWO)
    assert result.outcome.ok, result.outcome.reason
    assert len(jpeg_calls) == len(png_calls) == 30
    assert set(jpeg_calls) | set(png_calls) == {"record-writer"}
    with FsrReader(camera_run.output) as reader:
        jpeg = ImageDescriptor.from_dict(reader.stream("cameras.cam00.rgb").codec)
        png = ImageDescriptor.from_dict(reader.stream("cameras.cam01.rgb").codec)
    assert (jpeg.payload_codec, jpeg.quality, jpeg.jpeg_chroma, jpeg.lossy) == ("jpeg", 92, "4:4:4", True)
    assert (png.payload_codec, png.png_compression_level, png.lossy) == ("png", 1, False)


def test_exact_rgb_k_translation_and_quaternion_in_the_file(camera_run: CameraRun) -> None:
    """PNG RGB, K, translation and quaternion read back exactly as published, sharing the epoch digest."""
    scene = {"synthetic": {**SCENE["synthetic"], "reset_every_s": 0.5}}
    result = camera_run(inner="synthetic+cameras", scene=scene, cameras={"cam01": TWO["cam01"]})
    assert result.outcome.ok, result.outcome.reason
    assert camera_run.backend is not None
    published: dict[str, list[Any]] = {}
    for _, reading in camera_run.backend.kept:
        if reading.camera == "cam01":
            published.setdefault(reading.role, []).append(reading)
    with FsrReader(camera_run.output) as reader:
        descriptor = ImageDescriptor.from_dict(reader.stream("cameras.cam01.rgb").codec)
        digests: dict[int, set[str]] = {}
        for role, suffix in ROLE_STREAMS.items():
            records = [r for r in reader.records(f"cameras.cam01.{suffix}") if r.kind is RecordKind.DATA]
            assert len(records) == len(published[role]) == 30
            assert [r.stream_sequence for r in records] == list(range(1, 31))
            for record, reading in zip(records, published[role]):
                if role == "rgb":
                    got = decode_frame(record.payload, descriptor)
                else:
                    got = np.frombuffer(record.payload, "<f8").reshape(reading.value.shape)
                assert np.array_equal(got, reading.value)
                assert record.metadata["calibration_digest"] == reading.calibration_digest
                digests.setdefault(record.generation, set()).add(record.metadata["calibration_digest"])
    assert set(digests) == {0, 1}
    assert all(len(d) == 1 for d in digests.values())


@pytest.mark.parametrize("version", ["0.3.0", "0.3.5"])
def test_run_locked_to_a_legacy_version_records_raw_rgb(camera_run: CameraRun, version: str) -> None:
    """A Run locked to 0.3.0-0.3.5 records its cameras as legacy raw RGB that reads back exactly."""
    result = camera_run(
        inner="synthetic+cameras", scene=SCENE, cameras={"cam00": camera_alias("cam00")}, lock=version,
    )
    assert result.outcome.ok, result.outcome.reason
    assert camera_run.backend is not None
    published = [r.value for _, r in camera_run.backend.kept if r.role == "rgb" and r.camera == "cam00"]
    with FsrReader(camera_run.output) as reader:
        descriptor = ImageDescriptor.from_dict(reader.stream("cameras.cam00.rgb").codec)
        payloads = [r.payload for r in reader.records("cameras.cam00.rgb") if r.kind is RecordKind.DATA]
    assert descriptor == ImageDescriptor.raw_rgb(64, 48)
    assert len(payloads) == len(published) == 30
    for payload, frame in zip(payloads, published):
        assert payload == frame.tobytes()
        assert np.array_equal(decode_frame(payload, descriptor), frame)


def test_no_media_lane_without_cameras(camera_run: CameraRun) -> None:
    """With no camera alias Record creates no media lane, no camera pump and no camera stream."""
    result = camera_run(
        inner="synthetic+cameras", scene=SCENE, cameras={},
        observations={"mode": "all_numeric", "include": {}},
    )
    assert result.outcome.ok, result.outcome.reason
    wiring = camera_run.plugins[0].wiring
    assert wiring is not None
    assert "media" not in wiring.lanes
    assert wiring.cameras is None
    assert not [p for p in wiring.pumps if p.name == "cameras"]
    with FsrReader(camera_run.output) as reader:
        assert not [s for s in reader.streams if s.name.startswith("cameras.")]


def _fails(camera_run: CameraRun, doctor: Callable[[int, list[Any]], list[Any]], why: str) -> None:
    result = camera_run(inner="synthetic+cameras", scene=SCENE, cameras=TWO, doctor=doctor)
    assert not result.outcome.ok
    assert why in (result.outcome.reason or "")
    assert not camera_run.output.exists()


def test_descriptor_drift_fails_closed(camera_run: CameraRun) -> None:
    """An RGB frame whose size changes mid-run fails the run; no file is published."""

    def shrink(tick: int, readings: list[Any]) -> list[Any]:
        if tick != 10:
            return readings
        small = np.zeros((24, 32, 3), dtype=np.uint8)
        small.flags.writeable = False
        return [attrs.evolve(r, value=small) if r.role == "rgb" else r for r in readings]

    _fails(camera_run, shrink, "drift")


def test_depth_frame_on_the_rgb_channel_never_reaches_the_jpeg_encoder(
    camera_run: CameraRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A float depth image published on the RGB channel fails the run as drift before any encoder sees it."""
    seen: list[tuple[str, tuple[int, ...]]] = []
    original = codecs.JpegEncoder.encode

    def encode(self: codecs.JpegEncoder, frame: RgbFrame) -> bytes:
        seen.append((str(frame.dtype), frame.shape))
        return original(self, frame)

    monkeypatch.setattr(codecs.JpegEncoder, "encode", encode)

    def depth(tick: int, readings: list[Any]) -> list[Any]:
        if tick != 5:
            return readings
        image = np.ones((48, 64), dtype=np.float32)
        image.flags.writeable = False
        return [attrs.evolve(r, value=image) if r.role == "rgb" else r for r in readings]

    _fails(camera_run, depth, "drift")
    assert seen
    assert set(seen) == {("uint8", (48, 64, 3))}


def test_missing_required_sample_fails_closed(camera_run: CameraRun) -> None:
    """A required camera tick without its quaternion sample fails the run (rule C5)."""

    def drop(tick: int, readings: list[Any]) -> list[Any]:
        if tick != 7:
            return readings
        return [r for r in readings if not (r.camera == "cam00" and r.role == "quaternion_xyzw")]

    _fails(camera_run, drop, "C5")


def test_required_camera_that_never_publishes_fails_closed(camera_run: CameraRun) -> None:
    """A required camera that publishes no sample at all fails the run; no file is published."""

    def silence(tick: int, readings: list[Any]) -> list[Any]:
        return [r for r in readings if r.camera != "cam00"]

    _fails(camera_run, silence, "missing required sample: required camera 'cam00'")


def test_required_camera_dropping_out_fails_closed(camera_run: CameraRun) -> None:
    """A required camera that stops publishing mid-run while another camera goes on fails the run."""

    def drop_out(tick: int, readings: list[Any]) -> list[Any]:
        return readings if tick < 12 else [r for r in readings if r.camera != "cam00"]

    _fails(camera_run, drop_out, "'cam00' published nothing in tick 12")


def test_intrinsics_after_the_next_tick_fails_closed(camera_run: CameraRun) -> None:
    """A new epoch's intrinsics held back to the next tick fails the run (rule C4)."""
    held: list[Any] = []

    def delay(tick: int, readings: list[Any]) -> list[Any]:
        late = [r for r in readings if tick == 1 and r.camera == "cam01" and r.role == "intrinsics"]
        held.extend(late)
        out = [r for r in readings if all(r is not x for x in late)]
        return held + out if tick == 2 else out

    _fails(camera_run, delay, "C4")


class _WorkerClock:
    """Stands in for the worker's ``time``: only RGB encodes advance the clock; counts GIL yields."""

    def __init__(self) -> None:
        self.now = 0.0
        self.yields = 0

    def perf_counter(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return time.thread_time()

    def sleep(self, seconds: float) -> None:
        self.yields += seconds == 0
        time.sleep(seconds)


def test_rgb_encode_counts_as_the_workers_gil_yield(
    camera_run: CameraRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An RGB encode runs without the GIL, so the worker adds no sleep(0) hand-off between frames."""
    from fastsim_record.pipeline import worker

    clock = _WorkerClock()
    original = codecs.JpegEncoder.encode

    def encode(self: codecs.JpegEncoder, frame: RgbFrame) -> bytes:
        clock.now += 0.01  # longer than any GIL slice, spent without the GIL
        return original(self, frame)

    monkeypatch.setattr(codecs.JpegEncoder, "encode", encode)
    monkeypatch.setattr(worker, "time", clock)
    result = camera_run(inner="synthetic+cameras", scene=SCENE, cameras={"cam00": TWO["cam00"]})
    assert result.outcome.ok, result.outcome.reason
    assert clock.now == pytest.approx(0.3)  # 30 frames encoded
    assert clock.yields == 0


def test_capture_path_hands_the_worker_the_published_buffer(
    camera_run: CameraRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame the worker encodes is the very immutable buffer the backend published (no copy)."""
    from fastsim_record.pipeline.camera_stage import CameraStage

    seen: list[object] = []
    original = CameraStage.encode

    def encode(self: CameraStage, envelope: Any) -> Any:
        if envelope.payload.role == "rgb":
            seen.append(envelope.payload.value)
        return original(self, envelope)

    monkeypatch.setattr(CameraStage, "encode", encode)
    result = camera_run(inner="synthetic+cameras", scene=SCENE, cameras={"cam00": TWO["cam00"]})
    assert result.outcome.ok, result.outcome.reason
    assert camera_run.backend is not None
    published = [r.value for _, r in camera_run.backend.kept if r.role == "rgb" and r.camera == "cam00"]
    assert len(seen) == len(published) == 30
    assert all(a is b for a, b in zip(seen, published))
    assert not any(np.asarray(v).flags.writeable for v in seen)


def test_camera_cadence_is_decided_before_sequencing(camera_run: CameraRun) -> None:
    """Cameras at 30 Hz in a 120 Hz Run get a sample every fourth tick and no sequence hole."""
    scene = {"synthetic": {**SCENE["synthetic"], "camera_hz": 30}}
    result = camera_run(
        inner="synthetic+cameras", scene=scene, cameras={"cam00": TWO["cam00"]}, sensor_hz=120.0,
    )
    assert result.outcome.ok, result.outcome.reason
    with FsrReader(camera_run.output) as reader:
        ticks = [r.metadata["tick"] for r in reader.records("cameras.cam00.rgb")]
        sequences = [r.global_sequence for r in reader.records()]
    assert ticks == list(range(4, 121, 4))
    assert sequences == list(range(1, len(sequences) + 1))
