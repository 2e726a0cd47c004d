"""``validate``'s fast path over a file of many chunks (``_file_rules.MAX_HELD`` patched
small): the totals and every verdict equal batch-by-batch checking's, and a continuity
break between two chunks is found as surely as one inside a chunk."""

from __future__ import annotations

import importlib
import io

import pytest

from fastsim_recording_format import RecordIn, RecordKind, validate
from fastsim_recording_format._batch import Accumulator, RawBatch
from fastsim_recording_format._file_rules import check_file
from fastsim_recording_format._sections import read_head, read_tail
from fastsim_recording_format._source import open_source

from .helpers import STREAMS, regions, write_bytes
from .test_validate_fast import _both, _resealed, _verdict

file_rules = importlib.import_module("fastsim_recording_format._file_rules")
fsr_validate = importlib.import_module("fastsim_recording_format.validate")
batch_module = importlib.import_module("fastsim_recording_format._batch")

#: with the record tables of ``_file`` (9 records of 80 bytes and a metadata blob of at
#: most 40 bytes per batch): three batches per chunk
HELD = 2400
_BATCHES = 15
#: continuity breaks at the start of a batch: (global shift, stream shift, time shift,
#: generation before the batch) of every record from that batch on
BREAKS = {
    "global hole": (1, 0, 0, 0), "global overlap": (-1, 0, 0, 0),
    "stream hole": (0, 1, 0, 0), "stream overlap": (0, -1, 0, 0),
    "time backwards": (0, 0, -1000, 0), "generation backwards": (0, 0, 0, 2),
}


def _records(shift_from: int | None = None, kind: str = "") -> list[list[RecordIn]]:
    """``_BATCHES`` batches of three interleaved streams, metadata on some records, a GAP
    and a BARRIER, a generation change; every record from batch ``shift_from`` on shifted
    by the break ``kind`` (``BREAKS``)."""
    dg, ds, dt, gen_before = BREAKS[kind] if kind else (0, 0, 0, 0)
    batches, g = [], 0
    seq = {1: 0, 7: 0, 9: 0}
    for b in range(_BATCHES):
        on = shift_from is not None and b >= shift_from
        batch = []
        for k in range(9):
            sid = (1, 7, 9)[k % 3]
            g += 1
            seq[sid] += 1
            gen = (1 if b >= 10 else 0) + (0 if on or shift_from is None else gen_before)
            args = (sid, g + dg * on, seq[sid] + ds * on * (sid == 1), gen, 10 * g + dt * on)
            if b == 4 and k == 3:
                batch.append(RecordIn.gap(sid, (args[1], args[1]), (args[2], args[2]), gen, args[4]))
            elif b == 6 and k == 5:
                batch.append(RecordIn(sid, RecordKind.BARRIER, *args[1:]))
            else:
                batch.append(RecordIn.data(*args, bytes(k % 5), {"i": g} if k % 4 == 0 else None))
        batches.append(batch)
    return batches


def _file(shift_from: int | None = None, kind: str = "") -> bytes:
    """``_records`` written without the writer's continuity check (so a break is written)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_module.Accumulator, "check", lambda *_: None)
        return write_bytes(STREAMS, _records(shift_from, kind), "structural")


SOUND = _file()


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """``MAX_HELD`` = ``HELD``; yields the (first ordinal, batches, bytes held) of every
    chunk the fast path checks."""
    seen: list[tuple[int, int, int]] = []
    check_chunk = file_rules._check_chunk

    def spy(raws: list[RawBatch], first: int, *rest: object) -> bool:
        seen.append((first, len(raws), sum(len(r.body) for r in raws)))
        return check_chunk(raws, first, *rest)  # type: ignore[no-any-return]

    monkeypatch.setattr(file_rules, "MAX_HELD", HELD)
    monkeypatch.setattr(file_rules, "_check_chunk", spy)
    return seen


def _fast(data: bytes) -> Accumulator | None:
    src = open_source(io.BytesIO(data))
    head = read_head(src)
    return check_file(src, head, read_tail(src, head))


def test_chunks_are_bounded_and_build_the_same_totals(chunks: list[tuple[int, int, int]]) -> None:
    """A sound file of five chunks: each holds at most MAX_HELD bytes; totals equal batch by batch's."""
    fast, slow = _both(SOUND)
    assert [(first, n) for first, n, _ in chunks] == [(0, 3), (3, 3), (6, 3), (9, 3), (12, 3)]
    assert all(held <= HELD for _, _, held in chunks)
    assert fast is not None
    assert fast.projection_array().tobytes() == slow.projection_array().tobytes()
    assert fast.footer_totals() == slow.footer_totals()
    assert fast.index_rows == slow.index_rows
    assert fast.state == slow.state
    assert slow.footer_totals()["records_by_kind"] == {"data": 133, "gap": 1, "barrier": 1}


