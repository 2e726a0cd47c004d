"""fsr info's lost-record count never raises on a forged footer (found by test_corruption's hypothesis run in CI)."""

from __future__ import annotations

from fastsim_recording_format.reading.summary import lost_records


def test_lost_records_of_a_footer_without_a_span_falls_back_to_the_gap_count() -> None:
    """A footer whose stream-sequence span is null counts its GAP records instead of raising TypeError."""
    forged = {"gap": 2, "data": 5, "barrier": 0, "first_stream_sequence": 1, "last_stream_sequence": None}
    assert lost_records(forged) == 2


def test_lost_records_counts_the_records_gaps_stand_in_for() -> None:
    """Span 10, 5 data and 1 barrier: the gaps stand in for 4 records."""
    totals = {"gap": 1, "data": 5, "barrier": 1, "first_stream_sequence": 1, "last_stream_sequence": 10}
    assert lost_records(totals) == 4
