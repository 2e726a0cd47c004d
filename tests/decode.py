"""Test support: one image payload decoded by the format's reading side, the one decoder.

The tests that hold a payload and the recorder's :class:`ImageDescriptor` (not a whole
file) decode it here, exactly as a ``FrameRecord`` of a stream with that descriptor
would: ``image_codec`` reads the recorded descriptor, ``decode_image`` checks the size
and the pixel bound, then decodes.  Errors are the reader's ``FormatError``.
"""

from __future__ import annotations

import numpy as np

from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_recording_format import StreamSpec
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading._codecs import decode_image, image_codec

__all__ = ["decode_frame"]


def decode_frame(payload: bytes, descriptor: ImageDescriptor) -> Array:
    """The RGB uint8 ``(height, width, 3)`` frame of ``payload`` (``FormatError`` when refused)."""
    spec = StreamSpec(0, "cameras.test.rgb", "camera.rgb", descriptor.to_dict())
    return decode_image(np.frombuffer(payload, np.uint8), image_codec(spec), 0)
