"""The file's tail (index, projections, footer, trailer); the head (header + run metadata)
is ``_head``'s, re-exported here."""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format._head import Head, encode_head, metadata_json, read_head
from fastsim_recording_format._json import decode_object
from fastsim_recording_format._layout import (
    INDEX_DTYPE,
    MAX_FOOTER_BYTES,
    PROJECTION_DTYPE,
    TRAILER,
    TRAILER_MAGIC,
    canonical_json,
    crc,
    pad8,
)
from fastsim_recording_format._source import Source
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import FormatError

__all__ = ["Head", "Tail", "encode_head", "encode_tail", "metadata_json", "read_head", "read_tail"]

FOOTER_KEYS = frozenset(
    {"batches", "records", "records_by_kind", "payload_bytes", "global_sequence", "streams",
     "integrity", "mode", "source_sha256", "completion_id", "degraded", "recovered",
     "terminal_fence"}
)


@attrs.frozen
class Tail:
    """The checked trailer, batch index, stream projections and footer of a sealed file."""

    index_offset: int
    index: Array = attrs.field(eq=False)
    projections: Array = attrs.field(eq=False)
    projection_bytes: bytes
    footer: dict[str, Any]
    footer_offset: int
    footer_identity: str


def encode_tail(index_offset: int, index: Array, projections: Array, footer: dict[str, Any]) -> bytes:
    """Index + projections + padded footer + trailer, to be written at ``index_offset``."""
    ib, pb, fb = index.tobytes(), projections.tobytes(), canonical_json(footer)
    p_off = index_offset + len(ib)
    f_off = p_off + len(pb)
    trailer = TRAILER.pack(
        index_offset, len(ib), p_off, len(pb), f_off, len(fb), crc(ib), crc(pb), crc(fb), 0,
        TRAILER_MAGIC,
    )
    trailer = trailer[:60] + crc(trailer[:60]).to_bytes(4, "little") + trailer[64:]
    return b"".join((ib, pb, fb, bytes(pad8(len(fb)) - len(fb)), trailer))


def footer_identity(footer_bytes: bytes, trailer: bytes) -> str:
    """SHA-256 of the footer JSON followed by the trailer."""
    return hashlib.sha256(footer_bytes + trailer).hexdigest()


def read_tail(src: Source, head: Head) -> Tail:
    """Read and check the trailer and every section it locates (not the batches)."""
    size = src.size
    t_off = size - TRAILER.size
    if t_off < head.data_start:
        raise FormatError(size, "truncated: no room for the trailer")
    raw = src.read_at(t_off, TRAILER.size, "trailer")
    (i_off, i_len, p_off, p_len, f_off, f_len, i_crc, p_crc, f_crc, t_crc, magic) = TRAILER.unpack(raw)
    if magic != TRAILER_MAGIC:
        raise FormatError(t_off + 64, "bad trailing magic: file is not sealed or is truncated")
    if crc(raw[:60]) != t_crc:
        raise FormatError(t_off + 60, "trailer CRC mismatch")
    if i_off < head.data_start or i_off % 8:
        raise FormatError(t_off, "index offset outside the file")
    if i_len % INDEX_DTYPE.itemsize or p_off != i_off + i_len:
        raise FormatError(t_off + 8, "index length disagrees with the projection offset")
    if p_len % PROJECTION_DTYPE.itemsize or f_off != p_off + p_len:
        raise FormatError(t_off + 24, "projection length disagrees with the footer offset")
    if f_len == 0 or f_off + pad8(f_len) != t_off:
        raise FormatError(t_off + 40, "footer does not end at the trailer")
    if f_len > MAX_FOOTER_BYTES:
        raise FormatError(t_off + 40, f"footer of {f_len} bytes exceeds the {MAX_FOOTER_BYTES}-byte bound")
    ib = src.read_at(i_off, i_len, "batch index")
    if crc(ib) != i_crc:
        raise FormatError(t_off + 48, "batch index CRC mismatch")
    pb = src.read_at(p_off, p_len, "stream projections")
    if crc(pb) != p_crc:
        raise FormatError(t_off + 52, "stream projection CRC mismatch")
    fpad = src.read_at(f_off, pad8(f_len), "footer")
    fb = fpad[:f_len]
    if crc(fb) != f_crc:
        raise FormatError(t_off + 56, "footer CRC mismatch")
    if any(fpad[f_len:]):
        raise FormatError(f_off + f_len, "non-zero padding after footer")
    index = np.frombuffer(ib, INDEX_DTYPE)
    proj = np.frombuffer(pb, PROJECTION_DTYPE)
    _check_index(index, head.data_start, i_off)
    _check_projections(proj, head.stream_ids, len(index), p_off)
    footer = decode_object(fb, f_off, "footer")
    _check_footer(footer, head, index, f_off)
    return Tail(i_off, index, proj, pb, footer, f_off, footer_identity(fb, raw))


#: up to this many index entries or projections are checked row by row: numpy's
#: per-call cost is more than the rows' (a Gymnasium episode's file: 1 batch, a few streams)
_FEW = 16
_U64 = (1 << 64) - 1


def _check_index(index: Array, data_start: int, index_offset: int) -> None:
    if len(index) <= _FEW:  # the same rule row by row: ends wrap at 2**64 as numpy's do
        end = data_start
        for k, (offset, length) in enumerate(zip(index["offset"].tolist(), index["length"].tolist())):
            if offset != end:
                raise FormatError(index_offset + 64 * k, "index entry offset is not the end of the previous batch")
            end = (end + length) & _U64
        if end != index_offset:
            raise FormatError(index_offset, "batches do not end where the index begins")
        return
    ends = np.cumsum(index["length"], dtype=np.uint64) + np.uint64(data_start)
    starts = np.concatenate(([data_start], ends[:-1])).astype(np.uint64)
    bad = np.flatnonzero(index["offset"] != starts)
    if bad.size:
        raise FormatError(index_offset + 64 * int(bad[0]), "index entry offset is not the end of the previous batch")
    if (int(ends[-1]) if len(index) else data_start) != index_offset:
        raise FormatError(index_offset, "batches do not end where the index begins")


