"""One process's state of one recording file, and the scope every part of a view reads through.

See ``_recording`` for the decision table of which records each call returns.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from fastsim_recording_format import StreamSpec
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.names import RGB, camera_of
from fastsim_recording_format.reading._codecs import (
    NUMERIC_CODEC,
    Channel,
    ImageCodec,
    numeric_layout,
)
from fastsim_recording_format.reading._errors import BadArgument
from fastsim_recording_format.reading._tables import DATA, FileTables

__all__ = ["Array", "File", "Opened", "Scope", "as_int", "opt_int"]


def as_int(name: str, value: object) -> int:
    """``value`` as an int, or one BadArgument line naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise BadArgument(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def opt_int(name: str, value: object) -> int | None:
    """``None``, or ``value`` as an int (:func:`as_int`)."""
    return None if value is None else as_int(name, value)


class File:
    """The per-process state of one recording: tables plus what was derived from them."""

    def __init__(self, path: str, verify: bool = True) -> None:
        self.tables = FileTables(path, verify)
        reader = self.tables.reader
        self.streams: dict[str, StreamSpec] = {s.name: s for s in reader.streams}
        self.channels: dict[str, tuple[StreamSpec, int, Channel]] = {}
        self.cameras: dict[str, dict[str, StreamSpec]] = {}
        for spec in reader.streams:
            if spec.codec.get("payload_codec") == NUMERIC_CODEC:
                record_bytes, channels = numeric_layout(spec)
                for ch in channels:
                    self.channels.setdefault(ch.name, (spec, record_bytes, ch))
            if spec.kind.startswith("camera."):
                alias = spec.attributes.get("camera")
                role = spec.attributes.get("role")
                if isinstance(alias, str) and isinstance(role, str):
                    self.cameras.setdefault(alias, {})[role] = spec
                elif spec.kind == "camera.rgb" and (named := camera_of(spec.name)) and named[1] == RGB:
                    self.cameras.setdefault(named[0], {})["rgb"] = spec
        self.image_codecs: dict[str, ImageCodec] = {}

    def close(self) -> None:
        self.tables.close()


class Opened:
    """The per-process :class:`File` of one path: opened on first call, and again in a new
    process (after a fork or an unpickle).  A recording and its episodes share one."""

    __slots__ = ("_pid", "_state", "path", "verify")

    def __init__(self, path: str, verify: bool) -> None:
        self.path = path
        self.verify = verify
        self._state: File | None = None
        self._pid = -1

    def __call__(self) -> File:
        state = self._state
        if state is None or self._pid != os.getpid():
            if not os.path.isfile(self.path):
                raise FileNotFoundError(f"{self.path}: no such recording file")
            state = self._state = File(self.path, self.verify)
            self._pid = os.getpid()
        return state

    def close(self) -> None:
        """Close the file; a later call reopens it."""
        if self._state is not None:
            self._state.close()
            self._state = None


class Scope:
    """Which records a view reads: its file (the recording's, reopened per process) and its
    generation (``None``: the whole recording).  Every part of a view reads through one."""

    __slots__ = ("file", "generation")

    def __init__(self, file: Callable[[], File], generation: int | None) -> None:
        self.file = file
        self.generation = generation

    def data_rows(self, spec: StreamSpec) -> Array:
        """The DATA rows of ``spec``'s stream in this scope's generation(s)."""
        rows = self.file().tables.rows(spec.stream_id)
        mask = rows["kind"] == DATA
        if self.generation is not None:
            mask &= rows["generation"] == self.generation
        if bool(mask.all()):  # the common case: the cached rows themselves (read-only), no copy
            return rows
        out: Array = rows[mask]
        return out

    def where(self) -> str:
        """The file (and generation) for error messages."""
        return f"{self.file().tables.path}" + (
            f" (generation {self.generation})" if self.generation is not None else ""
        )

    def generations(self) -> tuple[int, ...]:
        """The Runtime generations this scope holds."""
        if self.generation is not None:
            return (self.generation,)
        gens: set[int] = set()
        for entry in self.file().tables.reader.footer["streams"]:
            gens.update(int(g) for g in entry["generations"])
        return tuple(sorted(gens))
