"""Per-stream payload decoders, chosen by the stream's payload codec id (:data:`DECODERS`).

Adding a codec is one entry in :data:`DECODERS`: a factory that, given the stream's
descriptor, returns a :class:`StreamDecoder`, or ``None`` when the stream is not one it
decodes (then the stream is skipped).  A decoder turns one DATA record's payload into one
typed record of :mod:`fastsim_recording_format.reading.decoded`; every bound it checks
raises :class:`~fastsim_recording_format.FormatError` naming the payload's file offset.

    | codec id                     | stream               | record              | bound checked            |
    |------------------------------|----------------------|---------------------|--------------------------|
    | ``numeric-tick/1``           | any                  | ``TickRecord``      | payload = record size    |
    | ``json``                     | lifecycle/events/... | ``JsonRecord``      | ``MAX_JSON_PAYLOAD``     |
    | ``jpeg`` ``png`` ``raw_rgb`` | ``cameras.*.rgb``    | ``FrameRecord``     | pixels, at decode time   |
    | ``ndarray``                  | camera calibration   | ``CalibrationRecord`` (three records) | 72/24/32 bytes |
    | ``fastsim-scene-geometry/2`` | ``geometry``         | ``GeometryRecord``  | (decoded by the user)    |
    | ``zlib`` (render state)      | ``render.state``     | ``RenderStateRecord`` | (decoded by the user)  |
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format import names as _names
from fastsim_recording_format.codecs.geometry import STREAM_CODEC as _GEOMETRY_CODEC
from fastsim_recording_format.codecs.numeric import NUMERIC_CODEC
from fastsim_recording_format.codecs.render_state import STREAM_CODEC as _RENDER_CODEC
from fastsim_recording_format.reading._codecs import ImageCodec, image_codec, numeric_layout
from fastsim_recording_format.reading._errors import BadRecording
from fastsim_recording_format.reading.decoded_types import (
    CalibrationRecord,
    FrameRecord,
    GeometryRecord,
    JsonRecord,
    OpaqueRecord,
    RenderStateRecord,
    TickRecord,
)

__all__ = ["DECODERS", "MAX_JSON_PAYLOAD", "StreamDecoder", "codec_id", "decoder_for"]

#: the most bytes one JSON payload may have (lifecycle, events and control payloads are
#: a few hundred bytes)
MAX_JSON_PAYLOAD = 1 << 20
#: calibration payload bytes by suffix: K (3, 3), translation (3,), quaternion (4,), float64
_CALIBRATION_BYTES = {_names.INTRINSICS: 72, _names.TRANSLATION: 24, _names.QUATERNION: 32}
_NONE: frozenset[str] = frozenset()
_SLOT = {suffix: k for k, suffix in enumerate(_names.CALIBRATION_SUFFIXES)}


class StreamDecoder(Protocol):
    """Decodes one stream's DATA records; ``meta``: it wants each record's metadata."""

    meta: bool

    def __call__(
        self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int, length: int,
        at: int, metadata: Mapping[str, Any] | None,
    ) -> Any: ...


class Context(Protocol):
    """What a decoder may ask of the :class:`Decoding` that owns it."""

    last_ticks: dict[tuple[int, int], int]
    degraded: bool
    pending: dict[str, list[Any]]


class _Tick:
    __slots__ = ("channels", "ctx", "fills", "keep", "layout", "name", "record_bytes", "sid")
    meta = False

    def __init__(self, spec: StreamSpec, ctx: Context) -> None:
        try:
            self.record_bytes, self.layout = numeric_layout(spec)
        except BadRecording as exc:
            raise FormatError(0, str(exc)) from None
        self.channels = tuple((c.name, c.dtype, int(np.prod(c.shape)), c.offset) for c in self.layout)
        self.fills = frozenset(c.name for c in self.layout if c.per_step)
        self.name, self.sid, self.ctx = spec.name, spec.stream_id, ctx
        self.keep = False  # Decoding(keep_tick_bytes=True): ``TickRecord.native`` needs the bytes

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> TickRecord:
        if length != self.record_bytes:
            raise FormatError(at, f"{self.name}: numeric tick of {length} bytes, "
                                  f"the stream's record size is {self.record_bytes}")
        # a generation's last tick: its per-step channels are a fill (docs/reading.md)
        fill = self.fills if self.ctx.last_ticks.get((self.sid, generation)) == time_ns else _NONE
        values = {name: np.frombuffer(buf, dtype, count, start + offset).astype(np.float64)
                  for name, dtype, count, offset in self.channels}
        return TickRecord(self.name, time_ns, generation, global_sequence, values, fill,
                          bytes(buf[start:start + length]) if self.keep else b"", self.layout)


class _Json:
    __slots__ = ("name",)
    meta = False

    def __init__(self, spec: StreamSpec, ctx: Context) -> None:
        self.name = spec.name

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> JsonRecord:
        if length > MAX_JSON_PAYLOAD:
            raise FormatError(at, f"{self.name}: JSON payload of {length} bytes is over the "
                                  f"{MAX_JSON_PAYLOAD}-byte bound")
        try:
            value = json.loads(buf[start:start + length])
        except (ValueError, UnicodeDecodeError) as exc:
            raise FormatError(at, f"{self.name}: JSON payload does not parse: {exc}") from None
        return JsonRecord(self.name, time_ns, generation, global_sequence, value)


class _Frame:
    __slots__ = ("camera", "codec", "name")
    meta = False

    def __init__(self, spec: StreamSpec, camera: str) -> None:
        self.name, self.camera = spec.name, camera
        try:
            self.codec = image_codec(spec)
        except BadRecording:  # not an image this package decodes: its bytes are still passed on
            raw = spec.codec
            self.codec = ImageCodec(str(raw.get("payload_codec", raw.get("codec", ""))), 0, 0)

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> FrameRecord:
        payload = buf if start == 0 and length == len(buf) else buf[start:start + length]
        return FrameRecord(self.name, self.camera, time_ns, generation, global_sequence, payload, self.codec, at)


class _Calibration:
    """One of a camera's three calibration streams; the third record of a sample yields it."""

    __slots__ = ("camera", "ctx", "meta", "name", "size", "slot")

    def __init__(self, spec: StreamSpec, camera: str, suffix: str, ctx: Context) -> None:
        self.name, self.camera, self.ctx = spec.name, camera, ctx
        self.slot, self.size = _SLOT[suffix], _CALIBRATION_BYTES[suffix]
        self.meta = suffix == _names.INTRINSICS  # the calibration profile says whether it is calibrated

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> CalibrationRecord | None:
        if length != self.size:
            raise FormatError(at, f"{self.name}: calibration payload of {length} bytes, not {self.size}")
        values = np.frombuffer(buf, "<f8", self.size // 8, start).copy()
        pending = self.ctx.pending
        slots = pending.get(self.camera)
        if slots is None:
            slots = pending[self.camera] = [None, None, None]
        elif self.ctx.degraded and any(s is not None and s[0] != time_ns for s in slots):
            slots = pending[self.camera] = [None, None, None]  # a tick lost samples (GAPs): skip it
        if slots[self.slot] is not None:
            raise FormatError(at, f"{_names.camera_stream(self.camera, '*')}: calibration records are "
                                  f"not in step at {time_ns}")
        calibrated = True
        if metadata is not None:
            profile = metadata.get("calibration_profile")
            calibrated = not (isinstance(profile, dict) and profile.get("model") == "uncalibrated")
        slots[self.slot] = (time_ns, generation, values, calibrated, at)
        if slots[0] is None or slots[1] is None or slots[2] is None:
            return None
        del pending[self.camera]
        (ti, gi, k, cal, ai), (tt, _, tr, _, _), (tq, _, q, _, _) = slots
        if not ti == tt == tq:
            raise FormatError(ai, f"{_names.camera_stream(self.camera, '*')}: calibration records at "
                                  f"different times ({ti}, {tt}, {tq})")
        return CalibrationRecord(self.camera, ti, gi, global_sequence, k.reshape(3, 3), tr, q, cal)


class _Opaque:
    """A payload passed on whole (geometry, render state): its codec module decodes it."""

    __slots__ = ("make", "name")
    meta = False

    def __init__(self, spec: StreamSpec, make: type[OpaqueRecord]) -> None:
        self.name, self.make = spec.name, make

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> Any:
        payload = buf if start == 0 and length == len(buf) else buf[start:start + length]
        return self.make(self.name, time_ns, generation, global_sequence, payload, at, metadata or {})


def _numeric(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    return _Tick(spec, ctx)


def _json(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    return _Json(spec, ctx)


def _image(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    cam = _names.camera_of(spec.name)
    return _Frame(spec, cam[0]) if cam is not None and cam[1] == _names.RGB else None


def _ndarray(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    cam = _names.camera_of(spec.name)
    if cam is None or cam[1] not in _SLOT:
        return None
    return _Calibration(spec, cam[0], cam[1], ctx)


def _geometry(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    return _Opaque(spec, GeometryRecord)


def _render_state(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    return _Opaque(spec, RenderStateRecord) if spec.codec.get("schema") == _RENDER_CODEC["schema"] else None


#: payload codec id -> decoder factory (``None``: the stream is skipped)
DECODERS: dict[str, Callable[[StreamSpec, Context], StreamDecoder | None]] = {
    NUMERIC_CODEC: _numeric,
    "json": _json,
    "jpeg": _image,
    "png": _image,
    "raw_rgb": _image,
    "ndarray": _ndarray,
    str(_GEOMETRY_CODEC["payload_codec"]): _geometry,
    str(_RENDER_CODEC["payload_codec"]): _render_state,
}

#: legacy spellings of the raw RGB image codec (0.3.0-era files)
_ALIASES = {"raw": "raw_rgb", "rgb": "raw_rgb", "rgb8": "raw_rgb", "raw-rgb": "raw_rgb", "none": "raw_rgb"}


def codec_id(spec: StreamSpec) -> str:
    """A stream's payload codec id, as :data:`DECODERS` keys it."""
    raw = spec.codec
    codec = str(raw.get("payload_codec", raw.get("encoding", raw.get("codec", ""))))
    low = codec.lower() or ("none" if spec.kind == "camera.rgb" else "")
    if low in _ALIASES or low in ("jpeg", "png", "raw_rgb"):
        return _ALIASES.get(low, low)
    return codec


def decoder_for(spec: StreamSpec, ctx: Context) -> StreamDecoder | None:
    """The decoder of one stream, or ``None`` when no codec of :data:`DECODERS` reads it."""
    factory = DECODERS.get(codec_id(spec))
    if factory is None:
        cam = _names.camera_of(spec.name)  # a frame stream of another codec: its bytes are passed on
        if cam is not None and cam[1] == _names.RGB:
            return _Frame(spec, cam[0])
        return None
    try:
        return factory(spec, ctx)
    except FormatError as exc:  # a descriptor the codec refuses: refused at the stream's first record
        return _Refused(exc.reason)


class _Refused:
    """A stream whose descriptor its codec refuses: its first DATA record is a FormatError."""

    __slots__ = ("reason",)
    meta = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, time_ns: int, generation: int, global_sequence: int, buf: bytes, start: int,
                 length: int, at: int, metadata: Mapping[str, Any] | None) -> None:
        raise FormatError(at, self.reason)
