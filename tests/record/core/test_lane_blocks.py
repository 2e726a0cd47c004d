"""Blocks of ticks in a lane (issue 26): one carrier charged ``k`` items and ``k * record``
bytes; budgets, pressure, the high-water mark and every counter stay in ticks and bytes."""

from __future__ import annotations

import pytest

from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.core.lane import (
    ACCEPTED,
    BLOCK_CAP,
    PRESSED,
    AdmissionOutcome,
    AdmissionRule,
    Lane,
    LaneCounters,
    LaneSpec,
    OverloadPolicy,
)

RECORD = 100  # bytes of one tick's record


def _first_tick(carrier: object) -> CapturedItem:
    """A block carrier's first tick (what the pipeline's ``materialize`` gives)."""
    first = int(carrier)  # type: ignore[call-overload]  # the tests' carrier is its first global sequence
    return CapturedItem(global_sequence=first, source="observations", capture_sequence=first,
                        stream="observations", lane=LaneName.NUMERIC, size=RECORD)


def _lane(items: int = 64, nbytes: int = 1 << 20, policy: OverloadPolicy = OverloadPolicy.FAIL_RUN,
          pressure: int | None = None) -> Lane:
    return Lane(LaneSpec(name=LaneName.NUMERIC, max_items=items, max_bytes=nbytes, overload=policy), [False],
                materialize=_first_tick, pressure_items=pressure)


def _conserved(c: LaneCounters) -> bool:
    return c.enqueued == c.dequeued + c.depth + c.lost


def test_a_block_is_charged_its_ticks_and_bytes() -> None:
    """Depth, bytes, enqueued, dequeued and the high-water mark count ticks, not carriers."""
    lane = _lane()
    assert lane.try_admit_block(1, 10, 10 * RECORD) is ACCEPTED
    assert lane.try_admit(11, RECORD) is ACCEPTED  # a plain tick beside it
    c = lane.counters()
    assert (c.depth, c.depth_bytes, c.enqueued) == (11, 11 * RECORD, 11)
    assert lane.drain_held() == [1, 11]
    c = lane.counters()
    assert (c.depth, c.depth_bytes, c.dequeued, c.high_water) == (0, 0, 11, 11)
    assert _conserved(c)


def test_a_block_reaching_the_pressure_mark_answers_pressed() -> None:
    """The pressure mark is in ticks: a block that brings the lane to it answers PRESSED."""
    lane = _lane(pressure=8)
    assert lane.try_admit_block(1, 7, 7 * RECORD) is ACCEPTED
    assert lane.try_admit_block(8, 1, RECORD) is PRESSED


def test_a_block_that_does_not_fit_a_fail_run_lane_latches_fatal() -> None:
    """A4 for the block (nothing of it admitted), then A2; accounting holds in ticks."""
    lane = _lane(items=16)
    assert lane.try_admit_block(1, 10, 10 * RECORD) is ACCEPTED
    refused = lane.try_admit_block(11, 10, 10 * RECORD)
    assert refused.outcome is AdmissionOutcome.FATAL
    assert refused.rule is AdmissionRule.FULL_FAIL_RUN
    assert "numeric lane overflow under fail_run: 10/16 items" in refused.reason
    assert "block of 10 ticks at global sequence 11" in refused.reason
    assert lane.fatal == refused.reason
    later = lane.try_admit(21, RECORD)
    assert later.rule is AdmissionRule.FATAL_LATCHED
    again = lane.try_admit_block(22, 4, 4 * RECORD)
    assert again.rule is AdmissionRule.FATAL_LATCHED
    c = lane.counters()
    assert (c.depth, c.enqueued, c.lost, c.failures) == (10, 10, 0, 10 + 1 + 4)
    assert _conserved(c)
    lane.drain_held()
    assert _conserved(lane.counters())


def test_a_block_over_the_byte_budget_is_fatal() -> None:
    """Bytes decide as items do: k x record bytes over max_bytes is A4."""
    lane = _lane(items=1000, nbytes=15 * RECORD)
    assert lane.try_admit_block(1, 10, 10 * RECORD) is ACCEPTED
    assert lane.try_admit_block(11, 6, 6 * RECORD).rule is AdmissionRule.FULL_FAIL_RUN


@pytest.mark.parametrize("policy", [OverloadPolicy.DROP_NEWEST, OverloadPolicy.DROP_OLDEST,
                                    OverloadPolicy.DEGRADE_RECORDING])
def test_a_lossy_lane_takes_no_blocks(policy: OverloadPolicy) -> None:
    """block_limit is 1 for a lossy policy, and a block offered anyway is refused, never held."""
    lane = _lane(policy=policy)
    assert lane.block_limit(RECORD) == 1
    refused = lane.try_admit_block(1, 4, 4 * RECORD)
    assert refused.fatal
    assert "only fail_run takes blocks" in refused.reason
    assert lane.counters().depth == 0


def test_block_limit_is_the_pressure_headroom_capped() -> None:
    """min(BLOCK_CAP, the pressure mark and the room above it, in items and in bytes / record)."""
    assert _lane(items=2048, nbytes=256 << 20, pressure=256).block_limit(5040) == BLOCK_CAP
    assert _lane(items=64, pressure=8).block_limit(RECORD) == 8
    assert _lane(items=64, pressure=60).block_limit(RECORD) == 5  # room above the mark: 64 - 60 + 1
    lane = Lane(LaneSpec(name=LaneName.NUMERIC, max_items=2048, max_bytes=80 * RECORD), [True],
                pressure_items=256, pressure_bytes=10 * RECORD)
    assert lane.block_limit(RECORD) == 10
    assert lane.block_limit(None) == 1


def test_pop_and_drain_refuse_a_lane_holding_a_block() -> None:
    """A block carrier leaves only through drain_held (the worker's path)."""
    lane = _lane()
    lane.try_admit_block(1, 3, 3 * RECORD)
    with pytest.raises(RuntimeError, match="drain_held"):
        lane.pop()
    with pytest.raises(RuntimeError, match="drain_held"):
        lane.drain()
    assert lane.drain_held() == [1]
