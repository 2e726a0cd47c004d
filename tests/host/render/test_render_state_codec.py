"""The render.state record codec: lossless round trip, worker-only zlib, bounded decoding."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from numpy.typing import NDArray

from fastsim_record.adapters import render_state as plugin_side
from fastsim_record.errors import RecordError
from fastsim_record.testing.strategies import render_byte_flips, render_junk, render_states
from fastsim_recording_format.codecs import render_state as rs
from fastsim_recording_format.codecs.render_state import (
    MAX_BODY_BYTES,
    RenderStatePayloadError,
    decode_render_state,
    encode_render_state,
)
from fastsim_recording_format.errors import PayloadError


def _ro(array: NDArray[Any]) -> NDArray[Any]:
    array.setflags(write=False)
    return array


def _state() -> dict[str, NDArray[Any]]:
    rng = np.random.default_rng(7)
    return {
        "articulation/robot/joint_position": _ro(rng.standard_normal(13)),
        "articulation/robot/joint_velocity": _ro(rng.standard_normal(13)),
        "articulation/robot/root_pose": _ro(np.array([0, 0, 0, 0, 0, 0, 1.0])),
        "rigid/cube/pose": _ro(rng.standard_normal(7)),
        "rigid/cube/linear_velocity": _ro(rng.standard_normal(3)),
        "rigid/cube/angular_velocity": _ro(rng.standard_normal(3)),
        "fluid/water/positions": _ro(rng.standard_normal((500, 3)).astype(np.float32)),
    }


def _same(decoded: Mapping[str, NDArray[Any]], original: Mapping[str, NDArray[Any]]) -> None:
    assert set(decoded) == set(original)
    for key, value in original.items():
        got = decoded[key]
        assert got.shape == value.shape
        assert got.dtype.byteorder in "<=|"
        packed = value.astype(value.dtype.newbyteorder("<"))
        if key.startswith("fluid/"):
            packed = value.astype("<f4")
        assert got.tobytes() == packed.tobytes(), key


@given(render_states())
def test_round_trip_is_bit_exact(state: Mapping[str, NDArray[Any]]) -> None:
    """Any valid state mapping decodes to the same bytes (NaN, inf and big-endian included)."""
    _same(decode_render_state(encode_render_state(state)).arrays, state)


def test_payload_error_is_a_payload_error_and_a_record_error_on_the_plugin_side() -> None:
    """The format's error is a PayloadError; what the plugin raises is also a RecordError."""
    assert issubclass(RenderStatePayloadError, PayloadError)
    with pytest.raises(RenderStatePayloadError) as info:
        plugin_side.encode_render_state({"rigid/box/pose": np.zeros(7)})
    assert isinstance(info.value, RecordError)
    assert "linear_velocity: missing" in str(info.value)


def test_decoded_arrays_are_read_only() -> None:
    """Decoded buffers cannot be mutated by a reader."""
    decoded = decode_render_state(encode_render_state(_state()))
    assert all(not a.flags.writeable for a in decoded.arrays.values())
    assert decoded.entities("articulation") == ("robot",)
    assert decoded.get("articulation", "robot", "root_twist") is None


def test_payload_is_zlib_level_1_of_the_body() -> None:
    """The payload is the FSRS prefix plus one zlib level 1 stream of metadata and buffers."""
    payload = encode_render_state(_state())
    magic, version, flags, body_len = struct.unpack_from("<4sHHI", payload)
    assert (magic, version, flags) == (b"FSRS", 1, 0)
    body = zlib.decompress(payload[12:])
    assert len(body) == body_len
    assert payload[12:] == zlib.compress(body, 1)
    assert b'"schema":"fastsim-render-state/1"' in body


def test_encoder_does_not_touch_the_capture_arrays() -> None:
    """Encoding never mutates or re-flags the read-only capture buffers."""
    state = _state()
    before = {k: v.tobytes() for k, v in state.items()}
    encode_render_state(state)
    assert {k: v.tobytes() for k, v in state.items()} == before
    assert all(not v.flags.writeable for v in state.values())


def test_fluid_positions_are_packed_float32_in_the_worker() -> None:
    """Float64 particle positions are packed as little-endian float32 XYZ by the encoder."""
    state = _state()
    state["fluid/water/positions"] = _ro(np.arange(30, dtype=np.float64).reshape(10, 3))
    out = decode_render_state(encode_render_state(state)).arrays["fluid/water/positions"]
    assert out.dtype == np.dtype("<f4")
    assert out.shape == (10, 3)
    assert out.tobytes() == np.arange(30, dtype="<f4").tobytes()


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("robot/joint_position", np.zeros(3), "is not <articulation|rigid|fluid>"),
        ("rigid/cube/pose", np.zeros(6), "rigid/cube/pose: expected shape (7,)"),
        ("rigid/cube/pose", np.zeros(7, dtype=np.int64), "expected a float numpy array"),
        ("fluid/water/positions", np.zeros((4, 2), np.float32), "expected shape (N, 3)"),
        ("articulation/robot/joint_velocity", np.zeros(12), "must match joint_position"),
    ],
)
def test_bad_state_is_one_clear_error(key: str, value: NDArray[Any], fragment: str) -> None:
    """A malformed capture mapping fails with one line naming the key."""
    state = _state()
    state[key] = value
    with pytest.raises(RenderStatePayloadError) as info:
        encode_render_state(state)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_required_field_is_rejected() -> None:
    """A rigid body without its angular velocity is rejected."""
    state = _state()
    del state["rigid/cube/angular_velocity"]
    with pytest.raises(RenderStatePayloadError, match="angular_velocity: missing"):
        encode_render_state(state)


