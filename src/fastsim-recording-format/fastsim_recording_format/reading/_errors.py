"""The reading API's errors: one line each, naming what was asked and what exists."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ReadError", "UnknownName", "OutOfRange", "BadArgument", "BadRecording", "unknown"]


class ReadError(Exception):
    """Base class of every error the reading API raises on a bad argument or file."""


class UnknownName(ReadError, KeyError):
    """A channel, camera or stream that the recording does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class OutOfRange(ReadError, IndexError):
    """An index or time outside what the recording holds."""


class BadArgument(ReadError, ValueError):
    """An argument of the wrong type or value."""


class BadRecording(ReadError):
    """A stream description the reader cannot decode (names the file, stream and field)."""


def unknown(
    what: str, name: object, existing: Iterable[str], holder: str = "the recording has"
) -> UnknownName:
    """``unknown camera 'x'; the recording has: a, b``."""
    names = sorted(existing)
    listed = ", ".join(names) if names else "(none)"
    return UnknownName(f"unknown {what} {name!r}; {holder}: {listed}")
