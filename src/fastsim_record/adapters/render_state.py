"""The ``render.state`` record codec: worker-side zlib level 1, bounded decoding.

The capture path hands Record a mapping of read-only arrays, one entry per
``"<group>/<entity>/<field>"`` key, untouched (no compression, no quantization).  The
writer worker encodes each mapping exactly once with :func:`encode_render_state`; an
offline reader (Replay) decodes it with :func:`decode_render_state`.

State keys (``check_state``):

    | # | group        | field            | shape  | dtype              | presence                 |
    |---|--------------|------------------|--------|--------------------|--------------------------|
    | 1 | articulation | joint_position   | (n,)   | float64 or float32 | required per entity      |
    | 2 | articulation | joint_velocity   | (n,)   | as joint_position  | required, same n         |
    | 3 | articulation | root_pose        | (7,)   | float64 or float32 | optional                 |
    | 4 | articulation | root_twist       | (6,)   | float64 or float32 | optional                 |
    | 5 | rigid        | pose             | (7,)   | float64 or float32 | required per entity      |
    | 6 | rigid        | linear_velocity  | (3,)   | float64 or float32 | required per entity      |
    | 7 | rigid        | angular_velocity | (3,)   | float64 or float32 | required per entity      |
    | 8 | fluid        | positions        | (N, 3) | float32 (packed)   | required per entity      |

A pose is ``x, y, z, qx, qy, qz, qw`` (world frame, metres, unit quaternion); a twist
is ``vx, vy, vz, wx, wy, wz``.  Entity names are non-empty and contain no ``/``.
Every buffer is stored little-endian and C-contiguous; fluid positions are always
packed little-endian float32 XYZ (the worker converts other float dtypes, never the
capture path).

Payload layout (all integers little-endian; a steady stream's layout is validated once,
see :func:`layout_for`):

    | offset | size | field                                                           |
    |--------|------|-----------------------------------------------------------------|
    | 0      | 4    | magic ``FSRS``                                                  |
    | 4      | 2    | version ``1``                                                   |
    | 6      | 2    | flags ``0``                                                     |
    | 8      | 4    | body_length: the declared decompressed size of the body         |
    | 12     | ...  | one zlib stream (level 1) of the body, and nothing after it     |

    body := u32 meta_length | meta (canonical JSON) | zero pad to 8 | buffer area
    buffer area := each buffer at its declared offset (relative to the area's start,
                   8-aligned) with its declared byte length, zero padding between

``meta`` is ``{"schema": "fastsim-render-state/1", "entries": [{"key", "dtype",
"shape", "offset", "nbytes"}, ...]}`` with entries sorted by key.

Decoding rules (every violation is one :class:`RenderStatePayloadError` line):

    | # | rule                                                                              |
    |---|-----------------------------------------------------------------------------------|
    | 1 | magic, version and flags as above                                                 |
    | 2 | ``body_length <= MAX_BODY_BYTES`` (256 MiB) and ``<= max_body_bytes`` if given    |
    | 3 | inflation writes into one preallocated buffer of ``body_length`` bytes, in steps   |
    |   | of at most 1 MiB out / 64 KiB in, and stops there: the stream must end exactly     |
    |   | there, with no trailing compressed or raw bytes                                    |
    | 4 | meta is canonical JSON, ``<= MAX_META_BYTES``, holds at most one ``{`` or ``[``   |
    |   | per 32 bytes (checked before parsing), and names the schema above                 |
    | 5 | each entry passes the key table, lies inside the body, is 8-aligned, does not     |
    |   | overlap another and has ``nbytes == prod(shape) * itemsize``                      |

So a hostile payload never makes the decoder allocate more than its declared size (plus
one 1 MiB step), and never more than ``MAX_BODY_BYTES``: the decoded arrays are read-only
views of that one buffer.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, Final, NoReturn

import attrs
import numpy as np
from numpy.typing import NDArray

from fastsim_record.errors import RecordError

__all__ = [
    "FIELDS",
    "MAX_BODY_BYTES",
    "MAX_META_BYTES",
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "ZLIB_LEVEL",
    "Layout",
    "RenderState",
    "RenderStatePayloadError",
    "check_state",
    "decode_render_state",
    "encode_render_state",
    "encode_with_layout",
    "layout_for",
    "layout_of",
    "state_signature",
    "record_metadata",
    "state_key",
]

SCHEMA: Final = "fastsim-render-state/1"
STREAM_NAME: Final = "render.state"
ZLIB_LEVEL: Final = 1
MAGIC: Final = b"FSRS"
VERSION: Final = 1
MAX_BODY_BYTES: Final = 256 * 1024 * 1024
MAX_META_BYTES: Final = 4 * 1024 * 1024
_PREFIX = struct.Struct("<4sHHI")
_IN_STEP: Final = 64 * 1024
_OUT_STEP: Final = 1024 * 1024
_U32 = struct.Struct("<I")
_FLOATS: Final = frozenset({"<f8", "<f4"})

#: The FSR stream codec description of ``render.state``.
STREAM_CODEC: Final[Mapping[str, object]] = {
    "media_type": "application/x-fastsim-render-state",
    "payload_codec": "zlib",
    "zlib_level": ZLIB_LEVEL,
    "schema": SCHEMA,
    "max_body_bytes": MAX_BODY_BYTES,
}

#: group -> field -> (fixed trailing shape or None for (n,), required)
FIELDS: Final[Mapping[str, Mapping[str, tuple[tuple[int, ...] | None, bool]]]] = {
    "articulation": {
        "joint_position": (None, True),
        "joint_velocity": (None, True),
        "root_pose": ((7,), False),
        "root_twist": ((6,), False),
    },
    "rigid": {
        "pose": ((7,), True),
        "linear_velocity": ((3,), True),
        "angular_velocity": ((3,), True),
    },
    "fluid": {"positions": ((3,), True)},
}
_KEY = re.compile(r"^(articulation|rigid|fluid)/([^/]+)/([a-z_]+)$")


class RenderStatePayloadError(RecordError):
    """A render-state mapping or payload breaks the codec's rules; one line names why."""


