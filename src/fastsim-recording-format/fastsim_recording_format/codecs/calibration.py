"""The camera calibration profile: its rules, canonical bytes, digest and K matrix.

A calibration profile is a small, bounded, JSON-able mapping that completely describes
one camera's pinhole intrinsics in one calibration epoch.  Core stamps every camera
sample with the profile's digest and attaches the profile itself to every intrinsics
sample (``fastsim_contract.calibration`` re-exports this module and adds
``pinhole_profile``).  Record stores the profile in every intrinsics record's metadata
and the 3x3 K matrix in its payload (72 bytes: 9 little-endian float64, row-major).
Profile rules (:func:`check_profile`):

    | # | rule                                                                          |
    |---|-------------------------------------------------------------------------------|
    | 1 | ``schema`` is ``fastsim-camera-calibration/1``                                |
    | 2 | ``width``/``height`` are positive integers; ``fx``, ``fy`` > 0, ``cx``, ``cy`` finite |
    | 3 | ``model`` is ``pinhole`` and ``distortion`` is an empty list                  |
    | 4 | only the keys below; strings at most 256 characters                           |
    | 5 | the canonical JSON encoding is at most ``MAX_PROFILE_BYTES`` bytes            |
    | 6 | optional ``renderer``: how the frames were made -- ``name`` and ``version``   |
    |   | (strings), ``msaa_samples`` and ``shadow_map_size`` (integers >= 0; 0: off), |
    |   | optional ``gl_backend`` (string); no other key                                |
    | 3u| or ``model`` is ``uncalibrated``: ``fx``, ``fy``, ``cx``, ``cy`` are ``null``,  |
    |   | ``distortion`` is empty and ``extrinsics`` is ``unknown`` (rule 2 keeps only   |
    |   | ``width``/``height``).  Such a camera has no K and no pose: its intrinsics,   |
    |   | translation and quaternion payloads keep their sizes and are all NaN          |

An FSR 1.2 reader without rule 3u refuses an ``uncalibrated`` profile at rule 3 (one
line naming ``model``); it refuses nothing it accepted before.  One from before rule 6
refuses a profile with ``renderer`` (``unknown key 'renderer'``, rule 4); frames are unaffected.

Digest: ``"sha256:" + hex(sha256(canonical_json(profile)))`` where canonical JSON has
sorted keys, no whitespace, UTF-8 and no NaN or Infinity.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

import numpy as np

from fastsim_recording_format.encoding import canonical_json
from fastsim_recording_format.errors import CalibrationProfileError

__all__ = [
    "K_PAYLOAD_BYTES",
    "MAX_PROFILE_BYTES",
    "PROFILE_KEYS",
    "PROFILE_SCHEMA",
    "RENDERER_KEYS",
    "CalibrationProfileError",
    "calibration_digest",
    "canonical_profile_bytes",
    "check_profile",
    "intrinsic_matrix",
    "is_calibrated",
    "k_matches",
    "plain_profile",
    "uncalibrated_profile",
]

PROFILE_SCHEMA: Final = "fastsim-camera-calibration/1"
MAX_PROFILE_BYTES: Final = 4096
K_PAYLOAD_BYTES: Final = 72
PINHOLE: Final = "pinhole"
UNCALIBRATED: Final = "uncalibrated"  # rule 3u
_MAX_STR: Final = 256

#: Every key a profile has (all required).
PROFILE_KEYS: Final = frozenset(
    {
        "schema", "camera", "model", "width", "height", "fx", "fy", "cx", "cy",
        "distortion", "optical_frame", "extrinsics", "units",
    }
)

#: The keys of the optional ``renderer`` entry (rule 6); ``gl_backend`` may be absent.
RENDERER_KEYS: Final = frozenset({"name", "version", "msaa_samples", "shadow_map_size", "gl_backend"})
_RENDERER_REQUIRED: Final = RENDERER_KEYS - {"gl_backend"}


def plain_profile(value: object) -> Any:
    """A deep plain copy: any mapping becomes a dict, any list or tuple a list.

    Core may hand the profile over deeply frozen (read-only mappings, tuples); the
    digest and the recorded metadata are defined on this plain JSON form.
    """
    if isinstance(value, Mapping):
        return {str(k): plain_profile(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_profile(v) for v in value]
    return value


def canonical_profile_bytes(profile: Mapping[str, object]) -> bytes:
    """Canonical JSON of a profile: sorted keys, no whitespace, UTF-8, no NaN/Infinity."""
    try:
        return canonical_json(plain_profile(profile))
    except (TypeError, ValueError) as exc:
        raise CalibrationProfileError(f"calibration profile: not canonical JSON ({exc})") from None


def calibration_digest(profile: Mapping[str, object]) -> str:
    """The digest that names a profile's calibration epoch."""
    return "sha256:" + hashlib.sha256(canonical_profile_bytes(profile)).hexdigest()


