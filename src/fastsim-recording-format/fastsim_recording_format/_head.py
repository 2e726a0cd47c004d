"""The file's head: the file header and the run metadata (canonical JSON) after it.

The writer checks every head it encodes by the rules a reader applies (``read_head``):
a head the writer could not read back is never written.  That check costs a JSON decode
and a canonical re-encode of the whole metadata; a recording that writes one small file
per episode (Gymnasium) pays it per file for a stream table that is the same in every
file.  So the check is split where canonical JSON composes:

| # | part of the run metadata | checked (writer)                                           |
|---|--------------------------|------------------------------------------------------------|
| 1 | ``streams`` (the table)  | decoded, re-encoded and checked once per distinct encoded  |
|   |                          | table: the verdict is kept by those exact bytes            |
|   |                          | (``_STREAM_TABLES``); a table seen before is not redone     |
| 2 | every other key          | decoded, re-encoded and checked for every file             |
| 3 | the whole text           | the JSON-item bound and the byte bound, for every file     |

Canonical JSON of an object is ``{`` + its members in key order + ``}``, each member
``"key":`` + the canonical text of its value, so the whole text is canonical (and decodes
to the same object) exactly when each part is; ``"streams"`` sorts after every other key
but ``"version"``, which is always last.  The writer's bytes are those ``canonical_json``
gives for the whole object (a test compares them).

The first reader of a head the writer just checked (the readback validation of a file)
finds its exact bytes in ``_CHECKED`` and skips the canonical re-encode and the item
count, proven for those bytes already; it still decodes them (its objects are its own)
and checks them as always, so every verdict is the one a fresh decode gives.  The entry
is used up by that read: every later open of the file pays the whole check, so a
benchmark that reopens a file it wrote is not flattered.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format._json import check_json_items, decode_canonical
from fastsim_recording_format._layout import (
    FILE_FLAG_PAYLOAD_CRC32C,
    FILE_HEADER,
    FILE_MAGIC,
    FLAG_PAYLOAD_CRC32C,
    FLAG_PAYLOAD_SHA256,
    MAX_METADATA_BYTES,
    MAX_STREAMS,
    VERSION,
    canonical_json,
    crc,
    pad8,
)
from fastsim_recording_format._source import Source
from fastsim_recording_format.encoding import Array
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import INTEGRITY_PROFILES, MODES, RunMetadata, StreamSpec

__all__ = ["Head", "encode_head", "metadata_json", "read_head"]

_SHA = re.compile(r"[0-9a-f]{64}\Z")
_META_KEYS = frozenset(
    {"format", "version", "producer", "run_id", "completion_id", "mode", "source_sha256",
     "integrity", "attributes", "streams"}
)
_STREAM_KEYS = frozenset({"stream_id", "name", "kind", "codec", "attributes"})
_VERSION_TEXT = f"{VERSION[0]}.{VERSION[1]}"
#: the last member of every run metadata text (``version`` sorts last of ``_META_KEYS``)
_LAST = canonical_json({"version": _VERSION_TEXT})[1:]
#: checked stream tables, by their canonical bytes: (decoded entries, their specs)
_STREAM_TABLES: dict[bytes, tuple[list[Any], tuple[StreamSpec, ...]]] = {}
#: run metadata texts the writer checked (canonical, within the item bound), newest last
_CHECKED: dict[bytes, None] = {}
#: how many of each are kept, and the largest text kept (bounds their memory)
_KEEP = 8
_ABSENT = object()
_KEEP_BYTES = 256 * 1024
_LOCK = threading.Lock()


def metadata_json(run: RunMetadata, streams: tuple[StreamSpec, ...], integrity: str) -> dict[str, Any]:
    """The run metadata object of a file."""
    return {
        "format": "fsr",
        "version": _VERSION_TEXT,
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


def _bad(at: int, reason: str) -> FormatError:
    return FormatError(at, f"run metadata: {reason}")


def _check_streams(entries: Any, at: int) -> tuple[StreamSpec, ...]:
    """The stream table's rules (the last of ``_check_metadata``'s): its specs."""
    if not isinstance(entries, list):
        raise _bad(at, "streams must be an array")
    if len(entries) > MAX_STREAMS:
        raise _bad(at, f"{len(entries)} streams, more than the {MAX_STREAMS} allowed")
    streams = []
    names: set[str] = set()
    last_id = -1
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != _STREAM_KEYS:
            raise _bad(at, f"a stream entry must have exactly the keys {sorted(_STREAM_KEYS)}")
        sid = entry["stream_id"]
        if type(sid) is not int or not last_id < sid < 2**32:
            raise _bad(at, "stream ids must be integers in [0, 2**32), strictly increasing")
        last_id = sid
        for key in ("name", "kind"):
            if not isinstance(entry[key], str) or not entry[key]:
                raise _bad(at, f"stream {sid}: {key} must be a non-empty string")
        if entry["name"] in names:
            raise _bad(at, f"duplicate stream name {entry['name']!r}")
        names.add(entry["name"])
        for key in ("codec", "attributes"):
            if not isinstance(entry[key], dict):
                raise _bad(at, f"stream {sid}: {key} must be an object")
        streams.append(StreamSpec(sid, entry["name"], entry["kind"], entry["codec"], entry["attributes"]))
    return tuple(streams)


def _check_metadata(meta: dict[str, Any], at: int, streams: tuple[StreamSpec, ...] | None = None) -> Head:
    """Every rule of the run metadata, in order; ``streams``: the table's, checked already."""
    if set(meta) != _META_KEYS:
        raise _bad(at, f"keys must be exactly {sorted(_META_KEYS)}")
    if meta["format"] != "fsr" or meta["version"] != "1.2":
        raise _bad(at, "format must be 'fsr' version '1.2'")
    for key in ("run_id", "completion_id"):
        if not isinstance(meta[key], str) or not meta[key]:
            raise _bad(at, f"{key} must be a non-empty string")
    for key in ("producer", "attributes"):
        if not isinstance(meta[key], dict):
            raise _bad(at, f"{key} must be an object")
    if meta["mode"] not in MODES:
        raise _bad(at, f"mode must be one of {list(MODES)}")
    if meta["integrity"] not in INTEGRITY_PROFILES:
        raise _bad(at, f"integrity must be one of {list(INTEGRITY_PROFILES)}")
    src = meta["source_sha256"]
    if src is not None and not (isinstance(src, str) and _SHA.match(src)):
        raise _bad(at, "source_sha256 must be null or 64 lowercase hex digits")
    if streams is None:
        streams = _check_streams(meta["streams"], at)
    run = RunMetadata(
        meta["run_id"], meta["completion_id"], meta["producer"], meta["mode"],
        meta["source_sha256"], meta["attributes"],
    )
    ids = np.array([s.stream_id for s in streams], np.uint32)
    return Head(meta, run, streams, meta["integrity"], ids, 0, b"")