def state_key(group: str, entity: str, field: str) -> str:
    """The mapping key of one state buffer, e.g. ``articulation/robot/joint_position``."""
    return f"{group}/{entity}/{field}"


def _fail(message: str, **fields: object) -> NoReturn:
    raise RenderStatePayloadError(f"render.state: {message}", **fields)


def _split(key: object) -> tuple[str, str, str]:
    match = _KEY.match(key) if isinstance(key, str) else None
    if match is None or match.group(3) not in FIELDS[match.group(1)]:
        _fail(f"key {key!r} is not <articulation|rigid|fluid>/<entity>/<known field>", key=key)
    return match.group(1), match.group(2), match.group(3)


def _check_entry(key: str, dtype: str, shape: tuple[int, ...]) -> None:
    group, _, field = _split(key)
    fixed, _ = FIELDS[group][field]
    if group == "fluid":
        if dtype != "<f4":
            _fail(f"{key}: fluid positions are packed little-endian float32, got {dtype}")
        if len(shape) != 2 or shape[1] != 3:
            _fail(f"{key}: expected shape (N, 3), got {shape}")
        return
    if dtype not in _FLOATS:
        _fail(f"{key}: expected float64 or float32, got {dtype}")
    expected = (shape[0],) if fixed is None and len(shape) == 1 else fixed
    if shape != expected:
        _fail(f"{key}: expected shape {expected or '(n,)'}, got {shape}")


def _check_groups(entries: Mapping[str, tuple[str, tuple[int, ...]]]) -> None:
    """Rules 1-8 across keys: required fields present, joint vectors of equal length."""
    entities: dict[tuple[str, str], dict[str, tuple[str, tuple[int, ...]]]] = {}
    for key, spec in entries.items():
        group, entity, field = _split(key)
        entities.setdefault((group, entity), {})[field] = spec
    for (group, entity), fields in entities.items():
        for field, (_, required) in FIELDS[group].items():
            if required and field not in fields:
                _fail(f"{state_key(group, entity, field)}: missing (required for a {group})")
        if group == "articulation":
            pos, vel = fields["joint_position"], fields["joint_velocity"]
            if pos != vel:
                _fail(
                    f"{state_key(group, entity, 'joint_velocity')}: must match joint_position "
                    f"({pos[0]}{pos[1]}), got {vel[0]}{vel[1]}"
                )


