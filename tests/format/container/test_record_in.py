"""``RecordIn`` is a ``RecordRow`` with defaults: one field list for a record handed to the writer."""

from __future__ import annotations

from fastsim_recording_format import RecordIn, RecordKind
from fastsim_recording_format.model import RecordRow


def test_defaults_fill_the_row() -> None:
    """Payload and metadata default to empty; the lasts default to the firsts."""
    row = RecordIn(3, RecordKind.BARRIER, 7, 2, 1, 500)
    assert isinstance(row, RecordRow)
    assert row == RecordRow(3, RecordKind.BARRIER, 7, 2, 1, 500, b"", {}, 7, 2)


def test_given_fields_are_kept() -> None:
    """Every field given: the row as given, and the constructors agree with it."""
    full = RecordIn(1, RecordKind.GAP, 4, 2, 0, 10, b"", {"reason": "x"}, 6, 3)
    assert (full.global_last, full.stream_last, full.metadata) == (6, 3, {"reason": "x"})
    assert RecordIn.gap(1, (4, 6), (2, 3), 0, 10, {"reason": "x"}) == full
    assert RecordIn.data(1, 4, 2, 0, 10, b"p") == RecordIn(1, RecordKind.DATA, 4, 2, 0, 10, b"p")
