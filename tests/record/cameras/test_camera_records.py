"""Camera stream declarations and worker-side record encoding (adapters.camera_records)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from tests.decode import decode_frame

from fastsim_contract.calibration import calibration_digest
from fastsim_contract.values import CameraSample
from fastsim_record.adapters.camera_records import CameraRecordEncoder
from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder
from fastsim_record.errors import CalibrationError, DescriptorDriftError
from fastsim_record.ports.cameras import camera_streams
from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_record.testing.cameras import camera_tick, frozen

CHANNELS = {
    "rgb": "sensors.overview.camera.rgb",
    "intrinsics": "sensors.overview.camera.intrinsics",
    "translation": "sensors.overview.camera.extrinsics.translation",
    "quaternion_xyzw": "sensors.overview.camera.extrinsics.quaternion_xyzw",
}


def _by_role(samples: tuple[CameraSample, ...]) -> dict[str, CameraSample]:
    return {s.role: s for s in samples}


def _arr(sample: CameraSample) -> np.ndarray[Any, Any]:
    return np.asarray(sample.value)


def test_alias_creates_the_four_named_streams() -> None:
    """A camera alias declares rgb, intrinsics, extrinsics.translation and extrinsics.quaternion_xyzw."""
    decls = camera_streams("overview", CHANNELS, ImageDescriptor.jpeg(64, 48), required=True)
    assert [d.name for d in decls] == [
        "cameras.overview.rgb",
        "cameras.overview.intrinsics",
        "cameras.overview.extrinsics.translation",
        "cameras.overview.extrinsics.quaternion_xyzw",
    ]
    assert all(d.required for d in decls)
    assert decls[1].codec["shape"] == [3, 3]
    assert decls[1].codec["dtype"] == "<f8"


def test_jpeg_stream_records_the_complete_descriptor() -> None:
    """The default RGB stream codec names media type, codec, size, colour space, lossy, quality and chroma."""
    rgb = camera_streams("a", CHANNELS, JpegEncoder(64, 48).descriptor, required=False)[0]
    assert dict(rgb.codec) == {
        "media_type": "image/jpeg", "payload_codec": "jpeg", "width": 64, "height": 48,
        "color_space": "srgb", "lossy": True, "quality": 92, "jpeg_chroma": "4:4:4",
        "png_compression_level": None,
    }


def test_png_stream_records_the_compression_level() -> None:
    """A PNG RGB stream records lossless and compression level 1, and no quality."""
    rgb = camera_streams("a", CHANNELS, PngEncoder(64, 48).descriptor, required=False)[0]
    assert rgb.codec["payload_codec"] == "png"
    assert rgb.codec["lossy"] is False
    assert rgb.codec["quality"] is None
    assert rgb.codec["png_compression_level"] == 1


def test_png_rgb_round_trips_pixel_exact_and_leaves_the_frame_untouched() -> None:
    """PNG RGB records decode to the exact frame, and encoding never mutates the immutable input."""
    samples = _by_role(camera_tick("overview", tick=3))
    rgb = samples["rgb"]
    before = _arr(rgb).copy()
    record = CameraRecordEncoder("overview", PngEncoder(64, 48)).encode(rgb)
    assert record.stream == "cameras.overview.rgb"
    decoded = decode_frame(record.payload, PngEncoder(64, 48).descriptor)
    assert np.array_equal(decoded, before)
    assert np.array_equal(_arr(rgb), before)


def test_intrinsics_record_carries_profile_metadata_and_exact_k() -> None:
    """An intrinsics record carries the full profile and digest in metadata, and K as float64 payload."""
    samples = _by_role(camera_tick("overview", tick=1))
    intr = samples["intrinsics"]
    record = CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(intr)
    assert record.stream == "cameras.overview.intrinsics"
    profile = record.metadata["calibration_profile"]
    assert isinstance(profile, dict)
    assert record.metadata["calibration_digest"] == calibration_digest(profile)
    k = np.frombuffer(record.payload, dtype="<f8").reshape(3, 3)
    assert np.array_equal(k, _arr(intr))


def test_extrinsics_records_are_exact_float64() -> None:
    """Translation and quaternion payloads are the exact float64 bytes and share the digest."""
    samples = _by_role(camera_tick("overview", tick=7))
    enc = CameraRecordEncoder("overview", JpegEncoder(64, 48))
    for role, stream in (
        ("translation", "cameras.overview.extrinsics.translation"),
        ("quaternion_xyzw", "cameras.overview.extrinsics.quaternion_xyzw"),
    ):
        record = enc.encode(samples[role])
        assert record.stream == stream
        assert np.array_equal(np.frombuffer(record.payload, "<f8"), _arr(samples[role]))
        assert record.metadata["calibration_digest"] == samples["intrinsics"].calibration_digest
        assert "calibration_profile" not in record.metadata


def test_rgb_size_drift_fails_closed() -> None:
    """An RGB frame whose size differs from the declared descriptor is descriptor drift."""
    rgb = _by_role(camera_tick("overview", tick=1, width=32, height=24))["rgb"]
    with pytest.raises(DescriptorDriftError, match=r"cameras\.overview\.rgb"):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(rgb)


def test_depth_like_array_never_reaches_the_jpeg_encoder() -> None:
    """A float depth array on the RGB channel is rejected as drift, not encoded."""
    rgb = _by_role(camera_tick("overview", tick=1))["rgb"]
    depth = attrs.evolve(rgb, value=frozen(np.zeros((48, 64), dtype=np.float32)))
    with pytest.raises(DescriptorDriftError):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(depth)


def test_k_dtype_drift_fails_closed() -> None:
    """A float32 K matrix is descriptor drift."""
    intr = _by_role(camera_tick("overview", tick=1))["intrinsics"]
    bad = attrs.evolve(intr, value=frozen(np.eye(3, dtype=np.float32)))
    with pytest.raises(DescriptorDriftError, match="float64"):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(bad)


def test_digest_not_matching_profile_is_an_invalid_calibration_contract() -> None:
    """An intrinsics sample whose digest is not its profile's digest fails closed."""
    intr = _by_role(camera_tick("overview", tick=1))["intrinsics"]
    bad = attrs.evolve(intr, calibration_digest="sha256:" + "0" * 64)
    with pytest.raises(CalibrationError, match="digest"):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(bad)


