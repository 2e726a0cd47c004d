"""Ordered merge of all lanes by global recording sequence.

The worker pushes every drained envelope and every lane gap, in any order, and then
asks for what may be released.  Rules:

| #  | rule                                                                              |
|----|-----------------------------------------------------------------------------------|
| M1 | output order is ascending global sequence, starting at ``first_sequence`` (1)     |
| M2 | an item is released only when every earlier sequence was released or explained   |
|    | by a gap; a gap explaining sequences a..b is released at a and consumes a..b     |
| M3 | a sequence seen twice (released, held, or covered by a gap) is a duplicate: the   |
|    | push returns a ``MergeConflict`` and the item is ignored                          |
| M4 | an unexplained hole is held, never skipped; everything after it waits             |
| M5 | releasing an item advances its source's progress to its capture sequence (a gap:  |
|    | to its last capture sequence); the fence compares progress with the cut           |
| M6 | a ``CapturedRun`` (``push_run``) stands for its items a..b: held at a, it is      |
|    | released in one piece when a is next, like the items in order (M1-M5), by         |
|    | ``release_entries``; ``release`` serves a merge that holds no run                 |

Because of M1-M4, any arrival order of the same items releases the same output.
"""

from __future__ import annotations

import bisect
import operator
from typing import cast

import attrs

from fastsim_record.core.captured import CapturedItem, CapturedRun
from fastsim_record.core.gaps import GapRecord

__all__ = ["MergeConflict", "OrderedMerge"]

_SEQUENCE = operator.attrgetter("global_sequence")
_COVERED = object()  # placeholder for the inner sequences of a multi-sequence gap


@attrs.frozen
class MergeConflict:
    """Rule M3: a duplicate global sequence; the offending item was ignored."""

    global_sequence: int
    reason: str


