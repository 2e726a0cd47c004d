"""Rule CS1 found once per run (issue 26, wk26): a run whose maker found its
``channel_sequence`` stepping by one (``RecordColumns.channel_steady``) gives the block the
metadata that a pass over the joined column gives, in every split and junction."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from fastsim_contract.values import PackedLayout, PackedValues
from fastsim_record.adapters.fsr_columns import _block, channel_sequence_metadata
from fastsim_record.adapters.numeric_columns import numeric_columns
from fastsim_record.ports.sinks import RecordColumns

SIZE = 8


def _run(first: int, chan: list[int], steady: bool) -> RecordColumns:
    n = len(chan)
    g = np.arange(first, first + n, dtype=np.uint64)
    return RecordColumns("obs", 0, g, g, g.astype(np.int64), SIZE, bytes(n * SIZE), np.array(chan, np.int64), steady)


@pytest.mark.parametrize(("second", "steady"), list(itertools.product([13, 14, 40, 5], [True, False])))
def test_steady_runs_give_the_metadata_of_a_pass(second: int, steady: bool) -> None:
    """Two runs (split as the batch writer splits them): one value only when they continue."""
    a = _run(1, list(range(10, 13)), steady)
    b = _run(4, list(range(second, second + 4)), steady)
    for runs in ([a], [b], [a, b], [a.part(1, 3), b.part(0, 2)], [a.part(0, 1)]):
        joined = np.concatenate([r.channel_sequence for r in runs])
        assert _block({"obs": 1}, runs).metadata == channel_sequence_metadata(joined)
    assert a.part(0, 2).channel_steady is steady


def test_numeric_columns_finds_a_steady_run_only_when_it_is() -> None:
    """A run with a jump or a repeat in its channel sequence is not marked steady; its block keeps each value."""
    layout = PackedLayout((("<f8", (1,)),))
    buffer = np.zeros(1)
    buffer.flags.writeable = False

    def carrier(k: int, chan: int) -> Any:
        block = SimpleNamespace(channels=("a",), values=PackedValues(buffer, layout), channel_sequence=chan)
        return SimpleNamespace(  # the lane holds the contract envelope itself (pump26)
            global_sequence=k, source_sequence=k, sim_time_ns=10 * k, generation=0,
            payload=SimpleNamespace(samples=block),
        )

    for chan, expected in (([5, 6, 7], True), ([5, 7, 8], False), ([5, 5, 6], False), ([7, 6, 7], False), ([9], True)):
        carriers = [carrier(k + 1, c) for k, c in enumerate(chan)]
        run = numeric_columns("obs", ("a",), 8, lambda lay: lay is layout, carriers)
        assert run is not None
        assert run.channel_steady is expected
        assert _block({"obs": 1}, [run]).metadata == channel_sequence_metadata(np.array(chan, np.int64))
