"""``Batcher.add_run``'s steady state (issue 26, wkblk): a run that stays below every limit is
accounted in O(1); with numpy time columns (the worker's) it closes exactly the batches one
``add`` per record closes, and leaves the same hold."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsim_record.core import Batcher, BatchLimits


@settings(max_examples=300)
@given(
    limits=st.builds(
        BatchLimits, max_items=st.integers(1, 200), max_bytes=st.integers(1, 20_000),
        max_sim_span_ns=st.integers(1, 2_000),
    ),
    runs=st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 60), st.integers(0, 40), st.integers(0, 120)),
        max_size=12,
    ),
)
def test_add_run_of_numpy_times_is_add_per_record(limits: BatchLimits, runs: list[tuple[int, int, int, int]]) -> None:
    """B7 with int64 arrays and long runs (the steady state included): the same closes and hold."""
    one, many = Batcher(limits), Batcher(limits)
    t = 0
    for generation, n, step, size in runs:
        times: Any = t + step * np.arange(n, dtype=np.int64)  # steps of 0 included: time stands still
        t = int(times[-1]) if n else t
        expected = [c for time in times.tolist() for c in one.add(generation, time, size)]
        assert list(many.add_run(generation, times, size)) == expected
        assert many.hold() == one.hold()


def test_a_run_below_every_limit_closes_nothing_and_is_held() -> None:
    """Three runs of 40 below the limits: nothing closes; the hold counts all 120 and spans their times."""
    batcher = Batcher(BatchLimits(max_items=121, max_bytes=10**9, max_sim_span_ns=10**9))
    for k in range(3):
        times: Any = np.arange(40 * k, 40 * (k + 1), dtype=np.int64) * 1000
        assert batcher.add_run(0, times, 5040) == ()
    hold = batcher.hold()
    assert (hold.items, hold.payload_bytes, hold.min_sim_time_ns, hold.max_sim_time_ns) == (120, 120 * 5040, 0, 119_000)
    last: Any = np.array([120_000], np.int64)
    closed = batcher.add_run(0, last, 5040)
    assert [(c.reason.value, c.items) for c in closed] == [("items", 121)]
