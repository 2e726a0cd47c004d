"""Camera frames and calibration of a recording or episode, one part of a view (see ``_recording``)."""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format.reading._codecs import ImageCodec, decode_image, image_codec
from fastsim_recording_format.reading._errors import BadArgument, BadRecording, OutOfRange, unknown
from fastsim_recording_format.reading._file import Array, Scope, as_int, opt_int
from fastsim_recording_format.reading._values import (
    CalibrationEpoch,
    CalibrationSeries,
    Frame,
    LostDeclaration,
)

__all__ = ["Cameras"]

_AHEAD = 3  # frames decoded ahead by frames()
_CALIBRATION_ROLES = (("intrinsics", 72, (3, 3)), ("translation", 24, (3,)), ("quaternion_xyzw", 32, (4,)))


class Cameras:
    """A view's camera calls: frames (decoded ahead on a thread pool) and calibration."""

    __slots__ = ("_scope",)

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    # -- cameras ------------------------------------------------------------------------
    def cameras(self) -> tuple[str, ...]:
        """Camera aliases that have an RGB stream."""
        return tuple(a for a, roles in self._scope.file().cameras.items() if "rgb" in roles)

    def spec(self, camera: object, role: str = "rgb") -> StreamSpec:
        """The stream of ``camera``'s ``role`` (an unknown alias or a missing role: one line)."""
        f = self._scope.file()
        if not isinstance(camera, str):
            raise BadArgument(f"camera must be a string alias, got {type(camera).__name__}")
        roles = f.cameras.get(camera)
        if roles is None or "rgb" not in roles:
            raise unknown("camera", camera, self.cameras())
        spec = roles.get(role)
        if spec is None:
            raise BadRecording(f"{self._scope.where()}: camera {camera!r} has no {role} stream")
        return spec

    def image_codec(self, spec: StreamSpec) -> ImageCodec:
        """The image codec of an RGB stream (parsed once per file)."""
        codecs = self._scope.file().image_codecs
        codec = codecs.get(spec.name)
        if codec is None:
            codec = codecs[spec.name] = image_codec(spec)
        return codec

    def decode(self, spec: StreamSpec, row: Any, out: Array | None = None) -> Array:
        """The image of one record-table row (into ``out`` when given)."""
        at, length = int(row["payload_at"]), int(row["payload_length"])
        payload = np.frombuffer(self._scope.file().tables.read(at, length), np.uint8)
        return decode_image(payload, self.image_codec(spec), at, out)

    def frame_count(self, camera: str) -> int:
        """How many frames a camera has in this view."""
        return len(self._scope.data_rows(self.spec(camera)))

    def frames(self, camera: str, generation: object, start_ns: object, stop_ns: object, step: object) -> Iterator[Frame]:
        """``View.frames``: the arguments checked now, the frames decoded as iterated."""
        spec = self.spec(camera)
        gen = opt_int("generation", generation)
        lo = opt_int("start_ns", start_ns)
        hi = opt_int("stop_ns", stop_ns)
        st = as_int("step", step)
        if st < 1:
            raise BadArgument(f"step must be a positive integer, got {step!r}")
        if gen is not None and gen not in self._scope.generations():
            raise unknown("generation", gen, [str(g) for g in self._scope.generations()])
        rows = self._scope.data_rows(spec)
        mask = np.ones(len(rows), bool)
        if gen is not None:
            mask &= rows["generation"] == gen
        if lo is not None:
            mask &= rows["time_ns"] >= lo
        if hi is not None:
            mask &= rows["time_ns"] < hi
        picked = np.flatnonzero(mask)[::st]
        self.image_codec(spec)  # a bad descriptor fails before the first frame

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
                yield Frame(self.decode(spec, row), int(row["time_ns"]), int(row["generation"]), k)
            return
        pending: deque[tuple[int, Future[Array]]] = deque()
        todo = iter(picked)
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="fsr-frames") as pool:
            for k in itertools.islice(todo, _AHEAD):
                pending.append((k, pool.submit(self.decode, spec, rows[k])))
            while pending:
                k, future = pending.popleft()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(self.decode, spec, rows[nxt])))
                row = rows[k]
                yield Frame(future.result(), int(row["time_ns"]), int(row["generation"]), k)

    def frame(self, camera: str, index: int) -> Frame:
        """Frame ``index`` of a camera in this view (negative counts from the end)."""
        spec = self.spec(camera)
        k = as_int("index", index)
        rows = self._scope.data_rows(spec)
        n = len(rows)
        if not -n <= k < n:
            raise OutOfRange(
                f"frame index {index} out of range: camera {camera!r} has {n} frames"
                + (f" (0..{n - 1})" if n else "") + f" in {self._scope.where()}"
            )
        k %= n
        row = rows[k]
        return Frame(self.decode(spec, row), int(row["time_ns"]), int(row["generation"]), k)

    def frame_at(self, camera: str, time_ns: int, *, generation: int | None = None) -> Frame:
        """The latest frame recorded at or before ``time_ns``."""
        spec = self.spec(camera)
        t = as_int("time_ns", time_ns)
        gen = opt_int("generation", generation)
        rows = self._scope.data_rows(spec)
        index = np.arange(len(rows))
        if gen is not None:
            if gen not in self._scope.generations():
                raise unknown("generation", gen, [str(g) for g in self._scope.generations()])
            keep = rows["generation"] == gen
            rows, index = rows[keep], index[keep]
        times = rows["time_ns"]
        if len(times) > 1 and bool((np.diff(times) < 0).any()):
            raise BadArgument(
                f"time_ns {t} is ambiguous: simulation time restarts between the generations "
                f"{sorted(set(rows['generation'].tolist()))} of {self._scope.where()}; pass generation= "
                "or use segments()"
            )
        k = int(np.searchsorted(times, t, side="right")) - 1
        if k < 0:
            first = f"; the first is at {int(times[0])}" if len(times) else ""
            raise OutOfRange(f"camera {camera!r} has no frame at or before time_ns {t}{first}")
        row = rows[k]
        return Frame(self.decode(spec, row), int(row["time_ns"]), int(row["generation"]), int(index[k]))

    # -- calibration --------------------------------------------------------------------
    def calibration(self, camera: str) -> CalibrationSeries:
        """Per-sample K, translation and quaternion, and the calibration epochs."""
        from fastsim_recording_format.reading.calibration_history import rebuild_calibration_history

        self.spec(camera)
        f = self._scope.file()
        arrays: list[Array] = []
        rows_of: list[Array] = []
        for role, nbytes, shape in _CALIBRATION_ROLES:
            spec = self.spec(camera, role)
            rows = self._scope.data_rows(spec)
            bad = rows["payload_length"] != nbytes
            if bool(bad.any()):
                k = int(bad.argmax())
                raise FormatError(int(rows["payload_at"][k]), f"{spec.name}: payload is not {nbytes} bytes")
            raw = f.tables.gather(rows["payload_at"], nbytes)
            arrays.append(raw.view("<f8").astype(np.float64).reshape(len(rows), *shape))
            rows_of.append(rows)
        spec = self.spec(camera, "intrinsics")
        records = [
            r for r in f.tables.reader.records(spec.stream_id)
            if r.kind.name == "DATA" and (self._scope.generation is None or r.generation == self._scope.generation)
        ]
        if len({len(r) for r in rows_of}) != 1:
            # an optional camera lost some calibration samples (GAP records): keep the ticks
            # whose three samples were all recorded
            if not f.tables.reader.degraded:  # without GAP records the counts must agree
                raise BadRecording(
                    f"{self._scope.where()}: camera {camera!r} calibration streams have "
                    f"{[len(r) for r in rows_of]} samples"
                )
            keep = _complete_ticks(rows_of)
            arrays = [a[m] for a, m in zip(arrays, keep, strict=True)]
            rows_of = [r[m] for r, m in zip(rows_of, keep, strict=True)]
            records = [r for r, k in zip(records, keep[0].tolist(), strict=True) if k]
        lost = _lost_declarations(f.tables.reader.footer, camera, self._scope.generation)
        history = rebuild_calibration_history([spec], records)
        digests = tuple(str(r.metadata.get("calibration_digest", "")) for r in records)
        epochs = tuple(
            CalibrationEpoch(e.generation, e.digest, e.profile, e.first_sim_time_ns)
            for e in history.epochs
        )
        rows = rows_of[0]
        return CalibrationSeries(
            camera, rows["time_ns"].astype(np.int64), rows["generation"].astype(np.int64),
            arrays[0], arrays[1], arrays[2], digests, epochs, history.problems, lost,
        )


