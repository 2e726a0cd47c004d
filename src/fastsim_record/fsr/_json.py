"""Strict canonical-JSON decoding: any defect becomes a ``FormatError`` at an offset."""

from __future__ import annotations

import json
from typing import Any

from fastsim_record.fsr._layout import canonical_json
from fastsim_record.fsr.errors import FormatError

__all__ = ["decode_canonical", "decode_object", "decode_record_metadata"]


def decode_canonical(data: bytes, offset: int, what: str) -> Any:
    """Decode canonical JSON ``data`` stored at ``offset``; reject anything non-canonical."""
    try:
        value = json.loads(data)
        again = canonical_json(value)
    except (ValueError, RecursionError, TypeError) as exc:
        raise FormatError(offset, f"{what} is not valid JSON ({type(exc).__name__})") from None
    if again != data:
        raise FormatError(offset, f"{what} is not canonical JSON")
    return value


def decode_object(data: bytes, offset: int, what: str) -> dict[str, Any]:
    """Decode a canonical JSON object."""
    value = decode_canonical(data, offset, what)
    if not isinstance(value, dict):
        raise FormatError(offset, f"{what} is not a JSON object")
    return value


def decode_record_metadata(data: bytes, offset: int) -> dict[str, Any]:
    """Decode one record's metadata; the empty object must be stored as zero bytes."""
    if data == b"{}":
        raise FormatError(offset, "empty record metadata must be stored with length 0")
    return decode_object(data, offset, "record metadata")