def _as_le(key: str, value: object) -> NDArray[Any]:
    if not isinstance(value, np.ndarray):
        _fail(f"{key}: expected a numpy array, got {type(value).__name__}")
    if value.dtype.kind != "f":
        _fail(f"{key}: expected a float array, got {value.dtype}")
    group = key.split("/", 1)[0]
    target = np.dtype("<f4") if group == "fluid" else value.dtype.newbyteorder("<")
    return np.ascontiguousarray(value, dtype=target)


def check_state(state: Mapping[str, object]) -> None:
    """Raise :class:`RenderStatePayloadError` unless ``state`` follows the key table.

    Cheap: it looks at keys, dtypes and shapes only, never at values.  Fluid positions
    may be any float dtype here; the worker packs them as float32.
    """
    if not isinstance(state, Mapping) or not state:
        _fail("expected a non-empty mapping of state buffers")
    entries: dict[str, tuple[str, tuple[int, ...]]] = {}
    for key, value in state.items():
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            _fail(f"{key}: expected a float numpy array, got {type(value).__name__}")
        group = _split(key)[0]
        dtype = "<f4" if group == "fluid" else value.dtype.newbyteorder("<").str
        _check_entry(key, dtype, tuple(value.shape))
        entries[key] = (dtype, tuple(value.shape))
    _check_groups(entries)


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _canonical(value: object) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


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
            _fail(f"{key}: expected a numpy array")
        dtype = np.dtype("<f4") if key.startswith("fluid/") else value.dtype.newbyteorder("<")
        nbytes = value.size * dtype.itemsize
        dtypes.append(dtype)
        entries.append(
            {"key": key, "dtype": dtype.str, "shape": list(value.shape),
             "offset": cursor, "nbytes": nbytes}
        )
        pads.append(bytes(_pad8(nbytes) - nbytes))
        cursor += _pad8(nbytes)
    meta = _canonical({"schema": SCHEMA, "entries": entries})
    head = _U32.pack(len(meta)) + meta
    head += bytes(_pad8(len(head)) - len(head))
    body_length = len(head) + cursor
    if body_length > MAX_BODY_BYTES:
        _fail(f"state of {body_length} bytes exceeds the {MAX_BODY_BYTES}-byte limit")
    signature = state_signature(state)
    if signature is None:  # pragma: no cover - check_state guarantees arrays
        _fail("expected numpy arrays")
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
    return _PREFIX.pack(MAGIC, VERSION, 0, layout.body_length) + zlib.compress(body, ZLIB_LEVEL)


