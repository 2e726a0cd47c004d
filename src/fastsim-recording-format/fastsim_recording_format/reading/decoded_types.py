"""The typed records :func:`~fastsim_recording_format.reading.decoded.iter_decoded` yields.

One frozen class per kind of payload; every one has ``time_ns`` and ``generation`` (the
record's simulation time and Runtime generation) and ``global_sequence``.  Dispatch on the
class (``match record: case TickRecord(): ...``), not on a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastsim_recording_format.codecs.numeric import Channel
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading._codecs import ImageCodec, decode_image

__all__ = [
    "CalibrationRecord",
    "DecodedRecord",
    "FrameRecord",
    "GeometryRecord",
    "JsonRecord",
    "OpaqueRecord",
    "RenderStateRecord",
    "TickRecord",
]


@dataclass(frozen=True, slots=True, eq=False)
class TickRecord:
    """One ``numeric-tick/1`` record: every channel's values as flat float64 arrays.

    ``fill`` names the channels whose values are a fill in this record, not a sample: the
    per-step channels of a generation's last tick (``docs/reading.md``)."""

    stream: str
    time_ns: int
    generation: int
    global_sequence: int
    values: dict[str, Array]
    fill: frozenset[str]
    payload: bytes  # the recorded bytes, kept only by ``Decoding(keep_tick_bytes=True)``
    layout: tuple[Channel, ...]

    def native(self) -> dict[str, Array]:
        """Every channel in its recorded dtype and shape (needs ``keep_tick_bytes``)."""
        return {
            c.name: np.frombuffer(self.payload, c.dtype, int(np.prod(c.shape)), c.offset).reshape(c.shape)
            for c in self.layout
        }


@dataclass(frozen=True, slots=True, eq=False)
class JsonRecord:
    """One JSON record (lifecycle, events, control, ...): ``value`` is the parsed payload."""

    stream: str
    time_ns: int
    generation: int
    global_sequence: int
    value: Any

    @property
    def data(self) -> dict[str, Any]:
        """The value as an object (a non-object value as ``{"value": value}``)."""
        return self.value if isinstance(self.value, dict) else {"value": self.value}


@dataclass(frozen=True, slots=True, eq=False)
class FrameRecord:
    """One camera frame: its recorded bytes and codec; :meth:`rgb` decodes it."""

    stream: str
    camera: str
    time_ns: int
    generation: int
    global_sequence: int
    payload: bytes
    codec: ImageCodec  # codec ``jpeg``, ``png`` or ``raw_rgb`` (size 0x0: not an image codec read here)
    payload_offset: int  # file offset, named by every decoding error

    def rgb(self, out: Array | None = None, *, strict: bool = True) -> Array:
        """The frame as uint8 ``(height, width, channels)`` (RGB; grey or RGBA for a 1- or
        4-channel stream, exactly as recorded); the descriptor's pixel count and the
        payload's JPEG SOF / PNG IHDR size are checked before any pixel is decoded
        (``strict=False``: damaged JPEG entropy data decodes as far as it goes)."""
        return decode_image(np.frombuffer(self.payload, np.uint8), self.codec, self.payload_offset, out,
                            strict=strict)


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationRecord:
    """One calibration sample of a camera, from its three calibration records at one time."""

    camera: str
    time_ns: int
    generation: int
    global_sequence: int  # the third record's
    k: Array  # (3, 3)
    translation: Array  # (3,) camera-to-world
    quaternion_xyzw: Array  # (4,) camera-to-world
    calibrated: bool  # False: the profile is ``uncalibrated`` (K and pose are NaN)


@dataclass(frozen=True, slots=True, eq=False)
class OpaqueRecord:
    """A record whose payload the reader hands over undecoded, with where it came from."""

    stream: str
    time_ns: int
    generation: int
    global_sequence: int
    payload: bytes
    payload_offset: int
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True, eq=False)
class GeometryRecord(OpaqueRecord):
    """One scene geometry record (assets or transforms; ``codecs.geometry`` decodes it)."""


@dataclass(frozen=True, slots=True, eq=False)
class RenderStateRecord(OpaqueRecord):
    """One ``render.state`` record (``codecs.render_state.decode_render_state`` decodes it)."""


DecodedRecord = TickRecord | JsonRecord | FrameRecord | CalibrationRecord | GeometryRecord | RenderStateRecord
