"""The camera calibration profile and its digest, as Core stamps them on camera samples.

A calibration profile is a small, bounded, JSON-able mapping that completely describes
one camera's pinhole intrinsics in one calibration epoch.  Core stamps every camera
sample with the profile's digest (``CameraSample.calibration_digest``) and attaches the
profile itself to every intrinsics sample.  Record checks both, stores the profile in
every intrinsics record's metadata and the 3x3 K matrix in its payload.

The profile rules, its canonical bytes, digest and K matrix are the recording format's
(:mod:`fastsim_recording_format.codecs.calibration`, re-exported here); this module adds
:func:`pinhole_profile`, which builds a profile from a camera's field of view.
A profile or digest that breaks the rules raises the format's ``CalibrationProfileError``
(a ``ValueError`` naming the field).
"""

from __future__ import annotations

import math

from fastsim_recording_format.codecs.calibration import (
    MAX_PROFILE_BYTES,
    PROFILE_KEYS,
    PROFILE_SCHEMA,
    calibration_digest,
    canonical_profile_bytes,
    check_profile,
    intrinsic_matrix,
    is_calibrated,
    plain_profile,
    uncalibrated_profile,
)
from fastsim_recording_format.errors import CalibrationProfileError

__all__ = [  # the format codec's profile rules, re-exported, and pinhole_profile
    "MAX_PROFILE_BYTES", "PROFILE_KEYS", "PROFILE_SCHEMA", "CalibrationProfileError", "calibration_digest",
    "canonical_profile_bytes", "check_profile", "intrinsic_matrix", "is_calibrated", "pinhole_profile", "plain_profile",
    "uncalibrated_profile",
]

def pinhole_profile(
    camera: str,
    width: int,
    height: int,
    fovy_deg: float,
) -> dict[str, object]:
    """The profile of an ideal pinhole camera from its vertical field of view and size.

    Square pixels, principal point at the image centre; the optical frame is OpenCV's
    (x right, y down, z forward) and extrinsics are camera-to-world.
    """
    fy = 0.5 * height / math.tan(math.radians(fovy_deg) / 2.0)
    return {
        "schema": PROFILE_SCHEMA,
        "camera": camera,
        "model": "pinhole",
        "width": int(width),
        "height": int(height),
        "fx": fy,
        "fy": fy,
        "cx": (width - 1) / 2.0,
        "cy": (height - 1) / 2.0,
        "distortion": [],
        "optical_frame": "opencv",
        "extrinsics": "camera_to_world",
        "units": {"focal": "px", "translation": "m"},
    }
