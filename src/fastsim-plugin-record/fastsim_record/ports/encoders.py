"""The RGB image encoder port: what the writer worker needs from a codec.

An RGB camera stream records an :class:`ImageDescriptor` once, at stream opening, so
an offline reader never infers the payload's representation.  The worker encodes each
immutable packed ``HxWx3`` ``uint8`` RGB frame exactly once with a :class:`FrameEncoder`;
a reader turns payloads back into frames through the format's reading side
(``fastsim_recording_format.reading``: the one decoder).

Descriptor rules (``ImageDescriptor.check``):

    | # | payload_codec | media_type               | lossy | quality | jpeg_chroma | png_compression_level |
    |---|---------------|--------------------------|-------|---------|-------------|-----------------------|
    | 1 | jpeg          | image/jpeg               | True  | 1..100  | "4:4:4"     | None                  |
    | 2 | png           | image/png                | False | None    | None        | 0..9                  |
    | 3 | raw_rgb       | application/octet-stream | False | None    | None        | None                  |

Row 3 is the 0.3.0-era legacy payload: packed RGB rows, ``width * height * 3`` bytes.

``channels`` is 3 (RGB) for every row; a PNG descriptor may instead say 1 (grey) or 4 (RGBA)
(docs/fsr-format.md 9.2): its frames are ``(height, width, 1)``/``(height, width, 4)`` uint8,
and ``to_dict`` writes the key only then, so a 3-channel descriptor is the FSR 1.2 one byte for
byte.  JPEG and raw RGB are 3-channel only (``ImageDescriptor.check``).
Readers accept it; it is written only for Runs locked to catalog versions 0.3.0-0.3.5
(whose cameras compile to ``encoding: raw``), never for a new compilation.  Every descriptor has
``color_space == "srgb"`` and channel order R, G, B after decoding.

Only camera images go through this port.  Depth, segmentation, normals and every other numeric
sensor channel are numeric observations; an encoder rejects any array that is not
``uint8`` with shape ``(height, width, channels)`` (:class:`~fastsim_record.errors.DescriptorDriftError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NoReturn, Protocol, runtime_checkable

import attrs
import numpy as np
from numpy.typing import NDArray

from fastsim_record.errors import DescriptorDriftError, RecordError
from fastsim_recording_format.codecs.image import CHANNELS
from fastsim_recording_format.errors import ImagePayloadError

__all__ = [
    "CODEC_JPEG",
    "CODEC_PNG",
    "CODEC_RAW_RGB",
    "COLOR_SPACE_SRGB",
    "DEFAULT_JPEG_QUALITY",
    "DEFAULT_PNG_COMPRESSION_LEVEL",
    "JPEG_CHROMA_444",
    "FrameEncoder",
    "ImageDescriptor",
    "PayloadError",
    "RgbFrame",
    "check_rgb_frame",
]

RgbFrame = NDArray[np.uint8]
"""An ``(height, width, 3)`` ``uint8`` array, channel order R, G, B."""

CODEC_JPEG: Final = "jpeg"
CODEC_PNG: Final = "png"
CODEC_RAW_RGB: Final = "raw_rgb"
COLOR_SPACE_SRGB: Final = "srgb"
JPEG_CHROMA_444: Final = "4:4:4"
DEFAULT_JPEG_QUALITY: Final = 92
DEFAULT_PNG_COMPRESSION_LEVEL: Final = 1

_MEDIA_TYPES: Final = {
    CODEC_JPEG: "image/jpeg",
    CODEC_PNG: "image/png",
    CODEC_RAW_RGB: "application/octet-stream",
}
_LEGACY_RAW_NAMES: Final = frozenset({"raw", "rgb", "rgb8", "raw_rgb", "raw-rgb", "none"})


class PayloadError(ImagePayloadError, RecordError):
    """An image payload or its recorded descriptor cannot be decoded (the format's
    ``ImagePayloadError``, raised on the plugin side, so also a ``RecordError``)."""


@attrs.frozen
class ImageDescriptor:
    """Everything an FSR RGB stream records about its payload representation."""

    media_type: str
    payload_codec: str
    width: int
    height: int
    color_space: str
    lossy: bool
    quality: int | None
    jpeg_chroma: str | None
    png_compression_level: int | None
    channels: int = 3  # 3 RGB; a PNG may be 1 (grey) or 4 (RGBA)

    @classmethod
    def jpeg(cls, width: int, height: int, quality: int = DEFAULT_JPEG_QUALITY) -> ImageDescriptor:
        """A JPEG descriptor with 4:4:4 chroma (no subsampling)."""
        return cls(
            _MEDIA_TYPES[CODEC_JPEG], CODEC_JPEG, width, height, COLOR_SPACE_SRGB,
            True, quality, JPEG_CHROMA_444, None,
        ).check()

    @classmethod
    def png(
        cls, width: int, height: int, compression_level: int = DEFAULT_PNG_COMPRESSION_LEVEL,
        channels: int = 3,
    ) -> ImageDescriptor:
        """A lossless PNG descriptor (``channels`` 3 RGB, 1 grey or 4 RGBA)."""
        return cls(
            _MEDIA_TYPES[CODEC_PNG], CODEC_PNG, width, height, COLOR_SPACE_SRGB,
            False, None, None, compression_level, channels,
        ).check()

    @classmethod
    def raw_rgb(cls, width: int, height: int) -> ImageDescriptor:
        """A legacy (0.3.0-era) packed raw RGB descriptor."""
        return cls(
            _MEDIA_TYPES[CODEC_RAW_RGB], CODEC_RAW_RGB, width, height, COLOR_SPACE_SRGB,
            False, None, None, None,
        ).check()

    @property
    def shape(self) -> tuple[int, int, int]:
        """The decoded frame's numpy shape ``(height, width, channels)``."""
        return (self.height, self.width, self.channels)

    def check(self) -> ImageDescriptor:
        """Return self if it satisfies the module's rule table, else raise PayloadError."""
        row = _MEDIA_TYPES.get(self.payload_codec)
        if row is None:
            _fail("payload_codec", f"unknown codec {self.payload_codec!r}")
        if self.media_type != row:
            _fail("media_type", f"{self.media_type!r} does not match codec {self.payload_codec!r}")
        for name in ("width", "height"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                _fail(name, f"must be a positive integer, got {value!r}")
        if self.color_space != COLOR_SPACE_SRGB:
            _fail("color_space", f"must be {COLOR_SPACE_SRGB!r}, got {self.color_space!r}")
        jpeg = self.payload_codec == CODEC_JPEG
        png = self.payload_codec == CODEC_PNG
        if self.lossy is not jpeg:
            _fail("lossy", f"must be {jpeg} for {self.payload_codec}")
        if jpeg != (self.quality is not None):
            _fail("quality", "required for jpeg and absent otherwise")
        if self.quality is not None and (not _is_int(self.quality) or not 1 <= self.quality <= 100):
            _fail("quality", f"must be an integer 1..100, got {self.quality!r}")
        if jpeg != (self.jpeg_chroma is not None) or (jpeg and self.jpeg_chroma != JPEG_CHROMA_444):
            _fail("jpeg_chroma", f"must be {JPEG_CHROMA_444!r} for jpeg and absent otherwise")
        if not _is_int(self.channels) or self.channels not in CHANNELS:
            _fail("channels", f"must be 1, 3 or 4, got {self.channels!r}")
        if self.channels != 3 and not png:
            _fail("channels", f"a {self.channels}-channel ({CHANNELS[self.channels]}) image must be png, "
                              f"not {self.payload_codec} (JPEG and raw RGB are 3-channel)")
        level = self.png_compression_level
        if png != (level is not None):
            _fail("png_compression_level", "required for png and absent otherwise")
        if level is not None and (not _is_int(level) or not 0 <= level <= 9):
            _fail("png_compression_level", f"must be an integer 0..9, got {level!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict with every field (absent ones as ``None``); ``channels`` only when
        it is not 3, so an RGB descriptor is FSR 1.2's."""
        out = attrs.asdict(self)
        if self.channels == 3:
            del out["channels"]
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ImageDescriptor:
        """Parse a recorded descriptor; a legacy raw-RGB descriptor may name only its size.

        0.3.0-era streams recorded ``width``/``height`` (and at most an encoding name such
        as ``raw``/``rgb8``); they are read as :meth:`raw_rgb`.
        """
        codec = raw.get("payload_codec", raw.get("encoding", raw.get("codec")))
        if codec is None or str(codec).lower() in _LEGACY_RAW_NAMES:
            return cls.raw_rgb(_dim(raw, "width"), _dim(raw, "height"))
        fields = {f.name for f in attrs.fields(cls)}
        missing = sorted(fields - raw.keys() - {"channels"})  # absent channels: 3
        if missing:
            _fail(missing[0], "missing from the recorded descriptor")
        return cls(**{k: raw[k] for k in fields if k in raw}).check()


@runtime_checkable
class FrameEncoder(Protocol):
    """Encodes immutable frames (RGB, or grey/RGBA for a 1-/4-channel PNG) of one fixed size
    into one codec; runs only in the worker."""

    @property
    def descriptor(self) -> ImageDescriptor:
        """The representation every payload of this encoder has."""
        ...

    def encode(self, frame: RgbFrame) -> bytes:
        """Encode one ``(height, width, channels)`` uint8 frame; never mutates ``frame``."""
        ...


def check_rgb_frame(frame: object, descriptor: ImageDescriptor) -> RgbFrame:
    """Return ``frame`` if it is a uint8 array of the descriptor's shape (RGB, or grey/RGBA
    for a 1-/4-channel descriptor), else raise."""
    model = CHANNELS.get(descriptor.channels, "RGB")
    if not isinstance(frame, np.ndarray):
        raise DescriptorDriftError(
            f"frame: expected a numpy uint8 {model} array, got {type(frame).__name__}",
            field="frame",
        )
    if frame.dtype != np.uint8 or frame.shape != descriptor.shape:
        h, w, c = descriptor.shape
        raise DescriptorDriftError(
            f"frame: expected uint8 {model} of shape ({h}, {w}, {c}), got {frame.dtype} of shape "
            f"{frame.shape}; depth, segmentation and other numeric channels never go "
            "through the image encoder",
            field="frame",
            expected=descriptor.shape,
            got=frame.shape,
        )
    return frame


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dim(raw: Mapping[str, Any], name: str) -> int:
    value = raw.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        _fail(name, f"must be a positive integer, got {value!r}")
    return value


def _fail(field: str, message: str) -> NoReturn:
    raise PayloadError(f"image descriptor {field}: {message}", field=field)
