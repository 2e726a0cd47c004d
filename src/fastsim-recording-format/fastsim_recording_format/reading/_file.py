"""One process's state of one recording file, and the base every view shares.

See ``_recording`` for the decision table of which records each call returns.
"""

from __future__ import annotations

import numpy as np

from fastsim_recording_format import StreamSpec
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.reading._codecs import (
    NUMERIC_CODEC,
    Channel,
    ImageCodec,
    numeric_layout,
)
from fastsim_recording_format.reading._errors import BadArgument
from fastsim_recording_format.reading._tables import DATA, FileTables

__all__ = ["Array", "File", "ViewBase", "as_int", "opt_int"]



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
                elif spec.kind == "camera.rgb" and spec.name.startswith("cameras.") and spec.name.endswith(".rgb"):
                    self.cameras.setdefault(spec.name[len("cameras."):-len(".rgb")], {})["rgb"] = spec
        self.image_codecs: dict[str, ImageCodec] = {}

    def close(self) -> None:
        self.tables.close()


class ViewBase:
    """What every view has: its file and its generation (``None``: the whole recording)."""

    _generation: int | None

    def _file(self) -> File:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- rows ---------------------------------------------------------------------------
    def _data_rows(self, spec: StreamSpec) -> Array:
        rows = self._file().tables.rows(spec.stream_id)
        mask = rows["kind"] == DATA
        if self._generation is not None:
            mask &= rows["generation"] == self._generation
        out: Array = rows[mask]
        return out

    def _where(self) -> str:
        return f"{self._file().tables.path}" + (
            f" (generation {self._generation})" if self._generation is not None else ""
        )

    # -- generations --------------------------------------------------------------------
    def generations(self) -> tuple[int, ...]:
        """The Runtime generations this view holds."""
        if self._generation is not None:
            return (self._generation,)
        gens: set[int] = set()
        for entry in self._file().tables.reader.footer["streams"]:
            gens.update(int(g) for g in entry["generations"])
        return tuple(sorted(gens))
