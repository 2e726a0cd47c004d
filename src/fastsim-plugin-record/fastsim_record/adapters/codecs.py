"""Codec adapters behind the encoder port: JPEG (default) and PNG encoders.

Encoders run only in the writer worker; the capture path hands over an immutable packed
RGB array and nothing else touches it.

* JPEG uses ``simplejpeg`` (libjpeg-turbo), which takes RGB directly: no RGB->BGR copy.
  Measured on this 2-core machine with 30 rendered 640x480 frames at quality 92, 4:4:4,
  one core, 40 interleaved paired rounds (twice): simplejpeg 1.22-1.31 ms/frame, OpenCV
  (strip ``cvtColor`` + ``imencode``) 1.31-1.36 ms/frame; OpenCV/simplejpeg time ratio
  median 1.08-1.09, simplejpeg faster in 38 of 40 rounds; payloads are the same size.
* PNG uses OpenCV.  ``encode`` converts RGB to OpenCV's BGR order into a scratch buffer
  the encoder allocates on its first call (so in the worker) and reuses.  The conversion
  runs in row strips of at most ``_STRIP_PIXELS`` pixels: a whole-frame ``cvtColor`` is
  dispatched to OpenCV's thread pool, whose workers then spin on the second core for
  ~0.5 ms per frame; strips stay on the worker thread.  A 1-channel (grey) frame is
  encoded as it is (PNG colour type 0); a 4-channel (RGBA) one is turned into BGRA the same
  way (colour type 6, alpha kept): both exact (docs/fsr-format.md 9.2).

* Legacy raw RGB (``RawRgbEncoder``) is what a Run locked to a 0.3.0-0.3.5 catalog
  version records (those versions compile cameras to ``encoding: raw``): the packed
  rows, copied once into the payload in the worker, descriptor ``raw_rgb``.  It is
  not authorable from 0.3.6 on (the config rules reject ``raw`` there).

An encoder is not thread-safe: the worker owns one per camera stream.  Payloads are
decoded only by the format's reading side (``fastsim_recording_format.reading``).

Factory rules (:func:`encoder_for`):

    | # | encoding | quality       | result                                     |
    |---|----------|---------------|--------------------------------------------|
    | 1 | jpeg     | None          | JPEG quality 92, chroma 4:4:4              |
    | 2 | jpeg     | int 1..100    | JPEG at that quality, chroma 4:4:4         |
    | 3 | jpeg     | anything else | ConfigError naming ``quality``             |
    | 4 | png      | None          | PNG, lossless, compression level 1         |
    | 5 | png      | not None      | ConfigError: PNG is always lossless        |
    | 6 | raw      | None          | legacy raw RGB (0.3.0-0.3.5 locked Runs)   |
    | 7 | raw      | not None      | ConfigError: raw RGB has no quality        |
    | 8 | other    | -             | ConfigError naming ``encoding``            |
    | 9 | jpeg/raw | -             | a 1- or 4-channel image (``channels``):    |
    |   |          |               | ConfigError naming ``encoding`` (JPEG and  |
    |   |          |               | raw RGB are 3-channel; ``png`` records it) |
"""

from __future__ import annotations

from typing import Final, Protocol

import attrs
import cv2
import numpy as np
import simplejpeg

from fastsim_contract.run_errors import RunIssue
from fastsim_record.errors import ConfigError
from fastsim_record.ports.encoders import (
    CODEC_JPEG,
    CODEC_PNG,
    CODEC_RAW_RGB,
    DEFAULT_JPEG_QUALITY,
    DEFAULT_PNG_COMPRESSION_LEVEL,
    FrameEncoder,
    ImageDescriptor,
    PayloadError,
    RgbFrame,
    check_rgb_frame,
)
from fastsim_recording_format.codecs.image import CHANNELS

__all__ = [
    "CameraCodecSettings",
    "JpegEncoder",
    "PngEncoder",
    "RawRgbEncoder",
    "encoder_for",
    "encoder_for_camera",
]

_STRIP_PIXELS: Final = 10_240
#: the effective encoding a 0.3.0-0.3.5 camera compiles to (and the descriptor's name)
_LEGACY_RAW: Final = frozenset({"raw", CODEC_RAW_RGB})


class CameraCodecSettings(Protocol):
    """The codec part of an authored camera alias (``encoding``, ``quality``)."""

    @property
    def encoding(self) -> str: ...

    @property
    def quality(self) -> int | None: ...


