"""Source continuity of a block of ticks (issue 26): S2-S4 on its first tick, then the
tracker advances by the block's ``k`` ticks."""

from __future__ import annotations

from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.core.generations import ContinuityRule, SourceContinuity


def _tick(global_sequence: int, capture: int, generation: int = 0) -> CapturedItem:
    return CapturedItem(global_sequence=global_sequence, source="observations", capture_sequence=capture,
                        stream="observations", lane=LaneName.NUMERIC, generation=generation)


def test_a_block_advances_the_tracker_by_its_ticks() -> None:
    """After a block of 5 from capture 1, the next tick must be capture 6 above global 5."""
    tracker = SourceContinuity("observations")
    assert tracker.advance_block(1, 1, 5, 0) is None
    assert tracker.last_capture == 5
    assert tracker.check(_tick(6, 6)) is None
    assert tracker.advance_block(8, 7, 3, 0) is None  # global 7 went to another source
    assert tracker.last_capture == 9


def test_a_block_whose_first_capture_skips_is_refused_like_a_skipped_tick() -> None:
    """S2 on the block's first capture sequence: the same rule and reason as for one tick."""
    by_block = SourceContinuity("observations")
    by_tick = SourceContinuity("observations")
    assert by_block.advance_block(1, 1, 4, 0) is None
    for i in range(1, 5):
        assert by_tick.check(_tick(i, i)) is None
    block_problem = by_block.advance_block(6, 6, 4, 0)
    tick_problem = by_tick.check(_tick(6, 6))
    assert block_problem is not None
    assert tick_problem is not None
    assert block_problem.rule is tick_problem.rule is ContinuityRule.CAPTURE_SEQUENCE
    assert block_problem.reason == tick_problem.reason
    assert "capture_sequence 6 does not continue 4" in block_problem.reason
    assert by_block.advance_block(10, 10, 2, 0) is None  # resynchronised past the block: one fault, one report


def test_a_block_out_of_global_order_or_generation_is_refused() -> None:
    """S3 on the first global sequence, S4 on the block's one generation."""
    tracker = SourceContinuity("observations")
    assert tracker.advance_block(10, 1, 5, 0) is None  # globals 10..14
    problem = tracker.advance_block(14, 6, 2, 0)
    assert problem is not None
    assert problem.rule is ContinuityRule.GLOBAL_ORDER
    problem = tracker.advance_block(20, 8, 2, 1)  # a record of generation 1 before its barrier
    assert problem is not None
    assert problem.rule is ContinuityRule.GENERATION
