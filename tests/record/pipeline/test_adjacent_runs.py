"""Adjacent column runs of one stream in a batch become ONE record block (perf-io): the
worker drains lanes on its own wake-ups, so a batch is often filled from several runs;
each used to become its own block and send the batch down the writer's mixed path."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_record.adapters.fsr_columns import _adjacent_runs, _block
from fastsim_record.ports.sinks import OutRecord, RecordColumns
from fastsim_recording_format.codecs.numeric import channel_sequences
from fastsim_recording_format.writer import FsrWriter, RecordBlock

from .test_columnar import _record, _records

SIZE = 16


def _columns(first: int, n: int, chan0: int, stream: str = "observations", generation: int = 0) -> RecordColumns:
    g = np.arange(first, first + n, dtype=np.uint64)
    return RecordColumns(stream, generation, g, g, g.astype(np.int64) * 10, SIZE,
                         np.full(n * SIZE, first, np.uint8).tobytes(), np.arange(chan0, chan0 + n, dtype=np.int64))


def test_adjacent_runs_become_one_block_with_every_record() -> None:
    """Runs of one stream and generation side by side join; a row or another stream cuts."""
    a, b, c = _columns(1, 3, 10), _columns(4, 2, 20), _columns(6, 2, 22, generation=1)
    row = OutRecord("events", "data", 8, 1, 1, 80, b"{}", {})
    grouped = _adjacent_runs([a, b, c, row, _columns(9, 1, 24)])
    assert [len(x) if isinstance(x, list) else "row" for x in grouped] == [2, 1, "row", 1]
    block = _block({"observations": 1}, grouped[0])  # type: ignore[arg-type]
    assert isinstance(block, RecordBlock)
    assert block.global_sequence.tolist() == [1, 2, 3, 4, 5]
    assert block.sim_time_ns.tolist() == [10, 20, 30, 40, 50]
    assert b"".join(bytes(p) for p in (block.payload, *block.more)) == a.payload + b.payload
    metas = [block.metadata.get(k, {}) for k in range(5)]
    assert channel_sequences(metas).tolist() == [10, 11, 12, 20, 21]  # rule CS1 across the join


def test_no_batch_holds_two_adjacent_blocks_of_one_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole Run: every batch's adjacent numeric runs reach the writer as one block, and the file holds the same records as a Run written per record."""
    seen: list[list[Any]] = []
    write = FsrWriter.write_batch

    def spy(self: FsrWriter, records: Any) -> int:
        seen.append([(r.stream_id, r.generation) if isinstance(r, RecordBlock) else None for r in records])
        return write(self, records)

    monkeypatch.setattr(FsrWriter, "write_batch", spy)
    _, path, _ = _record(tmp_path, "adjacent", seconds=4.0)
    blocks = [k for batch in seen for k in batch if k is not None]
    assert blocks, "the columnar path wrote no block"
    pairs = [(x, y) for batch in seen for x, y in itertools.pairwise(batch) if x is not None and x == y]
    assert not pairs, f"{len(pairs)} pairs of adjacent blocks of one stream"
    records = _records(path)
    assert len(records) > 400
    assert [r[2] for r in records] == list(range(1, len(records) + 1))
