"""Validation of a sealed FSR file, returning an immutable receipt.

Decision table: validation profiles

| # | profile    | policy integrity | file must have         | reads                                   | receipt digest |
|---|------------|------------------|------------------------|-----------------------------------------|----------------|
| 1 | structural | any              | -                      | headers, tables, metadata, tail; payload bytes seek-skipped | none |
| 2 | crc        | any              | the payload-CRC flag   | structural + every payload area vs its CRC-32C | none     |
| 3 | fast       | sha256           | -                      | structural + one full-file SHA-256      | file SHA-256   |
| 4 | strong     | sha256           | integrity ``strong``   | fast + every batch payload vs its digest (and CRC) | file SHA-256 |
| 5 | fast/strong| none             | -                      | nothing: ``IntegrityPolicyError``       | -              |
| 6 | crc/strong | any              | (missing)              | header + metadata: ``ProfileUnsupportedError`` naming the supported profiles | - |
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import Any, BinaryIO

import attrs
import crc32c as _crc32c

from fastsim_recording_format._batch import Accumulator, ParsedBatch, check_index_entry, parse_batch
from fastsim_recording_format._file_rules import check_file
from fastsim_recording_format._json import decode_record_metadata
from fastsim_recording_format._layout import canonical_json
from fastsim_recording_format._sections import Head, Tail, read_head, read_tail
from fastsim_recording_format._source import Source, open_source
from fastsim_recording_format.errors import (
    FormatError,
    IntegrityPolicyError,
    ProfileUnsupportedError,
)

__all__ = [
    "POLICY_INTEGRITIES", "RECEIPT_SCHEMA", "VALIDATION_PROFILES", "ValidationReceipt",
    "supported_profiles", "validate",
]

RECEIPT_SCHEMA = "fsr-validation-receipt/1"
POLICY_INTEGRITIES = ("none", "sha256")
#: what ``validate`` can check; ``crc`` is a read-side profile only (never a write integrity)
VALIDATION_PROFILES = ("structural", "crc", "fast", "strong")
_CHUNK = 1 << 20


@attrs.frozen
class ValidationReceipt:
    """What a validation established about one exact file."""

    profile: str
    validated_bytes: int
    policy_integrity: str
    content_sha256: str | None
    footer_identity: str
    completion_identity: str
    validator_schema: str = RECEIPT_SCHEMA

    def to_json(self) -> dict[str, Any]:
        """The receipt as a JSON-able object."""
        return attrs.asdict(self)


def check_record_metadata(batch: ParsedBatch, seen: set[bytes]) -> None:
    """Every record's metadata is a canonical JSON object (``seen`` caches checked blobs)."""
    blob = batch.metadata_blob
    if not blob:
        return
    table = batch.table
    for off, length in zip(table["metadata_offset"].tolist(), table["metadata_length"].tolist()):
        if length:
            part = blob[off:off + length]
            if part not in seen:
                decode_record_metadata(part, batch.metadata_offset + off)
                if len(seen) < 4096:
                    seen.add(part)


