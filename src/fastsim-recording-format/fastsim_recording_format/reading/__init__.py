"""Reading recordings: ``open(path)`` for one FSR file, ``Dataset`` over many.

Movable: this package imports only the standard library, attrs, numpy, the FSR format
package (``fastsim_recording_format``), the image-header bounds of
``fastsim_recording_format.codecs.image``, ``fastsim_recording_format.reading.calibration_history`` (when
calibration is read), and lazily OpenCV (frames) and pyarrow (``numeric_table``).
See ``docs/reading.md``.
"""

from typing import Any

from fastsim_recording_format.reading._actions import Actions
from fastsim_recording_format.reading._dataset import Dataset
from fastsim_recording_format.reading._errors import (
    BadArgument,
    BadRecording,
    OutOfRange,
    ReadError,
    UnknownName,
)
from fastsim_recording_format.reading._recording import Recording, Segment, deprecated, open
from fastsim_recording_format.reading._values import (
    CalibrationEpoch,
    CalibrationSeries,
    Event,
    Frame,
    Info,
    LostDeclaration,
    NumericSeries,
)

__all__ = [
    "open",
    "Dataset",
    "Recording",
    "Segment",
    "Actions",
    "Info",
    "NumericSeries",
    "Frame",
    "CalibrationSeries",
    "CalibrationEpoch",
    "LostDeclaration",
    "Event",
    "ReadError",
    "UnknownName",
    "OutOfRange",
    "BadArgument",
    "BadRecording",
]


def __getattr__(name: str) -> Any:
    if name == "Episode":  # the old name of Segment, for one release
        deprecated("Episode", "Segment")
        return Segment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
