"""Image dimensions from the JPEG SOF or PNG IHDR header, read before any pixel is decoded.

A recorded frame is decoded only after its header has been checked against the stream's
descriptor, so a forged or foreign payload never makes OpenCV allocate a frame larger
than the one the stream declares (and never one above :data:`MAX_FRAME_PIXELS`).

Header rules (every violation is one :class:`~fastsim_recording_format.errors.ImagePayloadError`
line naming the byte offset inside the payload):

    | # | codec | rule                                                                      |
    |---|-------|---------------------------------------------------------------------------|
    | 1 | jpeg  | starts with SOI ``FF D8``; marker segments are walked (fill bytes and     |
    |   |       | standalone markers skipped) up to the first SOF, which must come before    |
    |   |       | SOS/EOI and lie inside the payload                                        |
    | 2 | jpeg  | the SOF is baseline or extended sequential Huffman (SOF0/SOF1), 8-bit,     |
    |   |       | with 1 or 3 components and non-zero width and height                      |
    | 3 | png   | the 8-byte PNG signature, then an IHDR chunk of length 13 with non-zero    |
    |   |       | width and height and a bit depth of at most 8                             |
    | 4 | both  | ``width * height <= MAX_FRAME_PIXELS`` (2**26, e.g. 8192x8192)            |
    | 5 | both  | ``(width, height)`` equal the descriptor's (checked by the decoder)     |
    | 6 | png   | a 1- or 4-channel stream (descriptor ``channels``, :func:`image_channels`):|
    |   |       | IHDR bit depth 8 and colour type 0 (grey) or 6 (RGBA) exactly; a 3-channel |
    |   |       | stream keeps FSR 1.2's rule 3 (any colour type, decoded to RGB)           |
    | 7 | jpeg  | only a 3-channel stream: a ``channels`` of 1 or 4 with ``jpeg`` is refused |
    |   |       | by :func:`image_channels` (JPEG has no alpha; grey is recorded as PNG)     |

Channels (FSR 1.2, section 9.2 of docs/fsr-format.md): a camera image stream's descriptor
may carry ``channels``, 1 (grey), 3 (RGB) or 4 (RGBA); absent means 3, which is what every
file written before it holds.  The decoded frame is ``(height, width, channels)``.

Progressive, lossless and arithmetic-coded JPEGs are refused: the recorder never writes
them, and a progressive decoder holds the whole coefficient image (about twice the
frame) in memory.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final

from fastsim_recording_format.errors import ImagePayloadError

__all__ = [
    "CHANNELS",
    "MAX_FRAME_PIXELS",
    "PNG_COLOUR_TYPES",
    "check_pixels",
    "image_channels",
    "image_size",
    "jpeg_size",
    "png_header",
    "png_size",
]

#: the largest frame (width x height) any decoder of this package accepts
MAX_FRAME_PIXELS: Final = 1 << 26

#: the channel counts a camera image stream may declare, and what each one is called
CHANNELS: Final = {1: "grey", 3: "RGB", 4: "RGBA"}
#: channels -> the one PNG IHDR colour type a 1- or 4-channel stream's payloads have (rule 6)
PNG_COLOUR_TYPES: Final = {1: 0, 4: 6}

_SOI: Final = b"\xff\xd8"
_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_U16: Final = struct.Struct(">H")
_SOF_SEQUENTIAL: Final = frozenset({0xC0, 0xC1})
_SOF_OTHER: Final = frozenset(range(0xC2, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _fail(message: str) -> ImagePayloadError:
    return ImagePayloadError(message, field="payload")


def check_pixels(width: int, height: int, what: str) -> None:
    """Refuse a frame above :data:`MAX_FRAME_PIXELS`."""
    if width * height > MAX_FRAME_PIXELS:
        raise _fail(
            f"{what} of {width}x{height} exceeds the {MAX_FRAME_PIXELS}-pixel frame bound"
        )


def jpeg_size(data: bytes | memoryview) -> tuple[int, int]:
    """``(width, height)`` from a JPEG's first SOF marker (rules 1-2)."""
    view = memoryview(data).cast("B")
    n = len(view)
    if bytes(view[:2]) != _SOI:
        raise _fail("JPEG payload does not start with an SOI marker (byte 0)")
    pos = 2
    while pos + 1 < n:
        if view[pos] != 0xFF:
            raise _fail(f"JPEG marker expected at payload byte {pos}")
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # standalone markers
            pos += 2
            continue
        if marker in (0xD9, 0xDA):
            raise _fail(f"JPEG payload reaches {'EOI' if marker == 0xD9 else 'SOS'} before a SOF marker (byte {pos})")
        if pos + 4 > n:
            break
        (length,) = _U16.unpack_from(view, pos + 2)
        if length < 2 or pos + 2 + length > n:
            raise _fail(f"JPEG segment at payload byte {pos} has a bad length {length}")
        if marker in _SOF_OTHER:
            raise _fail(f"JPEG SOF{marker - 0xC0} at payload byte {pos} is not baseline or sequential")
        if marker in _SOF_SEQUENTIAL:
            if length < 8:
                raise _fail(f"JPEG SOF at payload byte {pos} is too short")
            precision = view[pos + 4]
            (height,) = _U16.unpack_from(view, pos + 5)
            (width,) = _U16.unpack_from(view, pos + 7)
            components = view[pos + 9]
            if precision != 8 or components not in (1, 3):
                raise _fail(
                    f"JPEG SOF at payload byte {pos}: {precision}-bit, {components} components "
                    "(8-bit with 1 or 3 components expected)"
                )
            if not width or not height:
                raise _fail(f"JPEG SOF at payload byte {pos} declares a zero dimension")
            return width, height
        pos += 2 + length
    raise _fail("JPEG payload has no SOF marker")


