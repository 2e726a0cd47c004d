"""The calls a whole recording and each of its episodes share, over one process's file state.

See ``_recording`` for the decision table of which records each call returns.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from fastsim_record.reading._codecs import (
    NUMERIC_CODEC,
    Channel,
    ImageCodec,
    decode_image,
    image_codec,
    numeric_layout,
)
from fastsim_record.reading._errors import BadArgument, BadRecording, OutOfRange, unknown
from fastsim_record.reading._tables import DATA, LARGE, FileTables, empty_bytes
from fastsim_record.reading._values import (
    CalibrationEpoch,
    CalibrationSeries,
    Event,
    Frame,
    NumericSeries,
)
from fastsim_recording_format import FormatError, StreamSpec

__all__ = ["File", "View", "as_int"]

Array = npt.NDArray[Any]
_AHEAD = 3  # frames decoded ahead by frames()
_CALIBRATION_ROLES = (("intrinsics", 72, (3, 3)), ("translation", 24, (3,)), ("quaternion_xyzw", 32, (4,)))


def as_int(name: str, value: object) -> int:
    """``value`` as an int, or one BadArgument line naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise BadArgument(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _opt_int(name: str, value: object) -> int | None:
    return None if value is None else as_int(name, value)


class File:
    """The per-process state of one recording: tables plus what was derived from them."""

    def __init__(self, path: str) -> None:
        self.tables = FileTables(path)
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


class View:
    """The calls shared by a whole recording and one of its episodes."""

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
        """One channel's every sample, decoded with numpy over whole batches."""
        spec, record_bytes, ch = self._channel(channel)
        rows = self._tick_rows(spec, record_bytes)
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

    def numeric_all(self, channels: Sequence[str] | None = None) -> dict[str, NumericSeries]:
        """Several channels at once (default: all): each stream's ticks are read once.

        The values of channels of one stream are views of one shared buffer.
        """
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
            for name in names:
                ch = f.channels[name][2]
                out[name] = self._series(ch, clock, raw[:, ch.offset:ch.offset + ch.nbytes])
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
        vectors and matrices as fixed-size lists of their flattened elements).
        """
        try:
            import pyarrow as pa
        except ImportError:
            raise ImportError(
                "numeric_table() needs pyarrow: pip install 'fastsim-plugin-record[read]'"
            ) from None
        series = self.numeric_all(channels)
        streams = {self._channel(name)[0].name for name in series}
        if len(streams) > 1:
            raise BadArgument(
                f"numeric_table() takes channels of one stream; these come from {sorted(streams)}"
            )
        if not series:
            return pa.table({"time_ns": pa.array([], pa.int64()), "generation": pa.array([], pa.int64())})
        first = next(iter(series.values()))
        columns: dict[str, Any] = {"time_ns": first.time_ns, "generation": first.generation}
        for name, s in series.items():
            flat = np.ascontiguousarray(s.values).reshape(len(s), -1)
            if s.values.ndim == 1:
                columns[name] = pa.array(flat[:, 0])
            else:
                columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), flat.shape[1])
        return pa.table(columns)

    # -- cameras ------------------------------------------------------------------------
    def cameras(self) -> tuple[str, ...]:
        """Camera aliases that have an RGB stream."""
        return tuple(a for a, roles in self._file().cameras.items() if "rgb" in roles)

    def _camera(self, camera: object, role: str = "rgb") -> StreamSpec:
        f = self._file()
        if not isinstance(camera, str):
            raise BadArgument(f"camera must be a string alias, got {type(camera).__name__}")
        roles = f.cameras.get(camera)
        if roles is None or "rgb" not in roles:
            raise unknown("camera", camera, self.cameras())
        spec = roles.get(role)
        if spec is None:
            raise BadRecording(f"{self._where()}: camera {camera!r} has no {role} stream")
        return spec

    def _image_codec(self, spec: StreamSpec) -> ImageCodec:
        codecs = self._file().image_codecs
        codec = codecs.get(spec.name)
        if codec is None:
            codec = codecs[spec.name] = image_codec(spec)
        return codec

    def _decode(self, spec: StreamSpec, row: Any, out: Array | None = None) -> Array:
        at, length = int(row["payload_at"]), int(row["payload_length"])
        payload = np.frombuffer(self._file().tables.read(at, length), np.uint8)
        return decode_image(payload, self._image_codec(spec), at, out)

    def frame_count(self, camera: str) -> int:
        """How many frames a camera has in this view."""
        return len(self._data_rows(self._camera(camera)))

    def frames(
        self,
        camera: str,
        *,
        generation: int | None = None,
        start_ns: int | None = None,
        stop_ns: int | None = None,
        step: int = 1,
    ) -> Iterator[Frame]:
        """Decoded frames, one at a time, in ``[start_ns, stop_ns)``, every ``step``-th."""
        spec = self._camera(camera)
        gen = _opt_int("generation", generation)
        lo = _opt_int("start_ns", start_ns)
        hi = _opt_int("stop_ns", stop_ns)
        st = as_int("step", step)
        if st < 1:
            raise BadArgument(f"step must be a positive integer, got {step!r}")
        if gen is not None and gen not in self.generations():
            raise unknown("generation", gen, [str(g) for g in self.generations()])
        rows = self._data_rows(spec)
        mask = np.ones(len(rows), bool)
        if gen is not None:
            mask &= rows["generation"] == gen
        if lo is not None:
            mask &= rows["time_ns"] >= lo
        if hi is not None:
            mask &= rows["time_ns"] < hi
        picked = np.flatnonzero(mask)[::st]
        self._image_codec(spec)  # a bad descriptor fails before the first frame

        return self._decoded(spec, rows, picked.tolist())

    def _decoded(self, spec: StreamSpec, rows: Array, picked: list[int]) -> Iterator[Frame]:
        """Frames at ``picked`` in order; up to ``_AHEAD`` are decoded ahead on a second thread.

        The decoder releases the GIL, so two cores decode at once; no more than
        ``_AHEAD + 1`` decoded frames exist at any time, and closing the iterator early
        waits only for the frames already in flight.
        """
        if len(picked) < 2 or (os.cpu_count() or 1) < 2:
            for k in picked:
                row = rows[k]
                yield Frame(self._decode(spec, row), int(row["time_ns"]), int(row["generation"]), k)
            return
        pending: deque[tuple[int, Future[Array]]] = deque()
        todo = iter(picked)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="fsr-frames") as pool:
            for k in itertools.islice(todo, _AHEAD):
                pending.append((k, pool.submit(self._decode, spec, rows[k])))
            while pending:
                k, future = pending.popleft()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(self._decode, spec, rows[nxt])))
                row = rows[k]
                yield Frame(future.result(), int(row["time_ns"]), int(row["generation"]), k)

    def frame(self, camera: str, index: int) -> Frame:
        """Frame ``index`` of a camera in this view (negative counts from the end)."""
        spec = self._camera(camera)
        k = as_int("index", index)
        rows = self._data_rows(spec)
        n = len(rows)
        if not -n <= k < n:
            raise OutOfRange(
                f"frame index {index} out of range: camera {camera!r} has {n} frames"
                + (f" (0..{n - 1})" if n else "") + f" in {self._where()}"
            )
        k %= n
        row = rows[k]
        return Frame(self._decode(spec, row), int(row["time_ns"]), int(row["generation"]), k)

    def frame_at(self, camera: str, time_ns: int, *, generation: int | None = None) -> Frame:
        """The latest frame recorded at or before ``time_ns``."""
        spec = self._camera(camera)
        t = as_int("time_ns", time_ns)
        gen = _opt_int("generation", generation)
        rows = self._data_rows(spec)
        index = np.arange(len(rows))
        if gen is not None:
            if gen not in self.generations():
                raise unknown("generation", gen, [str(g) for g in self.generations()])
            keep = rows["generation"] == gen
            rows, index = rows[keep], index[keep]
        times = rows["time_ns"]
        if len(times) > 1 and bool((np.diff(times) < 0).any()):
            raise BadArgument(
                f"time_ns {t} is ambiguous: simulation time restarts between the generations "
                f"{sorted(set(rows['generation'].tolist()))} of {self._where()}; pass generation= "
                "or use episodes()"
            )
        k = int(np.searchsorted(times, t, side="right")) - 1
        if k < 0:
            first = f"; the first is at {int(times[0])}" if len(times) else ""
            raise OutOfRange(f"camera {camera!r} has no frame at or before time_ns {t}{first}")
        row = rows[k]
        return Frame(self._decode(spec, row), int(row["time_ns"]), int(row["generation"]), int(index[k]))

    # -- calibration --------------------------------------------------------------------
    def calibration(self, camera: str) -> CalibrationSeries:
        """Per-sample K, translation and quaternion, and the calibration epochs."""
        from fastsim_record.calibration_history import rebuild_calibration_history

        self._camera(camera)
        f = self._file()
        arrays: list[Array] = []
        rows_of: list[Array] = []
        for role, nbytes, shape in _CALIBRATION_ROLES:
            spec = self._camera(camera, role)
            rows = self._data_rows(spec)
            bad = rows["payload_length"] != nbytes
            if bool(bad.any()):
                k = int(bad.argmax())
                raise FormatError(int(rows["payload_at"][k]), f"{spec.name}: payload is not {nbytes} bytes")
            raw = f.tables.gather(rows["payload_at"], nbytes)
            arrays.append(raw.view("<f8").astype(np.float64).reshape(len(rows), *shape))
            rows_of.append(rows)
        if len({len(r) for r in rows_of}) != 1:
            raise BadRecording(
                f"{self._where()}: camera {camera!r} calibration streams have "
                f"{[len(r) for r in rows_of]} samples"
            )
        spec = self._camera(camera, "intrinsics")
        records = [
            r for r in f.tables.reader.records(spec.stream_id)
            if r.kind.name == "DATA" and (self._generation is None or r.generation == self._generation)
        ]
        history = rebuild_calibration_history([spec], records)
        digests = tuple(str(r.metadata.get("calibration_digest", "")) for r in records)
        epochs = tuple(
            CalibrationEpoch(e.generation, e.digest, e.profile, e.first_sim_time_ns)
            for e in history.epochs
        )
        rows = rows_of[0]
        return CalibrationSeries(
            camera, rows["time_ns"].astype(np.int64), rows["generation"].astype(np.int64),
            arrays[0], arrays[1], arrays[2], digests, epochs, history.problems,
        )

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

    # -- generations --------------------------------------------------------------------
    def generations(self) -> tuple[int, ...]:
        """The Runtime generations this view holds."""
        if self._generation is not None:
            return (self._generation,)
        gens: set[int] = set()
        for entry in self._file().tables.reader.footer["streams"]:
            gens.update(int(g) for g in entry["generations"])
        return tuple(sorted(gens))


