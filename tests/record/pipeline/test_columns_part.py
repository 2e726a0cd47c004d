"""``RecordColumns.part`` keeps each payload form: a tuple, bytes-like, or a byte array."""

from __future__ import annotations

import numpy as np

from fastsim_record.ports.sinks import RecordColumns


def _columns(payload: object, n: int = 4, size: int = 8) -> RecordColumns:
    g = np.arange(1, n + 1, dtype=np.uint64)
    return RecordColumns("observations", 0, g, g.copy(), np.arange(n, dtype=np.int64), size, payload)


def test_a_byte_array_payload_is_sliced_as_an_array_view() -> None:
    """A columnar block's one-dimensional uint8 payload stays a numpy view (the writer's fast path needs it)."""
    block = np.arange(32, dtype=np.uint8)
    block.flags.writeable = False
    part = _columns(block).part(1, 3)
    assert part.payload.__class__ is np.ndarray
    assert np.shares_memory(part.payload, block)
    assert bytes(part.payload) == bytes(range(8, 24))
    assert part.global_sequence.tolist() == [2, 3]


def test_bytes_and_tuple_payloads_keep_their_forms() -> None:
    """Joined bytes give a memoryview of the same records; tick buffers give a tuple of them."""
    joined = bytes(range(32))
    part = _columns(joined).part(2, 4)
    assert isinstance(part.payload, memoryview)
    assert bytes(part.payload) == joined[16:32]
    ticks = tuple(np.full(8, i, np.uint8) for i in range(4))
    assert _columns(ticks).part(0, 2).payload == ticks[:2]
