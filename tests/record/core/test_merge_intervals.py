"""The merge holds runs and gaps as intervals (issue 26, w26): one entry each, whatever their
length, with exactly the conflicts, releases and holes of one key per sequence (M1-M6)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.core import CapturedRun, LaneName, OrderedMerge
from fastsim_record.core.captured import CapturedItem
from fastsim_record.core.gaps import GapReason, GapRecord


def _item(seq: int) -> CapturedItem:
    return CapturedItem(global_sequence=seq, source="events", capture_sequence=seq, stream="events",
                        lane=LaneName.CRITICAL)


def _run(first: int, last: int) -> CapturedRun:
    return CapturedRun(source="observations", stream="observations", lane=LaneName.NUMERIC, generation=0,
                       first_global=first, last_global=last, first_capture=first, last_capture=last)


def _gap(first: int, last: int) -> GapRecord:
    return GapRecord(stream="events", source="events", lane=LaneName.CRITICAL, reason=GapReason.DROP_OLDEST,
                     generation=0, required=False, first_global=first, last_global=last,
                     first_capture=first, last_capture=last)


def test_a_long_run_is_one_held_entry() -> None:
    """A run of a million records costs the merge one entry, and still counts as its records."""
    merge = OrderedMerge()
    assert merge.push_run(_run(2, 1_000_001)) is None
    assert merge.explain(_gap(1_000_002, 2_000_000)) is None
    assert len(merge._pending) == 2
    assert merge.held == 1_000_001  # the run's envelopes and the gap
    assert merge.holes(2_000_005) == [(1, 1), (2_000_001, 2_000_005)]
    conflict = merge.push(_item(500_000))
    assert conflict is not None
    assert conflict.global_sequence == 500_000
    assert merge.push(_item(1)) is None
    assert [type(e).__name__ for e in merge.release_entries()] == ["CapturedItem", "CapturedRun", "GapRecord"]
    assert merge.next_sequence == 2_000_001
    assert not merge._pending


def _reference(ops: list[tuple[str, int, int]]) -> tuple[list[int | None], list[int]]:
    """One key per sequence (the merge before intervals): each push's conflict (lowest
    sequence already held or released) and the first sequences released, in order."""
    held: dict[int, tuple[int, int]] = {}  # sequence -> the (first, last) of its entry
    nxt = 1
    conflicts: list[int | None] = []
    released: list[int] = []
    for kind, first, last in ops:
        if kind == "release":
            while nxt in held and held[nxt][0] == nxt:
                entry = held[nxt]
                released.append(entry[0])
                for s in range(entry[0], entry[1] + 1):
                    del held[s]
                nxt = entry[1] + 1
            continue
        if first < nxt:
            conflicts.append(first)
            continue
        taken = [s for s in range(first, last + 1) if s in held]
        if taken:
            conflicts.append(first if kind == "gap" else taken[0])
            continue
        conflicts.append(None)
        for s in range(first, last + 1):
            held[s] = (first, last)
    return conflicts, released


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("item"), st.integers(1, 40)).map(lambda t: (t[0], t[1], t[1])),
        st.tuples(st.sampled_from(["run", "gap"]), st.integers(1, 40), st.integers(0, 6)).map(
            lambda t: (t[0], t[1], t[1] + t[2])),
        st.just(("release", 0, 0)),
    ),
    max_size=40,
)


@given(ops=_OPS)
def test_intervals_conflict_and_release_like_one_key_per_sequence(ops: list[tuple[str, int, int]]) -> None:
    """Any mix of items, runs and gaps, pushed and released in any order: the reference's conflicts and output."""
    merge = OrderedMerge()
    conflicts: list[int | None] = []
    released: list[int] = []
    for kind, first, last in ops:
        if kind == "release":
            released.extend(e.global_sequence if isinstance(e, CapturedItem) else e.first_global
                            for e in merge.release_entries())
            continue
        if kind == "item":
            conflict = merge.push(_item(first))
        elif kind == "run":
            conflict = merge.push_run(_run(first, last))
        else:
            conflict = merge.explain(_gap(first, last))
        conflicts.append(None if conflict is None else conflict.global_sequence)
    assert (conflicts, released) == _reference(ops)
    expect = merge.next_sequence
    for first, last in merge.holes(60):
        assert first >= expect
        expect = last + 1


_DRAIN = st.lists(st.tuples(st.sampled_from(["items", "ascending", "run", "gap", "release"]),
                            st.lists(st.integers(1, 40), min_size=1, max_size=6)), max_size=25)


@given(_DRAIN)
def test_push_all_is_each_entry_pushed_in_turn(script: list[tuple[str, list[int]]]) -> None:
    """drive43: ``push_all`` of a drain (items, or items and a last run) gives the conflicts, releases, holes and counts of pushing each entry in turn, its one pass included."""
    one, each = OrderedMerge(), OrderedMerge()
    for kind, numbers in script:
        if kind == "release":
            assert one.release_entries() == each.release_entries()
            continue
        if kind == "gap":
            first = min(numbers)
            assert one.explain(_gap(first, max(numbers))) == each.explain(_gap(first, max(numbers)))
            continue
        if kind != "items":  # a lane drains in ascending order (the one pass's case)
            numbers = sorted(set(numbers))
        entries: list[CapturedItem | CapturedRun] = [_item(s) for s in numbers]
        if kind == "run":  # a drained lane of ticks: its last a run (of one, or wider)
            entries[-1] = _run(numbers[-1], numbers[-1] + numbers[0] % 3)
        expected = [c for c in (each.push(e) if isinstance(e, CapturedItem) else each.push_run(e) for e in entries)
                    if c is not None]
        assert one.push_all(entries) == expected
        assert (one.next_sequence, one.held, one.released_items, one.holes(50)) == (
            each.next_sequence, each.held, each.released_items, each.holes(50))
    assert one.release_entries() == each.release_entries()
    assert one.source_progress() == each.source_progress()


def test_push_all_holds_an_ordered_drain_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """drive43: a drain in ascending order, beside held single sequences (another lane's), is held without a push per entry; a held wider entry, or an entry already held, sends it entry by entry."""
    pushed: list[int] = []
    push = OrderedMerge.push

    def counting(self: OrderedMerge, item: CapturedItem) -> Any:
        pushed.append(item.global_sequence)
        return push(self, item)

    monkeypatch.setattr(OrderedMerge, "push", counting)
    merge = OrderedMerge()
    assert merge.push_all([_item(2), _item(5), _item(8)]) == []
    assert merge.push_all([_item(3), _item(6), _run(9, 9)]) == []  # interleaved; a last run of one
    assert pushed == []
    assert merge.push(_item(1)) is None
    assert [e.global_sequence if isinstance(e, CapturedItem) else e.first_global
            for e in merge.release_entries()] == [1, 2, 3]
    pushed.clear()
    conflicts = merge.push_all([_item(4), _item(5), _item(7)])  # 5 is held: entry by entry, 5 refused
    assert [c.global_sequence for c in conflicts] == [5]
    assert pushed == [4, 5, 7]
    pushed.clear()
    assert merge.push_run(_run(10, 12)) is None  # a wider entry held: entry by entry
    assert merge.push_all([_item(13)]) == []
    assert pushed == [13]
