"""Strict canonical-JSON decoding: any defect becomes a ``FormatError`` at an offset."""

from __future__ import annotations

import json
import re
from typing import Any

from fastsim_recording_format._layout import MAX_JSON_ITEMS
from fastsim_recording_format.errors import FormatError

__all__ = [
    "canonical_record_metadata", "check_json_items", "decode_canonical", "decode_object", "decode_record_metadata",
    "json_items",
]


#: ``encoding.canonical_json``'s encoder without its cycle check: a value ``json.loads``
#: returned is a tree, so the bytes are the same, about a fifth faster (every open re-encodes
#: the run metadata and the footer)
_RECHECK = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False
)


def json_items(data: bytes) -> int:
    """The structural bytes (``,`` ``:`` ``[`` ``{``) of a JSON text: a bound on its values."""
    return data.count(b",") + data.count(b":") + data.count(b"[") + data.count(b"{")


def check_json_items(data: bytes, offset: int, what: str) -> None:
    """Refuse a JSON text with more than ``MAX_JSON_ITEMS`` structural bytes (never parsed)."""
    if len(data) > MAX_JSON_ITEMS and (items := json_items(data)) > MAX_JSON_ITEMS:
        raise FormatError(offset, f"{what} has {items} JSON items, more than the {MAX_JSON_ITEMS} allowed")


def decode_canonical(data: bytes, offset: int, what: str) -> Any:
    """Decode canonical JSON ``data`` stored at ``offset``; reject anything non-canonical."""
    check_json_items(data, offset, what)
    try:
        value = json.loads(data)
        again = _RECHECK.encode(value).encode("utf-8")
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


#: a record metadata text that is canonical JSON on sight: one plain ASCII key (nothing to
#: escape) and an integer in its shortest form (no ``-0``, no leading zero), as a numeric
#: record's ``{"channel_sequence":n}`` always is; ``decode_record_metadata`` accepts it
_ONE_INT = re.compile(rb'\{"[A-Za-z_][A-Za-z0-9_]{0,63}":(?:0|-?[1-9][0-9]{0,17})\}')


def canonical_record_metadata(parts: list[bytes]) -> bool:
    """Whether ``decode_record_metadata`` accepts every one of ``parts``, decided with one
    ``json.loads`` of them all (as one JSON array) and one encoding of each value; ``False``
    also when unsure (too many items, nesting): then decode them one by one for the error.
    A part of the ``_ONE_INT`` form is accepted on sight (no decoding)."""
    if not parts:
        return True
    if any(p == b"{}" or len(p) > MAX_JSON_ITEMS for p in parts):
        return False
    match = _ONE_INT.fullmatch
    parts = [p for p in parts if match(p) is None]
    if not parts:
        return True
    try:
        values = json.loads(b"[" + b",".join(parts) + b"]")
        encode = _RECHECK.encode
        # each value re-encodes to exactly its own part: so each part alone decodes to it
        return len(values) == len(parts) and all(
            type(v) is dict and encode(v).encode("utf-8") == p for v, p in zip(values, parts, strict=True)
        )
    except (ValueError, RecursionError, TypeError):
        return False