def check_profile(raw: object) -> dict[str, Any]:
    """The profile's plain form if it satisfies the module's rule table, else raise."""
    if not isinstance(raw, Mapping):
        raise CalibrationProfileError("calibration profile: must be a mapping")
    profile: dict[str, Any] = plain_profile(raw)
    keys = set(profile) - {"renderer"}
    if keys != PROFILE_KEYS:
        missing = sorted(PROFILE_KEYS - keys)
        extra = sorted(str(k) for k in keys - PROFILE_KEYS)
        what = f"missing {missing[0]!r}" if missing else f"unknown key {extra[0]!r}"
        raise CalibrationProfileError(f"calibration profile: {what}")
    if profile["schema"] != PROFILE_SCHEMA:
        _bad("schema", f"must be {PROFILE_SCHEMA!r}")
    for name in ("width", "height"):
        value = profile[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            _bad(name, "must be a positive integer")
    model = profile["model"]
    if model not in (PINHOLE, UNCALIBRATED):
        _bad("model", f"must be {PINHOLE!r} or {UNCALIBRATED!r}")
    for name in ("fx", "fy", "cx", "cy"):
        value = profile[name]
        if model == UNCALIBRATED:  # rule 3u: no K is ever invented
            if value is not None:
                _bad(name, "must be null for the uncalibrated model")
            continue
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            _bad(name, "must be a finite number")
        if name in ("fx", "fy") and value <= 0:
            _bad(name, "must be positive")
    if profile["distortion"] != []:
        _bad("distortion", f"must be an empty list for the {model} model")
    if model == UNCALIBRATED and profile["extrinsics"] != "unknown":
        _bad("extrinsics", "must be 'unknown' for the uncalibrated model")
    for name in ("camera", "optical_frame", "extrinsics"):
        value = profile[name]
        if not isinstance(value, str) or not 0 < len(value) <= _MAX_STR:
            _bad(name, f"must be a string of 1..{_MAX_STR} characters")
    if not isinstance(profile["units"], Mapping):
        _bad("units", "must be a mapping")
    if "renderer" in profile:
        _check_renderer(profile["renderer"])
    if len(canonical_profile_bytes(profile)) > MAX_PROFILE_BYTES:
        raise CalibrationProfileError(
            f"calibration profile: larger than {MAX_PROFILE_BYTES} bytes of canonical JSON"
        )
    return profile


def _check_renderer(renderer: object) -> None:
    """Rule 6."""
    if not isinstance(renderer, Mapping):
        _bad("renderer", "must be a mapping")
    keys = set(renderer)
    if not _RENDERER_REQUIRED <= keys <= RENDERER_KEYS:
        missing = sorted(_RENDERER_REQUIRED - keys)
        _bad("renderer", f"missing {missing[0]!r}" if missing else f"unknown key {sorted(keys - RENDERER_KEYS)[0]!r}")
    for name in ("name", "version", "gl_backend"):
        value = renderer.get(name, "-")
        if not isinstance(value, str) or not 0 < len(value) <= _MAX_STR:
            _bad(f"renderer.{name}", f"must be a string of 1..{_MAX_STR} characters")
    for name in ("msaa_samples", "shadow_map_size"):
        value = renderer[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            _bad(f"renderer.{name}", "must be an integer >= 0")


def is_calibrated(profile: Mapping[str, object]) -> bool:
    """Whether a checked profile has a K and a pose (``pinhole``), not ``uncalibrated`` (rule 3u)."""
    return profile.get("model") != UNCALIBRATED


def uncalibrated_profile(camera: str, width: int, height: int) -> dict[str, object]:
    """The profile of a camera whose frames are known but whose K and pose are not (rule 3u)."""
    return {
        "schema": PROFILE_SCHEMA, "camera": camera, "model": UNCALIBRATED, "width": int(width),
        "height": int(height), "fx": None, "fy": None, "cx": None, "cy": None, "distortion": [],
        "optical_frame": "opencv", "extrinsics": "unknown", "units": {},
    }


def intrinsic_matrix(profile: Mapping[str, object]) -> tuple[tuple[float, float, float], ...]:
    """The 3x3 K matrix (row-major) a checked profile describes; all NaN when uncalibrated."""
    if not is_calibrated(profile):
        return ((math.nan,) * 3,) * 3
    fx, fy, cx, cy = (_num(profile, k) for k in ("fx", "fy", "cx", "cy"))
    return ((fx, 0.0, cx), (0.0, fy, cy), (0.0, 0.0, 1.0))


def k_matches(payload: bytes, profile: Mapping[str, object]) -> bool:
    """Whether an intrinsics record's payload is the 72-byte K matrix of ``profile``
    (nine NaN for an uncalibrated profile)."""
    return len(payload) == K_PAYLOAD_BYTES and np.array_equal(
        np.frombuffer(payload, dtype="<f8").reshape(3, 3),
        np.asarray(intrinsic_matrix(profile), dtype=np.float64), equal_nan=not is_calibrated(profile),
    )


def _num(profile: Mapping[str, object], key: str) -> float:
    value = profile.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        _bad(key, "must be a finite number")
    return float(value)


def _bad(field: str, message: str) -> NoReturn:
    raise CalibrationProfileError(f"calibration profile {field}: {message}")
