"""The file's head (header + run metadata) and tail (index, projections, footer, trailer)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format._json import decode_object
from fastsim_recording_format._layout import (
    FILE_FLAG_PAYLOAD_CRC32C,
    FILE_HEADER,
    FILE_MAGIC,
    FLAG_PAYLOAD_CRC32C,
    FLAG_PAYLOAD_SHA256,
    INDEX_DTYPE,
    MAX_FOOTER_BYTES,
    MAX_METADATA_BYTES,
    MAX_STREAMS,
    PROJECTION_DTYPE,
    TRAILER,
    TRAILER_MAGIC,
    VERSION,
    canonical_json,
    crc,
    pad8,
)
from fastsim_recording_format._source import Source
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import INTEGRITY_PROFILES, MODES, RunMetadata, StreamSpec

__all__ = ["Head", "Tail", "encode_head", "encode_tail", "read_head", "read_tail"]

_SHA = re.compile(r"[0-9a-f]{64}\Z")
_META_KEYS = frozenset(
    {"format", "version", "producer", "run_id", "completion_id", "mode", "source_sha256",
     "integrity", "attributes", "streams"}
)
_STREAM_KEYS = frozenset({"stream_id", "name", "kind", "codec", "attributes"})
FOOTER_KEYS = frozenset(
    {"batches", "records", "records_by_kind", "payload_bytes", "global_sequence", "streams",
     "integrity", "mode", "source_sha256", "completion_id", "degraded", "recovered",
     "terminal_fence"}
)


def metadata_json(run: RunMetadata, streams: tuple[StreamSpec, ...], integrity: str) -> dict[str, Any]:
    """The run metadata object of a file."""
    return {
        "format": "fsr",
        "version": f"{VERSION[0]}.{VERSION[1]}",
        "producer": run.producer,
        "run_id": run.run_id,
        "completion_id": run.completion_id,
        "mode": run.mode,
        "source_sha256": run.source_sha256,
        "integrity": integrity,
        "attributes": run.attributes,
        "streams": [s.to_json() for s in streams],
    }


@attrs.frozen
class Head:
    """The checked file header and run metadata."""

    metadata: dict[str, Any]
    run: RunMetadata
    streams: tuple[StreamSpec, ...]
    integrity: str
    stream_ids: Array = attrs.field(eq=False)
    data_start: int
    raw: bytes  # header + metadata + padding, exactly as stored
    payload_crc: bool = False  # file header flag bit 0: every batch has a payload CRC-32C

    @property
    def batch_flags(self) -> int:
        """The flags every batch of this file must carry."""
        return (FLAG_PAYLOAD_SHA256 if self.integrity == "strong" else 0) | (
            FLAG_PAYLOAD_CRC32C if self.payload_crc else 0
        )


def _check_metadata(meta: dict[str, Any], at: int) -> Head:
    def bad(reason: str) -> FormatError:
        return FormatError(at, f"run metadata: {reason}")

    if set(meta) != _META_KEYS:
        raise bad(f"keys must be exactly {sorted(_META_KEYS)}")
    if meta["format"] != "fsr" or meta["version"] != "1.2":
        raise bad("format must be 'fsr' version '1.2'")
    for key in ("run_id", "completion_id"):
        if not isinstance(meta[key], str) or not meta[key]:
            raise bad(f"{key} must be a non-empty string")
    for key in ("producer", "attributes"):
        if not isinstance(meta[key], dict):
            raise bad(f"{key} must be an object")
    if meta["mode"] not in MODES:
        raise bad(f"mode must be one of {list(MODES)}")
    if meta["integrity"] not in INTEGRITY_PROFILES:
        raise bad(f"integrity must be one of {list(INTEGRITY_PROFILES)}")
    src = meta["source_sha256"]
    if src is not None and not (isinstance(src, str) and _SHA.match(src)):
        raise bad("source_sha256 must be null or 64 lowercase hex digits")
    if not isinstance(meta["streams"], list):
        raise bad("streams must be an array")
    if len(meta["streams"]) > MAX_STREAMS:
        raise bad(f"{len(meta['streams'])} streams, more than the {MAX_STREAMS} allowed")
    streams = []
    names: set[str] = set()
    last_id = -1
    for entry in meta["streams"]:
        if not isinstance(entry, dict) or set(entry) != _STREAM_KEYS:
            raise bad(f"a stream entry must have exactly the keys {sorted(_STREAM_KEYS)}")
        sid = entry["stream_id"]
        if type(sid) is not int or not last_id < sid < 2**32:
            raise bad("stream ids must be integers in [0, 2**32), strictly increasing")
        last_id = sid
        for key in ("name", "kind"):
            if not isinstance(entry[key], str) or not entry[key]:
                raise bad(f"stream {sid}: {key} must be a non-empty string")
        if entry["name"] in names:
            raise bad(f"duplicate stream name {entry['name']!r}")
        names.add(entry["name"])
        for key in ("codec", "attributes"):
            if not isinstance(entry[key], dict):
                raise bad(f"stream {sid}: {key} must be an object")
        streams.append(StreamSpec(sid, entry["name"], entry["kind"], entry["codec"], entry["attributes"]))
    run = RunMetadata(
        meta["run_id"], meta["completion_id"], meta["producer"], meta["mode"],
        meta["source_sha256"], meta["attributes"],
    )
    ids = np.array([s.stream_id for s in streams], np.uint32)
    return Head(meta, run, tuple(streams), meta["integrity"], ids, 0, b"")


def encode_head(
    run: RunMetadata, streams: tuple[StreamSpec, ...], integrity: str, payload_crc: bool = True
) -> tuple[bytes, Head]:
    """The bytes of a file header plus metadata; raises ``ValueError`` on invalid input."""
    meta = metadata_json(run, streams, integrity)
    try:
        blob = canonical_json(meta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"run metadata is not JSON-able: {exc}") from None
    if len(blob) > MAX_METADATA_BYTES:
        raise ValueError(f"run metadata of {len(blob)} bytes exceeds the {MAX_METADATA_BYTES}-byte bound")
    try:
        head = _check_metadata(decode_object(blob, FILE_HEADER.size, "run metadata"), 0)
    except FormatError as exc:
        raise ValueError(exc.reason) from None
    flags = FILE_FLAG_PAYLOAD_CRC32C if payload_crc else 0
    hdr = FILE_HEADER.pack(FILE_MAGIC, VERSION[0], VERSION[1], flags, len(blob), crc(blob), 0)
    hdr = hdr[:28] + crc(hdr[:28]).to_bytes(4, "little")
    raw = hdr + blob + bytes(pad8(len(blob)) - len(blob))
    return raw, attrs.evolve(head, data_start=len(raw), raw=raw, payload_crc=payload_crc)


def read_head(src: Source) -> Head:
    """Read and check the file header and the run metadata."""
    raw = src.read_at(0, FILE_HEADER.size, "file header")
    magic, major, minor, flags, meta_len, meta_crc, header_crc = FILE_HEADER.unpack(raw)
    if magic != FILE_MAGIC:
        raise FormatError(0, "bad file magic: not an FSR file")
    if crc(raw[:28]) != header_crc:
        raise FormatError(28, "file header CRC mismatch")
    if (major, minor) != VERSION:
        raise FormatError(8, f"unsupported FSR version {major}.{minor}")
    if flags & ~FILE_FLAG_PAYLOAD_CRC32C:
        raise FormatError(12, f"unknown file header flags {flags:#x}")
    if meta_len == 0:
        raise FormatError(16, "empty run metadata")
    if meta_len > MAX_METADATA_BYTES:
        raise FormatError(16, f"run metadata of {meta_len} bytes exceeds the {MAX_METADATA_BYTES}-byte bound")
    padded = src.read_at(FILE_HEADER.size, pad8(meta_len), "run metadata")
    blob = padded[:meta_len]
    if crc(blob) != meta_crc:
        raise FormatError(24, "run metadata CRC mismatch")
    if any(padded[meta_len:]):
        raise FormatError(FILE_HEADER.size + meta_len, "non-zero padding after run metadata")
    head = _check_metadata(decode_object(blob, FILE_HEADER.size, "run metadata"), FILE_HEADER.size)
    return attrs.evolve(
        head, data_start=FILE_HEADER.size + len(padded), raw=raw + padded,
        payload_crc=bool(flags & FILE_FLAG_PAYLOAD_CRC32C),
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


def _check_index(index: Array, data_start: int, index_offset: int) -> None:
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
    key = (proj["stream_id"].astype(np.uint64) << np.uint64(32)) | proj["batch_ordinal"].astype(np.uint64)
    bad = np.flatnonzero(
        (key[1:] < key[:-1]) | ((key[1:] == key[:-1]) & (proj["generation"][1:] <= proj["generation"][:-1]))
    )
    if bad.size:
        raise FormatError(at + 48 * (int(bad[0]) + 1), "stream projections are not strictly ordered")
    bad = np.flatnonzero(~np.isin(proj["stream_id"], stream_ids) | (proj["batch_ordinal"] >= batches))
    if bad.size:
        raise FormatError(at + 48 * int(bad[0]), "stream projection names an unknown stream or batch")


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
