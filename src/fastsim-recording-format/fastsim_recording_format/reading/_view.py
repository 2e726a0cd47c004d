"""The calls a whole recording and each of its episodes share, over one process's file state.

See ``_recording`` for the decision table of which records each call returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format.codecs.numeric import channel_sequences
from fastsim_recording_format.model import RecordKind
from fastsim_recording_format.reading._cameras import CameraView
from fastsim_recording_format.reading._codecs import Channel
from fastsim_recording_format.reading._errors import BadArgument, unknown
from fastsim_recording_format.reading._file import Array, File, as_int
from fastsim_recording_format.reading._tables import LARGE, empty_bytes
from fastsim_recording_format.reading._values import Event, NumericSeries

__all__ = ["File", "View", "as_int", "step_ticks"]


def step_ticks(generations: Array) -> Array:
    """Which ticks hold a per-step channel's samples: all but each generation's last."""
    gens = np.asarray(generations)
    keep = np.ones(len(gens), bool)
    if len(gens):
        keep[np.flatnonzero(np.diff(gens))] = False
        keep[-1] = False
    return keep


class View(CameraView):
    """The calls shared by a whole recording and one of its episodes."""

    # -- numeric ------------------------------------------------------------------------
    def channels(self) -> tuple[str, ...]:
        """Every numeric channel, in stream and declaration order."""
        return tuple(self._file().channels)

    def _channel(self, channel: object) -> tuple[StreamSpec, int, Channel]:
        f = self._file()
        if not isinstance(channel, str):
            raise BadArgument(f"channel must be a string, got {type(channel).__name__}")
        found = f.channels.get(channel)
        if found is None:
            raise unknown("numeric channel", channel, f.channels)
        return found

    def _tick_rows(self, spec: StreamSpec, record_bytes: int) -> Array:
        rows = self._data_rows(spec)
        bad = rows["payload_length"] != record_bytes
        if bool(bad.any()):
            k = int(bad.argmax())
            raise FormatError(
                int(rows["payload_at"][k]),
                f"stream {spec.name!r}: numeric-tick payload of {int(rows['payload_length'][k])} "
                f"bytes, record_bytes is {record_bytes}",
            )
        return rows

    def numeric(self, channel: str) -> NumericSeries:
        """One channel's every sample, decoded with numpy over whole batches.

        A per-step channel (``Channel.per_step``) has no sample in the last tick of each
        generation: that tick's fill is dropped (docs/reading.md).
        """
        spec, record_bytes, ch = self._channel(channel)
        rows = self._tick_rows(spec, record_bytes)
        if ch.per_step:
            rows = rows[step_ticks(rows["generation"])]
        tables = self._file().tables
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
    def _series(ch: Channel, clock: tuple[Array, Array], raw: Array) -> NumericSeries:
        values = raw.view(ch.dtype.newbyteorder("=") if ch.dtype.byteorder == "<" and np.little_endian else ch.dtype)
        return NumericSeries(
            ch.name, clock[0], clock[1], values.reshape(len(clock[0]), *ch.shape), ch.element_names, ch.units,
        )

    def channel_sequences(self, channel: str) -> Array:
        """The diagnostic live ``channel_sequence`` of each tick of ``channel``'s stream,
        aligned with ``numeric(channel)`` (rule CS1 of the numeric codec; ``-1`` where the
        recording does not say).  Diagnostic only: continuity is the stream sequence."""
        spec = self._channel(channel)[0]
        gen = self._generation
        records = self._file().tables.reader.records(spec.name)
        return channel_sequences(
            r.metadata for r in records if r.kind == RecordKind.DATA and (gen is None or r.generation == gen)
        )

    def numeric_all(self, channels: Sequence[str] | None = None) -> dict[str, NumericSeries]:
        """Several channels at once (default: all): each stream's ticks are read once.

        The values of channels of one stream are views of one shared buffer (a per-step
        channel's are a copy without the fill of each generation's last tick).
        """
        return self._numeric_all(channels, trim=True)

    def _numeric_all(self, channels: Sequence[str] | None, *, trim: bool) -> dict[str, NumericSeries]:
        """``numeric_all``; ``trim=False`` keeps every tick of per-step channels too."""
        f = self._file()
        wanted = list(f.channels) if channels is None else list(self._names(channels))
        by_stream: dict[str, list[str]] = {}
        for name in wanted:
            by_stream.setdefault(self._channel(name)[0].name, []).append(name)
        out: dict[str, NumericSeries] = {}
        for stream, names in by_stream.items():
            spec, record_bytes, _ = f.channels[names[0]]
            # the result's memory is made ready (faulted in) on a second thread while the
            # record tables are read: the projections bound the stream's ticks
            upper = f.tables.record_bound(spec.stream_id, self._generation)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-alloc") as pool:
                buffer = pool.submit(empty_bytes, upper, record_bytes) if upper * record_bytes >= LARGE else None
                rows = self._tick_rows(spec, record_bytes)
                raw = f.tables.gather(rows["payload_at"], record_bytes, buffer.result() if buffer else None)
            clock = self._clock(rows)  # shared by the stream's channels
            steps = step_ticks(rows["generation"]) if any(f.channels[name][2].per_step for name in names) else None
            for name in names:
                ch = f.channels[name][2]
                values = raw[:, ch.offset:ch.offset + ch.nbytes]
                if ch.per_step and steps is not None and trim:  # the fill of each generation's last tick
                    out[name] = self._series(ch, (clock[0][steps], clock[1][steps]), values[steps])
                else:
                    out[name] = self._series(ch, clock, values)
            del stream
        return {name: out[name] for name in wanted}

    def _names(self, channels: object) -> list[str]:
        if isinstance(channels, str) or not isinstance(channels, Sequence):
            raise BadArgument(f"channels must be a sequence of channel names, got {channels!r}")
        for name in channels:
            self._channel(name)
        return list(channels)

    def numeric_table(self, channels: Sequence[str] | None = None) -> Any:
        """Every selected channel of every tick as one ``pyarrow.Table`` (extra ``read``).

        Columns: ``time_ns``, ``generation``, then one per channel (scalars as numbers,
        vectors and matrices as fixed-size lists of their flattened elements).  A per-step
        channel is null in the last tick of each generation (where the file holds a fill).
        """
        try:
            import pyarrow as pa
        except ImportError:
            raise ImportError(
                "numeric_table() needs pyarrow: pip install 'fastsim-plugin-record[read]'"
            ) from None
        series = self._numeric_all(channels, trim=False)
        streams = {self._channel(name)[0].name for name in series}
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
            if self._channel(name)[2].per_step:
                if fills is None:
                    fills = ~step_ticks(s.generation)
                mask = fills
            if s.values.ndim == 1:
                columns[name] = pa.array(flat[:, 0], mask=mask)
            else:
                columns[name] = pa.FixedSizeListArray.from_arrays(
                    pa.array(flat.reshape(-1)), flat.shape[1], mask=None if mask is None else pa.array(mask))
        return pa.table(columns)

    # -- JSON streams -------------------------------------------------------------------
    def _json(self, kind: str) -> tuple[Event, ...]:
        f = self._file()
        out: list[Event] = []
        for spec in f.streams.values():
            if spec.kind != kind:
                continue
            rows = self._data_rows(spec)
            read = f.tables.read
            for at, length, t, g, seq in zip(
                rows["payload_at"].tolist(), rows["payload_length"].tolist(), rows["time_ns"].tolist(),
                rows["generation"].tolist(), rows["global_sequence"].tolist(),
            ):
                try:
                    data = json.loads(read(at, length))
                except ValueError as exc:
                    raise FormatError(at, f"{spec.name}: payload is not JSON ({exc})") from None
                if not isinstance(data, dict):
                    raise FormatError(at, f"{spec.name}: payload is not a JSON object")
                out.append(Event(spec.name, t, g, seq, data))
        out.sort(key=lambda e: e.global_sequence)
        return tuple(out)

    def events(self) -> tuple[Event, ...]:
        """Plugin and scene events (streams of kind ``events``), in recording order."""
        return self._json("events")

    def lifecycle(self) -> tuple[Event, ...]:
        """Run lifecycle records (kind ``lifecycle``), in recording order."""
        return self._json("lifecycle")

    def control(self) -> tuple[Event, ...]:
        """Control audit and results (kind ``control``), in recording order."""
        return self._json("control")
