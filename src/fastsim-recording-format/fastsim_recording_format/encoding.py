"""Small encoding helpers shared by every layer: canonical JSON, 8-byte padding, read-only arrays.

Each exists once, here, at the bottom of the layer stack, so that the format, the Core
contract, the plugin and the host all encode the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = ["Array", "canonical_json", "pad8", "readonly"]

#: any numpy array (the format's modules annotate with it)
Array = np.ndarray[Any, Any]

_A = TypeVar("_A", bound=np.ndarray[Any, Any])

#: Built once: ``json.dumps`` with these options builds a new encoder on every call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, literal UTF-8, no NaN/Infinity.

    ``default`` converts a value JSON cannot encode (as in :func:`json.dumps`).  Raises
    :class:`ValueError` for NaN/Infinity and :class:`TypeError` for a value nothing encodes.
    """
    if default is None:
        return _CANONICAL.encode(value).encode("utf-8")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
        default=default,
    ).encode("utf-8")


def pad8(n: int) -> int:
    """``n`` rounded up to a multiple of 8."""
    return (n + 7) & ~7


def readonly(array: _A) -> _A:
    """``array`` itself, marked read-only (no copy)."""
    array.flags.writeable = False
    return array
