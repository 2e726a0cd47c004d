"""Camera records in FSR: four streams per camera alias, encoded only in the worker.

A camera alias ``A`` creates these streams (``camera_streams``):

    | # | stream                                 | kind                                 | payload                        |
    |---|----------------------------------------|--------------------------------------|--------------------------------|
    | 1 | ``cameras.A.rgb``                      | ``camera.rgb``                       | JPEG / PNG image (descriptor;  |
    |   |                                        |                                      | PNG also grey or RGBA)         |
    | 2 | ``cameras.A.intrinsics``               | ``camera.intrinsics``                | 3x3 K, float64 LE, row-major   |
    | 3 | ``cameras.A.extrinsics.translation``   | ``camera.extrinsics.translation``    | float64[3] LE, metres          |
    | 4 | ``cameras.A.extrinsics.quaternion_xyzw`` | ``camera.extrinsics.quaternion_xyzw`` | float64[4] LE, unit, x y z w |

Stream 1's codec is the encoder's complete :class:`ImageDescriptor` (media type,
payload codec, width, height, colour space, lossy flag, quality, JPEG chroma policy,
PNG compression level), so offline readers never infer the representation.

Record metadata (``CameraRecordEncoder.encode``):

    | # | role            | metadata keys                                                   |
    |---|-----------------|-----------------------------------------------------------------|
    | 1 | every role      | ``calibration_digest`` (the epoch's digest), ``channel_sequence``|
    | 2 | intrinsics      | also ``calibration_profile``: the complete bounded profile       |

Sample checks (each failure is a fatal recording error, so the run fails closed):

    | # | check                                                               | error             |
    |---|---------------------------------------------------------------------|-------------------|
    | 1 | the image is uint8 ``(H, W, C)`` of the declared size and channels  | DescriptorDriftError   |
    | 2 | K / translation / quaternion are float64 of shape (3,3) / (3,) / (4,) | DescriptorDriftError |
    | 3 | values are finite; the quaternion has unit norm (1e-6); a camera   | CalibrationError  |
    |   | whose profile is ``uncalibrated`` (format rule 3u) sends all NaN    |                   |
    | 4 | an intrinsics sample carries a valid profile whose digest is the sample's | CalibrationError |
    | 5 | K equals the profile's K, and the profile's size equals the RGB size | CalibrationError |

The capture path never calls this module: frames stay untouched immutable buffers
until the worker encodes them, exactly once, after queue admission.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import attrs
import numpy as np

from fastsim_contract.calibration import (
    CalibrationProfileError,
    calibration_digest,
    check_profile,
    intrinsic_matrix,
    is_calibrated,
)
from fastsim_contract.values import CameraSample
from fastsim_record.errors import CalibrationError, DescriptorDriftError
from fastsim_record.ports.cameras import (
    ARRAY_SHAPES,
    ROLES,
    EncodedCameraRecord,
    camera_stream_name,
)
from fastsim_record.ports.encoders import FrameEncoder, ImageDescriptor, check_rgb_frame

__all__ = ["CameraRecordEncoder"]

_QUATERNION_TOLERANCE: Final = 1e-6


@attrs.define(eq=False)
class CameraRecordEncoder:
    """Encodes one camera alias's samples in the writer worker (module table rules)."""

    alias: str
    encoder: FrameEncoder
    _descriptor: ImageDescriptor = attrs.field(init=False)
    _streams: dict[str, str] = attrs.field(init=False)
    # the last fully validated intrinsics: (digest, profile as handed over, plain profile, K,
    # K's bytes)
    _validated: tuple[str, object, dict[str, object], np.ndarray[Any, Any], bytes] | None = attrs.field(
        init=False, default=None
    )

    def __attrs_post_init__(self) -> None:
        self._descriptor = self.encoder.descriptor
        self._streams = {role: camera_stream_name(self.alias, role) for role in ROLES}

    @property
    def descriptor(self) -> ImageDescriptor:
        """The RGB stream's recorded descriptor."""
        return self._descriptor

    def stream_for(self, role: str) -> str:
        """The stream a role is written to."""
        return self._streams[role]

    def encode(self, sample: CameraSample) -> EncodedCameraRecord:
        """Check and encode one sample; raise DescriptorDriftError or CalibrationError on violation."""
        role = sample.role
        stream = self._streams.get(role)
        if stream is None or sample.camera != self.alias:
            raise DescriptorDriftError(
                f"cameras.{self.alias}: unexpected sample {sample.camera!r}/{role!r}",
                stream=f"cameras.{self.alias}",
            )
        metadata: dict[str, object] = {
            "calibration_digest": sample.calibration_digest,
            "channel_sequence": sample.channel_sequence,
        }
        if role == "rgb":
            frame = _check_frame(sample.value, self._descriptor, stream)
            payload = self.encoder.encode(frame)
        else:
            array = _check_array(sample.value, role, stream, unknown=self._uncalibrated(sample))
            if role == "intrinsics":
                metadata["calibration_profile"] = self._check_intrinsics(sample, array, stream)
            payload = array.astype("<f8", copy=False).tobytes()
        return EncodedCameraRecord(stream, role, payload, metadata)

    def _uncalibrated(self, sample: CameraSample) -> bool:
        """Whether the sample belongs to an uncalibrated epoch (no K, no pose: all NaN)."""
        if sample.role == "intrinsics":
            return isinstance(sample.profile, Mapping) and not is_calibrated(sample.profile)
        last = self._validated
        return last is not None and last[0] == sample.calibration_digest and not is_calibrated(last[2])

    def _check_intrinsics(
        self, sample: CameraSample, k: np.ndarray[Any, Any], stream: str
    ) -> dict[str, object]:
        last = self._validated
        if last is not None and last[0] == sample.calibration_digest and (
                last[1] is sample.profile or last[1] == sample.profile):  # a host freezes a profile once
            # the same profile as the last validated one (rule 4 holds): only K is new; equal
            # bytes are equal values, other bytes (-0.0, another NaN) take numpy's comparison
            if k.tobytes() != last[4] and not np.array_equal(k, last[3], equal_nan=True):
                raise CalibrationError(
                    f"{stream}: K does not match the calibration profile", stream=stream
                )
            return last[2]
        try:
            profile = check_profile(sample.profile)
            digest = calibration_digest(profile)
        except CalibrationProfileError as exc:
            raise CalibrationError(f"{stream}: {exc}", stream=stream) from None
        if digest != sample.calibration_digest:
            raise CalibrationError(
                f"{stream}: calibration_digest {sample.calibration_digest!r} is not the "
                f"digest of the attached profile ({digest!r})",
                stream=stream,
            )
        expected = np.asarray(intrinsic_matrix(profile), dtype=np.float64)
        if not np.array_equal(k, expected, equal_nan=True):
            raise CalibrationError(f"{stream}: K does not match the calibration profile", stream=stream)
        size = (profile["width"], profile["height"])
        if size != (self._descriptor.width, self._descriptor.height):
            raise CalibrationError(
                f"{stream}: profile size {size[0]}x{size[1]} differs from the RGB stream's "
                f"{self._descriptor.width}x{self._descriptor.height}",
                stream=stream,
            )
        plain = dict(profile)
        self._validated = (digest, sample.profile, plain, expected, expected.tobytes())
        return plain