def _check_projections(proj: Array, stream_ids: Array, batches: int, at: int) -> None:
    if not len(proj):
        return
    if len(proj) <= _FEW:
        _check_few_projections(proj, stream_ids, batches, at)
        return
    key = (proj["stream_id"].astype(np.uint64) << np.uint64(32)) | proj["batch_ordinal"].astype(np.uint64)
    bad = np.flatnonzero(
        (key[1:] < key[:-1]) | ((key[1:] == key[:-1]) & (proj["generation"][1:] <= proj["generation"][:-1]))
    )
    if bad.size:
        raise FormatError(at + 48 * (int(bad[0]) + 1), "stream projections are not strictly ordered")
    bad = np.flatnonzero(~np.isin(proj["stream_id"], stream_ids) | (proj["batch_ordinal"] >= batches))
    if bad.size:
        raise FormatError(at + 48 * int(bad[0]), "stream projection names an unknown stream or batch")


def _check_few_projections(proj: Array, stream_ids: Array, batches: int, at: int) -> None:
    """``_check_projections`` row by row: the same rules, the same first offending row."""
    sids, gens, ordinals = (proj[f].tolist() for f in ("stream_id", "generation", "batch_ordinal"))
    for k in range(1, len(sids)):
        before, now = (sids[k - 1], ordinals[k - 1]), (sids[k], ordinals[k])
        if now < before or (now == before and gens[k] <= gens[k - 1]):
            raise FormatError(at + 48 * k, "stream projections are not strictly ordered")
    known = set(stream_ids.tolist())
    for k, (sid, ordinal) in enumerate(zip(sids, ordinals)):
        if sid not in known or ordinal >= batches:
            raise FormatError(at + 48 * k, "stream projection names an unknown stream or batch")


_KIND_KEYS = frozenset({"data", "gap", "barrier"})
_STREAM_TOTAL_KEYS = frozenset(
    {"stream_id", "records", "data", "gap", "barrier", "payload_bytes", "first_stream_sequence",
     "last_stream_sequence", "generations"}
)


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _count_or_null(value: Any) -> bool:
    return value is None or _count(value)


def _check_footer(footer: dict[str, Any], head: Head, index: Array, at: int) -> None:
    """The footer's shape, its identity keys, and the totals the index alone implies.

    Totals that need the record tables (per-stream counts, sequences, generations) are
    recomputed by the validator; here every value gets the type its key promises, so a
    reader of a forged footer never trips over a wrong type.
    """
    def bad(reason: str) -> FormatError:
        return FormatError(at, f"footer: {reason}")

    if set(footer) != FOOTER_KEYS:
        raise bad(f"keys must be exactly {sorted(FOOTER_KEYS)}")
    for key in ("integrity", "mode", "source_sha256", "completion_id"):
        if footer[key] != head.metadata[key]:
            raise bad(f"{key} disagrees with the run metadata")
    for key in ("degraded", "recovered"):
        if not isinstance(footer[key], bool):
            raise bad(f"{key} must be a boolean")
    if footer["recovered"] and not footer["degraded"]:
        raise bad("a recovered file must be degraded")
    if footer["terminal_fence"] is not None and not isinstance(footer["terminal_fence"], dict):
        raise bad("terminal_fence must be an object or null")
    if footer["batches"] != len(index) or type(footer["batches"]) is not int:
        raise bad("batches disagrees with the batch index")
    records = int(index["record_count"].sum())
    if footer["records"] != records or type(footer["records"]) is not int:
        raise bad("records disagrees with the batch index")
    if not _count(footer["payload_bytes"]):
        raise bad("payload_bytes must be a non-negative integer")
    kinds = footer["records_by_kind"]
    if not isinstance(kinds, dict) or set(kinds) != _KIND_KEYS or not all(map(_count, kinds.values())):
        raise bad("records_by_kind must map data, gap and barrier to counts")
    if sum(kinds.values()) != records:
        raise bad("records_by_kind does not add up to records")
    if kinds["gap"] and not footer["degraded"]:
        raise bad("gap records present but degraded is false")
    span = footer["global_sequence"]
    if (
        not isinstance(span, dict) or set(span) != {"first", "last"}
        or not all(map(_count_or_null, span.values()))
        or (span["first"] is None) != (records == 0) or (span["last"] is None) != (records == 0)
    ):
        raise bad("global_sequence must be {first, last}: integers, or null when there are no records")
    streams = footer["streams"]
    if not isinstance(streams, list) or len(streams) != len(head.streams):
        raise bad("streams must list every declared stream")
    for entry, spec in zip(streams, head.streams):
        if not isinstance(entry, dict) or set(entry) != _STREAM_TOTAL_KEYS or entry["stream_id"] != spec.stream_id:
            raise bad(f"stream {spec.stream_id}: totals must have exactly {sorted(_STREAM_TOTAL_KEYS)}, in stream order")
        if not all(_count(entry[k]) for k in ("records", "data", "gap", "barrier", "payload_bytes")) or not all(
            _count_or_null(entry[k]) for k in ("first_stream_sequence", "last_stream_sequence")
        ):
            raise bad(f"stream {spec.stream_id}: counts must be non-negative integers")
        gens = entry["generations"]
        if not isinstance(gens, list) or not all(type(g) is int and 0 <= g < 2**32 for g in gens):
            raise bad(f"stream {spec.stream_id}: generations must be a list of generations")
