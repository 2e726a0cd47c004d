"""Image header bounds on the plugin side: the format's codec, raising the plugin's error.

The JPEG SOF / PNG IHDR rules are the format's, :mod:`fastsim_recording_format.codecs.image`;
here each raises :class:`~fastsim_record.ports.encoders.PayloadError` (the format's
``ImagePayloadError`` and a ``RecordError``), as the plugin's image codecs expect.
"""

from __future__ import annotations

from fastsim_record.adapters.payloads import raising
from fastsim_record.ports.encoders import PayloadError
from fastsim_recording_format.codecs import image as fmt
from fastsim_recording_format.codecs.image import MAX_FRAME_PIXELS

__all__ = ["MAX_FRAME_PIXELS", "check_pixels", "image_size", "jpeg_size", "png_size"]

check_pixels = raising(PayloadError, fmt.check_pixels)
jpeg_size = raising(PayloadError, fmt.jpeg_size)
png_size = raising(PayloadError, fmt.png_size)
image_size = raising(PayloadError, fmt.image_size)
