"""The one error type of the FSR package."""

from __future__ import annotations

__all__ = ["FormatError", "IntegrityPolicyError", "ProfileUnsupportedError"]


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