def _forge(body: bytes, declared: int | None = None, tail: bytes = b"") -> bytes:
    size = len(body) if declared is None else declared
    return struct.pack("<4sHHI", b"FSRS", 1, 0, size) + zlib.compress(body, 1) + tail


def test_zip_bomb_never_inflates_past_the_declared_size() -> None:
    """A payload declaring 1 KiB that inflates to 64 MiB is refused after 1 KiB."""
    with pytest.raises(RenderStatePayloadError, match="beyond its declared 1024 bytes"):
        decode_render_state(_forge(bytes(64 << 20), declared=1024))


def test_zip_bomb_allocates_at_most_its_declared_size() -> None:
    """Decoding a 64 MiB zip bomb that declares 64 KiB peaks far below the bomb's size."""
    bomb = _forge(bytes(64 << 20), declared=64 << 10)
    tracemalloc.start()
    try:
        with pytest.raises(RenderStatePayloadError, match="beyond its declared"):
            decode_render_state(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # unbounded inflation would allocate 64 MiB


def test_declared_size_above_the_limit_is_refused_before_inflating() -> None:
    """A declared body above the documented limit (or a caller's lower one) is refused."""
    with pytest.raises(RenderStatePayloadError, match="exceeds the"):
        decode_render_state(struct.pack("<4sHHI", b"FSRS", 1, 0, MAX_BODY_BYTES + 1))
    payload = encode_render_state(_state())
    with pytest.raises(RenderStatePayloadError, match="exceeds the 64-byte limit"):
        decode_render_state(payload, max_body_bytes=64)


def test_truncation_and_trailing_bytes_are_rejected() -> None:
    """A truncated stream or bytes after it are errors, never a partial state."""
    payload = encode_render_state(_state())
    for cut in (0, 5, 12, 20, len(payload) - 1):
        with pytest.raises(RenderStatePayloadError):
            decode_render_state(payload[:cut])
    with pytest.raises(RenderStatePayloadError, match="trailing bytes"):
        decode_render_state(payload + b"\0")


def test_entry_outside_the_body_is_rejected() -> None:
    """A metadata entry pointing past the body is refused instead of read."""
    meta = (
        b'{"entries":[{"dtype":"<f8","key":"rigid/a/pose","nbytes":56,"offset":4096,'
        b'"shape":[7]}],"schema":"fastsim-render-state/1"}'
    )
    body = struct.pack("<I", len(meta)) + meta
    body += bytes(-len(body) % 8)
    with pytest.raises(RenderStatePayloadError, match="outside the body"):
        decode_render_state(_forge(body))


@given(render_junk())
def test_random_bytes_only_raise_the_payload_error(case: tuple[bytes, int]) -> None:
    """Random bodies behind a valid prefix give one error type, never a crash."""
    junk, declared = case
    for payload in (junk, _forge(junk, declared)):
        with contextlib.suppress(RenderStatePayloadError):
            decode_render_state(payload)


@given(render_states(max_particles=8), render_byte_flips())
def test_single_byte_mutations_never_crash(
    state: Mapping[str, NDArray[Any]], flip: tuple[float, int]
) -> None:
    """Flipping any payload byte yields a decoded state or the one payload error."""
    payload = bytearray(encode_render_state(state))
    payload[int(flip[0] * len(payload))] ^= flip[1]
    with contextlib.suppress(RenderStatePayloadError):
        rs.decode_render_state(bytes(payload))


def test_a_steady_layout_is_validated_once_and_reused() -> None:
    """layout_for reuses the layout for equal keys/dtypes/shapes and redoes it otherwise."""
    state = _state()
    first = rs.layout_for(state, None)
    assert rs.layout_for(_state(), first) is first
    grown = _state()
    grown["fluid/water/positions"] = _ro(np.zeros((501, 3), np.float32))
    second = rs.layout_for(grown, first)
    assert second is not first
    payload = rs.encode_with_layout(grown, second)
    assert decode_render_state(payload).arrays["fluid/water/positions"].shape == (501, 3)
    assert rs.encode_with_layout(state, first) == encode_render_state(state)
