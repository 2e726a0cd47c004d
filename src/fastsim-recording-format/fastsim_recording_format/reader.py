"""``FsrReader``: streams, records in global order or by stream, seek through the index.

Opening a reader checks the header, metadata, trailer, index, projections and footer;
each batch is checked (header CRC, table CRC, local rules, index cross-check) when it is
first read.  Payloads are read only when ``Record.payload`` is accessed.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any, BinaryIO

import attrs
import numpy as np

from fastsim_recording_format._batch import ParsedBatch, check_index_entry, parse_batch
from fastsim_recording_format._json import decode_record_metadata
from fastsim_recording_format._sections import Head, Tail, read_head, read_tail
from fastsim_recording_format._source import Closing, Source, open_source
from fastsim_recording_format.model import Record, RecordKind, RunMetadata, StreamSpec

__all__ = ["FsrReader"]


@attrs.define(eq=False, init=False)
class FsrReader(Closing):
    """A sealed FSR 1.2 file opened for reading."""

    _src: Source
    _head: Head
    _tail: Tail
    _cache: tuple[int, ParsedBatch] | None

    def __init__(self, target: str | os.PathLike[str] | BinaryIO) -> None:
        self._src = open_source(target)
        try:
            self._head = read_head(self._src)
            self._tail = read_tail(self._src, self._head)
        except BaseException:
            self._src.close()
            raise
        self._cache = None

    # -- file-level facts -------------------------------------------------------------
    @property
    def run(self) -> RunMetadata:
        """Run metadata written at open."""
        return self._head.run

    @property
    def streams(self) -> tuple[StreamSpec, ...]:
        """The stream table, by stream id."""
        return self._head.streams

    @property
    def integrity(self) -> str:
        """The write-side integrity profile."""
        return self._head.integrity

    @property
    def payload_crc(self) -> bool:
        """Whether every batch carries a CRC-32C of its payload area (``--integrity crc``)."""
        return self._head.payload_crc

    @property
    def footer(self) -> dict[str, Any]:
        """The footer object (totals, flags, terminal fence)."""
        return self._tail.footer

    @property
    def degraded(self) -> bool:
        """Whether the file is marked degraded."""
        return bool(self._tail.footer["degraded"])

    @property
    def recovered(self) -> bool:
        """Whether the file was rebuilt from an unsealed file."""
        return bool(self._tail.footer["recovered"])

    @property
    def mode(self) -> str:
        """``record`` or ``render``."""
        return str(self._tail.footer["mode"])

    @property
    def size(self) -> int:
        """File size in bytes."""
        return self._src.size

    @property
    def footer_identity(self) -> str:
        """SHA-256 of the footer and trailer."""
        return self._tail.footer_identity

    @property
    def batch_index(self) -> np.ndarray[Any, Any]:
        """The batch index (structured array: offset, length, record_count, ...)."""
        return self._tail.index

    @property
    def projections(self) -> np.ndarray[Any, Any]:
        """The per-stream projections (stream, generation, batch, count, sequences, times)."""
        return self._tail.projections

    def stream(self, key: str | int) -> StreamSpec:
        """A stream by name or id; ``KeyError`` when there is none."""
        for spec in self._head.streams:
            if spec.name == key or (isinstance(key, int) and spec.stream_id == key):
                return spec
        raise KeyError(key)

    # -- records ----------------------------------------------------------------------
    def _batch(self, ordinal: int) -> ParsedBatch:
        if self._cache is not None and self._cache[0] == ordinal:
            return self._cache[1]
        entry = self._tail.index[ordinal]
        batch = parse_batch(
            self._src, int(entry["offset"]), ordinal, self._tail.index_offset,
            self._head.stream_ids, self._head.batch_flags,
        )
        check_index_entry(entry, batch, self._tail.index_offset + 64 * ordinal)
        self._cache = (ordinal, batch)
        return batch

    def _record(self, batch: ParsedBatch, k: int) -> Record:
        """Record ``k`` of ``batch``; its metadata is decoded now, one record at a time."""
        row = batch.table[k]
        off, length = int(row["payload_offset"]), int(row["payload_length"])
        m_off, m_len = int(row["metadata_offset"]), int(row["metadata_length"])
        meta = (
            decode_record_metadata(batch.metadata_blob[m_off:m_off + m_len], batch.metadata_offset + m_off)
            if m_len else {}
        )
        return Record(
            int(row["stream_id"]), RecordKind(int(row["kind"])), int(row["global_sequence"]),
            int(row["global_last"]), int(row["stream_sequence"]), int(row["stream_last"]),
            int(row["generation"]), int(row["sim_time_ns"]), meta, length, batch.ordinal,
            functools.partial(self._src.read_at, batch.payload_offset + off, length, "payload"),
            batch.payload_offset + off,
        )

    def _stream_rows(self, key: str | int) -> np.ndarray[Any, Any]:
        sid = self.stream(key).stream_id
        proj = self._tail.projections
        lo, hi = np.searchsorted(proj["stream_id"], [sid, sid + 1])
        return proj[lo:hi]

    def records(self, stream: str | int | None = None) -> Iterator[Record]:
        """Records in global order, optionally only those of one stream (by name or id)."""
        if stream is None:
            for ordinal in range(len(self._tail.index)):
                batch = self._batch(ordinal)
                for k in range(len(batch.table)):
                    yield self._record(batch, k)
            return
        yield from self._from_rows(self._stream_rows(stream), self.stream(stream).stream_id, None)

    def _from_rows(
        self, rows: np.ndarray[Any, Any], sid: int, start: tuple[int, int] | None
    ) -> Iterator[Record]:
        seen = -1
        for ordinal in rows["batch_ordinal"].tolist():
            if ordinal == seen:
                continue
            seen = ordinal
            batch = self._batch(ordinal)
            table = batch.table
            for k in np.flatnonzero(table["stream_id"] == sid).tolist():
                if start is not None:
                    if (int(table["generation"][k]), int(table["sim_time_ns"][k])) < start:
                        continue
                    start = None
                yield self._record(batch, k)

    def seek(self, stream: str | int, generation: int, sim_time_ns: int) -> Iterator[Record]:
        """Records of ``stream`` from the first with ``(generation, sim_time_ns) >= target``.

        A binary search over the stream's projections names the one batch to start in;
        no other batch is read before the first record is returned.
        """
        rows = self._stream_rows(stream)
        target = (generation, sim_time_ns)
        lo, hi = 0, len(rows)
        while lo < hi:
            mid = (lo + hi) // 2
            if (int(rows[mid]["generation"]), int(rows[mid]["sim_time_last"])) < target:
                lo = mid + 1
            else:
                hi = mid
        return self._from_rows(rows[lo:], self.stream(stream).stream_id, target)

    # -- lifetime ---------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (if the reader opened it)."""
        self._cache = None
        self._src.close()