def _check_frame(value: object, descriptor: ImageDescriptor, stream: str) -> Any:
    try:
        return check_rgb_frame(value, descriptor)
    except DescriptorDriftError as exc:
        raise DescriptorDriftError(f"{stream}: {exc}", stream=stream) from None


def _check_array(value: object, role: str, stream: str, *, unknown: bool = False) -> np.ndarray[Any, Any]:
    shape = ARRAY_SHAPES[role]
    if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.shape != shape:
        got = (
            f"{value.dtype}{list(value.shape)}"
            if isinstance(value, np.ndarray)
            else type(value).__name__
        )
        raise DescriptorDriftError(
            f"{stream}: expected float64{list(shape)}, got {got}", stream=stream
        )
    if unknown:  # an uncalibrated camera: no value is known, none is invented
        if not bool(np.isnan(value).all()):
            raise CalibrationError(f"{stream}: an uncalibrated camera's values must all be NaN", stream=stream)
        return value
    # one Python-float pass per record (a K, translation or quaternion is a handful of
    # values): a sum is finite unless a value is NaN or infinite or the sum overflowed, so
    # only a non-finite sum takes numpy's element-wise look; the verdict is the same
    values = value.ravel().tolist()
    if not math.isfinite(sum(values)) and not bool(np.isfinite(value).all()):
        raise CalibrationError(f"{stream}: non-finite value", stream=stream)
    if role == "quaternion_xyzw":
        norm = math.sqrt(float(np.dot(value, value)))
        if abs(norm - 1.0) > _QUATERNION_TOLERANCE:
            raise CalibrationError(
                f"{stream}: quaternion norm {norm:.9f} is not 1", stream=stream
            )
    return value
