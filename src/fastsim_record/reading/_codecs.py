"""Payload decoding for the reading API: numeric ticks, calibration arrays, images.

``numeric-tick/1`` (one record per tick; the stream attribute ``channels`` lists, in
order, each channel's ``name``, ``dtype`` (a little-endian numpy type string), ``shape``,
``offset`` and ``nbytes``; the codec's ``record_bytes`` is the payload size):

    | # | rule checked when a stream is first decoded                                  |
    |---|-------------------------------------------------------------------------------|
    | 1 | every channel entry has a name, a numeric little-endian dtype and a shape     |
    | 2 | ``nbytes == prod(shape) * itemsize`` and channels tile ``[0, record_bytes)``  |
    | 3 | every DATA record's payload is exactly ``record_bytes`` long                  |

Images (``camera.rgb`` streams; the codec is the recorder's image descriptor): JPEG and
PNG payloads have their SOF/IHDR size checked against the descriptor before any pixel
is decoded (``fastsim_record.adapters.image_header``).  JPEG is decoded straight to RGB
by simplejpeg (libjpeg-turbo, the library the recorder encodes with); PNG by OpenCV to
BGR, turned into RGB in place.  ``raw_rgb`` payloads are ``height*width*3`` bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_record.adapters.image_header import check_pixels, image_size
from fastsim_record.reading._errors import BadRecording
from fastsim_recording_format import FormatError, StreamSpec

__all__ = ["Channel", "ImageCodec", "NUMERIC_CODEC", "decode_image", "image_codec", "numeric_layout"]

Array = npt.NDArray[Any]
NUMERIC_CODEC = "numeric-tick/1"
_RAW = frozenset({"raw_rgb", "raw", "rgb", "rgb8", "raw-rgb", "none"})


@attrs.frozen
class Channel:
    """One channel of a numeric-tick stream: where its bytes are and what they hold."""

    stream: str
    name: str
    dtype: np.dtype[Any] = attrs.field(eq=False)
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    units: tuple[str, ...]
    element_names: tuple[str, ...]


def _element_names(
    name: str, shape: tuple[int, ...], entry: Mapping[str, Any], by_channel: object = None
) -> tuple[str, ...]:
    """The channel entry's own names, else the stream's ``element_names`` map, else
    ``name[i,...]``."""
    given = entry.get("names") or entry.get("element_names")
    if not given and isinstance(by_channel, Mapping):
        given = by_channel.get(name)
    size = math.prod(shape)
    if isinstance(given, list) and len(given) == size and all(isinstance(g, str) for g in given):
        return tuple(given)
    if not shape:
        return (name,)
    return tuple(f"{name}[{','.join(map(str, ix))}]" for ix in np.ndindex(*shape))


def numeric_layout(spec: StreamSpec) -> tuple[int, tuple[Channel, ...]]:
    """``(record_bytes, channels)`` of a numeric-tick stream (rules 1-2)."""
    where = f"stream {spec.name!r} attributes.channels"
    record_bytes = spec.codec.get("record_bytes")
    entries = spec.attributes.get("channels")
    if not isinstance(record_bytes, int) or record_bytes < 0:
        raise BadRecording(f"stream {spec.name!r} codec.record_bytes: not a byte count")
    if not isinstance(entries, list):
        raise BadRecording(f"{where}: missing")
    by_channel = spec.attributes.get("element_names")  # {channel: [names]} (the recorder's)
    out: list[Channel] = []
    at = 0
    for k, entry in enumerate(entries):
        try:
            name, shape = str(entry["name"]), tuple(int(d) for d in entry["shape"])
            dtype = np.dtype(str(entry["dtype"]))
            offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRecording(f"{where}[{k}]: malformed ({exc})") from None
        if dtype.kind not in "biuf" or dtype.byteorder == ">" or any(d < 0 for d in shape):
            raise BadRecording(f"{where}[{k}] ({name}): unsupported dtype {dtype.str} or shape")
        if nbytes != math.prod(shape) * dtype.itemsize or offset != at:
            raise BadRecording(f"{where}[{k}] ({name}): offset/nbytes do not tile the record")
        at += nbytes
        units = tuple(str(u) for u in entry.get("units", []))
        out.append(Channel(spec.name, name, dtype, shape, offset, nbytes, units,
                           _element_names(name, shape, entry, by_channel)))
    if at != record_bytes:
        raise BadRecording(f"{where}: channels cover {at} bytes, record_bytes is {record_bytes}")
    return record_bytes, tuple(out)


@attrs.frozen
class ImageCodec:
    """What a camera.rgb stream's payloads are."""

    codec: str  # jpeg, png or raw_rgb
    width: int
    height: int


