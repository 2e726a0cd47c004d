"""The ``render.state`` key table (rules 1-8) and the stream's constants."""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Final, NoReturn

import numpy as np

from fastsim_recording_format.errors import RenderStatePayloadError

SCHEMA: Final = "fastsim-render-state/1"
STREAM_NAME: Final = "render.state"
ZLIB_LEVEL: Final = 1
MAGIC: Final = b"FSRS"
VERSION: Final = 1
MAX_BODY_BYTES: Final = 256 * 1024 * 1024
MAX_META_BYTES: Final = 4 * 1024 * 1024
PREFIX = struct.Struct("<4sHHI")
IN_STEP: Final = 64 * 1024
OUT_STEP: Final = 1024 * 1024
U32 = struct.Struct("<I")
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


def state_key(group: str, entity: str, field: str) -> str:
    """The mapping key of one state buffer, e.g. ``articulation/robot/joint_position``."""
    return f"{group}/{entity}/{field}"


def fail(message: str, **fields: object) -> NoReturn:
    """Raise one :class:`RenderStatePayloadError` line."""
    raise RenderStatePayloadError(f"render.state: {message}", **fields)


def split_key(key: object) -> tuple[str, str, str]:
    match = _KEY.match(key) if isinstance(key, str) else None
    if match is None or match.group(3) not in FIELDS[match.group(1)]:
        fail(f"key {key!r} is not <articulation|rigid|fluid>/<entity>/<known field>", key=key)
    return match.group(1), match.group(2), match.group(3)


def check_entry(key: str, dtype: str, shape: tuple[int, ...]) -> None:
    group, _, field = split_key(key)
    fixed, _ = FIELDS[group][field]
    if group == "fluid":
        if dtype != "<f4":
            fail(f"{key}: fluid positions are packed little-endian float32, got {dtype}")
        if len(shape) != 2 or shape[1] != 3:
            fail(f"{key}: expected shape (N, 3), got {shape}")
        return
    if dtype not in _FLOATS:
        fail(f"{key}: expected float64 or float32, got {dtype}")
    expected = (shape[0],) if fixed is None and len(shape) == 1 else fixed
    if shape != expected:
        fail(f"{key}: expected shape {expected or '(n,)'}, got {shape}")


def check_groups(entries: Mapping[str, tuple[str, tuple[int, ...]]]) -> None:
    """Rules 1-8 across keys: required fields present, joint vectors of equal length."""
    entities: dict[tuple[str, str], dict[str, tuple[str, tuple[int, ...]]]] = {}
    for key, spec in entries.items():
        group, entity, field = split_key(key)
        entities.setdefault((group, entity), {})[field] = spec
    for (group, entity), fields in entities.items():
        for field, (_, required) in FIELDS[group].items():
            if required and field not in fields:
                fail(f"{state_key(group, entity, field)}: missing (required for a {group})")
        if group == "articulation":
            pos, vel = fields["joint_position"], fields["joint_velocity"]
            if pos != vel:
                fail(
                    f"{state_key(group, entity, 'joint_velocity')}: must match joint_position "
                    f"({pos[0]}{pos[1]}), got {vel[0]}{vel[1]}"
                )


def check_state(state: Mapping[str, object]) -> None:
    """Raise :class:`RenderStatePayloadError` unless ``state`` follows the key table.

    Cheap: it looks at keys, dtypes and shapes only, never at values.  Fluid positions
    may be any float dtype here; the worker packs them as float32.
    """
    if not isinstance(state, Mapping) or not state:
        fail("expected a non-empty mapping of state buffers")
    entries: dict[str, tuple[str, tuple[int, ...]]] = {}
    for key, value in state.items():
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            fail(f"{key}: expected a float numpy array, got {type(value).__name__}")
        group = split_key(key)[0]
        dtype = "<f4" if group == "fluid" else value.dtype.newbyteorder("<").str
        check_entry(key, dtype, tuple(value.shape))
        entries[key] = (dtype, tuple(value.shape))
    check_groups(entries)


def record_metadata(state: Mapping[str, object]) -> dict[str, object]:
    """Small per-record FSR metadata: entity counts and particle totals (worker only)."""
    groups: dict[str, set[str]] = {"articulation": set(), "rigid": set(), "fluid": set()}
    particles = 0
    for key, value in state.items():
        group, entity, _ = split_key(key)
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
