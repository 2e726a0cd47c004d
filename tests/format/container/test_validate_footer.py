"""The footer check's fast path: ``same_json`` is true only when the canonical JSON is the same bytes."""

from __future__ import annotations

from typing import Any

import pytest

from fastsim_recording_format.encoding import canonical_json
from fastsim_recording_format.validate import same_json

PAIRS: list[tuple[Any, Any]] = [
    (1, 1), (1, 1.0), (True, 1), (False, 0), (0.0, -0.0), (-0.0, -0.0), (1.5, 1.5), (None, None), (None, 0),
    ("a", "a"), ("a", "b"), ([1, 2], [1, 2]), ([1, 2], [2, 1]), ([1], [1, 1]),
    ({"a": 1, "b": [1.0]}, {"b": [1.0], "a": 1}), ({"a": 1}, {"a": 1, "b": 2}), ({"a": 1}, {"b": 1}),
    ({"streams": [{"generations": [0], "first_stream_sequence": None}]},
     {"streams": [{"generations": [0], "first_stream_sequence": None}]}),
    ({"streams": [{"generations": [0], "first_stream_sequence": None}]},
     {"streams": [{"generations": [0], "first_stream_sequence": 0}]}),
    (float("nan"), float("nan")), (2**70, 2**70), (2**70, float(2**70)),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_same_json_implies_the_same_canonical_bytes(a: Any, b: Any) -> None:
    """same_json(a, b) is true exactly when both encode (canonically) to the same bytes, and never for what does not encode."""
    try:
        same_bytes = canonical_json(a) == canonical_json(b)
    except ValueError:  # NaN: the caller's canonical comparison raises, as before
        same_bytes = False
    assert same_json(a, b) is same_bytes


@pytest.mark.parametrize(("a", "b"), [([1], (1,)), ((1, 2.0), [1, 2.0]), ({"a": (1,)}, {"a": [1]})])
def test_same_json_false_for_other_types_leaves_the_verdict_to_the_canonical_bytes(a: Any, b: Any) -> None:
    """Tuples (or any non-JSON type) are never shown equal here; the canonical comparison then decides, as before."""
    assert not same_json(a, b)
    assert canonical_json(a) == canonical_json(b)
