"""Validation of a sealed FSR file, returning an immutable receipt.

Decision table: validation profiles

| # | profile    | policy integrity | reads                                   | receipt digest |
|---|------------|------------------|-----------------------------------------|----------------|
| 1 | structural | any              | headers, tables, metadata, tail; payload bytes seek-skipped | none |
| 2 | fast       | sha256           | structural + one full-file SHA-256      | file SHA-256   |
| 3 | strong     | sha256           | fast + every batch payload vs its digest | file SHA-256  |
| 4 | fast/strong| none             | nothing: ``IntegrityPolicyError``       | -              |
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, BinaryIO

import attrs

from fastsim_record.fsr._batch import Accumulator, ParsedBatch, check_index_entry, parse_batch
from fastsim_record.fsr._json import decode_record_metadata
from fastsim_record.fsr._layout import canonical_json
from fastsim_record.fsr._sections import read_head, read_tail
from fastsim_record.fsr._source import Source, open_source
from fastsim_record.fsr.errors import FormatError, IntegrityPolicyError
from fastsim_record.fsr.model import INTEGRITY_PROFILES

__all__ = ["POLICY_INTEGRITIES", "RECEIPT_SCHEMA", "ValidationReceipt", "validate"]

RECEIPT_SCHEMA = "fsr-validation-receipt/1"
POLICY_INTEGRITIES = ("none", "sha256")
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


def check_payload_digest(src: Source, batch: ParsedBatch) -> None:
    """The batch's payload area hashes to the SHA-256 in its header."""
    digest = hashlib.sha256()
    pos, end = batch.payload_offset, batch.payload_offset + batch.payload_length
    while pos < end:
        n = min(_CHUNK, end - pos)
        digest.update(src.read_at(pos, n, "payload"))
        pos += n
    if digest.digest() != batch.payload_sha256:
        raise FormatError(batch.offset + 80, "batch payload SHA-256 mismatch")


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
    if integrity not in INTEGRITY_PROFILES:
        raise ValueError(f"integrity must be one of {list(INTEGRITY_PROFILES)}, not {integrity!r}")
    if policy_integrity not in POLICY_INTEGRITIES:
        raise ValueError(f"policy integrity must be one of {list(POLICY_INTEGRITIES)}")
    if integrity != "structural" and policy_integrity != "sha256":
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
    tail = read_tail(src, head)
    strong = head.integrity == "strong"
    if integrity == "strong" and not strong:
        raise FormatError(
            32, f"file was written with integrity {head.integrity!r}; strong validation needs "
            "per-batch payload digests"
        )
    acc = Accumulator(head.stream_ids)
    seen: set[bytes] = set()
    for ordinal, entry in enumerate(tail.index):
        batch = parse_batch(src, int(entry["offset"]), ordinal, tail.index_offset, head.stream_ids, strong)
        check_index_entry(entry, batch, tail.index_offset + 64 * ordinal)
        check_record_metadata(batch, seen)
        acc.check(batch.table, batch.facts, batch.offset)
        acc.add(batch.offset, batch.length, batch.flags, batch.table, batch.facts)
        if integrity == "strong":
            check_payload_digest(src, batch)
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
        if canonical_json(footer[key]) != canonical_json(value):
            raise FormatError(tail.footer_offset, f"footer: {key} disagrees with the records")
    if footer["records_by_kind"]["gap"] and not footer["degraded"]:
        raise FormatError(tail.footer_offset, "footer: gap records present but degraded is false")
    content = _file_sha256(src) if integrity != "structural" else None
    return ValidationReceipt(
        integrity, src.size, policy_integrity, content, tail.footer_identity, head.run.completion_id
    )
