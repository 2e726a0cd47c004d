"""The camera stream layout and the camera-record encoding port.

A camera alias ``A`` records four streams (``camera_streams``): ``cameras.A.rgb``,
``cameras.A.intrinsics``, ``cameras.A.extrinsics.translation`` and
``cameras.A.extrinsics.quaternion_xyzw``; the table and the record rules are in
:mod:`fastsim_record.adapters.camera_records`, the adapter that implements
:class:`CameraRecordEncoding`.  The pipeline's camera stage depends on this port only;
the composition root (:mod:`fastsim_record.camera_wiring`) hands it the adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Protocol

import attrs

from fastsim_contract.values import CameraSample
from fastsim_record.ports.encoders import FrameEncoder, ImageDescriptor
from fastsim_record.ports.sinks import StreamDecl
from fastsim_recording_format import names

__all__ = [
    "ARRAY_SHAPES",
    "ROLES",
    "CameraRecordEncoding",
    "EncodedCameraRecord",
    "MakeCameraRecordEncoding",
    "array_codec",
    "camera_stream_name",
    "camera_streams",
]

ROLES: Final = ("rgb", "intrinsics", "translation", "quaternion_xyzw")

_STREAM_SUFFIX: Final = names.ROLE_SUFFIX

#: role -> exact float64 shape of its payload
ARRAY_SHAPES: Final[Mapping[str, tuple[int, ...]]] = {
    "intrinsics": (3, 3),
    "translation": (3,),
    "quaternion_xyzw": (4,),
}

_UNITS: Final[Mapping[str, list[str]]] = {
    "intrinsics": ["px"],
    "translation": ["m"],
    "quaternion_xyzw": ["1"],
}

def camera_stream_name(alias: str, role: str) -> str:
    """The FSR stream name of one camera role, e.g. ``cameras.wrist.extrinsics.translation``."""
    return names.camera_stream(alias, _STREAM_SUFFIX[role])


def array_codec(role: str) -> dict[str, object]:
    """The codec description of a calibration stream's float64 payload."""
    return {
        "payload_codec": "ndarray",
        "media_type": "application/octet-stream",
        "dtype": "<f8",
        "shape": list(ARRAY_SHAPES[role]),
        "layout": "C-contiguous little-endian",
        "units": list(_UNITS[role]),
    }


def camera_streams(
    alias: str,
    channels: Mapping[str, str],
    descriptor: ImageDescriptor,
    *,
    required: bool,
) -> tuple[StreamDecl, ...]:
    """The four stream declarations of one camera alias (rgb, intrinsics, translation, quaternion).

    ``channels`` maps each role to the scene channel it records.
    """
    decls: list[StreamDecl] = []
    for role in ROLES:
        codec: Mapping[str, object] = (
            descriptor.to_dict() if role == "rgb" else array_codec(role)
        )
        attributes = {
            "camera": alias,
            "role": role,
            "channel": channels[role],
            "calibration": "per-record calibration_digest; profile on intrinsics records",
        }
        kind = "camera." + _STREAM_SUFFIX[role]
        decls.append(
            StreamDecl(
                name=camera_stream_name(alias, role),
                kind=kind,
                codec=codec,
                attributes=attributes,
                required=required,
            )
        )
    return tuple(decls)


@attrs.frozen
class EncodedCameraRecord:
    """One camera sample encoded for the container."""

    stream: str
    role: str
    payload: bytes
    metadata: Mapping[str, object]


class CameraRecordEncoding(Protocol):
    """Checks and encodes one camera alias's samples, in the writer worker."""

    def encode(self, sample: CameraSample) -> EncodedCameraRecord:
        """One checked sample as its container record; a violation raises a RecordError."""
        ...


#: (alias, frame encoder) -> that alias's record encoding
MakeCameraRecordEncoding = Callable[[str, FrameEncoder], CameraRecordEncoding]
