"""Payload decoding for the reading API: numeric ticks, calibration arrays, images.

``numeric-tick/1``: the layout is the codec's (:mod:`fastsim_recording_format.codecs.numeric`,
rules 1-3); a layout it refuses is a :class:`BadRecording` here.

Images (``camera.rgb`` streams; the codec is the recorder's image descriptor): JPEG and
PNG payloads have their SOF/IHDR size checked against the descriptor before any pixel
is decoded (``fastsim_recording_format.codecs.image``).  JPEG is decoded straight to RGB
by simplejpeg (libjpeg-turbo, the library the recorder encodes with); PNG by OpenCV to
BGR, turned into RGB in place.  ``raw_rgb`` payloads are ``height*width*3`` bytes.

A 1- or 4-channel stream (descriptor ``channels``, docs/fsr-format.md 9.2; PNG only) decodes
to ``(height, width, 1)`` grey or ``(height, width, 4)`` RGBA exactly as recorded (OpenCV
``IMREAD_UNCHANGED``; BGRA turned into RGBA in place), after its IHDR colour type and bit
depth are checked against the descriptor (``codecs.image`` rule 6).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format.codecs import numeric
from fastsim_recording_format.codecs.image import check_pixels, image_channels, image_size
from fastsim_recording_format.codecs.numeric import NUMERIC_CODEC, Channel
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import ImagePayloadError, NumericPayloadError
from fastsim_recording_format.reading._errors import BadRecording

__all__ = ["Channel", "ImageCodec", "NUMERIC_CODEC", "decode_image", "image_codec", "numeric_layout"]

_RAW = frozenset({"raw_rgb", "raw", "rgb", "rgb8", "raw-rgb", "none"})


def numeric_layout(spec: StreamSpec) -> tuple[int, tuple[Channel, ...]]:
    """``(record_bytes, channels)`` of a numeric-tick stream (rules 1-2); ``BadRecording``."""
    try:
        return numeric.numeric_layout(spec)
    except NumericPayloadError as exc:
        raise BadRecording(str(exc)) from None


@attrs.frozen
class ImageCodec:
    """What a camera.rgb stream's payloads are."""

    codec: str  # jpeg, png or raw_rgb
    width: int
    height: int
    channels: int = 3  # 1 grey, 3 RGB, 4 RGBA (png only)

    @property
    def shape(self) -> tuple[int, int, int]:
        """A decoded frame's shape ``(height, width, channels)``."""
        return (self.height, self.width, self.channels)


def image_codec(spec: StreamSpec) -> ImageCodec:
    """The image codec of a camera.rgb stream, from its recorded descriptor."""
    raw = spec.codec
    codec = str(raw.get("payload_codec", raw.get("encoding", raw.get("codec", "none")))).lower()
    if codec in _RAW:  # 0.3.0-era: the descriptor names only its size, or a raw encoding
        codec = "raw_rgb"
    width, height = raw.get("width"), raw.get("height")
    if codec not in ("jpeg", "png", "raw_rgb") or not isinstance(width, int) or not isinstance(height, int):
        raise BadRecording(f"stream {spec.name!r} codec: not a JPEG, PNG or raw RGB image descriptor")
    if width <= 0 or height <= 0:
        raise BadRecording(f"stream {spec.name!r} codec: frame size {width}x{height}")
    try:
        channels = image_channels(raw, codec)
    except ImagePayloadError as exc:
        raise BadRecording(f"stream {spec.name!r} codec: {exc}") from None
    return ImageCodec(codec, width, height, channels)


def decode_image(
    payload: Array, codec: ImageCodec, at: int, out: Array | None = None, *, strict: bool = True
) -> Array:
    """One payload (a uint8 array) as a uint8 ``(height, width, channels)`` array: RGB, or
    grey/RGBA for a 1-/4-channel stream.

    ``at`` is the payload's file offset, named by every error.  With ``out`` (a
    C-contiguous uint8 array of that shape) the image is written there and returned.
    ``strict=False``: a JPEG whose entropy data is damaged decodes as far as it goes (as
    OpenCV does) instead of being refused; its header is checked either way.
    """
    image = _decode(payload, codec, at, out, strict)
    if out is not None and image is not out:
        out[...] = image
        return out
    return image


def _decode(payload: Array, codec: ImageCodec, at: int, out: Array | None, strict: bool = True) -> Array:
    try:
        check_pixels(codec.width, codec.height, "descriptor frame")
        if codec.codec == "raw_rgb":
            if payload.nbytes != codec.width * codec.height * 3:
                raise ValueError(f"raw RGB payload of {payload.nbytes} bytes")
            return payload.reshape(codec.height, codec.width, 3).copy()
        size = image_size(payload.data, codec.codec, codec.channels)
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
            rgb = simplejpeg.decode_jpeg(payload, colorspace="RGB", buffer=out, strict=strict)
        except ValueError as exc:
            raise FormatError(at, f"frame payload: jpeg payload of {payload.nbytes} bytes does not decode ({exc})") from None
        if rgb.shape != (codec.height, codec.width, 3):
            raise FormatError(at, f"frame payload: jpeg payload decodes to {rgb.shape}")
        return np.asarray(rgb, dtype=np.uint8)
    import cv2  # OpenCV loads only when a PNG frame is decoded

    if codec.channels != 3:
        return _exact(cv2, payload, codec, at)
    try:
        bgr = cv2.imdecode(payload, cv2.IMREAD_COLOR)
    except cv2.error:
        bgr = None
    if bgr is None or bgr.shape != (codec.height, codec.width, 3):
        raise FormatError(at, f"frame payload: {codec.codec} payload of {payload.nbytes} bytes does not decode")
    cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dst=bgr)
    return np.asarray(bgr, dtype=np.uint8)


def _exact(cv2: Any, payload: Array, codec: ImageCodec, at: int) -> Array:
    """A 1- or 4-channel PNG (its IHDR already checked) as recorded: grey ``(H, W, 1)`` or RGBA."""
    try:
        image = cv2.imdecode(payload, cv2.IMREAD_UNCHANGED)
    except cv2.error:
        image = None
    if image is not None and codec.channels == 1 and image.ndim == 2:
        image = image.reshape(codec.height, codec.width, 1)
    if image is None or image.dtype != np.uint8 or image.shape != codec.shape:
        raise FormatError(at, f"frame payload: png payload of {payload.nbytes} bytes does not decode to "
                              f"{codec.channels}-channel uint8 {codec.width}x{codec.height}")
    if codec.channels == 4:
        cv2.cvtColor(image, cv2.COLOR_BGRA2RGBA, dst=image)
    return np.asarray(image, dtype=np.uint8)
