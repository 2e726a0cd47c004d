"""The writer's head self-check (issue 23): a stream table checked once per distinct encoded table,
every other key per file, the same bytes and the same refusals as one check of the whole head; a
reader skips the re-encode of a head the writer checked; small index/projection checks row by row."""

from __future__ import annotations

import importlib
import io
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import FsrWriter, RunMetadata, StreamSpec
from fastsim_recording_format._head import _check_metadata, metadata_json, read_head
from fastsim_recording_format._json import decode_object
from fastsim_recording_format._layout import (
    FILE_HEADER,
    INDEX_DTYPE,
    PROJECTION_DTYPE,
    canonical_json,
)
from fastsim_recording_format._source import open_source
from fastsim_recording_format.errors import FormatError

from .helpers import RUN, STREAMS

head_module = importlib.import_module("fastsim_recording_format._head")
sections = importlib.import_module("fastsim_recording_format._sections")


@pytest.fixture(autouse=True)
def _fresh_tables() -> None:
    """Each test starts with no checked stream table and no checked head."""
    head_module._STREAM_TABLES.clear()
    head_module._CHECKED.clear()


def _head_bytes(run: RunMetadata, streams: list[StreamSpec]) -> bytes:
    buf = io.BytesIO()
    FsrWriter(buf, run, streams).close()
    return buf.getvalue()


def _old_verdict(run: RunMetadata, streams: list[StreamSpec]) -> str | None:
    """What the whole-head check (before issue 23) said: ``None`` or the refusal's line."""
    ordered = tuple(sorted(streams, key=lambda s: s.stream_id))
    try:
        blob = canonical_json(metadata_json(run, ordered, "structural"))
    except (TypeError, ValueError) as exc:
        return f"run metadata is not JSON-able: {exc}"
    try:
        _check_metadata(decode_object(blob, FILE_HEADER.size, "run metadata"), 0)
    except FormatError as exc:
        return exc.reason
    return None


def _new_verdict(run: RunMetadata, streams: list[StreamSpec]) -> str | None:
    try:
        _head_bytes(run, streams)
    except ValueError as exc:
        return str(exc)
    return None


RUNS = [
    RUN,
    RunMetadata("r", "c", {"é": "ü", "n": [1, 2.5, None]}, attributes={"deep": {"a": [{"b": "\u2028"}]}}),
    RunMetadata("r", "c", attributes={"seed": 3, "x": -0.0, "big": 2**70}),
]


@pytest.mark.parametrize("run", RUNS)
def test_the_head_bytes_are_canonical_json_of_the_whole_metadata(run: RunMetadata) -> None:
    """Cold and warm (stream table known), the stored text is ``canonical_json`` of the whole object."""
    for streams in ([], STREAMS, STREAMS):
        data = _head_bytes(run, list(streams))
        ordered = tuple(sorted(streams, key=lambda s: s.stream_id))
        blob = canonical_json(metadata_json(run, ordered, "structural"))
        assert data[FILE_HEADER.size:FILE_HEADER.size + len(blob)] == blob


#: a mapping with integer keys: canonical JSON sorts them as integers, a reader gets text keys back
INT_KEYS: dict[Any, Any] = {10: 1, 9: 2}
BAD_STREAMS = [
    [StreamSpec(1, "a", "k", {}, {}), StreamSpec(2, "a", "k", {}, {})],  # duplicate name
    [StreamSpec(1, "a", "k", {}, INT_KEYS)],  # int keys: sorted as ints, read back as text
    [StreamSpec(1, "a", "", {}, {})],  # empty kind
    [StreamSpec(True, "a", "k", {}, {})],  # a boolean id
    [StreamSpec(1, "a", "k", {"nan": float("nan")}, {})],  # not JSON-able
]
BAD_RUNS = [
    RunMetadata("r", "c", attributes=INT_KEYS),
    RunMetadata("", "c"),
    RunMetadata("r", "c", source_sha256="ABC"),
    RunMetadata("r", "c", mode="nope"),
]


@pytest.mark.parametrize("streams", BAD_STREAMS)
def test_a_bad_stream_table_is_refused_every_time_with_the_whole_checks_line(streams: list[StreamSpec]) -> None:
    """A stream table that fails is never kept: refused again, with the line the whole-head check gave."""
    expected = _old_verdict(RUN, streams)
    assert expected is not None
    assert _new_verdict(RUN, streams) == expected
    assert _new_verdict(RUN, streams) == expected
    assert not head_module._STREAM_TABLES


@pytest.mark.parametrize("run", BAD_RUNS)
def test_a_bad_run_part_is_refused_when_the_stream_table_is_known(run: RunMetadata) -> None:
    """With the stream table checked before, the other keys are still checked for every file."""
    _head_bytes(RUN, STREAMS)
    assert head_module._STREAM_TABLES
    expected = _old_verdict(run, STREAMS)
    assert expected is not None
    assert _new_verdict(run, STREAMS) == expected