def png_header(data: bytes | memoryview) -> tuple[int, int, int, int]:
    """``(width, height, bit depth, colour type)`` from a PNG's IHDR chunk (rule 3)."""
    view = memoryview(data).cast("B")
    if bytes(view[:8]) != _PNG_SIGNATURE:
        raise _fail("PNG payload does not start with the PNG signature (byte 0)")
    if len(view) < 33 or bytes(view[8:16]) != b"\x00\x00\x00\rIHDR":
        raise _fail("PNG payload does not start with a 13-byte IHDR chunk (byte 8)")
    width, height, depth, colour = struct.unpack_from(">IIBB", view, 16)
    if not width or not height:
        raise _fail("PNG IHDR declares a zero dimension (byte 16)")
    if depth > 8:
        raise _fail(f"PNG IHDR declares a bit depth of {depth} (at most 8 accepted, byte 24)")
    return width, height, depth, colour


def png_size(data: bytes | memoryview) -> tuple[int, int]:
    """``(width, height)`` from a PNG's IHDR chunk (rule 3)."""
    return png_header(data)[:2]


def image_channels(descriptor: Mapping[str, Any], codec: str) -> int:
    """The channels a camera image stream's descriptor declares (rule 7): ``channels`` 1, 3
    or 4, absent = 3; 1 and 4 only with ``png``."""
    channels = descriptor.get("channels", 3)
    if not isinstance(channels, int) or isinstance(channels, bool) or channels not in CHANNELS:
        raise _fail(f"image descriptor channels: must be 1, 3 or 4, got {channels!r}")
    if channels != 3 and codec != "png":
        raise _fail(f"image descriptor channels: a {channels}-channel ({CHANNELS[channels]}) image must be png, "
                    f"not {codec} (JPEG and raw RGB are 3-channel)")
    return int(channels)


def image_size(data: bytes | memoryview, codec: str, channels: int = 3) -> tuple[int, int]:
    """``(width, height)`` of a ``jpeg`` or ``png`` payload, within the pixel bound; the PNG
    colour type and bit depth of a 1- or 4-channel stream checked too (rule 6)."""
    if codec == "jpeg":
        width, height = jpeg_size(data)
    else:
        width, height, depth, colour = png_header(data)
        expected = PNG_COLOUR_TYPES.get(channels)
        if expected is not None and (colour, depth) != (expected, 8):
            raise _fail(
                f"PNG IHDR declares colour type {colour}, bit depth {depth} (byte 24); the stream is "
                f"{channels}-channel ({CHANNELS[channels]}): colour type {expected}, bit depth 8 expected"
            )
    check_pixels(width, height, f"{codec} payload header")
    return width, height
