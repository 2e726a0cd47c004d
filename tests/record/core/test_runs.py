"""Runs of records in the core (issue 26): ``Batcher.add_run`` (B7) and ``OrderedMerge.push_run`` (M6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.core import Batcher, BatchLimits, CapturedRun, LaneName, OrderedMerge
from fastsim_record.testing.envelopes import EnvelopeFactory


@given(
    limits=st.builds(
        BatchLimits, max_items=st.integers(1, 12), max_bytes=st.integers(1, 400),
        max_sim_span_ns=st.integers(1, 50),
    ),
    runs=st.lists(
        st.tuples(st.integers(0, 2), st.lists(st.integers(0, 15), min_size=0, max_size=30), st.integers(0, 90)),
        max_size=6,
    ),
    start=st.integers(0, 100),
)
def test_b7_add_run_closes_the_batches_adding_one_by_one_closes(
    limits: BatchLimits, runs: list[tuple[int, list[int], int]], start: int
) -> None:
    """B7: for any limits and runs, add_run closes exactly the batches one add per record closes."""
    one, many = Batcher(limits), Batcher(limits)
    t = start
    for generation, steps, size in runs:
        times = []
        for step in steps:
            t += step
            times.append(t)
        expected = [c for time in times for c in one.add(generation, time, size)]
        assert list(many.add_run(generation, times, size)) == expected
        assert many.hold() == one.hold()


def _run(first: int, last: int, source: str = "observations") -> CapturedRun:
    return CapturedRun(source=source, stream="observations", lane=LaneName.NUMERIC, generation=0,
                       first_global=first, last_global=last, first_capture=first, last_capture=last)


def test_m6_a_run_is_released_in_order_with_items_around_it() -> None:
    """M6: a run stands for its sequences; items before and after it release around it."""
    f = EnvelopeFactory()
    merge = OrderedMerge()
    items = [f.record("lifecycle", source="lifecycle") for _ in range(1)]
    assert merge.push_run(_run(2, 5)) is None
    assert merge.release_entries() == []  # 1 is still a hole
    assert merge.held == 4
    after = CapturedRun(source="x", stream="x", lane=LaneName.NUMERIC, generation=0,
                        first_global=6, last_global=6, first_capture=1, last_capture=1)
    assert merge.push_run(after) is None
    assert merge.push(items[0]) is None
    released = merge.release_entries()
    assert [type(r).__name__ for r in released] == ["CapturedItem", "CapturedRun", "CapturedRun"]
    assert merge.next_sequence == 7
    assert merge.released_items == 6  # a run counts as its envelopes (worker rule 7)
    assert merge.source_progress()["observations"] == 5
    assert merge.holes(7) == [(7, 7)]


@pytest.mark.parametrize(("first", "last"), [(2, 3), (1, 9), (5, 6), (3, 4)])
def test_m6_a_run_overlapping_anything_held_or_released_is_a_conflict(first: int, last: int) -> None:
    """M3 for runs: any sequence of the run already held or released is a duplicate."""
    merge = OrderedMerge()
    assert merge.push_run(_run(1, 2)) is None
    merge.release_entries()
    assert merge.push_run(_run(4, 5)) is None
    conflict = merge.push_run(_run(first, last))
    assert conflict is not None
    assert "duplicate global sequence" in conflict.reason


def test_captured_run_refuses_ranges_of_different_lengths() -> None:
    """A run's global and capture ranges are contiguous and equally long."""
    with pytest.raises(ValueError, match="contiguous ranges of one length"):
        CapturedRun(source="s", stream="s", lane=LaneName.NUMERIC, generation=0,
                    first_global=1, last_global=3, first_capture=1, last_capture=2)


def test_release_refuses_to_hide_a_run() -> None:
    """``release`` serves merges without runs; a due run makes it point at release_entries."""
    merge = OrderedMerge()
    assert merge.push_run(_run(1, 2)) is None
    with pytest.raises(TypeError, match="release_entries"):
        merge.release()