def _complete_ticks(rows_of: list[Array]) -> list[Array]:
    """Per calibration role, which rows belong to a (generation, time) all three roles have."""
    keys = [list(zip(r["generation"].tolist(), r["time_ns"].tolist(), strict=True)) for r in rows_of]
    common = set(keys[0]).intersection(*keys[1:])
    return [np.fromiter((k in common for k in ks), dtype=bool, count=len(ks)) for ks in keys]


def _lost_declarations(
    footer: Mapping[str, Any], camera: str, generation: int | None
) -> tuple[LostDeclaration, ...]:
    """The terminal fence's rule-C8 marks for ``camera`` (calibration declarations lost to a gap)."""
    fence = footer.get("terminal_fence")
    marks = fence.get("calibration_lost") if isinstance(fence, Mapping) else None
    out: list[LostDeclaration] = []
    for m in marks if isinstance(marks, list) else ():
        if not isinstance(m, Mapping) or m.get("camera") != camera:
            continue
        try:
            mark = LostDeclaration(
                int(m["generation"]), str(m["digest"]), None if m.get("epoch") is None else str(m["epoch"]),
                int(m["first_tick"]), int(m["ticks"]),
            )
        except (KeyError, TypeError, ValueError):
            continue  # a mark this reader does not understand is not a calibration
        if generation is None or mark.generation == generation:
            out.append(mark)
    return tuple(out)