@pytest.mark.parametrize("held", [1, 800, 1700, 5000, 1 << 20])
def test_any_chunk_size_builds_the_same_totals(held: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch per chunk, two, six, or the whole file: the same totals every time."""
    monkeypatch.setattr(file_rules, "MAX_HELD", held)
    fast, slow = _both(SOUND)
    assert fast is not None
    assert fast.projection_array().tobytes() == slow.projection_array().tobytes()
    assert fast.footer_totals() == slow.footer_totals()
    assert fast.index_rows == slow.index_rows
    assert fast.state == slow.state


def test_a_batch_larger_than_the_bound_is_a_chunk_alone(
    chunks: list[tuple[int, int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With MAX_HELD below one batch's tables, every batch is its own chunk, still checked at once."""
    monkeypatch.setattr(file_rules, "MAX_HELD", 10)
    assert _both(SOUND)[0] is not None
    assert [(first, n) for first, n, _ in chunks] == [(b, 1) for b in range(_BATCHES)]


@pytest.mark.parametrize("kind", list(BREAKS))
@pytest.mark.parametrize("at", [3, 5, 6, 10, 14])
def test_a_continuity_break_gets_the_batch_by_batch_verdict(
    kind: str, at: int, chunks: list[tuple[int, int, int]]
) -> None:
    """A break at batch ``at`` (3, 6: between two chunks; 5, 10, 14: inside one): the batch-by-batch verdict."""
    # at 10 the generation steps up: a simulation time going back there is sound (both accept)
    data = _file(at, kind)
    expected = _verdict(data, fast=False)
    chunks.clear()
    assert _verdict(data, fast=True) == expected
    if kind == "time backwards" and at == 10:
        assert expected is None
        assert _fast(data) is not None
        return
    assert expected is not None
    assert "hole or overlap" in expected[1] or "goes backwards" in expected[1]
    chunks.clear()
    assert _fast(data) is None
    # the break is found by the chunk holding batch ``at``, and no later one is checked
    assert chunks[-1][0] <= at < chunks[-1][0] + chunks[-1][1]


def test_damaged_tables_in_later_chunks_get_the_batch_by_batch_verdict(
    chunks: list[tuple[int, int, int]],
) -> None:
    """Every table byte of the 2nd chunk's first batch and the 3rd's last, changed (CRCs fixed): the batch-by-batch verdict."""
    tables = [(s, e) for s, e, name in regions(SOUND) if name == "record table"]
    seen = 0
    for start, end in (tables[3], tables[8]):
        for at in range(start, end):
            damaged = _resealed(SOUND, at, SOUND[at] ^ (1, 0x80)[at % 2])
            expected = _verdict(damaged, fast=False)
            assert _verdict(damaged, fast=True) == expected, at
            seen += expected is not None
    assert seen > 200  # the edits do reach the table rules
    assert max(first for first, _, _ in chunks) >= 6  # later chunks were checked


def test_damaged_metadata_in_a_later_chunk_gets_the_batch_by_batch_verdict(
    chunks: list[tuple[int, int, int]],
) -> None:
    """A non-canonical record metadata byte in the 3rd chunk: the same error and offset as batch by batch."""
    blobs = [s for s, _, name in regions(SOUND) if name == "record metadata"]
    damaged = _resealed(SOUND, blobs[7] + 1, ord(" "))
    expected = _verdict(damaged, fast=False)
    assert expected is not None
    assert "record metadata" in expected[1]
    assert _verdict(damaged, fast=True) == expected
    assert [first for first, _, _ in chunks] == [0, 3, 6]


def test_payload_totals_beyond_exact_float_sums_go_batch_by_batch(
    chunks: list[tuple[int, int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the payload bytes summed over chunks could round in float64, the file is checked batch by batch."""
    monkeypatch.setattr(file_rules, "_EXACT", 250)  # each chunk: at most 27 records of 4 bytes
    assert _fast(SOUND) is None
    assert len(chunks) == 3  # the bound is summed over chunks: the third one passes it
    assert validate(io.BytesIO(SOUND)).validated_bytes == len(SOUND)
