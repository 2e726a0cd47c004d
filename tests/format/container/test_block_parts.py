"""A ``RecordBlock`` whose payload continues in ``more`` buffers (perf-io): the parts are written
one after another, never joined, and give the bytes of one contiguous payload and of rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastsim_recording_format.writer import RecordBlock

from .test_record_block import SIZE, _as_rows, _block, _write


def _parts(block: RecordBlock, cuts: list[int]) -> RecordBlock:
    raw = bytes(block.payload)
    edges = [0, *cuts, len(raw)]
    parts = [memoryview(raw[a:b]) for a, b in itertools.pairwise(edges)]
    return RecordBlock(block.stream_id, block.generation, block.global_sequence, block.stream_sequence,
                       block.sim_time_ns, block.record_bytes, parts[0], block.metadata, tuple(parts[1:]))


@pytest.mark.parametrize("payload_crc", [True, False])
@pytest.mark.parametrize("cuts", [[SIZE], [SIZE, 3 * SIZE], [5], [SIZE * 2 + 9, SIZE * 4]], ids=str)
def test_a_block_of_payload_parts_writes_the_bytes_of_one_payload(payload_crc: bool, cuts: list[int]) -> None:
    """Parts cut at record boundaries or inside a record: the same file as one buffer and as rows."""
    block = _block(1, 6, meta={0: {"channel_sequence": 9}})
    later = _block(7, 5, t0=100, meta={})
    later = RecordBlock(1, 0, later.global_sequence, later.global_sequence, later.sim_time_ns, SIZE, later.payload, {})
    one, e1 = _write([[block], [later]], payload_crc)
    parts, e2 = _write([[_parts(block, cuts)], [_parts(later, [SIZE])]], payload_crc)
    rows, e3 = _write([_as_rows(block), _as_rows(later)], payload_crc)
    assert not e1
    assert not e2
    assert not e3
    assert parts == one == rows


def test_payload_parts_of_the_wrong_size_are_refused() -> None:
    """The parts together must hold ``count x record_bytes`` bytes, as one buffer must."""
    block = _block(1, 4)
    short = RecordBlock(1, 0, block.global_sequence, block.stream_sequence, block.sim_time_ns, SIZE,
                        bytes(SIZE), {}, (np.zeros(2 * SIZE, np.uint8),))
    _, errors = _write([[short]])
    assert errors == [f"record block payload of {3 * SIZE} bytes, expected 4 x {SIZE}"]
