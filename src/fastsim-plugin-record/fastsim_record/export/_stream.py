"""Bounded-memory reads for the exporters: one record at a time, in recording order.

The reading API (``fastsim_record.open``) answers whole-recording questions: its
``numeric``, ``calibration`` and ``frames`` build per-record tables of the whole
recording (measured here: +47 MiB for ``numeric_all`` and +31 MiB for ``calibration``
on a 10-minute 1-camera episode, against +5 and +3 MiB on a 1-minute one), so an
exporter that used them would grow with the episode.  These generators read the same
records through the FSR format package's reader instead (``FsrReader.records``: one
parsed batch cached, payloads read lazily), decode each payload by the layouts in
``docs/reading.md`` and drop it before the next.  Nothing here keeps more than one
record per stream.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_record.export._port import ExportError
from fastsim_recording_format import FsrReader, RecordKind, StreamSpec
from fastsim_recording_format.reading._codecs import numeric_layout
from fastsim_recording_format.reading._errors import BadRecording

__all__ = [
    "CalibrationSample",
    "Channel",
    "Item",
    "JsonRecord",
    "Tick",
    "calibration_samples",
    "decoded_frames",
    "frame_times",
    "generation_spans",
    "in_order",
    "in_order_records",
    "json_records",
    "numeric_channels",
    "numeric_ticks",
]

Array = npt.NDArray[Any]
NUMERIC_CODEC = "numeric-tick/1"
JSON_KINDS = ("lifecycle", "events", "control")


@attrs.frozen
class Channel:
    """One channel of a numeric-tick stream."""

    stream: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    count: int
    names: tuple[str, ...]
    units: tuple[str, ...]
    per_step: bool = False  # no sample in a generation's last tick (docs/reading.md)


def numeric_channels(reader: FsrReader) -> dict[str, Channel]:
    """Every channel of every numeric-tick stream, by name, from the reading package's
    one parser of the ``numeric-tick/1`` layout (names, units, offsets; docs/reading.md)."""
    out: dict[str, Channel] = {}
    for spec in reader.streams:
        if spec.codec.get("payload_codec") != NUMERIC_CODEC:
            continue
        try:
            _, layout = numeric_layout(spec)
        except BadRecording as exc:
            raise ExportError(str(exc)) from None
        for c in layout:
            ch = Channel(spec.name, c.name, c.dtype.str, c.shape, c.offset, math.prod(c.shape),
                         c.element_names, c.units, c.per_step)
            out.setdefault(ch.name, ch)
    return out


@attrs.frozen
class Tick:
    """One numeric-tick record: its time, generation and every channel's values (float64, flat)."""

    time_ns: int
    generation: int
    values: dict[str, Array]


def numeric_ticks(path: str, stream: str, channels: list[Channel]) -> Iterator[Tick]:
    """The DATA records of one numeric-tick stream, decoded one at a time."""
    with FsrReader(path) as reader:
        for r in reader.records(stream):
            if r.kind is not RecordKind.DATA:
                continue
            payload = r.payload
            values = {
                ch.name: np.frombuffer(payload, ch.dtype, ch.count, ch.offset).astype(np.float64)
                for ch in channels
            }
            yield Tick(r.sim_time_ns, r.generation, values)


@attrs.frozen(eq=False)
class CalibrationSample:
    """One camera calibration sample: K (3, 3), camera-to-world translation and quaternion xyzw."""

    time_ns: int
    generation: int
    k: Array
    translation: Array
    quaternion_xyzw: Array


def _data(reader: FsrReader, stream: str) -> Iterator[Any]:
    return (r for r in reader.records(stream) if r.kind is RecordKind.DATA)


def calibration_samples(path: str, camera: str, *, need_k: bool = True) -> Iterator[CalibrationSample]:
    """A camera's intrinsics and extrinsics records, zipped, one sample at a time
    (``need_k=False``: an uncalibrated camera's NaN K and pose are passed on as they are)."""
    base = f"cameras.{camera}"
    names = (f"{base}.intrinsics", f"{base}.extrinsics.translation", f"{base}.extrinsics.quaternion_xyzw")
    readers = [FsrReader(path) for _ in names]
    try:
        its = [_data(rd, name) for rd, name in zip(readers, names)]
        for slots in zip(*its, strict=True):
            yield _calibration(path, camera, list(slots), need_k=need_k)
    except ValueError as exc:  # zip(strict=True): the streams have different lengths
        raise ExportError(f"{path}: {base} calibration streams have different record counts ({exc})") from None
    finally:
        for rd in readers:
            rd.close()