def record_metadata(state: Mapping[str, object]) -> dict[str, object]:
    """Small per-record FSR metadata: entity counts and particle totals (worker only)."""
    groups: dict[str, set[str]] = {"articulation": set(), "rigid": set(), "fluid": set()}
    particles = 0
    for key, value in state.items():
        group, entity, _ = _split(key)
        groups[group].add(entity)
        if group == "fluid" and isinstance(value, np.ndarray):
            particles += int(value.shape[0])
    return {
        "schema": SCHEMA,
        "articulations": len(groups["articulation"]),
        "rigid_bodies": len(groups["rigid"]),
        "fluids": len(groups["fluid"]),
        "particles": particles,
    }


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

    The compressed input is fed ``_IN_STEP`` bytes at a time and each call may produce at
    most ``_OUT_STEP`` bytes, copied straight into the preallocated body: the decoder
    never holds more than the declared body plus one step, however the stream is built.
    """
    data = memoryview(payload).cast("B")
    if len(data) < _PREFIX.size:
        _fail(f"payload of {len(data)} bytes is shorter than its {_PREFIX.size}-byte prefix")
    magic, version, flags, body_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        _fail(f"bad magic {bytes(magic)!r} at offset 0")
    if version != VERSION or flags != 0:
        _fail(f"unsupported version {version} / flags {flags} at offset 4")
    if body_len > limit:
        _fail(f"declared body of {body_len} bytes exceeds the {limit}-byte limit at offset 8")
    body = bytearray(body_len)
    out = memoryview(body)
    stream = data[_PREFIX.size :]
    inflater = zlib.decompressobj()
    filled = fed = 0
    pending: bytes | memoryview = b""
    try:
        while not inflater.eof:
            if not pending:
                if fed >= len(stream):
                    break
                pending = stream[fed : fed + _IN_STEP]
                fed += len(pending)
            room = body_len - filled
            before = len(pending)
            piece = inflater.decompress(pending, min(_OUT_STEP, room) or 1)
            pending = inflater.unconsumed_tail
            if len(piece) > room:
                _fail(f"zlib stream inflates beyond its declared {body_len} bytes")
            out[filled : filled + len(piece)] = piece
            filled += len(piece)
            if not piece and len(pending) == before and not inflater.eof:
                break  # no progress: the stream needs input it does not have
    except zlib.error as exc:
        _fail(f"corrupt zlib stream at offset {_PREFIX.size}: {exc}")
    if not inflater.eof or filled != body_len:
        _fail(f"zlib stream is truncated: {filled} of {body_len} declared bytes")
    trailing = len(inflater.unused_data) + len(pending) + len(stream) - fed
    if trailing:
        _fail(f"{trailing} trailing bytes after the zlib stream")
    return body, body_len


def _parse_meta(body: bytes | bytearray) -> list[Mapping[str, Any]]:
    if len(body) < 4:
        _fail("body is shorter than its metadata length field")
    (meta_len,) = _U32.unpack_from(body)
    if meta_len > MAX_META_BYTES or 4 + meta_len > len(body):
        _fail(f"metadata length {meta_len} does not fit the {len(body)}-byte body")
    raw = bytes(body[4 : 4 + meta_len])
    if raw.count(b"{") + raw.count(b"[") > meta_len // 32 + 4:
        _fail("metadata nests more objects and arrays than its entries can hold")
    try:
        meta = json.loads(raw.decode(), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        _fail(f"metadata is not JSON: {exc}")
    if not isinstance(meta, dict) or _canonical(meta) != raw:
        _fail("metadata is not a canonical JSON object")
    if meta.get("schema") != SCHEMA or set(meta) != {"schema", "entries"}:
        _fail(f"metadata schema must be {SCHEMA!r} with keys schema, entries")
    entries = meta["entries"]
    if not isinstance(entries, list) or not entries:
        _fail("metadata entries must be a non-empty list")
    if body[4 + meta_len : _pad8(4 + meta_len)].strip(b"\0"):
        _fail("non-zero metadata padding")
    return entries


def _reject_constant(name: str) -> NoReturn:
    _fail(f"metadata holds {name}")


def _entry_spec(entry: object, head_end: int, body_len: int) -> tuple[str, str, tuple[int, ...], int, int]:
    if not isinstance(entry, dict) or set(entry) != {"key", "dtype", "shape", "offset", "nbytes"}:
        _fail("an entry must have exactly key, dtype, shape, offset, nbytes")
    key, dtype, shape = entry["key"], entry["dtype"], entry["shape"]
    offset, nbytes = entry["offset"], entry["nbytes"]
    ints = (offset, nbytes, *shape) if isinstance(shape, list) else ()
    if not ints or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
        _fail(f"entry {key!r}: offset, nbytes and shape must be non-negative integers")
    if not isinstance(key, str) or not isinstance(dtype, str):
        _fail("entry key and dtype must be strings")
    dims = tuple(int(d) for d in shape)
    _check_entry(key, dtype, dims)
    if nbytes != math.prod(dims) * np.dtype(dtype).itemsize:
        _fail(f"entry {key!r}: nbytes {nbytes} does not match shape {dims} of {dtype}")
    start = head_end + offset
    if offset % 8 or start + nbytes > body_len:
        _fail(f"entry {key!r}: buffer at {offset} (+{nbytes}) is misaligned or outside the body")
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
    head_end = _pad8(4 + _U32.unpack_from(body)[0])
    arrays: dict[str, NDArray[Any]] = {}
    specs: dict[str, tuple[str, tuple[int, ...]]] = {}
    spans: list[tuple[int, int, str]] = []
    for entry in entries:
        key, dtype, dims, offset, nbytes = _entry_spec(entry, head_end, body_len)
        if key in arrays:
            _fail(f"entry {key!r} appears twice")
        array = np.frombuffer(frozen, dtype=np.dtype(dtype), count=math.prod(dims), offset=offset)
        arrays[key] = array.reshape(dims)
        specs[key] = (dtype, dims)
        spans.append((offset, offset + nbytes, key))
    spans.sort()
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            _fail(f"entries {first!r} and {second!r} overlap")
    _check_groups(specs)
    return RenderState(arrays=arrays)