def same_json(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value, so that their canonical JSON is
    the same bytes: the same types all the way down (``1``, ``1.0`` and ``True`` differ),
    equal strings and integers, bit-equal floats (``0.0`` and ``-0.0`` differ), lists
    equal item by item, objects with the same keys.  ``False`` says only "not shown equal
    here" (e.g. NaN, a NumPy scalar): the caller then compares the canonical encodings."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return bool(a.keys() == b.keys()) and all(same_json(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if kind is float:
        return bool(a == b) and math.copysign(1.0, a) == math.copysign(1.0, b)
    return kind in _JSON_SCALARS and bool(a == b)


_JSON_SCALARS = (str, int, bool, type(None))


def check_payloads(
    src: Source, batch: ParsedBatch, *, crc: bool, sha256: bool, names: dict[int, str] | None = None
) -> None:
    """The batch's payload area matches its CRC-32C and/or its SHA-256 (one read of it); a
    mismatch names the streams the batch holds (``names``: stream id to name)."""
    if not (crc or sha256):
        return
    digest = hashlib.sha256() if sha256 else None
    value = 0
    pos, end = batch.payload_offset, batch.payload_offset + batch.payload_length
    while pos < end:
        n = min(_CHUNK, end - pos)
        chunk = src.read_at(pos, n, "payload")
        if crc:
            value = _crc32c.crc32c(chunk, value)
        if digest is not None:
            digest.update(chunk)
        pos += n
    held = sorted(set(batch.table["stream_id"].tolist()))
    streams = f" (streams {', '.join((names or {}).get(i, str(i)) for i in held)})"
    if digest is not None and digest.digest() != batch.payload_sha256:
        raise FormatError(batch.offset + 80, "batch payload SHA-256 mismatch" + streams)
    if crc and value != batch.payload_crc32c:
        raise FormatError(batch.offset + 20, "batch payload CRC-32C mismatch" + streams)


def supported_profiles(head: Head) -> tuple[str, ...]:
    """The validation profiles a file with this header supports."""
    return tuple(
        p for p in VALIDATION_PROFILES
        if (p != "crc" or head.payload_crc) and (p != "strong" or head.integrity == "strong")
    )


def _file_sha256(src: Source) -> str:
    digest = hashlib.sha256()
    pos = 0
    while pos < src.size:
        n = min(_CHUNK, src.size - pos)
        digest.update(src.read_at(pos, n, "file"))
        pos += n
    return digest.hexdigest()


def validate(
    target: str | os.PathLike[str] | BinaryIO,
    integrity: str = "structural",
    policy_integrity: str = "none",
) -> ValidationReceipt:
    """Validate a sealed file; raises ``FormatError`` naming the first defect's offset."""
    if integrity not in VALIDATION_PROFILES:
        raise ValueError(f"integrity must be one of {list(VALIDATION_PROFILES)}, not {integrity!r}")
    if policy_integrity not in POLICY_INTEGRITIES:
        raise ValueError(f"policy integrity must be one of {list(POLICY_INTEGRITIES)}")
    if integrity in ("fast", "strong") and policy_integrity != "sha256":
        raise IntegrityPolicyError(
            f"integrity {integrity!r} requires the output policy integrity 'sha256', "
            f"not {policy_integrity!r}"
        )
    src = open_source(target)
    try:
        return _validate(src, integrity, policy_integrity)
    finally:
        src.close()


def _validate(src: Source, integrity: str, policy_integrity: str) -> ValidationReceipt:
    head = read_head(src)
    strong = head.integrity == "strong"
    if integrity == "strong" and not strong:
        raise ProfileUnsupportedError(
            integrity, f"the file was written with integrity {head.integrity!r}, without per-batch "
            "payload SHA-256 digests", supported_profiles(head),
        )
    if integrity == "crc" and not head.payload_crc:
        raise ProfileUnsupportedError(
            integrity, "the file was written without payload CRC-32Cs (recorded without "
            "runtime.output.payload_crc: true, or before they existed)", supported_profiles(head),
        )
    tail = read_tail(src, head)
    # every batch at once (``_file_rules``); a file it does not accept, or whose payloads
    # are checked too, goes batch by batch, which names the first defect.  A file of one
    # batch (an episode) goes batch by batch at once: the same checks, fewer numpy calls
    together = integrity in ("structural", "fast") and len(tail.index) > 1
    fast = check_file(src, head, tail) if together else None
    acc = _check_batches(src, head, tail, integrity) if fast is None else fast
    proj_at = tail.index_offset + 64 * len(tail.index)
    derived = acc.projection_array()
    if derived.tobytes() != tail.projection_bytes:
        stored = tail.projections
        k = next(
            (i for i in range(min(len(derived), len(stored))) if derived[i].tobytes() != stored[i].tobytes()),
            min(len(derived), len(stored)),
        )
        raise FormatError(proj_at + 48 * k, "stream projections disagree with the records")
    footer = tail.footer
    for key, value in acc.footer_totals().items():
        stored = footer[key]
        if not same_json(stored, value) and canonical_json(stored) != canonical_json(value):
            raise FormatError(tail.footer_offset, f"footer: {key} disagrees with the records")
    if footer["records_by_kind"]["gap"] and not footer["degraded"]:
        raise FormatError(tail.footer_offset, "footer: gap records present but degraded is false")
    content = _file_sha256(src) if integrity in ("fast", "strong") else None
    return ValidationReceipt(
        integrity, src.size, policy_integrity, content, tail.footer_identity, head.run.completion_id
    )


def _check_batches(src: Source, head: Head, tail: Tail, integrity: str) -> Accumulator:
    """Every batch in order, one at a time: the first defect raises with its byte offset."""
    acc = Accumulator(head.stream_ids)
    seen: set[bytes] = set()
    names = {s.stream_id: s.name for s in head.streams}
    for ordinal, entry in enumerate(tail.index):
        batch = parse_batch(src, int(entry["offset"]), ordinal, tail.index_offset, head.stream_ids, head.batch_flags)
        check_index_entry(entry, batch, tail.index_offset + 64 * ordinal)
        check_record_metadata(batch, seen)
        acc.check(batch.table, batch.facts, batch.offset)
        acc.add(batch.offset, batch.length, batch.flags, batch.table, batch.facts)
        if integrity in ("crc", "strong"):
            check_payloads(src, batch, crc=head.payload_crc, sha256=integrity == "strong", names=names)
    return acc
