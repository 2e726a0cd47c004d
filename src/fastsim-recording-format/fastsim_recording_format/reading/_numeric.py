"""Numeric channels of a recording or episode, one part of a view (see ``_recording``).

Whole streams are read with numpy over whole batches; the channels of one stream share
one buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format.codecs.numeric import channel_sequences
from fastsim_recording_format.model import RecordKind
from fastsim_recording_format.reading._codecs import Channel
from fastsim_recording_format.reading._errors import BadArgument, unknown
from fastsim_recording_format.reading._file import Array, Scope
from fastsim_recording_format.reading._tables import LARGE, empty_bytes
from fastsim_recording_format.reading._values import NumericSeries

__all__ = ["Numeric", "step_ticks"]


def step_ticks(generations: Array) -> Array:
    """Which ticks hold a per-step channel's samples: all but each generation's last."""
    gens = np.asarray(generations)
    keep = np.ones(len(gens), bool)
    if len(gens):
        keep[np.flatnonzero(np.diff(gens))] = False
        keep[-1] = False
    return keep


class Numeric:
    """A view's numeric calls: one channel, several at once, a table, channel sequences."""

    __slots__ = ("_scope",)

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    # -- numeric ------------------------------------------------------------------------
    def channels(self) -> tuple[str, ...]:
        """Every numeric channel, in stream and declaration order."""
        return tuple(self._scope.file().channels)

    def channel(self, channel: object) -> tuple[StreamSpec, int, Channel]:
        """A channel's stream, record size and layout (a bad or unknown name: one line)."""
        f = self._scope.file()
        if not isinstance(channel, str):
            raise BadArgument(f"channel must be a string, got {type(channel).__name__}")
        found = f.channels.get(channel)
        if found is None:
            raise unknown("numeric channel", channel, f.channels)
        return found

    def tick_rows(self, spec: StreamSpec, record_bytes: int) -> Array:
        rows = self._scope.data_rows(spec)
        bad = rows["payload_length"] != record_bytes
        if bool(bad.any()):
            k = int(bad.argmax())
            raise FormatError(
                int(rows["payload_at"][k]),
                f"stream {spec.name!r}: numeric-tick payload of {int(rows['payload_length'][k])} "
                f"bytes, record_bytes is {record_bytes}",
            )
        return rows

    def series(self, channel: str) -> NumericSeries:
        """``View.numeric``: whole batches decoded with numpy (per-step fills dropped)."""
        spec, record_bytes, ch = self.channel(channel)
        rows = self.tick_rows(spec, record_bytes)
        if ch.per_step:
            rows = rows[step_ticks(rows["generation"])]
        tables = self._scope.file().tables
        starts = rows["payload_at"]
        if ch.nbytes * 4 < record_bytes:
            raw = tables.gather(starts + ch.offset, ch.nbytes)
        else:
            raw = np.ascontiguousarray(tables.gather(starts, record_bytes)[:, ch.offset:ch.offset + ch.nbytes])
        return self._series(ch, self._clock(rows), raw)

    @staticmethod
    def _clock(rows: Array) -> tuple[Array, Array]:
        return rows["time_ns"].astype(np.int64), rows["generation"].astype(np.int64)

    @staticmethod
    def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
        """A recorded little-endian dtype in native order (the same bytes)."""
        return dtype.newbyteorder("=") if dtype.byteorder == "<" and np.little_endian else dtype

    @classmethod
    def _series(cls, ch: Channel, clock: tuple[Array, Array], raw: Array) -> NumericSeries:
        values = raw.view(cls._native(ch.dtype))
        return NumericSeries(
            ch.name, clock[0], clock[1], values.reshape(len(clock[0]), *ch.shape), ch.element_names, ch.units,
        )

    def channel_sequences(self, channel: str) -> Array:
        """``View.channel_sequences`` (rule CS1 of the numeric codec)."""
        spec = self.channel(channel)[0]
        gen = self._scope.generation
        records = self._scope.file().tables.reader.records(spec.name)
        return channel_sequences(
            r.metadata for r in records if r.kind == RecordKind.DATA and (gen is None or r.generation == gen)
        )

    def several(self, channels: Sequence[str] | None = None) -> dict[str, NumericSeries]:
        """``View.numeric_all``: each stream's ticks read once into one shared buffer."""
        return self._several(channels, trim=True)

    def _several(self, channels: Sequence[str] | None, *, trim: bool) -> dict[str, NumericSeries]:
        """``several``; ``trim=False`` keeps every tick of per-step channels too."""
        f = self._scope.file()
        known = f.channels
        wanted = list(known) if channels is None else list(self._names(channels))  # each name checked
        by_stream: dict[str, list[tuple[str, Channel]]] = {}
        for name in wanted:
            spec, _, ch = known[name]
            by_stream.setdefault(spec.name, []).append((name, ch))
        out: dict[str, NumericSeries] = {}
        for named in by_stream.values():
            spec, record_bytes, _ = known[named[0][0]]
            # a result of LARGE bytes or more is made ready (faulted in) on a second thread
            # while the record tables are read: the projections bound the stream's ticks
            upper = f.tables.record_bound(spec.stream_id, self._scope.generation)
            if upper * record_bytes >= LARGE:
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-alloc") as pool:
                    buffer = pool.submit(empty_bytes, upper, record_bytes)
                    rows = self.tick_rows(spec, record_bytes)
                    raw = f.tables.gather(rows["payload_at"], record_bytes, buffer.result())
            else:
                rows = self.tick_rows(spec, record_bytes)
                raw = f.tables.gather(rows["payload_at"], record_bytes)
            clock = self._clock(rows)  # shared by the stream's channels
            steps = step_ticks(rows["generation"]) if any(ch.per_step for _, ch in named) else None
            ticks = len(rows)
            native: dict[np.dtype[Any], np.dtype[Any]] = {}  # each dtype's native-order twin, once
            for name, ch in named:
                dtype = native.get(ch.dtype)
                if dtype is None:
                    dtype = native[ch.dtype] = self._native(ch.dtype)
                values = raw[:, ch.offset:ch.offset + ch.nbytes].view(dtype).reshape(ticks, *ch.shape)
                if ch.per_step and steps is not None and trim:  # the fill of each generation's last tick
                    out[name] = NumericSeries(
                        ch.name, clock[0][steps], clock[1][steps], values[steps], ch.element_names, ch.units,
                    )
                else:
                    out[name] = NumericSeries(ch.name, clock[0], clock[1], values, ch.element_names, ch.units)
        return out if channels is None else {name: out[name] for name in wanted}

    def _names(self, channels: object) -> list[str]:
        if isinstance(channels, str) or not isinstance(channels, Sequence):
            raise BadArgument(f"channels must be a sequence of channel names, got {channels!r}")
        for name in channels:
            self.channel(name)
        return list(channels)

    def table(self, channels: Sequence[str] | None = None) -> Any:
        """``View.numeric_table``: one stream's channels as a ``pyarrow.Table``."""
        try:
            import pyarrow as pa
        except ImportError:
            raise ImportError(
                "numeric_table() needs pyarrow: pip install 'fastsim-plugin-record[read]'"
            ) from None
        series = self._several(channels, trim=False)
        streams = {self.channel(name)[0].name for name in series}
        if len(streams) > 1:
            raise BadArgument(
                f"numeric_table() takes channels of one stream; these come from {sorted(streams)}"
            )
        if not series:
            return pa.table({"time_ns": pa.array([], pa.int64()), "generation": pa.array([], pa.int64())})
        first = next(iter(series.values()))
        columns: dict[str, Any] = {"time_ns": first.time_ns, "generation": first.generation}
        fills = None
        for name, s in series.items():
            flat = np.ascontiguousarray(s.values).reshape(len(s), -1)
            mask = None
            if self.channel(name)[2].per_step:
                if fills is None:
                    fills = ~step_ticks(s.generation)
                mask = fills
            if s.values.ndim == 1:
                columns[name] = pa.array(flat[:, 0], mask=mask)
            else:
                columns[name] = pa.FixedSizeListArray.from_arrays(
                    pa.array(flat.reshape(-1)), flat.shape[1], mask=None if mask is None else pa.array(mask))
        return pa.table(columns)