def frame_times(path: str, camera: str) -> Iterator[tuple[int, int]]:
    """``(time_ns, generation)`` of a camera's frames (no payload is read)."""
    with FsrReader(path) as reader:
        for r in _data(reader, f"cameras.{camera}.rgb"):
            yield r.sim_time_ns, r.generation


def decoded_frames(path: str, camera: str) -> Iterator[tuple[int, int, Array]]:
    """``(time_ns, generation, RGB uint8 (H, W, 3))`` of a camera's frames, one at a time.

    The descriptor's size is bounded before any frame is decoded (as ``fsr frames``)."""
    from fastsim_record.adapters.codecs import decode_frame
    from fastsim_record.adapters.image_header import check_pixels
    from fastsim_record.ports.encoders import ImageDescriptor, PayloadError

    name = f"cameras.{camera}.rgb"
    with FsrReader(path) as reader:
        descriptor = ImageDescriptor.from_dict(reader.stream(name).codec)
        check_pixels(descriptor.width, descriptor.height, f"stream {name} descriptor frame")
        for r in _data(reader, name):
            try:
                image = decode_frame(r.payload, descriptor)
            except PayloadError as exc:
                raise ExportError(f"{path}: {name} record at offset {r.payload_offset}: {exc}") from None
            yield r.sim_time_ns, r.generation, np.asarray(image)


@attrs.frozen
class JsonRecord:
    """One JSON record (lifecycle, event or control) with its stream, time and generation."""

    stream: str
    time_ns: int
    generation: int
    global_sequence: int
    data: dict[str, Any]


def _json_stream(path: str, spec: StreamSpec) -> Iterator[JsonRecord]:
    with FsrReader(path) as reader:
        for r in _data(reader, spec.name):
            try:
                data = json.loads(r.payload)
            except ValueError:
                raise ExportError(f"{path}: {spec.name} payload at offset {r.payload_offset} is not JSON") from None
            yield JsonRecord(spec.name, r.sim_time_ns, r.generation, r.global_sequence,
                             data if isinstance(data, dict) else {"value": data})


def json_records(path: str, kinds: tuple[str, ...] = JSON_KINDS) -> Iterator[JsonRecord]:
    """The JSON streams of these kinds, merged in recording order (global sequence)."""
    with FsrReader(path) as reader:
        specs = [s for s in reader.streams if s.kind in kinds]
    return heapq.merge(*(_json_stream(path, s) for s in specs), key=lambda e: e.global_sequence)


def generation_spans(path: str) -> dict[int, tuple[int, int]]:
    """Per generation, ``(first, last)`` simulation time of its records, from the projections."""
    with FsrReader(path) as reader:
        proj = reader.projections
    spans: dict[int, tuple[int, int]] = {}
    for g, lo, hi in zip(proj["generation"].tolist(), proj["sim_time_first"].tolist(),
                         proj["sim_time_last"].tolist()):
        a, b = spans.get(g, (lo, hi))
        spans[g] = (min(a, lo), max(b, hi))
    return dict(sorted(spans.items()))


@attrs.frozen(eq=False)
class Item:
    """One decoded record of :func:`in_order`: ``kind`` is ``frame`` (``value`` the recorded
    bytes, ``name`` the camera, ``codec`` its payload codec), ``calibration`` (a
    :class:`CalibrationSample`), ``tick`` (a :class:`Tick` of stream ``name``), ``json`` (a
    :class:`JsonRecord`) or ``geometry`` (the payload bytes)."""

    kind: str
    name: str
    time_ns: int
    generation: int
    value: Any
    codec: str = ""


_ROLES = {"intrinsics": 0, "extrinsics.translation": 1, "extrinsics.quaternion_xyzw": 2}


def in_order_records(path: str, records: Mapping[str, int]) -> int:
    """How many records :func:`in_order` reads (``records``: DATA records per stream)."""
    with FsrReader(path) as reader:
        return sum(records.get(s.name, 0) for s in reader.streams if _classify(s) is not None)


def _classify(spec: StreamSpec) -> tuple[str, str, Any] | None:
    name = spec.name
    if spec.codec.get("payload_codec") == NUMERIC_CODEC:
        return ("tick", name, None)
    if spec.kind in JSON_KINDS:
        return ("json", name, None)
    if name == "geometry":
        return ("geometry", name, None)
    if name.startswith("cameras.") and name.endswith(".rgb"):
        return ("frame", name[8:-4], str(spec.codec.get("payload_codec", "")))
    if name.startswith("cameras."):
        cam, _, role = name[8:].partition(".")
        if role in _ROLES:
            return ("calibration", cam, _ROLES[role])
    return None


