"""One bounded iterator over a recording's decoded records (model: mcap's ``iter_decoded_messages``).

``iter_decoded(path_or_reader, streams=None, order="file")`` yields one typed record
(:mod:`~fastsim_recording_format.reading.decoded_types`) per DATA record of every stream a
codec of :data:`~fastsim_recording_format.reading._decoders.DECODERS` reads; a camera's
three calibration records make one :class:`CalibrationRecord`.  It holds one batch and
one record at a time, whatever the recording's length.

``order="file"`` is the order records were written (global sequence): one loop over the
batches, one step per record, each batch's payload area read with one call.
``order="time"`` is ``(generation, sim_time_ns, global_sequence)`` order, merged from one
cursor per stream.

:class:`Decoding` is the one place payloads are decoded: it holds the decoding bounds
(JSON size, pixels, numeric record sizes, calibration sizes: ``_decoders``) and, for a
file that carries payload CRC-32Cs, checks each batch's payload area once before any of
its records is decoded (a mismatch names the file, the batch's streams and the offset).
Readers that walk records their own way (``fsr cat``) call :meth:`Decoding.decode`.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import numpy as np

from fastsim_recording_format import FormatError, FsrReader, Record, RecordKind
from fastsim_recording_format._json import decode_record_metadata
from fastsim_recording_format._layout import crc
from fastsim_recording_format.reading._decoders import StreamDecoder, decoder_for
from fastsim_recording_format.reading.decoded_types import (
    CalibrationRecord,
    DecodedRecord,
    FrameRecord,
    GeometryRecord,
    JsonRecord,
    RenderStateRecord,
    TickRecord,
)

__all__ = [
    "CalibrationRecord",
    "DecodedRecord",
    "Decoding",
    "FrameRecord",
    "GeometryRecord",
    "JsonRecord",
    "RenderStateRecord",
    "TickRecord",
    "iter_decoded",
]

_DATA = int(RecordKind.DATA)


class Decoding:
    """The decoders of one open file's streams, its bounds and its payload CRC check.

    ``streams``: names (or ids) of the streams to decode (default: every stream a codec
    reads).  ``verify``: check batch payload CRC-32Cs when the file has them.
    """

    def __init__(
        self, reader: FsrReader, streams: Iterable[str | int] | None = None, *, verify: bool = True,
        keep_tick_bytes: bool = False,
    ) -> None:
        self.reader = reader
        name = getattr(reader._src.file, "name", "")
        self.path = name if isinstance(name, str) else ""
        self.own = False  # close the reader when ``file_order``/``time_order`` end
        self.verify = verify and reader.payload_crc
        self.degraded = reader.degraded
        self.pending: dict[str, list[Any]] = {}
        self.last_ticks: dict[tuple[int, int], int] = {}
        proj = reader.projections
        for sid, gen, t in zip(proj["stream_id"].tolist(), proj["generation"].tolist(),
                               proj["sim_time_last"].tolist(), strict=True):
            key = (sid, gen)
            self.last_ticks[key] = max(t, self.last_ticks.get(key, t))
        wanted = None if streams is None else {reader.stream(s).stream_id for s in streams}
        self.decoders: dict[int, StreamDecoder] = {}
        for spec in reader.streams:
            if wanted is not None and spec.stream_id not in wanted:
                continue
            dec = decoder_for(spec, self)
            if dec is not None:
                if keep_tick_bytes and hasattr(dec, "keep"):
                    dec.keep = True
                self.decoders[spec.stream_id] = dec
        self._verified: set[int] = set()

    # -- one record ---------------------------------------------------------------------
    def decode(self, record: Record) -> DecodedRecord | None:
        """One record read by ``FsrReader`` (``None``: not a DATA record of a decoded stream,
        or a calibration record whose sample is not complete yet)."""
        dec = self.decoders.get(record.stream_id)
        if dec is None or record.kind is not RecordKind.DATA:
            return None
        if self.verify and record.batch_ordinal not in self._verified:
            batch = self.reader._batch(record.batch_ordinal)
            self.check_batch(batch, self.reader._src.read_at(batch.payload_offset, batch.payload_length, "payload"))
        payload = record.payload
        out: DecodedRecord | None = dec(record.sim_time_ns, record.generation, record.global_sequence, payload,
                                        0, len(payload), record.payload_offset,
                                        record.metadata if dec.meta else None)
        return out

    # -- the payload CRC ------------------------------------------------------------------
    def check_batch(self, batch: Any, area: bytes) -> None:
        """A batch's payload area against its CRC-32C (when the file carries them)."""
        if batch.payload_crc32c is not None and crc(area) != batch.payload_crc32c:
            ids = sorted(set(batch.table["stream_id"].tolist()))
            names = {s.stream_id: s.name for s in self.reader.streams}
            streams = ", ".join(names.get(i, str(i)) for i in ids[:6]) + (
                f" and {len(ids) - 6} more" if len(ids) > 6 else "")
            raise FormatError(batch.offset + 20, f"{self.path}: batch payload CRC-32C mismatch (streams {streams}); "
                                                 "the payload bytes changed after they were written")
        self._verified.add(batch.ordinal)

    # -- every record, in file order --------------------------------------------------
    def file_order(self) -> Iterator[DecodedRecord]:
        """Every decoded record in global order: one loop over batches, one step per record."""
        reader, decoders = self.reader, self.decoders
        try:
            ids = np.fromiter(decoders, np.int64, len(decoders))
            proj = reader.projections
            ordinals = np.unique(proj["batch_ordinal"][np.isin(proj["stream_id"], ids)]).tolist()
            read_at = reader._src.read_at
            for ordinal in ordinals:
                batch = reader._batch(ordinal)
                table = batch.table
                sel = np.isin(table["stream_id"], ids) & (table["kind"] == _DATA)
                if not sel.any():
                    continue
                base = batch.payload_offset
                # the whole payload area in one read when it is checked, or mostly wanted
                whole = self.verify or 2 * int(table["payload_length"][sel].sum()) >= batch.payload_length
                area = read_at(base, batch.payload_length, "payload") if whole else b""
                if self.verify:
                    self.check_batch(batch, area)
                rows = table[sel]
                meta_off, meta_len = rows["metadata_offset"].tolist(), rows["metadata_length"].tolist()
                for k, (sid, gen, t, gseq, off, length) in enumerate(zip(
                    rows["stream_id"].tolist(), rows["generation"].tolist(), rows["sim_time_ns"].tolist(),
                    rows["global_sequence"].tolist(), rows["payload_offset"].tolist(),
                    rows["payload_length"].tolist(),
                )):
                    dec = decoders[sid]  # every selected row's stream has one
                    meta = self._metadata(batch, meta_off[k], meta_len[k]) if dec.meta else None
                    if whole:
                        out = dec(t, gen, gseq, area, off, length, base + off, meta)
                    else:
                        out = dec(t, gen, gseq, read_at(base + off, length, "payload"), 0, length, base + off, meta)
                    if out is not None:
                        yield out
        finally:
            if self.own:
                reader.close()

    @staticmethod
    def _metadata(batch: Any, off: int, length: int) -> dict[str, Any]:
        if not length:
            return {}
        out: dict[str, Any] = decode_record_metadata(batch.metadata_blob[off:off + length],
                                                     batch.metadata_offset + off)
        return out

    # -- every record, in time order --------------------------------------------------
    def time_order(self, path: str | os.PathLike[str]) -> Iterator[DecodedRecord]:
        """Every decoded record in ``(generation, sim_time_ns, global_sequence)`` order: one
        cursor (reader) per stream, merged; each record decoded here."""
        cursors: list[FsrReader] = []
        try:
            cursors.extend(FsrReader(path) for _ in self.decoders)
            its = [
                ((r.generation, r.sim_time_ns, r.global_sequence, r) for r in rd.records(sid)
                 if r.kind is RecordKind.DATA)
                for rd, sid in zip(cursors, self.decoders, strict=True)
            ]
            for *_, record in heapq.merge(*its, key=lambda x: x[:3]):
                out = self.decode(record)
                if out is not None:
                    yield out
        finally:
            for rd in cursors:
                rd.close()
            if self.own:
                self.reader.close()


def iter_decoded(
    path_or_reader: str | os.PathLike[str] | FsrReader,
    streams: Iterable[str | int] | None = None,
    order: Literal["file", "time"] = "file",
    *,
    verify: bool = True,
) -> Iterator[DecodedRecord]:
    """The decoded records of a recording, one at a time (see the module docstring).

    ``path_or_reader``: a path (opened and closed here) or an open ``FsrReader`` (used and
    left open).  ``streams``: only these streams (names or ids).  ``verify``: check batch
    payload CRC-32Cs when the file carries them.
    """
    if order not in ("file", "time"):
        raise ValueError(f"order must be 'file' or 'time', not {order!r}")
    if isinstance(path_or_reader, FsrReader):
        reader, path = path_or_reader, None
    else:
        reader, path = FsrReader(path_or_reader), path_or_reader
    try:
        decoding = Decoding(reader, streams, verify=verify)
        if order == "time" and path is None and not decoding.path:
            raise ValueError("order='time' needs a path, or a reader opened from one")
    except BaseException:
        if path is not None:
            reader.close()
        raise
    decoding.own = path is not None
    # the generator itself, not a wrapper around it: no per-record hop
    return decoding.file_order() if order == "file" else decoding.time_order(path or decoding.path)