def _keep(table: dict[Any, Any], key: bytes, value: Any) -> None:
    """Keep ``key`` (newest); the oldest goes beyond ``_KEEP`` entries; large texts are not kept."""
    if len(key) > _KEEP_BYTES:
        return
    with _LOCK:
        table.pop(key, None)
        table[key] = value
        while len(table) > _KEEP:
            table.pop(next(iter(table)))


def _encode(meta: dict[str, Any]) -> tuple[bytes, Head]:
    """``canonical_json(meta)`` and the head a reader decodes from it (rows 1-3)."""
    rest = dict(meta)
    table = rest.pop("streams")
    try:
        text = canonical_json(rest)
        tables = canonical_json(table)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"run metadata is not JSON-able: {exc}") from None
    blob = b"".join((text[:-len(_LAST)], b'"streams":', tables, b",", _LAST))
    if len(blob) > MAX_METADATA_BYTES:
        raise ValueError(f"run metadata of {len(blob)} bytes exceeds the {MAX_METADATA_BYTES}-byte bound")
    at = FILE_HEADER.size
    try:
        check_json_items(blob, at, "run metadata")
        decoded = decode_canonical(text, at, "run metadata")
        known = _STREAM_TABLES.get(tables)
        entries = decode_canonical(tables, at, "run metadata") if known is None else known[0]
        decoded["streams"] = entries
        head = _check_metadata(decoded, 0, None if known is None else known[1])
    except FormatError as exc:
        raise ValueError(exc.reason) from None
    if known is None:
        _keep(_STREAM_TABLES, tables, (entries, head.streams))
    _keep(_CHECKED, blob, None)
    return blob, head


def encode_head(
    run: RunMetadata, streams: tuple[StreamSpec, ...], integrity: str, payload_crc: bool = True
) -> tuple[bytes, Head]:
    """The bytes of a file header plus metadata; raises ``ValueError`` on invalid input.

    The returned head's ``metadata`` and ``streams`` may share objects with earlier heads
    of the same stream table: the writer reads only its ids and flags."""
    blob, head = _encode(metadata_json(run, streams, integrity))
    flags = FILE_FLAG_PAYLOAD_CRC32C if payload_crc else 0
    hdr = FILE_HEADER.pack(FILE_MAGIC, VERSION[0], VERSION[1], flags, len(blob), crc(blob), 0)
    hdr = hdr[:28] + crc(hdr[:28]).to_bytes(4, "little")
    raw = hdr + blob + bytes(pad8(len(blob)) - len(blob))
    return raw, attrs.evolve(head, data_start=len(raw), raw=raw, payload_crc=payload_crc)


def _decode(blob: bytes) -> dict[str, Any]:
    """The run metadata object of ``blob``: a text the writer checked is only decoded."""
    with _LOCK:
        checked = _CHECKED.pop(blob, _ABSENT) is not _ABSENT
    if checked:  # canonical and within the item bound: proven for these bytes
        try:
            value = json.loads(blob)
        except (ValueError, RecursionError):  # never expected: the full decode names it
            value = None
        if isinstance(value, dict):
            return value
    value = decode_canonical(blob, FILE_HEADER.size, "run metadata")
    if not isinstance(value, dict):
        raise FormatError(FILE_HEADER.size, "run metadata is not a JSON object")
    return value


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
    head = _check_metadata(_decode(blob), FILE_HEADER.size)
    return attrs.evolve(
        head, data_start=FILE_HEADER.size + len(padded), raw=raw + padded,
        payload_crc=bool(flags & FILE_FLAG_PAYLOAD_CRC32C),
    )
