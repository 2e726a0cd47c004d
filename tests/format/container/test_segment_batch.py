"""The segment path (issue 26, wk26c): a batch of column blocks between a few rows is built
and checked segment by segment (``segment_batch``); the writer must give the same file bytes,
and accept or refuse exactly what the general path (``assemble`` + ``analyse_table``) does."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest

from fastsim_recording_format._batch import Accumulator
from fastsim_recording_format._layout import MAX_RECORD_METADATA_BYTES
from fastsim_recording_format._segment_batch import segment_batch
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import RecordIn, RecordKind, RecordRow
from fastsim_recording_format.writer import RecordBlock

from .helpers import written_batches

SIZE = 56  # 7 float64, the helpers' obs.joints (stream 1); rows go to stream 9 (events) or 7
U64 = 2**64 - 1
ROWS = {1: 0, 7: 1, 9: 2}


class Seq:
    """Hands out the next global and per-stream sequences and times of a steady Run."""

    def __init__(self, first: int = 1) -> None:
        self.g = first
        self.s: dict[int, int] = {1: first, 7: 1, 9: 1}
        self.t = 1_000

    def block(self, n: int, *, split: int = 1, meta: Any = None, **over: Any) -> RecordBlock:
        rng = np.random.default_rng(self.g % 1000)
        payload = rng.random(n * SIZE // 8)
        payload.flags.writeable = False
        step = split * SIZE // 8
        parts = [payload[k:k + step] for k in range(0, len(payload), step)] or [payload]
        g = np.arange(self.g, self.g + n, dtype=np.uint64)
        s = np.arange(self.s[1], self.s[1] + n, dtype=np.uint64)
        t = np.arange(n, dtype=np.int64) * 1_000 + self.t
        metadata = {0: {"channel_sequence": self.g}} if meta is None else meta
        self.g, self.s[1], self.t = self.g + n, self.s[1] + n, self.t + 1_000 * n
        fields: dict[str, Any] = dict(stream_id=1, generation=0, global_sequence=g, stream_sequence=s, sim_time_ns=t,
                                      record_bytes=SIZE, payload=parts[0], metadata=metadata, more=tuple(parts[1:]))
        fields.update(over)
        return RecordBlock(**fields)

    def row(self, sid: int = 9, *, cls: type = RecordRow, **over: Any) -> RecordRow:
        self.s.setdefault(sid, 1)
        fields: dict[str, Any] = dict(
            stream_id=sid, kind=RecordKind.DATA, global_sequence=self.g, stream_sequence=self.s[sid], generation=0,
            sim_time_ns=self.t - 500, payload=b'{"event": %d}' % self.g, metadata={"tick": self.g},
            global_last=self.g, stream_last=self.s[sid],
        )
        self.g, self.s[sid] = self.g + 1, self.s[sid] + 1
        fields.update(over)
        return cls(**fields)  # type: ignore[no-any-return]


def _outcome(batches: list[list[Any]], fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, list[str]]:
    """The file bytes and each batch's refusal ('' when written), with or without the segment path."""
    return written_batches(batches, monkeypatch, without=None if fast else "segment_batch")


def _steady() -> list[list[Any]]:
    q = Seq()
    return [[q.block(5), q.row(), q.block(4, split=2), q.row(7), q.row()],
            [q.row(), q.block(1), q.row(cls=RecordIn)], [q.block(3), q.row(), q.block(2, meta={})]]


def _one(make: Callable[[Seq], list[Any]]) -> Callable[[], list[list[Any]]]:
    def batches() -> list[list[Any]]:
        q = Seq()
        return [[q.block(3), q.row()], make(q)]
    return batches