def _last(entry: object) -> int:
    """The last global sequence an entry held by the merge stands for."""
    if isinstance(entry, CapturedItem):
        return entry.global_sequence
    return cast("CapturedRun | GapRecord", entry).last_global


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class OrderedMerge:
    """Release envelopes and gaps in global-sequence order (rules M1-M6).

    Held entries are intervals: ``_pending`` maps each entry's first global sequence to
    it and ``_starts`` keeps those firsts sorted, so holding a run or a gap of any length
    costs one bisection and one insertion (no key per inner sequence)."""

    first_sequence: int = 1
    _next: int = attrs.field(init=False)
    _pending: dict[int, object] = attrs.field(init=False, factory=dict)
    _starts: list[int] = attrs.field(init=False, factory=list)
    _progress: dict[str, int] = attrs.field(init=False, factory=dict)
    _released: int = attrs.field(init=False, default=0)
    _gaps: int = attrs.field(init=False, default=0)
    _wide: int = attrs.field(init=False, default=0)  # held entries that stand for more than one sequence

    def __attrs_post_init__(self) -> None:
        self._next = self.first_sequence

    def _overlap(self, first: int, last: int) -> int | None:
        """The lowest sequence of ``first .. last`` already released or held, or None."""
        if first < self._next:
            return first
        starts = self._starts
        k = bisect.bisect_right(starts, last)
        if not k:
            return None
        before = starts[k - 1]  # the held entry starting last at or before ``last``
        if before >= first:  # entries start inside the range: the lowest of them
            j = bisect.bisect_left(starts, first)
            if j and _last(self._pending[starts[j - 1]]) >= first:
                return first
            return starts[j]
        return first if _last(self._pending[before]) >= first else None

    def _hold(self, first: int, entry: object) -> None:
        starts = self._starts
        if not starts or first > starts[-1]:  # the usual arrival: in order
            starts.append(first)
        else:
            bisect.insort(starts, first)
        self._pending[first] = entry

    def push(self, envelope: CapturedItem) -> MergeConflict | None:
        """Hold ``envelope`` for release; a ``MergeConflict`` if its sequence repeats."""
        seq = envelope.global_sequence
        if self._overlap(seq, seq) is not None:
            return self._conflict(seq)
        self._hold(seq, envelope)
        return None

    def push_all(self, entries: list[CapturedItem | CapturedRun]) -> list[MergeConflict]:
        """``push`` (an item) or ``push_run`` (a run) of each of ``entries`` in order: the
        conflicts, in order.  One pass for the common drain: items (and, last, a run of
        one: a drained lane of ticks), in ascending global order, none below the next
        sequence or held already, while every held entry stands for one sequence (so
        holding is membership); else entry by entry."""
        n = len(entries)
        k = list(map(type, entries)).count(CapturedItem)
        last = entries[-1] if n else None
        if n and not self._wide and (k == n or (k == n - 1 and last.__class__ is CapturedRun and (
            last.first_global == last.last_global
        ))):
            seqs = list(map(_SEQUENCE, entries[:k]))
            if k < n:
                seqs.append(last.first_global)  # type: ignore[union-attr]
            pending, starts = self._pending, self._starts
            if seqs[0] >= self._next and all(map(operator.lt, seqs, seqs[1:])) and pending.keys().isdisjoint(seqs):
                pending.update(zip(seqs, entries))
                ordered = not starts or seqs[0] > starts[-1]
                starts.extend(seqs)
                if not ordered:
                    starts.sort()  # two ascending runs: one merge pass
                return []
        out = []
        for entry in entries:
            conflict = self.push(entry) if entry.__class__ is CapturedItem else self.push_run(entry)  # type: ignore[arg-type]
            if conflict is not None:
                out.append(conflict)
        return out

    def explain(self, gap: GapRecord) -> MergeConflict | None:
        """Hold ``gap`` so that it explains its global sequences (rule M2)."""
        first = gap.first_global
        if self._overlap(first, gap.last_global) is not None:
            return self._conflict(first)
        self._hold(first, gap)
        self._wide += gap.last_global > first
        return None

    def push_run(self, run: CapturedRun) -> MergeConflict | None:
        """Hold ``run`` for release in one piece (rule M6); a conflict if any of its
        sequences repeats (then the whole run is ignored)."""
        first = run.first_global
        seq = self._overlap(first, run.last_global)
        if seq is not None:
            return self._conflict(seq)
        self._hold(first, run)
        self._wide += run.last_global > first
        return None

    def _conflict(self, seq: int) -> MergeConflict:
        where = "already released" if seq < self._next else "already held"
        return MergeConflict(seq, f"duplicate global sequence {seq} ({where})")

    def release(self) -> list[CapturedItem | GapRecord]:
        """Everything releasable now, in global order (possibly empty), for a merge that
        was never given a run (``TypeError`` if one is due: use ``release_entries``)."""
        out = self.release_entries()
        if any(entry.__class__ is CapturedRun for entry in out):
            raise TypeError("OrderedMerge.release: a run is due; use release_entries()")
        return cast(list[CapturedItem | GapRecord], out)

    def release_entries(self) -> list[CapturedItem | CapturedRun | GapRecord]:
        """Everything releasable now, runs included (M6), in global order (possibly empty)."""
        pending = self._pending
        if self._next not in pending:
            return []
        out: list[CapturedItem | CapturedRun | GapRecord] = []
        progress = self._progress
        nxt = self._next
        pop = pending.pop
        while True:
            item = pop(nxt, None)
            if item is None:
                break
            if item.__class__ is CapturedItem:
                progress[item.source] = item.capture_sequence
                out.append(item)
                nxt += 1
            elif item.__class__ is CapturedRun:  # M6: one entry, one step
                run: CapturedRun = item
                progress[run.source] = run.last_capture
                out.append(run)
                self._released += run.last_global - nxt  # a run counts as its envelopes
                self._wide -= run.last_global > nxt
                nxt = run.last_global + 1
            else:
                gap = cast(GapRecord, item)
                progress[gap.source] = gap.last_capture
                out.append(gap)
                self._wide -= gap.last_global > nxt
                nxt = gap.last_global + 1
                self._gaps += 1
        del self._starts[:len(out)]  # the released entries were the lowest held
        self._released += len(out)
        self._next = nxt
        return out

    # -- observation ----------------------------------------------------------------

    @property
    def next_sequence(self) -> int:
        """The lowest global sequence not yet released."""
        return self._next

    @property
    def released_through(self) -> int:
        """The highest global sequence released (or explained) so far."""
        return self._next - 1

    @property
    def held(self) -> int:
        """Items waiting behind an unexplained hole (rule M4); a run counts its envelopes."""
        return sum(v.count if isinstance(v, CapturedRun) else 1 for v in self._pending.values())

    @property
    def released_items(self) -> int:
        """Envelopes (each of a run's) and gaps released so far."""
        return self._released

    def holes(self, through: int) -> list[tuple[int, int]]:
        """Unexplained, unreleased ranges ``(first, last)`` up to ``through``."""
        out: list[tuple[int, int]] = []
        expect = self._next
        pending = self._pending
        for s in self._starts:
            if s > through:
                break
            if s > expect:
                out.append((expect, s - 1))
            expect = _last(pending[s]) + 1
        if expect <= through:
            out.append((expect, through))
        return out

    def source_progress(self) -> dict[str, int]:
        """Per source, the last capture sequence released (rule M5)."""
        return dict(self._progress)
