"""The FSR package's errors: the container's ``FormatError`` and the payload codecs' tree.

    FormatError                 the container bytes are not valid FSR 1.2 (names the offset)
    PayloadError                one record payload breaks its codec's rules (one line)
    +-- RenderStatePayloadError   ``render.state`` (codecs.render_state)
    +-- GeometryPayloadError      ``scene.geometry@2`` (codecs.geometry)
    +-- FluidPayloadError         ``fluid.emissions`` (codecs.fluid)
    +-- ImagePayloadError         JPEG/PNG header bounds, image descriptors (codecs.image)
    +-- NumericPayloadError       ``numeric-tick/1`` stream layout (codecs.numeric)
    +-- CalibrationProfileError   camera calibration profile (codecs.calibration; a ValueError)

The plugin subclasses these where it raises them on the capture side, so that its own
``except RecordError`` still catches them (``fastsim_record.adapters``).
"""

from __future__ import annotations

__all__ = [
    "CalibrationProfileError",
    "FluidPayloadError",
    "FormatError",
    "GeometryPayloadError",
    "ImagePayloadError",
    "IntegrityPolicyError",
    "NumericPayloadError",
    "PayloadError",
    "ProfileUnsupportedError",
    "RenderStatePayloadError",
]


class FormatError(Exception):
    """The bytes are not valid FSR 1.2: names the byte offset and what was wrong there."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(offset, reason)
        self.offset = offset
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.reason} at offset {self.offset}"


class IntegrityPolicyError(ValueError):
    """A tamper-evident profile (fast/strong) was requested without a sha256 output policy."""


class ProfileUnsupportedError(ValueError):
    """A validation profile was requested that this file cannot support (a usage error).

    ``supported`` lists the profiles the file does support, for example
    ``("structural", "fast")`` for a structural file written without payload CRCs.
    """

    def __init__(self, profile: str, reason: str, supported: tuple[str, ...]) -> None:
        super().__init__(
            f"{reason}; --integrity {profile} needs it. This file supports: {', '.join(supported)}"
        )
        self.profile = profile
        self.supported = supported


class PayloadError(Exception):
    """A record payload (or its recorded description) breaks its codec's rules.

    ``str(error)`` is one line naming the field or the byte offset inside the payload;
    ``fields`` carries the structured details.
    """

    def __init__(self, reason: str, **fields: object) -> None:
        super().__init__(reason)  # str(error) is the reason
        self.reason, self.fields = reason, dict(fields)


class RenderStatePayloadError(PayloadError):
    """A render-state mapping or payload breaks the codec's rules; one line names why."""


class GeometryPayloadError(PayloadError):
    """A geometry envelope or payload breaks the ``scene.geometry@2`` rules."""


class FluidPayloadError(PayloadError):
    """A fluid emission batch breaks the record rules."""


class ImagePayloadError(PayloadError):
    """An image payload or its recorded descriptor cannot be decoded."""


class NumericPayloadError(PayloadError):
    """A ``numeric-tick/1`` stream's recorded channel layout cannot be decoded."""


class CalibrationProfileError(PayloadError, ValueError):
    """A calibration profile or digest breaks the profile rules; the message names the field."""
