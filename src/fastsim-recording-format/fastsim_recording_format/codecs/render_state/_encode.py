"""Laying out and encoding ``render.state`` payloads (the writer worker's side)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from fastsim_recording_format.codecs.render_state._keys import (
    MAGIC,
    MAX_BODY_BYTES,
    PREFIX,
    SCHEMA,
    U32,
    VERSION,
    ZLIB_LEVEL,
    check_state,
    fail,
)
from fastsim_recording_format.encoding import canonical_json, pad8

__all__ = [
    "Layout",
    "encode_render_state",
    "encode_with_layout",
    "layout_for",
    "layout_of",
    "state_signature",
]


@attrs.frozen
class Layout:
    """A validated body layout, reusable while the keys, dtypes and shapes stay the same."""

    signature: tuple[tuple[str, str, tuple[int, ...]], ...]
    keys: tuple[str, ...]  # sorted
    dtypes: tuple[np.dtype[Any], ...]  # stored (little-endian) dtype per key
    head: bytes  # u32 meta_length | meta | zero pad to 8
    pads: tuple[bytes, ...]  # zero padding after each buffer
    body_length: int


def state_signature(state: Mapping[str, object]) -> tuple[tuple[str, str, tuple[int, ...]], ...] | None:
    try:
        return tuple((k, v.dtype.str, v.shape) for k, v in state.items())  # type: ignore[attr-defined]
    except AttributeError:
        return None


def layout_of(state: Mapping[str, object]) -> Layout:
    """Validate ``state`` (``check_state``) and lay its body out (worker only)."""
    check_state(state)
    keys = tuple(sorted(state))
    dtypes: list[np.dtype[Any]] = []
    entries: list[dict[str, object]] = []
    pads: list[bytes] = []
    cursor = 0
    for key in keys:
        value = state[key]
        if not isinstance(value, np.ndarray):  # pragma: no cover - check_state guarantees it
            fail(f"{key}: expected a numpy array")
        dtype = np.dtype("<f4") if key.startswith("fluid/") else value.dtype.newbyteorder("<")
        nbytes = value.size * dtype.itemsize
        dtypes.append(dtype)
        entries.append(
            {"key": key, "dtype": dtype.str, "shape": list(value.shape),
             "offset": cursor, "nbytes": nbytes}
        )
        pads.append(bytes(pad8(nbytes) - nbytes))
        cursor += pad8(nbytes)
    meta = canonical_json({"schema": SCHEMA, "entries": entries})
    head = U32.pack(len(meta)) + meta
    head += bytes(pad8(len(head)) - len(head))
    body_length = len(head) + cursor
    if body_length > MAX_BODY_BYTES:
        fail(f"state of {body_length} bytes exceeds the {MAX_BODY_BYTES}-byte limit")
    signature = state_signature(state)
    if signature is None:  # pragma: no cover - check_state guarantees arrays
        fail("expected numpy arrays")
    return Layout(signature, keys, tuple(dtypes), head, tuple(pads), body_length)


def layout_for(state: Mapping[str, object], previous: Layout | None) -> Layout:
    """``previous`` when ``state`` has its keys, dtypes and shapes (in order), else a new one.

    A steady stream is therefore validated once, not per sample.
    """
    if previous is not None and state_signature(state) == previous.signature:
        return previous
    return layout_of(state)


def encode_render_state(state: Mapping[str, object]) -> bytes:
    """Encode one state mapping as a ``render.state`` payload (worker only)."""
    return encode_with_layout(state, layout_of(state))


def encode_with_layout(state: Mapping[str, object], layout: Layout) -> bytes:
    """Encode ``state`` laid out by ``layout`` (from :func:`layout_for` on this state).

    The head (metadata) and the buffers are joined into the body, compressed in one
    ``zlib.compress(body, 1)`` call (one zlib stream; the fastest path for small states).
    """
    parts: list[bytes | memoryview] = [layout.head]
    for key, dtype, pad in zip(layout.keys, layout.dtypes, layout.pads):
        value: Any = state[key]
        if value.dtype != dtype or not value.flags.c_contiguous:
            value = np.ascontiguousarray(value, dtype=dtype)
        parts.append(value.data.cast("B") if value.size else b"")
        if pad:
            parts.append(pad)
    body = b"".join(parts)
    return PREFIX.pack(MAGIC, VERSION, 0, layout.body_length) + zlib.compress(body, ZLIB_LEVEL)
