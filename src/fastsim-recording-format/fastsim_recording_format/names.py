"""The recorded stream names of a camera, spelled once.

A camera ``<alias>`` is recorded as up to four streams::

    cameras.<alias>.rgb                          frames (the image descriptor is the codec)
    cameras.<alias>.intrinsics                   K, float64 (3, 3)
    cameras.<alias>.extrinsics.translation       camera-to-world translation, float64 (3,)
    cameras.<alias>.extrinsics.quaternion_xyzw   camera-to-world rotation, float64 (4,)
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CAMERA_PREFIX",
    "CALIBRATION_SUFFIXES",
    "INTRINSICS",
    "QUATERNION",
    "RGB",
    "ROLE_SUFFIX",
    "TRANSLATION",
    "camera_of",
    "camera_stream",
    "intrinsics_stream",
    "quaternion_stream",
    "rgb_stream",
    "translation_stream",
]

CAMERA_PREFIX: Final = "cameras."
RGB: Final = "rgb"
INTRINSICS: Final = "intrinsics"
TRANSLATION: Final = "extrinsics.translation"
QUATERNION: Final = "extrinsics.quaternion_xyzw"
#: camera role -> stream name suffix
ROLE_SUFFIX: Final = {
    "rgb": RGB,
    "intrinsics": INTRINSICS,
    "translation": TRANSLATION,
    "quaternion_xyzw": QUATERNION,
}
#: the calibration suffixes, in the order a calibration sample is assembled from them
CALIBRATION_SUFFIXES: Final = (INTRINSICS, TRANSLATION, QUATERNION)


def camera_stream(alias: str, suffix: str) -> str:
    """``cameras.<alias>.<suffix>``."""
    return f"{CAMERA_PREFIX}{alias}.{suffix}"


def rgb_stream(alias: str) -> str:
    """``cameras.<alias>.rgb``."""
    return f"{CAMERA_PREFIX}{alias}.{RGB}"


def intrinsics_stream(alias: str) -> str:
    """``cameras.<alias>.intrinsics``."""
    return f"{CAMERA_PREFIX}{alias}.{INTRINSICS}"


def translation_stream(alias: str) -> str:
    """``cameras.<alias>.extrinsics.translation``."""
    return f"{CAMERA_PREFIX}{alias}.{TRANSLATION}"


def quaternion_stream(alias: str) -> str:
    """``cameras.<alias>.extrinsics.quaternion_xyzw``."""
    return f"{CAMERA_PREFIX}{alias}.{QUATERNION}"


def camera_of(name: str) -> tuple[str, str] | None:
    """``(alias, suffix)`` of a camera stream name (one of the four suffixes), else ``None``."""
    if not name.startswith(CAMERA_PREFIX):
        return None
    rest = name[len(CAMERA_PREFIX):]
    for suffix in (RGB, INTRINSICS, TRANSLATION, QUATERNION):
        if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
            return rest[: -len(suffix) - 1], suffix
    return None