def image_codec(spec: StreamSpec) -> ImageCodec:
    """The image codec of a camera.rgb stream, from its recorded descriptor."""
    raw = spec.codec
    codec = str(raw.get("payload_codec", raw.get("codec", ""))).lower()
    if codec in _RAW:
        codec = "raw_rgb"
    width, height = raw.get("width"), raw.get("height")
    if codec not in ("jpeg", "png", "raw_rgb") or not isinstance(width, int) or not isinstance(height, int):
        raise BadRecording(f"stream {spec.name!r} codec: not a JPEG, PNG or raw RGB image descriptor")
    if width <= 0 or height <= 0:
        raise BadRecording(f"stream {spec.name!r} codec: frame size {width}x{height}")
    return ImageCodec(codec, width, height)


def decode_image(payload: Array, codec: ImageCodec, at: int, out: Array | None = None) -> Array:
    """One payload (a uint8 array) as an RGB uint8 ``(height, width, 3)`` array.

    ``at`` is the payload's file offset, named by every error.  With ``out`` (a
    C-contiguous uint8 array of that shape) the image is written there and returned.
    """
    image = _decode(payload, codec, at, out)
    if out is not None and image is not out:
        out[...] = image
        return out
    return image


def _decode(payload: Array, codec: ImageCodec, at: int, out: Array | None) -> Array:
    try:
        check_pixels(codec.width, codec.height, "descriptor frame")
        if codec.codec == "raw_rgb":
            if payload.nbytes != codec.width * codec.height * 3:
                raise ValueError(f"raw RGB payload of {payload.nbytes} bytes")
            return payload.reshape(codec.height, codec.width, 3).copy()
        size = image_size(payload.data, codec.codec)
    except Exception as exc:  # PayloadError and friends: one line with the offset
        raise FormatError(at, f"frame payload: {exc}") from None
    if size != (codec.width, codec.height):
        raise FormatError(
            at, f"frame payload: {codec.codec} header declares {size[0]}x{size[1]}, "
            f"the stream descriptor {codec.width}x{codec.height}",
        )
    if codec.codec == "jpeg":
        import simplejpeg  # libjpeg-turbo straight to RGB: no BGR frame, no conversion

        try:
            rgb = simplejpeg.decode_jpeg(payload, colorspace="RGB", buffer=out)
        except ValueError as exc:
            raise FormatError(at, f"frame payload: jpeg payload of {payload.nbytes} bytes does not decode ({exc})") from None
        if rgb.shape != (codec.height, codec.width, 3):
            raise FormatError(at, f"frame payload: jpeg payload decodes to {rgb.shape}")
        return np.asarray(rgb, dtype=np.uint8)
    import cv2  # OpenCV loads only when a PNG frame is decoded

    try:
        bgr = cv2.imdecode(payload, cv2.IMREAD_COLOR)
    except cv2.error:
        bgr = None
    if bgr is None or bgr.shape != (codec.height, codec.width, 3):
        raise FormatError(at, f"frame payload: {codec.codec} payload of {payload.nbytes} bytes does not decode")
    cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dst=bgr)
    return np.asarray(bgr, dtype=np.uint8)
