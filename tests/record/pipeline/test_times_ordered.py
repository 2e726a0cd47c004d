"""``RecordColumns.times_ordered`` (issue 26, stop 41): a block carrier's columns say their
times were checked at admission, every part keeps it, and the batch writer then takes
``Batcher.add_run`` without its own pass; columns without it still get the pass."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from fastsim_contract.values import PackedLayout
from fastsim_record.adapters.numeric_columns import block_columns
from fastsim_record.core.batching import BatchLimits
from fastsim_record.pipeline.batch_writer import BatchWriter
from fastsim_record.ports.sinks import RecordColumns

SIZE = 8


def _block_carrier(k: int) -> Any:
    layout = PackedLayout((("<f8", (1,)),))
    buffer = np.zeros((k, 1))
    buffer.flags.writeable = False
    block = SimpleNamespace(layout=layout, ticks=np.arange(1, k + 1), buffer=buffer,
                            sim_time_ns=np.arange(k, dtype=np.int64) * 10, channel_sequence=1)
    return SimpleNamespace(payload=block, global_sequence=1, source_sequence=1, generation=0)


def test_block_columns_and_their_parts_say_their_times_are_ordered() -> None:
    """The block path marks its columns; a part keeps the mark; numeric columns built elsewhere do not have it."""
    columns = block_columns("obs", SIZE, lambda layout: True, _block_carrier(6))
    assert columns is not None
    assert columns.times_ordered
    assert columns.part(1, 4).times_ordered
    g = np.arange(1, 4, dtype=np.uint64)
    assert not RecordColumns("obs", 0, g, g, g.astype(np.int64), SIZE, bytes(3 * SIZE)).times_ordered


class _Sink:
    def write_batch(self, records: Any) -> int:
        return 0

    def finish(self, *, degraded: bool, fence: Any) -> dict[str, object]:
        return {}

    def abort(self) -> None:
        return None


@pytest.mark.parametrize("ordered", [True, False])
def test_the_batch_writer_checks_times_only_without_the_mark(monkeypatch: pytest.MonkeyPatch, ordered: bool) -> None:
    """With the mark, ``add_columns`` makes no pass over the times; without it, it does (and still accounts the run)."""
    calls: list[int] = []
    real = np.count_nonzero
    def counting(a: Any) -> Any:
        calls.append(1)
        return real(a)

    monkeypatch.setattr("fastsim_record.pipeline.batch_writer.np.count_nonzero", counting)
    writer = BatchWriter(_Sink(), BatchLimits(max_items=1000, max_bytes=1 << 20, max_sim_span_ns=10**9))
    g = np.arange(1, 11, dtype=np.uint64)
    writer.add_columns(RecordColumns("obs", 0, g, g, g.astype(np.int64), SIZE, bytes(10 * SIZE), times_ordered=ordered))
    assert (len(calls) == 0) is ordered
    assert writer._batcher.hold().items == 10