def test_k_not_matching_profile_fails_closed() -> None:
    """A K matrix that disagrees with the attached profile fails closed."""
    intr = _by_role(camera_tick("overview", tick=1))["intrinsics"]
    k = np.array(_arr(intr))
    k[0, 0] += 1.0
    with pytest.raises(CalibrationError, match="K does not match"):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(
            attrs.evolve(intr, value=frozen(k))
        )


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([0.0, 0.0, 0.0, 2.0], "norm"),  # not unit-norm: an invalid calibration contract
        ([np.nan, 0.0, 0.0, 1.0], "non-finite"),  # a NaN fails as non-finite, before the norm rule
    ],
)
def test_a_bad_quaternion_fails_closed(values: list[float], error: str) -> None:
    """A quaternion that is not unit-norm, or holds a NaN, fails with its own reason."""
    quat = _by_role(camera_tick("overview", tick=1))["quaternion_xyzw"]
    bad = attrs.evolve(quat, value=frozen(np.array(values)))
    with pytest.raises(CalibrationError, match=error):
        CameraRecordEncoder("overview", JpegEncoder(64, 48)).encode(bad)


def test_repeated_profile_is_still_checked_against_k_and_digest() -> None:
    """After a valid intrinsics sample, a changed profile under the same digest or a changed K fails."""
    enc = CameraRecordEncoder("overview", JpegEncoder(64, 48))
    first = _by_role(camera_tick("overview", tick=1))["intrinsics"]
    enc.encode(first)
    assert enc.encode(_by_role(camera_tick("overview", tick=2))["intrinsics"]).metadata[
        "calibration_profile"
    ] == first.profile
    assert first.profile is not None
    tampered = attrs.evolve(first, profile={**first.profile, "fx": 1.0})
    with pytest.raises(CalibrationError, match="digest"):
        enc.encode(tampered)
    k = np.array(_arr(first))
    k[1, 2] += 0.5
    with pytest.raises(CalibrationError, match="K does not match"):
        enc.encode(attrs.evolve(first, value=frozen(k)))


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([1e308, 1e308, 0.0], None),  # finite values whose sum overflows: still finite
        ([np.inf, -np.inf, 0.0], "non-finite"),  # the sum is NaN
        ([np.nan, 0.0, 0.0], "non-finite"),
        ([0.0, np.inf, 1.0], "non-finite"),
    ],
)
def test_translation_finite_check_judges_each_value(values: list[float], error: str | None) -> None:
    """The finite check's verdict is per value, whatever the sum of the values does."""
    translation = _by_role(camera_tick("overview", tick=1))["translation"]
    sample = attrs.evolve(translation, value=frozen(np.array(values)))
    enc = CameraRecordEncoder("overview", JpegEncoder(64, 48))
    if error is None:
        assert np.array_equal(np.frombuffer(enc.encode(sample).payload, "<f8"), values)
    else:
        with pytest.raises(CalibrationError, match=error):
            enc.encode(sample)


def test_repeated_k_equal_in_value_but_not_in_bytes_is_accepted() -> None:
    """A repeated K that equals the profile's K with -0.0 for 0.0 is the same K (value compare)."""
    enc = CameraRecordEncoder("overview", JpegEncoder(64, 48))
    first = _by_role(camera_tick("overview", tick=1))["intrinsics"]
    enc.encode(first)
    k = np.array(_arr(first))
    assert k[1, 0] == 0.0
    k[1, 0] = -0.0
    record = enc.encode(attrs.evolve(_by_role(camera_tick("overview", tick=2))["intrinsics"], value=frozen(k)))
    assert record.payload == k.tobytes()
