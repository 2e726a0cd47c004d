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

from collections import deque
from typing import cast

import attrs

from fastsim_record.core.captured import CapturedItem, CapturedRun
from fastsim_record.core.gaps import GapRecord

__all__ = ["MergeConflict", "OrderedMerge"]

_COVERED = object()  # placeholder for the inner sequences of a multi-sequence gap


@attrs.frozen
class MergeConflict:
    """Rule M3: a duplicate global sequence; the offending item was ignored."""

    global_sequence: int
    reason: str


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class OrderedMerge:
    """Release envelopes and gaps in global-sequence order (rules M1-M5)."""

    first_sequence: int = 1
    _next: int = attrs.field(init=False)
    _pending: dict[int, object] = attrs.field(init=False, factory=dict)
    _progress: dict[str, int] = attrs.field(init=False, factory=dict)
    _released: int = attrs.field(init=False, default=0)
    _gaps: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._next = self.first_sequence

    def push(self, envelope: CapturedItem) -> MergeConflict | None:
        """Hold ``envelope`` for release; a ``MergeConflict`` if its sequence repeats."""
        seq = envelope.global_sequence
        if seq < self._next or seq in self._pending:
            return self._conflict(seq)
        self._pending[seq] = envelope
        return None

    def explain(self, gap: GapRecord) -> MergeConflict | None:
        """Hold ``gap`` so that it explains its global sequences (rule M2)."""
        first, last = gap.first_global, gap.last_global
        pending = self._pending
        if first < self._next or any(s in pending for s in range(first, last + 1)):
            return self._conflict(first)
        pending[first] = gap
        for s in range(first + 1, last + 1):
            pending[s] = _COVERED
        return None

    def push_run(self, run: CapturedRun) -> MergeConflict | None:
        """Hold ``run`` for release in one piece (rule M6); a conflict if any of its
        sequences repeats (then the whole run is ignored)."""
        first, last = run.first_global, run.last_global
        pending = self._pending
        if first < self._next or not pending.keys().isdisjoint(range(first, last + 1)):
            seq = first if first < self._next else min(pending.keys() & set(range(first, last + 1)))
            return self._conflict(seq)
        pending[first] = run
        if last > first:
            pending.update(dict.fromkeys(range(first + 1, last + 1), _COVERED))
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
            elif item.__class__ is CapturedRun:  # M6
                run: CapturedRun = item
                progress[run.source] = run.last_capture
                out.append(run)
                if run.last_global > nxt:
                    deque(map(pending.__delitem__, range(nxt + 1, run.last_global + 1)), maxlen=0)
                self._released += run.last_global - nxt  # a run counts as its envelopes
                nxt = run.last_global + 1
            else:
                gap = cast(GapRecord, item)
                progress[gap.source] = gap.last_capture
                out.append(gap)
                for s in range(nxt + 1, gap.last_global + 1):
                    del pending[s]
                nxt = gap.last_global + 1
                self._gaps += 1
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
        counts = [v.count if isinstance(v, CapturedRun) else 1 for v in self._pending.values() if v is not _COVERED]
        return sum(counts)

    @property
    def released_items(self) -> int:
        """Envelopes (each of a run's) and gaps released so far."""
        return self._released

    def holes(self, through: int) -> list[tuple[int, int]]:
        """Unexplained, unreleased ranges ``(first, last)`` up to ``through``."""
        out: list[tuple[int, int]] = []
        expect = self._next
        for s in sorted(k for k in self._pending if k <= through):
            if s > expect:
                out.append((expect, s - 1))
            expect = s + 1
        if expect <= through:
            out.append((expect, through))
        return out

    def source_progress(self) -> dict[str, int]:
        """Per source, the last capture sequence released (rule M5)."""
        return dict(self._progress)
