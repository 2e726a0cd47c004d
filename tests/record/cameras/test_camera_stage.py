"""The worker's camera stage: calibration epochs, drift and encoding on released envelopes."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np
import pytest

from fastsim_contract.values import CameraSample
from fastsim_record.adapters.camera_records import CameraRecordEncoder
from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder
from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.errors import CalibrationError, DescriptorDriftError
from fastsim_record.pipeline.camera_stage import CameraSetup, CameraStage
from fastsim_record.testing.cameras import camera_tick, frozen

W, H = 64, 48
CHANNELS = {r: f"sensors.cam.{r}" for r in ("rgb", "intrinsics", "translation", "quaternion_xyzw")}


def _stage(*aliases: str, required: bool = True, png: bool = False) -> CameraStage:
    return CameraStage(
        tuple(
            CameraSetup(a, CHANNELS, required, PngEncoder(W, H) if png else JpegEncoder(W, H))
            for a in aliases
        ),
        CameraRecordEncoder,
    )


def _envelopes(samples: tuple[CameraSample, ...], *, tick: int, generation: int = 0) -> Iterator[CapturedItem]:
    for i, sample in enumerate(samples):
        yield CapturedItem(
            global_sequence=tick * 100 + i + 1, source=f"cameras.{sample.camera}.{sample.role}",
            capture_sequence=tick, stream=f"cameras.{sample.camera}.{sample.role}",
            lane=LaneName.MEDIA, generation=generation, tick=tick, sim_time_ns=tick * 1000,
            payload=sample,
        )


def test_forward_reference_within_the_tick_is_accepted() -> None:
    """RGB and extrinsics before the intrinsics of the same tick encode without violation."""
    stage = _stage("cam")
    for tick in (1, 2, 3):
        records = [stage.encode(e) for e in _envelopes(camera_tick("cam", tick=tick), tick=tick)]
        assert [r.role for r in records] == ["rgb", "translation", "quaternion_xyzw", "intrinsics"]
        assert len({r.metadata["calibration_digest"] for r in records}) == 1
    assert stage.at_cut() == ()


def test_png_camera_streams_encode_in_the_stage() -> None:
    """An explicit PNG camera produces PNG payloads; the default produces JPEG."""
    for png, magic in ((True, b"\x89PNG"), (False, b"\xff\xd8")):
        stage = _stage("cam", png=png)
        rgb = stage.encode(next(_envelopes(camera_tick("cam", tick=1), tick=1)))
        assert rgb.payload.startswith(magic)


def test_intrinsics_after_the_next_tick_fails_closed() -> None:
    """An intrinsics sample that arrives only in the next tick fails calibration rule C4."""
    stage = _stage("cam")
    first = list(_envelopes(camera_tick("cam", tick=1), tick=1))
    for envelope in first[:3]:
        stage.encode(envelope)
    late = attrs.evolve(first[3], tick=2, global_sequence=999)
    with pytest.raises(CalibrationError, match="C4"):
        stage.encode(late)
    assert any("C4" in r for r in stage.at_cut())


def test_forward_reference_open_at_the_cut_fails_closed() -> None:
    """A digest forward-referenced by RGB and never declared fails at the terminal cut."""
    stage = _stage("cam")
    stage.encode(next(_envelopes(camera_tick("cam", tick=1), tick=1)))
    reasons = stage.at_cut()
    assert any("C4" in r and "terminal cut" in r for r in reasons)


def test_forward_reference_open_at_a_reset_barrier_fails_closed() -> None:
    """A pending forward reference at a reset barrier fails closed."""
    stage = _stage("cam", required=False)
    stage.encode(next(_envelopes(camera_tick("cam", tick=1), tick=1)))
    with pytest.raises(CalibrationError, match="reset barrier"):
        stage.barrier(1)


def test_missing_required_sample_fails_closed() -> None:
    """A required camera tick without its translation sample fails rule C5 at the tick's end."""
    stage = _stage("cam")
    samples = tuple(s for s in camera_tick("cam", tick=1) if s.role != "translation")
    for envelope in _envelopes(samples, tick=1):
        stage.encode(envelope)
    assert any("C5" in r and "translation" in r for r in stage.at_cut())