def in_order(path: str) -> Iterator[Item]:
    """Every record an exporter uses, decoded, in recording order, in one pass over the
    file (each batch is parsed once).  A calibration sample is yielded when its third
    record (intrinsics, translation, quaternion) has been read."""
    with FsrReader(path) as reader:
        channels = numeric_channels(reader)
        by_stream: dict[int, tuple[str, str, Any]] = {}
        for spec in reader.streams:
            what = _classify(spec)
            if what is not None and what[0] == "tick":
                what = ("tick", spec.name, [c for c in channels.values() if c.stream == spec.name])
            if what is not None:
                by_stream[spec.stream_id] = what
        pending: dict[str, list[Any]] = {}
        last = _last_ticks(reader)
        for r in reader.records():
            what = by_stream.get(r.stream_id)
            if what is None or r.kind is not RecordKind.DATA:
                continue
            kind, name, extra = what
            t, g = r.sim_time_ns, r.generation
            if kind == "frame":
                yield Item(kind, name, t, g, r.payload, extra)
            elif kind == "tick":
                payload = r.payload
                fill = last.get((r.stream_id, g)) == t  # a generation's last tick: per-step channels are a fill
                values = {ch.name: np.frombuffer(payload, ch.dtype, ch.count, ch.offset).astype(np.float64)
                          for ch in extra if not (fill and ch.per_step)}
                yield Item(kind, name, t, g, Tick(t, g, values))
            elif kind == "json":
                try:
                    data = json.loads(r.payload)
                except ValueError:
                    raise ExportError(f"{path}: {name} payload at offset {r.payload_offset} is not JSON") from None
                yield Item(kind, name, t, g, JsonRecord(name, t, g, r.global_sequence,
                                                        data if isinstance(data, dict) else {"value": data}))
            elif kind == "geometry":
                yield Item(kind, name, t, g, r.payload)
            else:
                slots = pending.setdefault(name, [None, None, None])
                if reader.degraded and any(s is not None and s.sim_time_ns != t for s in slots):
                    slots = pending[name] = [None, None, None]  # a tick lost samples (GAPs): skip it
                if slots[extra] is not None:
                    raise ExportError(f"{path}: cameras.{name} calibration records are not in step at {t}")
                slots[extra] = r
                if all(s is not None for s in slots):
                    del pending[name]
                    yield Item(kind, name, t, g, _calibration(path, name, slots))


def _last_ticks(reader: FsrReader) -> dict[tuple[int, int], int]:
    """``(stream_id, generation) -> time of its last record``, from the projections (no batch read)."""
    out: dict[tuple[int, int], int] = {}
    proj = reader.projections
    for sid, gen, t in zip(proj["stream_id"].tolist(), proj["generation"].tolist(), proj["sim_time_last"].tolist(),
                           strict=True):
        out[(sid, gen)] = max(t, out.get((sid, gen), t))
    return out


def _calibration(path: str, camera: str, slots: list[Any], *, need_k: bool = True) -> CalibrationSample:
    ri, rt, rq = slots
    if not ri.sim_time_ns == rt.sim_time_ns == rq.sim_time_ns:
        raise ExportError(f"{path}: cameras.{camera} calibration records at different times "
                          f"({ri.sim_time_ns}, {rt.sim_time_ns}, {rq.sim_time_ns})")
    k, t, q = ri.payload, rt.payload, rq.payload
    if (len(k), len(t), len(q)) != (72, 24, 32):
        raise ExportError(f"{path}: cameras.{camera} calibration payload at offset {ri.payload_offset} has "
                          f"{(len(k), len(t), len(q))} bytes, not (72, 24, 32)")
    if need_k and ri.metadata.get("calibration_profile", {}).get("model") == "uncalibrated":
        raise ExportError(f"{path}: camera {camera!r} is uncalibrated (no K, no pose; docs/fsr-format.md): "
                          "this export needs K; --to lerobot exports its frames")
    return CalibrationSample(ri.sim_time_ns, ri.generation, np.frombuffer(k, "<f8").reshape(3, 3),
                             np.frombuffer(t, "<f8"), np.frombuffer(q, "<f8"))
