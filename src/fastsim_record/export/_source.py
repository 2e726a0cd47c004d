"""What the exporters share over the reading API: sources, sampling rules, time offsets.

Two things the reading API (``fastsim_record.reading``) does not serve yet are read
here through the FSR format package's public reader, streaming one record at a time:
a camera frame's recorded bytes (JPEG or PNG, as stored) and the geometry stream's
payloads.  Everything else comes from ``fastsim_record.open``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_record.export._port import ExportError
from fastsim_record.export._stream import generation_spans
from fastsim_record.fsr import FsrReader, RecordKind
from fastsim_record.reading import Episode, Event, NumericSeries, Recording

__all__ = [
    "EncodedFrame",
    "action_names",
    "actions",
    "collect_sources",
    "encoded_frames",
    "generation_offsets",
    "generation_spans",
    "geometry_payloads",
    "sample_at",
    "state_channels",
]

Array = npt.NDArray[Any]
POSITION_SUFFIX = ".joint_position"
VELOCITY_SUFFIX = ".joint_velocity"


def collect_sources(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """FSR files named directly, or every ``*.fsr`` below a folder (sorted), in order.

    Raises ``FileNotFoundError`` with one line for a path that does not exist or a folder
    without FSR files."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.fsr") if p.is_file())
            if not found:
                raise FileNotFoundError(f"{path}: folder holds no *.fsr file")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return out


@attrs.frozen
class EncodedFrame:
    """One camera frame as recorded: its bytes, ``jpeg``/``png``/``raw_rgb``, its time."""

    data: bytes
    codec: str
    time_ns: int
    generation: int


def encoded_frames(rec: Recording, camera: str, generation: int | None = None) -> Iterator[EncodedFrame]:
    """A camera's frames as recorded, one at a time (never decoded, never held together)."""
    name = f"cameras.{camera}.rgb"
    with FsrReader(rec.path) as reader:
        codec = str(reader.stream(name).codec.get("payload_codec", ""))
        for r in reader.records(name):
            if r.kind is not RecordKind.DATA or (generation is not None and r.generation != generation):
                continue
            yield EncodedFrame(r.payload, codec, r.sim_time_ns, r.generation)


def geometry_payloads(rec: Recording) -> Iterator[tuple[int, int, bytes]]:
    """``(time_ns, generation, payload)`` of every geometry DATA record, in order."""
    with FsrReader(rec.path) as reader:
        if "geometry" not in {s.name for s in reader.streams}:
            return
        for r in reader.records("geometry"):
            if r.kind is RecordKind.DATA:
                yield r.sim_time_ns, r.generation, r.payload


def sample_at(series_time: Array, values: Array, at: Array) -> Array:
    """The sampling rule: at each time of ``at``, the latest sample at or before it
    (zero-order hold); before the first sample, the first sample.  ``series_time`` and
    ``at`` belong to one generation."""
    if len(series_time) == 0:
        raise ValueError("no samples")
    k = np.searchsorted(series_time, at, side="right") - 1
    out: Array = values[np.clip(k, 0, len(series_time) - 1)]
    return out


def state_channels(rec: Recording) -> tuple[str, str | None]:
    """The joint position channel and its velocity channel (or ``None``)."""
    names = rec.channels()
    pos = [c for c in names if c.endswith(POSITION_SUFFIX)]
    if not pos:
        raise ExportError(
            f"{rec.path}: no numeric channel ending in {POSITION_SUFFIX!r} (has: {', '.join(names) or 'none'})"
        )
    vel = pos[0][: -len(POSITION_SUFFIX)] + VELOCITY_SUFFIX
    return pos[0], vel if vel in names else None


def actions(view: Recording | Episode) -> tuple[Array, Array, tuple[str, ...]]:
    """The control targets: ``(time_ns (N,), targets (N, A), actuator names)``.

    A target is the ``ctrl`` of an applied command (``control.result``), else the
    ``targets`` of an issued one (``control.audit``); names come from the result's
    ``actuators`` (else ``action[i]``).  Empty arrays when nothing was commanded."""
    times: list[int] = []
    rows: list[list[float]] = []
    names: tuple[str, ...] = ()
    issued: dict[str, tuple[int, list[float]]] = {}
    results: list[Event] = []
    for e in view.control():
        if e.stream == "control.result":
            results.append(e)
            continue
        targets = _vector(e.data.get("args"), "targets")
        cid = e.data.get("command_id")
        if targets is not None and isinstance(cid, str):
            issued[cid] = (e.time_ns, targets)
    for e in results:
        if e.data.get("accepted") is False:
            continue
        detail = e.data.get("detail")
        ctrl = _vector(detail, "ctrl")
        if ctrl is None:
            got = issued.get(str(e.data.get("command_id")))
            ctrl = got[1] if got else None
        if ctrl is None:
            continue
        acts = detail.get("actuators") if isinstance(detail, dict) else None
        if isinstance(acts, list) and all(isinstance(a, str) for a in acts) and len(acts) == len(ctrl):
            names = tuple(acts)
        times.append(e.time_ns)
        rows.append(ctrl)
    if not rows:
        return np.empty(0, np.int64), np.empty((0, 0)), ()
    width = max(len(r) for r in rows)
    if any(len(r) != width for r in rows):
        raise ExportError(f"{view!r}: control targets change length ({sorted({len(r) for r in rows})})")
    if not names:
        names = tuple(f"action[{i}]" for i in range(width))
    return np.asarray(times, np.int64), np.asarray(rows, np.float64), names


def action_names(view: Recording | Episode) -> tuple[str, ...]:
    """The actuator names of the control targets (empty when nothing was commanded)."""
    return actions(view)[2]


def _vector(obj: object, key: str) -> list[float] | None:
    if not isinstance(obj, dict):
        return None
    v = obj.get(key)
    if isinstance(v, list) and v and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v):
        return [float(x) for x in v]
    return None


def generation_offsets(rec: Recording) -> dict[int, int]:
    """Per generation, the offset added to simulation time so generations lie end to end.

    ``offset(first) = 0``; ``offset(g) = offset(g-1) + max(0, last(g-1) - first(g))``,
    where ``first``/``last`` are a generation's earliest and latest record times (of
    any stream, from the file's projections).  So
    exported time never goes backward, and is unchanged when simulation time did not
    restart at a reset."""
    offsets: dict[int, int] = {}
    offset = 0
    prev_last: int | None = None
    for g, (first, last) in generation_spans(rec.path).items():
        if prev_last is not None:
            offset += max(0, prev_last - first)
        offsets[g] = offset
        prev_last = last
    for g in rec.generations():
        offsets.setdefault(g, offset)
    return offsets


def series_of(view: Recording | Episode, channel: str) -> NumericSeries:
    """One numeric channel of a view."""
    return view.numeric(channel)
