"""Batch flush decisions: each flush path B1-B6 directly, and a model property."""

from __future__ import annotations

import pytest
from hypothesis import given

from fastsim_record.core import (
    Batcher,
    BatchHold,
    BatchLimits,
    FlushReason,
    InvalidLimits,
    flush_reason,
)
from fastsim_record.testing.strategies import batch_limits, batch_records

LIMITS = BatchLimits(max_items=3, max_bytes=100, max_sim_span_ns=1_000)


def _hold(items: int = 1, payload_bytes: int = 0, span: int = 0) -> BatchHold:
    return BatchHold(items=items, payload_bytes=payload_bytes, generation=0, min_sim_time_ns=0,
                     max_sim_time_ns=span)


def test_b2_item_count_flushes() -> None:
    """B2: reaching max_items closes the batch with reason ITEMS."""
    assert flush_reason(_hold(items=3), LIMITS) is FlushReason.ITEMS
    b = Batcher(LIMITS)
    assert b.add(0, 0, 1) == ()
    assert b.add(0, 1, 1) == ()
    (closed,) = b.add(0, 2, 1)
    assert (closed.reason, closed.items, closed.payload_bytes) == (FlushReason.ITEMS, 3, 3)


def test_b3_exact_encoded_bytes_flush() -> None:
    """B3: reaching max_bytes of exact encoded payload closes the batch with BYTES."""
    assert flush_reason(_hold(payload_bytes=100), LIMITS) is FlushReason.BYTES
    assert flush_reason(_hold(payload_bytes=99), LIMITS) is None
    b = Batcher(LIMITS)
    b.add(0, 0, 60)
    (closed,) = b.add(0, 1, 40)
    assert (closed.reason, closed.payload_bytes) == (FlushReason.BYTES, 100)


def test_b4_sim_time_span_flushes() -> None:
    """B4: a sim-time span (max - min over the held records) >= limit closes with SIM_SPAN."""
    assert flush_reason(_hold(span=1_000), LIMITS) is FlushReason.SIM_SPAN
    b = Batcher(LIMITS)
    b.add(0, 500, 1)
    (closed,) = b.add(0, 1_500, 1)
    assert (closed.reason, closed.min_sim_time_ns, closed.max_sim_time_ns) == (FlushReason.SIM_SPAN, 500, 1_500)


def test_b1_generation_change_closes_the_previous_batch() -> None:
    """B1: a record of a new generation closes everything held before it."""
    b = Batcher(LIMITS)
    b.add(0, 0, 1)
    b.add(0, 1, 1)
    (closed,) = b.add(1, 0, 1)
    assert (closed.reason, closed.items, closed.generation) == (FlushReason.GENERATION, 2, 0)
    assert b.hold().items == 1


def test_b5_barrier_close_and_b6_finalize_flush_the_partial_batch() -> None:
    """B5/B6: close(GENERATION) and close(FINALIZE) flush a partial batch; empty closes nothing."""
    b = Batcher(LIMITS)
    assert b.close(FlushReason.FINALIZE) is None
    b.add(0, 0, 5)
    closed = b.close(FlushReason.GENERATION)
    assert closed is not None
    assert closed.items == 1
    b.add(0, 0, 7)
    final = b.close(FlushReason.FINALIZE)
    assert final is not None
    assert (final.reason, final.payload_bytes) == (FlushReason.FINALIZE, 7)


def test_limits_must_be_positive() -> None:
    """Non-positive limits are rejected naming the field."""
    with pytest.raises(InvalidLimits, match="max_sim_span_ns"):
        BatchLimits(max_items=1, max_bytes=1, max_sim_span_ns=0)
    assert BatchLimits.from_config(256, 16 << 20, 1.0).max_sim_span_ns == 1_000_000_000


@given(limits=batch_limits(), records=batch_records())
def test_batches_partition_the_records_and_close_only_at_limits(
    limits: BatchLimits, records: list[tuple[int, int, int]]
) -> None:
    """Closed batches partition the records; each closes exactly when a rule says so."""
    b = Batcher(limits)
    pending: list[tuple[int, int, int]] = []
    written: list[tuple[int, int, int]] = []
    for rec in records:
        pending.append(rec)
        for summary in b.add(*rec):
            batch, pending = pending[: summary.items], pending[summary.items :]
            assert batch
            assert {g for g, _, _ in batch} == {summary.generation}
            assert sum(n for _, _, n in batch) == summary.payload_bytes
            hold = BatchHold(items=len(batch), payload_bytes=summary.payload_bytes,
                             generation=summary.generation,
                             min_sim_time_ns=min(t for _, t, _ in batch),
                             max_sim_time_ns=max(t for _, t, _ in batch))
            if summary.reason is FlushReason.GENERATION:
                assert pending[0][0] != summary.generation
            else:
                assert flush_reason(hold, limits) is summary.reason
            written += batch
        if pending:
            assert b.hold().items == len(pending)
            assert flush_reason(b.hold(), limits) is None
    final = b.close(FlushReason.FINALIZE)
    assert (final.items if final else 0) == len(pending)
    assert written + pending == records