def test_a_known_stream_table_is_not_decoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second file of a stream table decodes only the other keys' text (the table's is kept)."""
    decoded: list[bytes] = []
    real = head_module.decode_canonical

    def counting(data: bytes, offset: int, what: str) -> Any:
        decoded.append(data)
        return real(data, offset, what)

    monkeypatch.setattr(head_module, "decode_canonical", counting)
    tables = canonical_json([s.to_json() for s in STREAMS])
    _head_bytes(RUN, STREAMS)
    assert tables in decoded
    decoded.clear()
    _head_bytes(RunMetadata("run-2", "completion-2", {"name": "tests"}), STREAMS)
    assert decoded
    assert tables not in decoded
    assert sum(map(len, decoded)) < len(tables)


def test_the_kept_tables_and_heads_stay_bounded() -> None:
    """Twenty distinct stream tables keep at most ``_KEEP`` of each."""
    for k in range(20):
        _head_bytes(RunMetadata(f"r{k}", "c"), [StreamSpec(1, f"s{k}", "k", {}, {})])
    assert len(head_module._STREAM_TABLES) <= head_module._KEEP
    assert len(head_module._CHECKED) <= head_module._KEEP


def test_a_head_the_writer_checked_reads_back_as_a_cold_read_with_its_own_objects() -> None:
    """Readback after the write equals a cold read and uses the kept head up; each read's metadata is its own."""
    data = _head_bytes(RUNS[1], STREAMS)
    warm = read_head(open_source(io.BytesIO(data)))
    assert not head_module._CHECKED  # used up by the readback: a reopen pays the whole check
    again = read_head(open_source(io.BytesIO(data)))
    cold = read_head(open_source(io.BytesIO(data)))
    assert warm == cold
    assert warm.raw == cold.raw
    assert warm.data_start == cold.data_start
    assert warm.stream_ids.tolist() == cold.stream_ids.tolist()
    warm.metadata["attributes"]["deep"]["a"].append(1)
    assert again.metadata == cold.metadata


def test_a_checked_head_that_is_not_canonical_is_still_refused() -> None:
    """Only the exact bytes the writer checked skip the re-encode: a changed text is checked in full."""
    data = bytearray(_head_bytes(RUN, STREAMS))
    blob_len = int.from_bytes(data[16:20], "little")
    blob = bytes(data[FILE_HEADER.size:FILE_HEADER.size + blob_len])
    assert blob in head_module._CHECKED
    with pytest.raises(FormatError, match="not canonical"):
        head_module._decode(blob.replace(b'"format":"fsr"', b'"format": "fsr"'))


def _index(offsets: list[int], lengths: list[int]) -> np.ndarray[Any, Any]:
    index = np.zeros(len(offsets), INDEX_DTYPE)
    index["offset"], index["length"] = offsets, lengths
    return index


def _verdict(check: Any, *args: Any) -> tuple[int, str] | None:
    try:
        check(*args)
    except FormatError as exc:
        return exc.offset, exc.reason
    return None


def _both(monkeypatch: pytest.MonkeyPatch, check: Any, *args: Any) -> tuple[Any, Any]:
    few = _verdict(check, *args)
    monkeypatch.setattr(sections, "_FEW", -1)  # numpy's path for every size
    many = _verdict(check, *args)
    monkeypatch.setattr(sections, "_FEW", 16)
    return few, many


INDEXES = [
    ([], [], 40),
    ([40], [100], 140),
    ([40], [100], 141),
    ([40, 140], [100, 8], 148),
    ([40, 141], [100, 8], 149),
    ([40, 32], [2**64 - 8, 16], 48),  # the sum wraps at 2**64
    ([40, 32], [2**64 - 8, 16], 2**64 + 48 - 2**64 + 1),
    ([41], [1], 42),
]


@pytest.mark.parametrize(("offsets", "lengths", "end"), INDEXES)
def test_the_small_index_check_agrees_with_numpys(
    monkeypatch: pytest.MonkeyPatch, offsets: list[int], lengths: list[int], end: int
) -> None:
    """Row by row and with numpy, the same verdict at the same offset (wrap-around included)."""
    few, many = _both(monkeypatch, sections._check_index, _index(offsets, lengths), 40, end)
    assert few == many


def _projections(rows: list[tuple[int, int, int]]) -> np.ndarray[Any, Any]:
    proj = np.zeros(len(rows), PROJECTION_DTYPE)
    for k, (sid, gen, ordinal) in enumerate(rows):
        proj[k]["stream_id"], proj[k]["generation"], proj[k]["batch_ordinal"] = sid, gen, ordinal
    return proj


PROJECTIONS = [
    [(1, 0, 0), (1, 1, 0), (2, 0, 1), (7, 0, 0)],
    [(1, 0, 0), (1, 0, 0)],
    [(1, 1, 0), (1, 0, 0)],
    [(2, 0, 0), (1, 0, 0)],
    [(1, 0, 1), (1, 0, 0)],
    [(1, 0, 0), (3, 0, 0)],
    [(1, 0, 0), (2, 0, 2)],
    [(1, 0, 5), (2, 0, 0), (1, 0, 0)],
]


@pytest.mark.parametrize("rows", PROJECTIONS)
def test_the_small_projection_check_agrees_with_numpys(
    monkeypatch: pytest.MonkeyPatch, rows: list[tuple[int, int, int]]
) -> None:
    """Ordering, unknown streams and batches: the same first offending row either way."""
    ids = np.array([1, 2, 7], np.uint32)
    few, many = _both(monkeypatch, sections._check_projections, _projections(rows), ids, 2, 1000)
    assert few == many
