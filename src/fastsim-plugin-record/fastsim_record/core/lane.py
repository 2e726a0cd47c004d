"""Bounded lanes with non-waiting admission and exact loss accounting.

A lane holds admitted envelopes until the writer worker drains them.  ``try_publish``
answers at once with an ``Admission`` value and never waits.  The pipeline wraps a lane
in a lock; the lane itself is single-threaded state.  Its configuration rules L1-L3 and
the admission values live in ``admission`` (re-exported here).

Admission rules (``Lane.try_publish``), ``size`` = producer size or 1 MiB ceiling:

| #  | state / condition                          | outcome   | accounting                  |
|----|--------------------------------------------|-----------|-----------------------------|
| A1 | open, depth < max_items, bytes+size <= max | ACCEPTED  | enqueued+1                  |
|    | ... and the lane then holds >= pressure    | PRESSED   | as A1 (drain soon)          |
|    |     items or >= pressure bytes             |           |                             |
| A2 | fatal latched                              | FATAL     | failures+1                  |
| A3 | degraded                                   | DROPPED   | enqueued+1 lost+1 degr.+1   |
| A4 | full, fail_run                             | FATAL     | latch fatal, failures+1     |
| A5 | full, drop_newest                          | DROPPED   | enqueued+1 lost+1, gap      |
| A6 | full, drop_oldest, fits once evicted       | EVICTED   | evict oldest until it fits; |
|    |                                            |           | enqueued+1, lost+n, gaps    |
| A7 | full, drop_oldest, never fits (size > max) | DROPPED   | as A5                       |
| A8 | full, degrade_recording                    | DROPPED   | latch degraded, then A3     |
| A9 | a lossy rule would lose a required envelope| FATAL     | latch fatal, failures+1     |

Carriers (``try_admit``): a lane built with ``materialize`` may hold cheap carriers; the
item is built only on the overload paths (A2-A9, every eviction victim included) and at
the worker's drain (``drain_held`` hands them over unbuilt).  ``materialize`` passes a
``CapturedItem`` through unchanged, and decisions and accounting are the same for both.

Blocks (``try_admit_block``, issue 26): ONE carrier that stands for ``count`` consecutive
ticks of one stream and generation (a Core's ``ObservationBlock``) is charged ``count``
items and ``count * record_bytes`` bytes, so the budgets, the pressure marks, the
high-water mark and every counter stay in ticks and bytes (the lane keeps a held-item
count, ``depth``, instead of the number of carriers).  Only a ``fail_run`` lane takes
blocks: rule A1 as above with ``count`` items; a block that does not fit is rule A4 (FATAL,
latched, ``failures + count``), and after the latch rule A2 refuses it.  ``block_limit``
is the largest block a lane takes: 1 (no blocks) for a lossy policy, else ``BLOCK_CAP``
bounded by its pressure headroom in items and in bytes / record bytes, so a pending block
is never what overruns the lane.  Block carriers leave only through ``drain_held``
(``pop``/``drain`` refuse a lane that holds one).

A1 (the simulation thread's path) stores only the item and its bytes: ``enqueued`` is
derived, and the high-water mark is taken before each removal and in ``counters``.

Counters always conserve: ``enqueued == dequeued + depth + lost``.  Every lost
envelope is covered by exactly one ``GapRecord`` for the worker (``take_gaps``); a run
of consecutive losses of one stream and generation is one gap (rule G5, ``append_gap``),
so the lane's ``lost`` counter equals the sum of the gaps' counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from fastsim_record.core.admission import (
    ACCEPTED,
    PRESSED,
    Admission,
    AdmissionOutcome,
    AdmissionRule,
    LaneCounters,
    LaneSpec,
    OverloadPolicy,
    overload_problem,
)
from fastsim_record.core.captured import SIZE_CEILING, CapturedItem
from fastsim_record.core.errors import InvalidLimits, LanePolicyError
from fastsim_record.core.gaps import GapReason, GapRecord, append_gap

__all__ = [
    "ACCEPTED", "BLOCK_CAP", "PRESSED", "Admission", "AdmissionOutcome", "AdmissionRule", "Lane", "LaneCounters",
    "LaneSpec", "OverloadPolicy", "overload_problem",
]

#: The largest block of ticks any lane takes (``Lane.block_limit``): 240 ticks, two
#: seconds at 120 Hz; the worker's per-block bookkeeping wants >= 40 (the design's figures),
#: and 240 took ~10% off its CPU per record against 120 (``bench_worker.py``, issue 26).
BLOCK_CAP = 240

_FAIL_RUN = OverloadPolicy.FAIL_RUN


def _flags(value: Iterable[bool]) -> tuple[bool, ...]:
    return tuple(bool(v) for v in value)


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class Lane:
    """One bounded lane for ``spec`` whose streams carry ``stream_required`` flags.

    Raises ``InvalidLimits`` or ``LanePolicyError`` when rules L1-L3 fail.
    """

    spec: LaneSpec
    stream_required: tuple[bool, ...] = attrs.field(default=(), converter=_flags)
    materialize: Callable[[Any], CapturedItem] | None = attrs.field(default=None, kw_only=True)
    #: A1 answers PRESSED instead of ACCEPTED once the lane holds this many items.
    pressure_items: int | None = attrs.field(default=None, kw_only=True)
    #: ... or once its admitted bytes reach this many (None: items alone decide).
    pressure_bytes: int | None = attrs.field(default=None, kw_only=True)
    _max_items: int = attrs.field(init=False)
    _max_bytes: int = attrs.field(init=False)
    _policy: OverloadPolicy = attrs.field(init=False)
    _items: deque[Any] = attrs.field(init=False, factory=deque)  # envelopes or carriers
    _held: int = attrs.field(init=False, default=0)  # items held: a block carrier counts its ticks
    _bytes: int = attrs.field(init=False, default=0)
    _admit_items: int = attrs.field(init=False, default=0)  # max_items while open, else 0
    _high_water: int = attrs.field(init=False, default=0)  # as of the last removal (module doc)
    _dequeued: int = attrs.field(init=False, default=0)
    _lost: int = attrs.field(init=False, default=0)
    _failures: int = attrs.field(init=False, default=0)
    _degradations: int = attrs.field(init=False, default=0)
    _degraded: bool = attrs.field(init=False, default=False)
    _fatal: str | None = attrs.field(init=False, default=None)
    _gaps: list[GapRecord] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        spec = self.spec
        problem = overload_problem(spec, self.stream_required)
        if spec.max_items <= 0 or spec.max_bytes <= 0:
            raise InvalidLimits(
                problem or "invalid limits",
                lane=spec.name.value,
                max_items=spec.max_items,
                max_bytes=spec.max_bytes,
            )
        if problem is not None:
            raise LanePolicyError(problem, lane=spec.name.value, overload=spec.overload.value)
        self._max_items = spec.max_items
        self._admit_items = spec.max_items
        self._max_bytes = spec.max_bytes
        self._policy = spec.overload

    # -- capture side ---------------------------------------------------------------

    def try_publish(self, envelope: CapturedItem) -> Admission:
        """Admit ``envelope`` at once or answer why not (rules A1-A9); never waits."""
        return self.try_admit(envelope, envelope.size)

    def try_admit(self, carrier: object, size: int | None) -> Admission:
        """Admit ``carrier`` (an envelope, or a carrier of a lane built with ``materialize``)
        whose envelope's producer size is ``size``; the envelope is built only on overload."""
        if size is None:
            size = SIZE_CEILING
        held = self._bytes + size
        count = self._held + 1
        if count <= self._admit_items and held <= self._max_bytes:  # A1
            self._items.append(carrier)
            self._held = count
            self._bytes = held
            pressure = self.pressure_items
            if pressure is not None and count >= pressure:
                return PRESSED
            pressure = self.pressure_bytes
            return ACCEPTED if pressure is None or held < pressure else PRESSED
        return self._overload(carrier, self._envelope(carrier), size)

    def try_admit_block(self, carrier: object, count: int, size: int) -> Admission:
        """Admit ONE carrier standing for ``count`` ticks of ``size`` bytes in all (module
        doc, Blocks): rule A1 charged ``count`` items, else A4 (or A2 once latched)."""
        held = self._bytes + size
        items = self._held + count
        if items <= self._admit_items and held <= self._max_bytes and self._policy is _FAIL_RUN:  # A1
            self._items.append(carrier)
            self._held = items
            self._bytes = held
            pressure = self.pressure_items
            if pressure is not None and items >= pressure:
                return PRESSED
            pressure = self.pressure_bytes
            return ACCEPTED if pressure is None or held < pressure else PRESSED
        self._failures += count - 1  # every tick of a refused block is one refusal, as per tick
        if self._fatal is not None:  # A2
            self._failures += 1
            return Admission(AdmissionOutcome.FATAL, (), self._fatal, AdmissionRule.FATAL_LATCHED)
        envelope = self._envelope(carrier)
        name = self.spec.name.value
        if self._policy is not _FAIL_RUN:  # never admitted: a lossy lane does not take blocks
            return self._latch(
                f"{name} lane: a block of {count} ticks under {self._policy.value} (stream "
                f"{envelope.stream!r}, global sequence {envelope.global_sequence}); only fail_run takes blocks",
                AdmissionRule.FULL_FAIL_RUN,
            )
        return self._latch(  # A4
            f"{name} lane overflow under fail_run: {self._held}/{self._max_items} items, "
            f"{self._bytes}+{size}/{self._max_bytes} bytes (stream {envelope.stream!r}, block of "
            f"{count} ticks at global sequence {envelope.global_sequence})",
            AdmissionRule.FULL_FAIL_RUN,
        )

    def block_limit(self, record_bytes: int | None) -> int:
        """The largest block this lane takes (module doc, Blocks): 1 for a lossy policy or
        an unknown record size, else ``BLOCK_CAP`` bounded by the pressure headroom -- the
        pressure mark itself and the room above it, in items and in bytes / ``record_bytes``."""
        if self._policy is not _FAIL_RUN or not record_bytes or record_bytes <= 0:
            return 1
        items, nbytes = self._max_items, self._max_bytes  # no mark: the budget itself
        mark = self.pressure_items
        if mark is not None:
            items = min(mark, items - mark + 1)
        mark = self.pressure_bytes
        if mark is not None:
            nbytes = min(mark, nbytes - mark + 1)
        return max(1, min(BLOCK_CAP, items, nbytes // record_bytes))

    def _envelope(self, item: Any) -> CapturedItem:
        return item if self.materialize is None else self.materialize(item)

    def _overload(self, item: object, envelope: CapturedItem, size: int) -> Admission:
        if self._fatal is not None:  # A2
            self._failures += 1
            return Admission(AdmissionOutcome.FATAL, (), self._fatal, AdmissionRule.FATAL_LATCHED)
        if self._degraded:  # A3
            return self._drop_new(envelope, GapReason.DEGRADED, AdmissionRule.DEGRADED)
        policy = self._policy
        name = self.spec.name.value
        if policy is OverloadPolicy.FAIL_RUN:  # A4
            return self._latch(
                f"{name} lane overflow under fail_run: {self._held}/{self._max_items} items, "
                f"{self._bytes}+{size}/{self._max_bytes} bytes (stream {envelope.stream!r}, "
                f"global sequence {envelope.global_sequence})",
                AdmissionRule.FULL_FAIL_RUN,
            )
        if policy is OverloadPolicy.DROP_NEWEST:  # A5
            return self._drop_new(envelope, GapReason.DROP_NEWEST, AdmissionRule.FULL_DROP_NEWEST)
        if policy is OverloadPolicy.DEGRADE_RECORDING:  # A8
            self._degraded = True
            self._admit_items = 0
            return self._drop_new(envelope, GapReason.DEGRADED, AdmissionRule.FULL_DEGRADE)
        # DROP_OLDEST
        if size > self._max_bytes:  # A7
            return self._drop_new(envelope, GapReason.DROP_OLDEST, AdmissionRule.NEVER_FITS)
        items = self._items
        evict = 0
        freed = 0
        while self._held - evict >= self._max_items or self._bytes - freed + size > self._max_bytes:
            victim = self._envelope(items[evict])
            if victim.required:  # A9
                return self._required_loss(victim)
            freed += victim.admission_size
            evict += 1
        self._mark_high_water()
        gaps = []
        for _ in range(evict):
            victim = self._envelope(items.popleft())
            gaps.append(GapRecord.for_envelope(victim, GapReason.DROP_OLDEST))
        self._bytes -= freed
        self._lost += evict
        for gap in gaps:
            append_gap(self._gaps, gap)
        items.append(item)
        self._held += 1 - evict  # a lossy lane holds no block: one carrier, one item
        self._bytes += size
        return Admission(AdmissionOutcome.EVICTED, tuple(gaps), f"{name} lane dropped {evict} oldest", AdmissionRule.FULL_EVICT_OLDEST)

    def _drop_new(self, envelope: CapturedItem, reason: GapReason, rule: AdmissionRule) -> Admission:
        if envelope.required:  # A9
            return self._required_loss(envelope)
        gap = GapRecord.for_envelope(envelope, reason)
        append_gap(self._gaps, gap)
        self._lost += 1
        if reason is GapReason.DEGRADED:
            self._degradations += 1
        return Admission(AdmissionOutcome.DROPPED, (gap,), f"{self.spec.name.value} lane {reason.value}", rule)

    def _required_loss(self, envelope: CapturedItem) -> Admission:
        return self._latch(
            f"{self.spec.name.value} lane overflow would lose required stream "
            f"{envelope.stream!r} at global sequence {envelope.global_sequence}",
            AdmissionRule.REQUIRED_LOSS,
        )

    def _latch(self, reason: str, rule: AdmissionRule) -> Admission:
        self._fatal = reason
        self._admit_items = 0
        self._failures += 1
        return Admission(AdmissionOutcome.FATAL, (), reason, rule)

    # -- worker side ----------------------------------------------------------------

    def _mark_high_water(self) -> None:
        """The depth is about to fall: keep its peak (module doc)."""
        if self._held > self._high_water:
            self._high_water = self._held

    def _no_blocks(self) -> None:
        if self._held != len(self._items):  # the worker's path is drain_held
            raise RuntimeError(f"{self.spec.name.value} lane holds block carriers: drain it with drain_held")

    def pop(self) -> CapturedItem | None:
        """Remove and return the oldest admitted envelope, or ``None`` when empty."""
        if not self._items:
            return None
        self._no_blocks()
        self._mark_high_water()
        envelope = self._envelope(self._items.popleft())
        self._bytes -= envelope.admission_size
        self._held -= 1
        self._dequeued += 1
        return envelope

    def drain(self, limit: int | None = None) -> list[CapturedItem]:
        """Remove and return up to ``limit`` (default: all) oldest envelopes in order."""
        self._no_blocks()
        items = self._items
        n = len(items) if limit is None else min(limit, len(items))
        self._mark_high_water()
        out = [self._envelope(items.popleft()) for _ in range(n)]
        self._bytes -= sum(envelope.admission_size for envelope in out)
        self._held -= n
        self._dequeued += n
        return out

    def drain_held(self) -> list[Any]:
        """Remove and return everything held, carriers unbuilt (accounting as ``drain()``,
        in items: a block carrier counts its ticks)."""
        self._mark_high_water()
        out = list(self._items)
        self._items.clear()
        self._bytes = 0
        self._dequeued += self._held
        self._held = 0
        return out

    def take_gaps(self) -> list[GapRecord]:
        """Remove and return the gaps of every envelope lost since the last call (coalesced, G5)."""
        gaps = self._gaps
        self._gaps = []
        return gaps

    # -- observation ----------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Items currently held (a block carrier counts its ticks)."""
        return self._held

    @property
    def fatal(self) -> str | None:
        """The latched fatal reason, if any: rules A4 and A9 latch it, and from then on
        rule A2 refuses every item with it."""
        return self._fatal

    @property
    def degraded(self) -> bool:
        """True once degrade_recording has stopped admission: rule A8 latches it, and
        from then on rule A3 drops every item as an exact gap."""
        return self._degraded

    def counters(self) -> LaneCounters:
        """A consistent snapshot of the counters."""
        self._mark_high_water()
        depth = self._held
        return LaneCounters(
            lane=self.spec.name, capacity_items=self._max_items, capacity_bytes=self._max_bytes,
            depth=depth, depth_bytes=self._bytes, high_water=self._high_water,
            enqueued=self._dequeued + depth + self._lost, dequeued=self._dequeued, lost=self._lost,
            failures=self._failures, degradations=self._degradations, degraded=self._degraded,
            fatal=self._fatal,
        )