def test_required_camera_silent_in_a_tick_fails_at_the_next_tick() -> None:
    """A required camera with no sample in a tick another camera published in fails when the tick ends."""
    stage = _stage("a", "b")
    for envelope in _envelopes(camera_tick("a", tick=1), tick=1):
        stage.encode(envelope)
    with pytest.raises(CalibrationError, match="missing required sample: required camera 'b'"):
        stage.encode(next(_envelopes(camera_tick("a", tick=2), tick=2)))
    reasons = stage.at_cut()
    assert any("'b' published nothing in tick 1" in r for r in reasons)
    assert any("'b' published no sample before the terminal cut" in r for r in reasons)


def test_lone_required_camera_that_never_publishes_fails_at_the_cut() -> None:
    """With nothing published at all, a required camera still fails closed at the cut."""
    reasons = _stage("only").at_cut()
    assert reasons == (
        "calibration rule C5: missing required sample: required camera 'only' published no "
        "sample before the terminal cut",
    )


def test_required_camera_absent_from_a_tick_fails_at_a_reset_barrier() -> None:
    """A required camera silent in the last tick before a reset fails when the barrier ends the tick."""
    stage = _stage("a", "b")
    for envelope in _envelopes(camera_tick("a", tick=1) + camera_tick("b", tick=1), tick=1):
        stage.encode(envelope)
    for envelope in _envelopes(camera_tick("a", tick=2), tick=2):
        stage.encode(envelope)
    with pytest.raises(CalibrationError, match="'b' published nothing in tick 2"):
        stage.barrier(1)


def test_optional_camera_may_stay_silent() -> None:
    """An optional camera that never publishes, or skips ticks, is not a violation."""
    stage = CameraStage(
        (CameraSetup("a", CHANNELS, True, JpegEncoder(W, H)), CameraSetup("b", CHANNELS, False, JpegEncoder(W, H))),
        CameraRecordEncoder,
    )
    for tick in (1, 2, 3):
        for envelope in _envelopes(camera_tick("a", tick=tick), tick=tick):
            stage.encode(envelope)
    assert stage.at_cut() == ()


def test_optional_camera_may_skip_a_sample() -> None:
    """An optional camera tick missing a sample is not a calibration violation."""
    stage = _stage("cam", required=False)
    samples = tuple(s for s in camera_tick("cam", tick=1) if s.role != "translation")
    for envelope in _envelopes(samples, tick=1):
        stage.encode(envelope)
    assert stage.at_cut() == ()


def test_rgb_descriptor_drift_fails_closed() -> None:
    """An RGB frame whose shape changes mid-stream is descriptor drift, and the stage stays failed."""
    stage = _stage("cam")
    samples = camera_tick("cam", tick=1)
    small = attrs.evolve(samples[0], value=frozen(np.zeros((24, 32, 3), dtype=np.uint8)))
    with pytest.raises(DescriptorDriftError, match="drift"):
        stage.encode(next(_envelopes((small,), tick=1)))
    with pytest.raises(CalibrationError, match="already failed"):
        stage.encode(next(_envelopes(samples, tick=1)))
    assert stage.at_cut()


def test_quaternion_dtype_drift_fails_closed() -> None:
    """A float32 quaternion is descriptor drift."""
    stage = _stage("cam")
    quat = camera_tick("cam", tick=1)[2]
    bad = attrs.evolve(quat, value=frozen(np.array([0, 0, 0, 1], dtype=np.float32)))
    with pytest.raises(DescriptorDriftError):
        stage.encode(next(_envelopes((bad,), tick=1)))


def test_new_generation_may_declare_a_new_digest() -> None:
    """After a reset barrier a camera declares a new calibration epoch without violation."""
    stage = _stage("cam", required=False)
    for e in _envelopes(camera_tick("cam", tick=1), tick=1):
        stage.encode(e)
    stage.barrier(1)
    for e in _envelopes(camera_tick("cam", tick=2, fovy_deg=70.0), tick=2, generation=1):
        stage.encode(e)
    assert stage.at_cut() == ()


def test_stream_declarations_cover_every_camera() -> None:
    """The stage declares four streams per selected camera."""
    names = [d.name for d in _stage("a", "b").streams()]
    assert len(names) == 8
    assert names[0] == "cameras.a.rgb"
    assert names[-1] == "cameras.b.extrinsics.quaternion_xyzw"
