"""Bounded random access over a binary file: every read is checked against the file size."""

from __future__ import annotations

import os
from types import TracebackType
from typing import BinaryIO, Self

import attrs

from fastsim_recording_format.errors import FormatError

__all__ = ["Closing", "Source", "open_source"]


class Closing:
    """``with obj: ...`` closes ``obj`` on the way out (readers, writers, recordings)."""

    def close(self) -> None:  # pragma: no cover - every user defines it
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@attrs.define(eq=False)
class Source:
    """A seekable binary file of known size; reads past the end raise ``FormatError``."""

    file: BinaryIO
    size: int
    owned: bool

    def read_at(self, offset: int, length: int, what: str) -> bytes:
        """Exactly ``length`` bytes at ``offset``, or a truncation ``FormatError``."""
        if length < 0 or offset < 0 or offset + length > self.size:
            raise FormatError(offset, f"truncated: {what} needs {length} bytes")
        self.file.seek(offset)
        data = self.file.read(length)
        if len(data) != length:  # a short read is not the end of the file: read on
            parts = [data]
            got = len(data)
            while got < length and (more := self.file.read(length - got)):
                parts.append(more)
                got += len(more)
            if got != length:
                raise FormatError(offset, f"truncated: {what} needs {length} bytes")
            data = b"".join(parts)
        return data

    def close(self) -> None:
        """Close the file if this source opened it."""
        if self.owned:
            self.file.close()


def open_source(target: str | os.PathLike[str] | BinaryIO) -> Source:
    """Open a path unbuffered (so reads are exact), or wrap a seekable binary file."""
    if isinstance(target, (str, os.PathLike)):
        file: BinaryIO = open(target, "rb", buffering=0)  # noqa: SIM115 - owned by Source
        owned = True
    else:
        file, owned = target, False
    try:
        size = file.seek(0, os.SEEK_END)
    except Exception:
        if owned:
            file.close()
        raise
    return Source(file, int(size), owned)
