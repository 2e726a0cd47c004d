"""Bounded decoding of ``render.state`` payloads (rules 1-5 of the decoding table)."""

from __future__ import annotations

import itertools
import json
import math
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

import attrs
import numpy as np
from numpy.typing import NDArray

from fastsim_recording_format.codecs.render_state._keys import (
    IN_STEP,
    MAGIC,
    MAX_BODY_BYTES,
    MAX_META_BYTES,
    OUT_STEP,
    PREFIX,
    SCHEMA,
    U32,
    VERSION,
    check_entry,
    check_groups,
    fail,
    state_key,
)
from fastsim_recording_format.encoding import canonical_json, pad8

__all__ = ["RenderState", "decode_render_state"]


@attrs.frozen
class RenderState:
    """One decoded render-state sample: read-only arrays by key."""

    arrays: Mapping[str, NDArray[Any]]

    def entities(self, group: str) -> tuple[str, ...]:
        """The sorted entity names of ``group`` (``articulation``, ``rigid``, ``fluid``)."""
        return tuple(sorted({k.split("/")[1] for k in self.arrays if k.startswith(group + "/")}))

    def get(self, group: str, entity: str, field: str) -> NDArray[Any] | None:
        """One buffer, or ``None`` when absent (optional root pose/twist)."""
        return self.arrays.get(state_key(group, entity, field))

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)


def _inflate(payload: bytes | memoryview, limit: int) -> tuple[bytearray, int]:
    """Inflate into one buffer of exactly the declared size, in bounded steps (rule 3).

    The compressed input is fed ``IN_STEP`` bytes at a time and each call may produce at
    most ``OUT_STEP`` bytes, copied straight into the preallocated body: the decoder
    never holds more than the declared body plus one step, however the stream is built.
    """
    data = memoryview(payload).cast("B")
    if len(data) < PREFIX.size:
        fail(f"payload of {len(data)} bytes is shorter than its {PREFIX.size}-byte prefix")
    magic, version, flags, body_len = PREFIX.unpack_from(data)
    if magic != MAGIC:
        fail(f"bad magic {bytes(magic)!r} at offset 0")
    if version != VERSION or flags != 0:
        fail(f"unsupported version {version} / flags {flags} at offset 4")
    if body_len > limit:
        fail(f"declared body of {body_len} bytes exceeds the {limit}-byte limit at offset 8")
    body = bytearray(body_len)
    out = memoryview(body)
    stream = data[PREFIX.size :]
    inflater = zlib.decompressobj()
    filled = fed = 0
    pending: bytes | memoryview = b""
    try:
        while not inflater.eof:
            if not pending:
                if fed >= len(stream):
                    break
                pending = stream[fed : fed + IN_STEP]
                fed += len(pending)
            room = body_len - filled
            before = len(pending)
            piece = inflater.decompress(pending, min(OUT_STEP, room) or 1)
            pending = inflater.unconsumed_tail
            if len(piece) > room:
                fail(f"zlib stream inflates beyond its declared {body_len} bytes")
            out[filled : filled + len(piece)] = piece
            filled += len(piece)
            if not piece and len(pending) == before and not inflater.eof:
                break  # no progress: the stream needs input it does not have
    except zlib.error as exc:
        fail(f"corrupt zlib stream at offset {PREFIX.size}: {exc}")
    if not inflater.eof or filled != body_len:
        fail(f"zlib stream is truncated: {filled} of {body_len} declared bytes")
    trailing = len(inflater.unused_data) + len(pending) + len(stream) - fed
    if trailing:
        fail(f"{trailing} trailing bytes after the zlib stream")
    return body, body_len


def _parse_meta(body: bytes | bytearray) -> list[Mapping[str, Any]]:
    if len(body) < 4:
        fail("body is shorter than its metadata length field")
    (meta_len,) = U32.unpack_from(body)
    if meta_len > MAX_META_BYTES or 4 + meta_len > len(body):
        fail(f"metadata length {meta_len} does not fit the {len(body)}-byte body")
    raw = bytes(body[4 : 4 + meta_len])
    if raw.count(b"{") + raw.count(b"[") > meta_len // 32 + 4:
        fail("metadata nests more objects and arrays than its entries can hold")
    try:
        meta = json.loads(raw.decode(), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        fail(f"metadata is not JSON: {exc}")
    if not isinstance(meta, dict) or canonical_json(meta) != raw:
        fail("metadata is not a canonical JSON object")
    if meta.get("schema") != SCHEMA or set(meta) != {"schema", "entries"}:
        fail(f"metadata schema must be {SCHEMA!r} with keys schema, entries")
    entries = meta["entries"]
    if not isinstance(entries, list) or not entries:
        fail("metadata entries must be a non-empty list")
    if body[4 + meta_len : pad8(4 + meta_len)].strip(b"\0"):
        fail("non-zero metadata padding")
    return entries


def _reject_constant(name: str) -> NoReturn:
    fail(f"metadata holds {name}")


def _entry_spec(entry: object, head_end: int, body_len: int) -> tuple[str, str, tuple[int, ...], int, int]:
    if not isinstance(entry, dict) or set(entry) != {"key", "dtype", "shape", "offset", "nbytes"}:
        fail("an entry must have exactly key, dtype, shape, offset, nbytes")
    key, dtype, shape = entry["key"], entry["dtype"], entry["shape"]
    offset, nbytes = entry["offset"], entry["nbytes"]
    ints = (offset, nbytes, *shape) if isinstance(shape, list) else ()
    if not ints or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
        fail(f"entry {key!r}: offset, nbytes and shape must be non-negative integers")
    if not isinstance(key, str) or not isinstance(dtype, str):
        fail("entry key and dtype must be strings")
    dims = tuple(int(d) for d in shape)
    check_entry(key, dtype, dims)
    if nbytes != math.prod(dims) * np.dtype(dtype).itemsize:
        fail(f"entry {key!r}: nbytes {nbytes} does not match shape {dims} of {dtype}")
    start = head_end + offset
    if offset % 8 or start + nbytes > body_len:
        fail(f"entry {key!r}: buffer at {offset} (+{nbytes}) is misaligned or outside the body")
    return key, dtype, dims, start, nbytes


def decode_render_state(
    payload: bytes | memoryview, *, max_body_bytes: int | None = None
) -> RenderState:
    """Decode one ``render.state`` payload into read-only arrays (rules 1-5).

    ``max_body_bytes`` lowers (never raises) the documented ``MAX_BODY_BYTES`` limit.
    """
    limit = MAX_BODY_BYTES if max_body_bytes is None else min(max_body_bytes, MAX_BODY_BYTES)
    body, body_len = _inflate(payload, limit)
    frozen = memoryview(body).toreadonly()  # the arrays view the one body, read-only
    entries = _parse_meta(body)
    head_end = pad8(4 + U32.unpack_from(body)[0])
    arrays: dict[str, NDArray[Any]] = {}
    specs: dict[str, tuple[str, tuple[int, ...]]] = {}
    spans: list[tuple[int, int, str]] = []
    for entry in entries:
        key, dtype, dims, offset, nbytes = _entry_spec(entry, head_end, body_len)
        if key in arrays:
            fail(f"entry {key!r} appears twice")
        array = np.frombuffer(frozen, dtype=np.dtype(dtype), count=math.prod(dims), offset=offset)
        arrays[key] = array.reshape(dims)
        specs[key] = (dtype, dims)
        spans.append((offset, offset + nbytes, key))
    spans.sort()
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            fail(f"entries {first!r} and {second!r} overlap")
    check_groups(specs)
    return RenderState(arrays=arrays)