@attrs.define(eq=False)
class _BgrScratch:
    """The worker-side BGR buffer an encoder converts into; allocated on first use."""

    shape: tuple[int, int, int]
    _buffer: RgbFrame | None = attrs.field(default=None, repr=False)

    def to_bgr(self, frame: RgbFrame) -> RgbFrame:
        """RGB -> BGR (RGBA -> BGRA for a 4-channel frame) into the scratch buffer."""
        if self._buffer is None:
            self._buffer = np.empty(self.shape, dtype=np.uint8)
        out = self._buffer
        code = cv2.COLOR_RGBA2BGRA if self.shape[2] == 4 else cv2.COLOR_RGB2BGR
        rows = max(1, _STRIP_PIXELS // self.shape[1])
        for top in range(0, self.shape[0], rows):
            cv2.cvtColor(frame[top : top + rows], code, dst=out[top : top + rows])
        return out


def _imencode(ext: str, bgr: RgbFrame, params: list[int]) -> bytes:
    ok, buf = cv2.imencode(ext, bgr, params)
    if not ok:
        raise PayloadError(f"OpenCV could not encode a {bgr.shape} frame as {ext}")
    return bytes(buf.data)


@attrs.define(eq=False)
class _FrameEncoder:
    """A frame encoder for one ``width`` x ``height``; its descriptor is set at init."""

    width: int
    height: int
    descriptor: ImageDescriptor = attrs.field(init=False)


@attrs.define(eq=False)
class JpegEncoder(_FrameEncoder):
    """JPEG at a fixed quality with 4:4:4 chroma (simplejpeg, RGB in); lossy."""

    quality: int = DEFAULT_JPEG_QUALITY

    def __attrs_post_init__(self) -> None:
        self.descriptor = ImageDescriptor.jpeg(self.width, self.height, self.quality)

    def encode(self, frame: RgbFrame) -> bytes:
        """Encode one immutable RGB frame of the descriptor's size."""
        rgb = check_rgb_frame(frame, self.descriptor)
        if not rgb.flags.c_contiguous:
            rgb = np.ascontiguousarray(rgb)
        payload: bytes = simplejpeg.encode_jpeg(
            rgb, quality=self.quality, colorspace="RGB", colorsubsampling="444"
        )
        return payload


@attrs.define(eq=False)
class PngEncoder(_FrameEncoder):
    """Lossless PNG at a fixed zlib compression level (default 1, favouring throughput);
    ``channels`` 3 (RGB), 1 (grey) or 4 (RGBA)."""

    compression_level: int = DEFAULT_PNG_COMPRESSION_LEVEL
    channels: int = 3
    _scratch: _BgrScratch = attrs.field(init=False, repr=False)
    _params: list[int] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.descriptor = ImageDescriptor.png(self.width, self.height, self.compression_level, self.channels)
        self._scratch = _BgrScratch(self.descriptor.shape)
        self._params = [cv2.IMWRITE_PNG_COMPRESSION, self.compression_level]

    def encode(self, frame: RgbFrame) -> bytes:
        """Encode one immutable frame of the descriptor's shape, pixel-exact."""
        image = check_rgb_frame(frame, self.descriptor)
        if self.channels == 1:  # grey: no colour order to turn
            return _imencode(".png", np.ascontiguousarray(image), self._params)
        return _imencode(".png", self._scratch.to_bgr(image), self._params)


@attrs.define(eq=False)
class RawRgbEncoder(_FrameEncoder):
    """Legacy 0.3.0-era raw RGB: the packed ``H x W x 3`` rows, lossless, no compression."""

    def __attrs_post_init__(self) -> None:
        self.descriptor = ImageDescriptor.raw_rgb(self.width, self.height)

    def encode(self, frame: RgbFrame) -> bytes:
        """The frame's packed rows (C order), copied once into the payload."""
        return check_rgb_frame(frame, self.descriptor).tobytes()


def encoder_for(
    encoding: str = CODEC_JPEG,
    quality: int | None = None,
    *,
    width: int,
    height: int,
    path: str = "camera",
    channels: int = 3,
) -> FrameEncoder:
    """Build the encoder an authored camera alias selects (see the module's table).

    ``path`` is the config path of the alias, used to name the field in a ConfigError;
    ``channels`` is its image channel's (3 RGB, 1 grey, 4 RGBA: rule 9).
    """
    if channels != 3 and encoding != CODEC_PNG:
        raise ConfigError([RunIssue(
            f"{path}.encoding",
            f"must be 'png' for a {channels}-channel ({CHANNELS.get(channels, '?')}) image, got {encoding!r} "
            "(JPEG and raw RGB are 3-channel)",
        )])
    if encoding == CODEC_JPEG:
        if quality is None:
            return JpegEncoder(width, height)
        if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
            raise ConfigError(
                [RunIssue(f"{path}.quality", f"must be an integer 1..100, got {quality!r}")]
            )
        return JpegEncoder(width, height, quality)
    if encoding == CODEC_PNG:
        if quality is not None:
            raise ConfigError(
                [RunIssue(f"{path}.quality", "not allowed with encoding: png (always lossless)")]
            )
        return PngEncoder(width, height, channels=channels)
    if encoding in _LEGACY_RAW:
        if quality is not None:
            raise ConfigError(
                [RunIssue(f"{path}.quality", "not allowed with legacy raw RGB (lossless)")]
            )
        return RawRgbEncoder(width, height)
    raise ConfigError(
        [RunIssue(f"{path}.encoding", f"must be 'jpeg' or 'png', got {encoding!r}")]
    )


def encoder_for_camera(
    settings: CameraCodecSettings, *, width: int, height: int, path: str = "camera", channels: int = 3
) -> FrameEncoder:
    """Build the encoder for a validated camera alias object (``.encoding``, ``.quality``)."""
    return encoder_for(settings.encoding, settings.quality, width=width, height=height, path=path,
                       channels=channels)