CASES: dict[str, Callable[[], list[list[Any]]]] = {
    "steady": _steady,
    "no metadata anywhere": _one(lambda q: [q.block(3, meta={}), q.row(metadata={}), q.block(2, meta={0: {}})]),
    "rows only, one block of one stream": _one(lambda q: [q.block(3), q.block(2)]),
    "a row of the block's stream": _one(lambda q: [q.block(3), q.row(1)]),
    "global hole between segments": _one(lambda q: [q.block(3), q.row(global_sequence=q.g + 1, global_last=q.g + 1)]),
    "global overlap": _one(lambda q: [q.block(3), q.row(global_sequence=q.g - 1, global_last=q.g - 1)]),
    "stream hole in the rows": _one(lambda q: [q.row(), q.block(2), q.row(stream_sequence=q.s[9] + 1,
                                                                          stream_last=q.s[9] + 1)]),
    "stream hole between blocks": _one(lambda q: [q.block(2), q.row(), q.block(2, stream_sequence=np.arange(
        q.s[1] + 1, q.s[1] + 3, dtype=np.uint64))]),
    "time goes back in a stream": _one(lambda q: [q.row(sim_time_ns=10**9), q.block(2), q.row()]),
    "time goes back inside a block": _one(lambda q: [q.row(), q.block(3, sim_time_ns=np.array([9, 8, 10**7], np.int64))]),
    "time stands still": _one(lambda q: [q.row(sim_time_ns=q.t), q.block(2, sim_time_ns=np.full(2, q.t, np.int64))]),
    "another generation": _one(lambda q: [q.block(2), q.row(generation=1)]),
    "generations in blocks": _one(lambda q: [q.block(2, generation=3), q.row(generation=3)]),
    "undeclared stream": _one(lambda q: [q.block(2), q.row(4)]),
    "GAP row": _one(lambda q: [q.block(2), q.row(kind=RecordKind.GAP, payload=b"", global_last=q.g + 2)]),
    "BARRIER row": _one(lambda q: [q.block(2), q.row(kind=RecordKind.BARRIER)]),
    "DATA row covering two": _one(lambda q: [q.block(2), q.row(global_last=q.g + 1)]),
    "plain int kind": _one(lambda q: [q.block(2), q.row(kind=0)]),
    "memoryview payload": _one(lambda q: [q.block(2), q.row(payload=memoryview(b"abc"))]),
    "numpy int field": _one(lambda q: [q.block(2), q.row(sim_time_ns=np.int64(q.t))]),
    "negative stream sequence": _one(lambda q: [q.block(2), q.row(stream_sequence=-1, stream_last=-1)]),
    "sequence past 2**64": _one(lambda q: [q.block(2), q.row(7, stream_sequence=2**64, stream_last=2**64)]),
    "row metadata not JSON-able": _one(lambda q: [q.block(2), q.row(metadata={"x": object()})]),
    "row metadata not an object": _one(lambda q: [q.block(2), q.row(metadata=[1])]),
    "block metadata not an object": _one(lambda q: [q.block(2, meta={0: "x"}), q.row()]),
    "row metadata NaN": _one(lambda q: [q.block(2), q.row(metadata={"x": float("nan")})]),
    "row metadata above the bound": _one(lambda q: [q.block(2), q.row(metadata={"x": "a" * MAX_RECORD_METADATA_BYTES})]),
    "block metadata of another record": _one(lambda q: [q.block(3, meta={1: {"n": 1}}), q.row()]),
    "block metadata out of range": _one(lambda q: [q.block(3, meta={3: {"n": 1}}), q.row()]),
    "short block payload": _one(lambda q: [q.block(3, payload=np.zeros(20), more=()), q.row()]),
    "int32 block column": _one(lambda q: [q.row(), q.block(2, global_sequence=np.arange(q.g, q.g + 2, dtype=np.int32))]),
    "empty block": _one(lambda q: [q.row(), q.block(0)]),
    "block repeat with the right ends": _one(lambda q: [q.row(), q.block(4, global_sequence=np.array(
        [q.g, q.g + 1, q.g + 1, q.g + 3], np.uint64))]),
    "near 2**64": lambda: [[Seq(U64 - 9).block(4), Seq(U64 - 5).row(9, stream_sequence=3, stream_last=3)]],
    "continuity broken between batches": lambda: [[Seq(1).block(2), Seq(3).row()], [Seq(9).block(2), Seq(11).row()]],
    "many rows": _one(lambda q: [q.block(2), *[q.row() for _ in range(40)]]),
    "rows alone, two streams": _one(lambda q: [q.row(1, payload=bytes(SIZE), metadata={"channel_sequence": 4}),
                                               q.row(), q.row(7), q.row(1, payload=bytes(SIZE))]),
    "rows alone, one stream": _one(lambda q: [q.row(), q.row(), q.row()]),
    "rows alone, a driven Run's": lambda: [[r for k in range(30) for r in (q.row(1, payload=bytes(SIZE)), q.row(7), q.row())]
                                           for q in [Seq()]],
    "rows alone, a BARRIER row": _one(lambda q: [q.row(), q.row(7, kind=RecordKind.BARRIER)]),
    "rows alone, a hole": _one(lambda q: [q.row(), q.row(7, global_sequence=q.g + 1, global_last=q.g + 1)]),
    "rows alone, time goes back": _one(lambda q: [q.row(sim_time_ns=10**9), q.row(7), q.row()]),
    "rows alone, past the bound": _one(lambda q: [q.row(sid) for sid in [7, 9] * 120]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_segment_path_is_the_general_path(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case gives the same file bytes and the same refusals with and without the segment path."""
    assert _outcome(CASES[case](), True, monkeypatch) == _outcome(CASES[case](), False, monkeypatch)


def test_random_batches_are_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded random mixes of blocks and rows, some with one field broken, give the same bytes and refusals."""
    breaks: list[Callable[[Seq], Any]] = [
        lambda q: q.row(global_sequence=q.g + 1, global_last=q.g + 1),
        lambda q: q.row(sim_time_ns=0), lambda q: q.row(generation=2), lambda q: q.row(stream_sequence=0, stream_last=0),
        lambda q: q.block(2, sim_time_ns=np.array([5, 4], np.int64)), lambda q: q.row(metadata={"x": float("inf")}),
    ]
    for seed in range(40):
        rng = random.Random(seed)

        def batches(rng: random.Random = rng) -> list[list[Any]]:
            q, out = Seq(rng.randrange(1, 1000)), []
            for _ in range(rng.randrange(1, 5)):
                batch: list[Any] = []
                for _ in range(rng.randrange(1, 7)):
                    pick = rng.random()
                    if pick < 0.05:
                        batch.append(rng.choice(breaks)(q))
                    elif pick < 0.5:
                        batch.append(q.block(rng.randrange(1, 9), split=rng.randrange(1, 4),
                                             meta=rng.choice([None, {}, {0: {"n": rng.randrange(9)}}])))
                    else:
                        batch.append(q.row(rng.choice([7, 9]), metadata=rng.choice([{}, {"tick": q.g}])))
                out.append(batch)
            return out
        state = rng.getstate()
        fast = _outcome(batches(), True, monkeypatch)
        rng.setstate(state)
        assert fast == _outcome(batches(), False, monkeypatch), seed


def test_segment_path_takes_a_runs_batch() -> None:
    """A steady batch of blocks between rows is built by ``segment_batch``, its facts those of the table."""
    q = Seq(11)
    built = segment_batch([q.block(3), q.row(), q.block(2), q.row(7)], ROWS, 4, MAX_RECORD_METADATA_BYTES)
    assert built is not None
    facts = built.facts
    assert (facts.first_global, facts.last_global, facts.generation_min, facts.generation_max) == (11, 17, 0, 0)
    assert facts.kind_counts.tolist() == [[5, 0, 0], [1, 0, 0], [1, 0, 0]]
    assert facts.projections["stream_id"].tolist() == [1, 7, 9]
    assert facts.projections["record_count"].tolist() == [5, 1, 1]
    assert facts.group_first.tolist() == [0, 6, 3]
    assert facts.group_last.tolist() == [5, 6, 3]
    assert built.table["global_sequence"].tolist() == list(range(11, 18))
    assert built.table["payload_offset"].tolist()[:4] == [0, SIZE, 2 * SIZE, 3 * SIZE]
    assert built.metadata.startswith(b'{"channel_sequence":11}{"tick":14}')
    q = Seq(11)
    assert segment_batch([q.block(3), q.block(2)], ROWS, 4, MAX_RECORD_METADATA_BYTES) is None  # one stream


def test_segment_path_takes_a_driven_runs_batch_of_rows_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows alone of two streams or more (a driven Run's ticks between its command events, perf41) are built by ``segment_batch``, and the writer takes that path for them."""
    q = Seq(11)
    rows = [q.row(1, payload=bytes(SIZE)), q.row(7), q.row(), q.row(1, payload=bytes(SIZE))]
    built = segment_batch(rows, ROWS, 4, MAX_RECORD_METADATA_BYTES)
    assert built is not None
    assert built.facts.kind_counts.tolist() == [[2, 0, 0], [1, 0, 0], [1, 0, 0]]
    assert built.table["global_sequence"].tolist() == list(range(11, 15))
    taken: list[bool] = []

    def counting(*args: Any) -> Any:
        made = segment_batch(*args)
        taken.append(made is not None)
        return made

    batches = CASES["rows alone, a driven Run's"]()
    monkeypatch.setattr("fastsim_recording_format.writer.segment_batch", counting)
    assert written_batches(batches, monkeypatch)[1] == [""]
    assert taken == [True]


def test_segment_facts_carry_each_streams_edges_for_the_accumulator() -> None:
    """``edges`` (writer44) are the table rows' fields, so the Accumulator's state and refusals are the table path's."""
    q = Seq(11)
    built = segment_batch([q.row(), q.block(3), q.row(7), q.block(2), q.row()], ROWS, 0, MAX_RECORD_METADATA_BYTES)
    assert built is not None
    after = q.g  # the global sequence a next batch starts at
    facts, rows = built.facts, built.table.tolist()
    names = list(built.table.dtype.names or ())
    sid, seq, last, gen, time = (names.index(n) for n in
                                 ("stream_id", "stream_sequence", "stream_last", "generation", "sim_time_ns"))
    assert facts.edges is not None
    firsts, lasts = facts.edges
    assert firsts == [(k, (rows[k][sid], rows[k][seq], rows[k][gen], rows[k][time])) for k in facts.group_first.tolist()]
    assert lasts == [(rows[k][sid], rows[k][last], rows[k][gen], rows[k][time]) for k in facts.group_last.tolist()]
    follow = segment_batch([q.block(2), q.row(), q.row(7)], ROWS, 1, MAX_RECORD_METADATA_BYTES)
    hole = Seq(after)  # the global sequence goes on; stream 1's sequence jumps
    broken = segment_batch([hole.block(2), hole.row()], ROWS, 1, MAX_RECORD_METADATA_BYTES)
    assert follow is not None
    assert broken is not None
    ids = np.array(sorted(ROWS), np.uint32)
    for second, refused in ((follow, None), (broken, "stream sequence hole or overlap")):
        seen: list[object] = []
        for use_edges in (True, False):
            acc = Accumulator(ids)
            batches = [(b, b.facts if use_edges else attrs.evolve(b.facts, edges=None)) for b in (built, second)]
            acc.check(batches[0][0].table, batches[0][1], 0)
            acc.add(0, 1000, 0, batches[0][0].table, batches[0][1])
            try:
                acc.check(batches[1][0].table, batches[1][1], 1000)
                acc.add(1000, 1000, 0, batches[1][0].table, batches[1][1])
            except FormatError as exc:
                seen.append((exc.reason, exc.offset))
            else:
                seen.append(dict(acc.state))
        assert seen[0] == seen[1]
        if refused is None:
            assert isinstance(seen[0], dict)
        else:  # the same reason at the same offset (above): the stream's first record in the second batch
            assert isinstance(seen[0], tuple)
            assert seen[0][0] == refused
