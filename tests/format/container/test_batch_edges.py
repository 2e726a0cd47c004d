"""A one-stream batch's edges (issue 26, w26): ``analyse_table`` hands the ``Accumulator`` its
first and last record's fields as integers, so continuity needs no table row; the checks
refuse exactly what they refused before."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import FsrWriter, RecordIn
from fastsim_recording_format._assemble import assemble
from fastsim_recording_format._batch import analyse_table
from fastsim_recording_format.writer import RecordBlock

from .helpers import RUN, STREAMS

SIZE = 56


def _block(first: int, n: int, *, seq: int | None = None, t0: int = 0, generation: int = 0) -> RecordBlock:
    g = np.arange(first, first + n, dtype=np.uint64)
    s = g if seq is None else np.arange(seq, seq + n, dtype=np.uint64)
    return RecordBlock(1, generation, g, s, t0 + 10 * np.arange(n, dtype=np.int64), SIZE, bytes(n * SIZE))


def _facts(records: Sequence[object], block: bool) -> Any:
    parts = assemble(records)  # type: ignore[arg-type]
    return analyse_table(parts.table, 0, parts.payload_length, 0, 0, np.array([1, 7, 9], np.uint32), block=block)


def test_block_and_one_stream_rows_carry_their_edges() -> None:
    """Edges are the first record's (sequence, generation, time) and the last's; two streams: none."""
    facts = _facts([_block(5, 4, seq=2, t0=100, generation=3)], True)
    assert facts.edges == ([(0, (1, 2, 3, 100))], [(1, 5, 3, 130)])
    rows = [RecordIn.data(1, g, g + 1, 0, 10 * g, b"x") for g in range(1, 4)]
    assert _facts(rows, False).edges == ([(0, (1, 2, 0, 10))], [(1, 4, 0, 30)])
    two = [RecordIn.data(1, 1, 1, 0, 0, b"x"), RecordIn.data(9, 2, 1, 0, 0, b"{}")]
    assert _facts(two, False).edges is None


@pytest.mark.parametrize(("second", "reason"), [
    (_block(5, 3, seq=6, t0=40), "stream sequence hole or overlap"),
    (_block(5, 3, seq=4, t0=40), "stream sequence hole or overlap"),
    (_block(5, 3, seq=5, t0=10), "simulation time goes backwards"),
])
def test_a_block_that_does_not_continue_its_stream_is_refused(second: RecordBlock, reason: str) -> None:
    """Continuity across batches through the edges: a sequence hole, an overlap, time going back."""
    writer = FsrWriter(io.BytesIO(), RUN, STREAMS)
    writer.write_batch([_block(1, 4, t0=0)])
    with pytest.raises(ValueError, match=reason):
        writer.write_batch([second])
    writer.write_batch([_block(5, 3, seq=5, t0=40)])  # the refused batch left no trace
    assert writer.records == 7
