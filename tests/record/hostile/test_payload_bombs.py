"""render.state, geometry and fluid payloads decode in bounded memory (tracemalloc-measured)."""

from __future__ import annotations

import json
import struct
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from fastsim_recording_format.codecs.fluid import FluidPayloadError, decode_fluid_batch
from fastsim_recording_format.codecs.geometry import GeometryPayloadError, record_kind
from fastsim_recording_format.codecs.render_state import (
    MAX_BODY_BYTES,
    RenderStatePayloadError,
    decode_render_state,
)

MIB = 1 << 20


def _zeros_stream(n: int) -> bytes:
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(bytes(min(MIB, n - k))) for k in range(0, n, MIB)]
    return b"".join(parts) + deflate.flush()


def _render_state_bomb(body_length: int, inflates_to: int) -> bytes:
    """A valid render.state head (one fluid entity) padded with zeros to ``inflates_to`` bytes."""
    count = 1000
    entry = {"dtype": "<f4", "key": "fluid/water/positions", "nbytes": 12 * count, "offset": 0,
             "shape": [count, 3]}
    meta = json.dumps({"entries": [entry], "schema": "fastsim-render-state/1"},
                      sort_keys=True, separators=(",", ":")).encode()
    head = struct.pack("<I", len(meta)) + meta
    head += bytes(-len(head) % 8)
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(head)]
    left = inflates_to - len(head)
    while left:
        step = min(MIB, left)
        parts.append(deflate.compress(bytes(step)))
        left -= step
    parts.append(deflate.flush())
    return struct.pack("<4sHHI", b"FSRS", 1, 0, body_length) + b"".join(parts)


def _peak(call: Callable[[], Any]) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        result = call()
        error = None
    except Exception as exc:
        result, error = None, exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, result if error is None else error


@pytest.fixture(scope="module")
def bomb_at_limit() -> bytes:
    """A small payload that declares, and inflates to, exactly the 256 MiB limit."""
    payload = _render_state_bomb(MAX_BODY_BYTES, MAX_BODY_BYTES)
    assert len(payload) < 2 * MIB
    return payload


def test_a_zlib_bomb_at_the_limit_decodes_within_1_2_times_its_size(bomb_at_limit: bytes) -> None:
    """Declaring and inflating to exactly 256 MiB decodes, peaking under 1.2x the declared size."""
    peak, state = _peak(lambda: decode_render_state(bomb_at_limit))
    assert not isinstance(state, Exception), state
    assert state.get("fluid", "water", "positions").shape == (1000, 3)
    assert not state.get("fluid", "water", "positions").flags.writeable
    assert peak <= 1.2 * MAX_BODY_BYTES, peak / MAX_BODY_BYTES


def test_a_zlib_stream_one_byte_over_its_declared_limit_is_refused_in_bounded_memory() -> None:
    """A stream that inflates to 256 MiB + 1 under a 256 MiB declaration is one error line."""
    payload = _render_state_bomb(MAX_BODY_BYTES, MAX_BODY_BYTES + 1)
    peak, error = _peak(lambda: decode_render_state(payload))
    assert isinstance(error, RenderStatePayloadError)
    assert "beyond its declared" in str(error)
    assert peak <= 1.2 * MAX_BODY_BYTES, peak / MAX_BODY_BYTES


def test_a_declaration_one_byte_over_the_limit_is_refused_before_inflating() -> None:
    """Declaring 256 MiB + 1 is refused from the prefix: nothing is allocated."""
    payload = struct.pack("<4sHHI", b"FSRS", 1, 0, MAX_BODY_BYTES + 1) + _zeros_stream(16)
    peak, error = _peak(lambda: decode_render_state(payload))
    assert isinstance(error, RenderStatePayloadError)
    assert "exceeds" in str(error)
    assert peak < MIB


@pytest.mark.parametrize("tail", [b"x", zlib.compress(b"more")])
def test_bytes_after_the_zlib_stream_are_refused(tail: bytes) -> None:
    """Raw or compressed bytes after the stream's end are counted and refused."""
    payload = _render_state_bomb(4096, 4096) + tail
    with pytest.raises(RenderStatePayloadError, match="trailing bytes"):
        decode_render_state(payload)


def test_a_truncated_zlib_stream_is_refused() -> None:
    """A stream cut short of its declared size is refused as truncated."""
    payload = _render_state_bomb(1 << 16, 1 << 16)
    with pytest.raises(RenderStatePayloadError, match="truncated"):
        decode_render_state(payload[:-8])


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_deep_render_state_metadata_is_one_error_line() -> None:
    """Metadata nested 100,000 deep is refused before parsing, never a RecursionError."""
    meta = _deep(100_000)
    body = struct.pack("<I", len(meta)) + meta
    payload = struct.pack("<4sHHI", b"FSRS", 1, 0, len(body)) + zlib.compress(body)
    with pytest.raises(RenderStatePayloadError, match="nests more"):
        decode_render_state(payload)


def test_deep_geometry_manifest_is_one_error_line() -> None:
    """A geometry manifest nested too deep for the parser is a GeometryPayloadError."""
    manifest = b'{"a":' + b'{"a":' * 50_000 + b"0" + b"}" * 50_001 + b" " * 800_000
    payload = struct.pack("<I", len(manifest)) + manifest
    with pytest.raises(GeometryPayloadError):
        record_kind(payload)


def test_huge_flat_geometry_manifest_is_refused_before_parsing() -> None:
    """A 16 MiB manifest of empty arrays (about 30x its size as Python objects) is refused unparsed."""
    manifest = b"[" + b"[]," * (5 * MIB) + b"[]]"
    payload = struct.pack("<I", len(manifest)) + manifest
    peak, error = _peak(lambda: record_kind(payload))
    assert isinstance(error, GeometryPayloadError)
    assert peak < 2 * len(payload)


def test_deep_fluid_payload_is_one_error_line() -> None:
    """A fluid batch nested too deep for the parser is a FluidPayloadError."""
    with pytest.raises(FluidPayloadError):
        decode_fluid_batch(_deep(30_000))
