"""Bounded-memory reads for the exporters: thin wrappers over the format package's one
decoder (``fastsim_recording_format.reading.decoded``).

The reading API (``fastsim_record.open``) answers whole-recording questions: its
``numeric``, ``calibration`` and ``frames`` build per-record tables of the whole
recording (measured here: +47 MiB for ``numeric_all`` and +31 MiB for ``calibration``
on a 10-minute 1-camera episode, against +5 and +3 MiB on a 1-minute one), so an
exporter that used them would grow with the episode.  ``iter_decoded`` reads one batch
and decodes one record at a time instead; these helpers select its streams and shape
its records for the exporters.  Nothing here keeps more than one record per stream.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy.typing as npt

from fastsim_record.export._port import ExportError
from fastsim_recording_format import FsrReader, RecordKind, names
from fastsim_recording_format.reading._codecs import numeric_layout
from fastsim_recording_format.reading._decoders import codec_id
from fastsim_recording_format.reading._errors import BadRecording
from fastsim_recording_format.reading.decoded import (
    CalibrationRecord,
    DecodedRecord,
    Decoding,
    FrameRecord,
    JsonRecord,
    TickRecord,
    iter_decoded,
)

__all__ = [
    "CalibrationRecord",
    "Channel",
    "DecodedRecord",
    "FrameRecord",
    "JsonRecord",
    "TickRecord",
    "calibration_samples",
    "check_calibrated",
    "decoded_frames",
    "export_records",
    "export_streams",
    "frame_times",
    "generation_spans",
    "in_order_records",
    "json_records",
    "numeric_channels",
    "numeric_ticks",
    "png_bytes",
    "stream_times",
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


def numeric_ticks(path: str, stream: str) -> Iterator[TickRecord]:
    """The DATA records of one numeric-tick stream, decoded one at a time (every channel)."""
    return iter_decoded(path, [stream])  # type: ignore[return-value]


def calibration_samples(path: str, camera: str, *, need_k: bool = True) -> Iterator[CalibrationRecord]:
    """A camera's calibration samples, one at a time (``need_k=False``: an uncalibrated
    camera's NaN K and pose are passed on as they are)."""
    streams = [names.camera_stream(camera, s) for s in names.CALIBRATION_SUFFIXES]
    counts = _data_counts(path, streams)
    if len(set(counts)) != 1:
        raise ExportError(f"{path}: {names.camera_stream(camera, '*')} calibration streams have different "
                          f"record counts ({counts})")
    for rec in iter_decoded(path, streams):
        if not isinstance(rec, CalibrationRecord):  # pragma: no cover - the streams are calibration streams
            continue
        if need_k:
            check_calibrated(path, rec)
        yield rec


def check_calibrated(path: str, rec: CalibrationRecord) -> None:
    """``ExportError`` for an uncalibrated camera's sample (an export that needs K)."""
    if not rec.calibrated:
        raise ExportError(f"{path}: camera {rec.camera!r} is uncalibrated (no K, no pose; docs/fsr-format.md): "
                          "this export needs K; --to lerobot exports its frames")


def _data_counts(path: str, streams: list[str]) -> list[int]:
    with FsrReader(path) as reader:
        by_id = {int(e["stream_id"]): int(e["data"]) for e in reader.footer["streams"]}
        return [by_id.get(reader.stream(s).stream_id, 0) for s in streams]


def frame_times(path: str, camera: str) -> Iterator[tuple[int, int]]:
    """``(time_ns, generation)`` of a camera's frames (no payload is read)."""
    return stream_times(path, names.rgb_stream(camera))


def stream_times(path: str, stream: str) -> Iterator[tuple[int, int]]:
    """``(time_ns, generation)`` of a stream's DATA records (no payload is read)."""
    with FsrReader(path) as reader:
        for r in reader.records(stream):
            if r.kind is RecordKind.DATA:
                yield r.sim_time_ns, r.generation


def decoded_frames(path: str, camera: str) -> Iterator[tuple[int, int, Array]]:
    """``(time_ns, generation, uint8 (H, W, C): RGB, or grey / RGBA as recorded)`` of a camera's frames, one at a time
    (the descriptor's pixel count and each header are checked before any pixel is decoded)."""
    for rec in iter_decoded(path, [names.rgb_stream(camera)]):
        if isinstance(rec, FrameRecord):  # the one stream is a frame stream
            yield rec.time_ns, rec.generation, rec.rgb()


def json_records(path: str, kinds: tuple[str, ...] = JSON_KINDS) -> Iterator[JsonRecord]:
    """The JSON streams of these kinds, in recording order (global sequence)."""
    with FsrReader(path) as reader:
        specs = [s.name for s in reader.streams if s.kind in kinds]
    return iter_decoded(path, specs) if specs else iter(())  # type: ignore[return-value]


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


def export_streams(reader: FsrReader) -> list[int]:
    """The streams an exporter reads: every stream a codec decodes, but of the JSON
    streams only lifecycle, events and control."""
    decoders = Decoding(reader, verify=False).decoders
    return [s.stream_id for s in reader.streams
            if s.stream_id in decoders and (codec_id(s) != "json" or s.kind in JSON_KINDS)]


def in_order_records(path: str, records: Mapping[str, int]) -> int:
    """How many records :func:`export_records` reads (``records``: DATA records per stream)."""
    with FsrReader(path) as reader:
        wanted = set(export_streams(reader))
        return sum(records.get(s.name, 0) for s in reader.streams if s.stream_id in wanted)


def export_records(path: str) -> Iterator[DecodedRecord]:
    """Every record an exporter uses, decoded, in recording order, in one pass over the
    file (each batch is parsed once); a calibration sample comes with its third record."""
    reader = FsrReader(path)
    try:
        streams = export_streams(reader)
    finally:
        reader.close()
    return iter_decoded(path, streams)


def png_bytes(frame: FrameRecord) -> bytes:
    """A frame as PNG bytes: the one re-encode, for a RAW-RGB frame (legacy files) that a
    format's image type cannot carry raw."""
    import cv2

    _ok, png = cv2.imencode(".png", frame.rgb()[:, :, ::-1])
    return bytes(png.data)
