"""The one-block batch path (issue 26, wk26): ``block_batch`` builds and checks a batch of one
``RecordBlock`` in few numpy calls; the writer must give the same file bytes, and accept or
refuse exactly what the general path (``assemble`` + ``analyse_table``) does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format._block_batch import block_batch
from fastsim_recording_format._layout import MAX_RECORD_METADATA_BYTES
from fastsim_recording_format.writer import RecordBlock

from .helpers import written_batches

SIZE = 56  # 7 float64, the helpers' obs.joints
U64 = 2**64 - 1


def _block(first: int = 1, n: int = 6, *, sid: int = 1, generation: int = 0, seq: int | None = None,
           times: Any = None, metadata: Any = None, split: int = 2, **columns: Any) -> RecordBlock:
    rng = np.random.default_rng(first % 1000)
    payload = rng.random(n * SIZE // 8)
    payload.flags.writeable = False
    parts = [payload[k:k + split * SIZE // 8] for k in range(0, len(payload), split * SIZE // 8)]
    g = columns.get("g", np.arange(first, first + n, dtype=np.uint64))
    s = columns.get("s", np.arange(seq if seq is not None else first, (seq if seq is not None else first) + n,
                                   dtype=np.uint64))
    t = times if times is not None else (np.arange(n, dtype=np.int64) + first % 10**9) * 1_000 - 500
    meta = {0: {"channel_sequence": first}} if metadata is None else metadata
    return RecordBlock(sid, generation, g, s, t, SIZE, parts[0], meta, tuple(parts[1:]))


def _outcome(batches: list[RecordBlock], fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, list[str]]:
    """The file bytes and each batch's refusal ('' when written), with or without the one-block path."""
    return written_batches([[b] for b in batches], monkeypatch, without=None if fast else "block_batch")


CASES: dict[str, Callable[[], list[RecordBlock]]] = {
    "metadata not an object": lambda: [_block(1, metadata={0: [1]}), _block(7)],
    "steady": lambda: [_block(1), _block(7), _block(13, 40, split=1)],
    "no metadata, empty metadata": lambda: [_block(1, metadata={}), _block(7, metadata={0: {}}), _block(13)],
    "one joined part": lambda: [_block(1, 8, split=8)],
    "generations and another stream": lambda: [_block(1, generation=3), _block(7, sid=7, seq=1)],
    "time stands still": lambda: [_block(1, times=np.zeros(6, np.int64))],
    "time goes back": lambda: [_block(1, times=np.array([0, 5, 4, 6, 7, 8], np.int64))],
    "global hole": lambda: [_block(1, g=np.array([1, 2, 3, 5, 6, 6], np.uint64))],
    "global repeat, right ends": lambda: [_block(1, g=np.array([1, 2, 2, 4, 5, 6], np.uint64))],
    "stream hole": lambda: [_block(1, s=np.array([1, 2, 3, 3, 5, 6], np.uint64))],
    "wrap past 2**64": lambda: [_block(1, g=np.array([U64 - 2, U64 - 1, U64, 0, 1, 2], np.uint64))],
    "near 2**64": lambda: [_block(U64 - 5, 6, seq=U64 - 5)],
    "continuity broken between batches": lambda: [_block(1), _block(8), _block(7, seq=9), _block(7, seq=6)],
    "undeclared stream": lambda: [_block(1, sid=4)],
    "generation too big": lambda: [_block(1, generation=2**32)],
    "metadata of another record": lambda: [_block(1, metadata={3: {"note": 1}})],
    "metadata out of range": lambda: [_block(1, metadata={6: {"note": 1}})],
    "metadata not JSON-able": lambda: [_block(1, metadata={0: {"x": object()}})],
    "metadata NaN": lambda: [_block(1, metadata={0: {"x": float("nan")}})],
    "metadata above the bound": lambda: [_block(1, metadata={0: {"x": "a" * (MAX_RECORD_METADATA_BYTES + 1)}})],
    "int32 columns": lambda: [_block(1, g=np.arange(1, 7, dtype=np.int32), s=np.arange(1, 7, dtype=np.int64))],
    "uint64 times": lambda: [_block(1, times=np.arange(6, dtype=np.uint64))],
    "one record": lambda: [_block(1, 1, split=1)],
    "short payload": lambda: [RecordBlock(1, 0, np.arange(1, 4, dtype=np.uint64), np.arange(1, 4, dtype=np.uint64),
                                          np.arange(3, dtype=np.int64), SIZE, np.zeros(20), {}, ())],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_block_path_is_the_general_path(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case gives the same file bytes and the same refusals with and without the one-block path."""
    fast = _outcome(CASES[case](), True, monkeypatch)
    general = _outcome(CASES[case](), False, monkeypatch)
    assert fast == general


def test_one_block_path_takes_the_steady_state() -> None:
    """A steady block (with and without more parts) is built by ``block_batch``, facts included."""
    rows = {1: 0, 7: 1, 9: 2}
    built = block_batch(_block(11, 6), rows, 4, MAX_RECORD_METADATA_BYTES)
    assert built is not None
    facts = built.facts
    assert (facts.first_global, facts.last_global, facts.sim_time_min, facts.sim_time_max) == (11, 16, 10_500, 15_500)
    assert facts.kind_counts.tolist() == [[6, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert facts.projections["batch_ordinal"].tolist() == [4]
    assert built.metadata == b'{"channel_sequence":11}'
    assert built.table["metadata_length"].tolist() == [23, 0, 0, 0, 0, 0]
    assert built.table["metadata_offset"].tolist() == [0, 23, 23, 23, 23, 23]
    assert block_batch(_block(11, 6, g=np.arange(11, 17, dtype=np.int64)), rows, 4, MAX_RECORD_METADATA_BYTES) is None


@pytest.mark.parametrize("meta", [
    {"channel_sequence": 11}, {"channel_sequence": -3}, {"channel_sequence": 2**70}, {"é\"\\\n": 5},
    {"channel_sequence": True}, {"channel_sequence": 1.0}, {1: 2}, {"a": 1, "b": 2}, {"note": "x"},
])
def test_one_int_metadata_is_canonical_json(meta: dict[Any, Any]) -> None:
    """A block's one-key metadata blob (the cached-prefix form) is exactly canonical JSON, for any key and value."""
    from fastsim_recording_format._block_batch import record_metadata
    from fastsim_recording_format._layout import canonical_json

    assert record_metadata(meta, MAX_RECORD_METADATA_BYTES) == canonical_json(meta)
    assert record_metadata(dict(meta), MAX_RECORD_METADATA_BYTES) == canonical_json(meta)  # the prefix, cached


def test_block_counts_are_shared_and_read_only() -> None:
    """Two steady batches of one shape share their per-stream counts, which nothing may write."""
    rows = {1: 0, 7: 1, 9: 2}
    a = block_batch(_block(1, 6), rows, 0, MAX_RECORD_METADATA_BYTES)
    b = block_batch(_block(7, 6), rows, 1, MAX_RECORD_METADATA_BYTES)
    assert a is not None
    assert b is not None
    assert a.facts.kind_counts is b.facts.kind_counts
    assert not a.facts.kind_counts.flags.writeable
    assert not a.facts.payload_by_stream.flags.writeable
    assert a.facts.group_last.tolist() == [5]
