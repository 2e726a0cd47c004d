"""Ordered merge: rules M1-M5, arrival-order independence and a stateful model."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from fastsim_record.core import CapturedItem, GapReason, GapRecord, MergeConflict, OrderedMerge
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts

Item = CapturedItem | GapRecord


def _feed(merge: OrderedMerge, item: Item) -> MergeConflict | None:
    return merge.explain(item) if isinstance(item, GapRecord) else merge.push(item)


def _as_items(script: list[CapturedItem], lost: set[int]) -> list[Item]:
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
def test_any_arrival_order_merges_to_the_same_output(script: list[CapturedItem], data: st.DataObject) -> None:
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


POOL = 12


class MergeMachine(RuleBasedStateMachine):
    """The merge against a model of M1-M5: items, multi-sequence gaps, conflicts, holes, progress."""

    def __init__(self) -> None:
        super().__init__()
        f = EnvelopeFactory()
        self.pool = [f.record("s", required=False) for _ in range(POOL)]
        self.items: dict[int, Item] = {}  # first global sequence -> item fed
        self.covered: set[int] = set()
        self.merge = OrderedMerge()
        self.out: list[Item] = []

    def _feed_model(self, item: Item, seqs: range) -> None:
        result = _feed(self.merge, item)
        assert (result is not None) == any(s in self.covered for s in seqs)  # M3
        if result is None:
            self.items[seqs[0]] = item
            self.covered.update(seqs)

    @rule(i=st.integers(0, POOL - 1))
    def push(self, i: int) -> None:
        env = self.pool[i]
        self._feed_model(env, range(env.global_sequence, env.global_sequence + 1))

    @rule(i=st.integers(0, POOL - 1), n=st.integers(1, 4))
    def explain(self, i: int, n: int) -> None:
        last = min(i + n, POOL) - 1
        gap = attrs.evolve(GapRecord.for_envelope(self.pool[i], GapReason.DROP_OLDEST),
                           last_global=last + 1, last_capture=last + 1)
        self._feed_model(gap, gap.global_sequences)

    @rule()
    def release(self) -> None:
        self.out += self.merge.release()
        frontier = 1
        while frontier in self.items:  # M2: a gap consumes its whole range
            item = self.items[frontier]
            frontier = (item.last_global if isinstance(item, GapRecord) else item.global_sequence) + 1
        assert self.merge.released_through == frontier - 1

    @invariant()
    def released_output_is_the_contiguous_prefix(self) -> None:
        expect, seen = 1, []
        for x in self.out:  # M1, M2, M4
            first = x.global_sequence if isinstance(x, CapturedItem) else x.first_global
            assert first == expect
            assert x is self.items[first]
            seen.append(first)
            expect = (x.last_global if isinstance(x, GapRecord) else first) + 1
        through = expect - 1
        assert self.merge.released_through == through
        assert self.merge.held == sum(1 for s in self.items if s > through)
        missing = [s for s in range(through + 1, POOL + 1) if s not in self.covered]
        holes = self.merge.holes(POOL)
        assert [s for a, b in holes for s in range(a, b + 1)] == missing
        if self.out:  # M5: progress is the last released capture sequence
            assert self.merge.source_progress() == {"observations": through}


TestMergeMachine = MergeMachine.TestCase
