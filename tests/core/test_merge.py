"""Ordered merge: rules M1-M5, arrival-order independence and a stateful model."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from fastsim_record.core import Envelope, GapReason, GapRecord, MergeConflict, OrderedMerge
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts

Item = Envelope | GapRecord


def _feed(merge: OrderedMerge, item: Item) -> MergeConflict | None:
    return merge.explain(item) if isinstance(item, GapRecord) else merge.push(item)


def _as_items(script: list[Envelope], lost: set[int]) -> list[Item]:
    return [
        GapRecord.for_envelope(e, GapReason.DROP_NEWEST) if e.global_sequence in lost else e
        for e in script
    ]


def test_m1_releases_in_global_order() -> None:
    """M1: items pushed out of order are released in ascending global sequence."""
    f = EnvelopeFactory()
    a, b, c = (f.record("s") for _ in range(3))
    merge = OrderedMerge()
    for e in (c, a, b):
        merge.push(e)
    assert merge.release() == [a, b, c]


def test_m2_gap_explains_its_sequences() -> None:
    """M2: a gap over sequences 2..3 lets sequence 4 be released after it."""
    f = EnvelopeFactory()
    envs = [f.record("s", required=False) for _ in range(4)]
    one = GapRecord.for_envelope(envs[1], GapReason.DROP_NEWEST)
    gap = attrs.evolve(one, last_global=3, last_capture=3)
    merge = OrderedMerge()
    merge.push(envs[3])
    merge.push(envs[0])
    assert merge.release() == [envs[0]]
    assert merge.explain(gap) is None
    assert merge.release() == [gap, envs[3]]
    assert merge.source_progress() == {"observations": 4}


def test_m3_duplicate_sequence_is_a_conflict_value() -> None:
    """M3: a repeated global sequence (held or released) returns a MergeConflict."""
    f = EnvelopeFactory()
    a, b = f.record("s"), f.record("s")
    merge = OrderedMerge()
    merge.push(b)
    held = merge.push(b)
    assert isinstance(held, MergeConflict)
    assert "already held" in held.reason
    merge.push(a)
    merge.release()
    released = merge.push(a)
    assert isinstance(released, MergeConflict)
    assert "already released" in released.reason
    assert isinstance(merge.explain(GapRecord.for_envelope(b, GapReason.DEGRADED)), MergeConflict)


def test_m4_hole_is_held_not_skipped() -> None:
    """M4: an unexplained hole holds every later item and is reported by holes()."""
    f = EnvelopeFactory()
    envs = [f.record("s") for _ in range(5)]
    merge = OrderedMerge()
    for e in envs[2:]:
        merge.push(e)
    assert merge.release() == []
    assert merge.held == 3
    assert merge.holes(6) == [(1, 2), (6, 6)]


def test_m5_progress_follows_capture_sequence() -> None:
    """M5: per-source progress is the last released capture sequence."""
    f = EnvelopeFactory()
    envs = [f.record("s", source=src) for src in ("lifecycle", "observations", "observations")]
    merge = OrderedMerge()
    for e in envs:
        merge.push(e)
    merge.release()
    assert merge.source_progress() == {"lifecycle": 1, "observations": 2}


@given(
    script=envelope_scripts(max_size=30),
    data=st.data(),
)
def test_any_arrival_order_merges_to_the_same_output(script: list[Envelope], data: st.DataObject) -> None:
    """Any interleaving and arrival order of the same items releases the same output."""
    lost = set(data.draw(st.sets(st.integers(1, max(1, len(script))))))
    items = _as_items(script, lost)
    order = data.draw(st.permutations(items))
    cuts = data.draw(st.lists(st.booleans(), min_size=len(order), max_size=len(order)))
    merge = OrderedMerge()
    out: list[Item] = []
    for item, release_now in zip(order, cuts):
        assert _feed(merge, item) is None
        if release_now:
            out += merge.release()
    out += merge.release()
    assert out == items
    assert merge.released_through == len(script)
    assert merge.held == 0


class MergeMachine(RuleBasedStateMachine):
    """The merge against a model: released output is always the contiguous prefix."""

    def __init__(self) -> None:
        super().__init__()
        f = EnvelopeFactory()
        self.pool = [f.record("s", required=False) for _ in range(12)]
        self.pushed: set[int] = set()
        self.merge = OrderedMerge()
        self.out: list[Item] = []

    @rule(i=st.integers(0, 11), as_gap=st.booleans())
    def push(self, i: int, as_gap: bool) -> None:
        env = self.pool[i]
        item: Item = GapRecord.for_envelope(env, GapReason.DROP_OLDEST) if as_gap else env
        result = _feed(self.merge, item)
        assert (result is not None) == (env.global_sequence in self.pushed)
        self.pushed.add(env.global_sequence)

    @rule()
    def release(self) -> None:
        self.out += self.merge.release()

    @invariant()
    def prefix(self) -> None:
        seqs = [x.global_sequence if isinstance(x, Envelope) else x.first_global for x in self.out]
        assert seqs == list(range(1, len(seqs) + 1))
        assert self.merge.released_through == len(seqs)
        expected_held = len(self.pushed) - len(seqs)
        assert self.merge.held == expected_held


TestMergeMachine = MergeMachine.TestCase
