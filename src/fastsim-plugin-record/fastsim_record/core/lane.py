"""Bounded lanes with non-waiting admission and exact loss accounting.

A lane holds admitted envelopes until the writer worker drains them.  ``try_publish``
answers at once with an ``Admission`` value and never waits.  The pipeline wraps a lane
in a lock; the lane itself is single-threaded state.

Configuration rules (``overload_problem``; ``Lane`` raises ``LanePolicyError``):

| #  | rule                                                                           |
|----|--------------------------------------------------------------------------------|
| L1 | the critical lane is always ``fail_run``                                       |
| L2 | a lossy policy (drop_oldest, drop_newest, degrade_recording) is legal only     |
|    | when every stream in the lane is optional                                      |
| L3 | ``max_items`` and ``max_bytes`` are positive integers                          |

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

A1 (the simulation thread's path) stores only the item and its bytes: ``enqueued`` is
derived, and the high-water mark is taken before each removal and in ``counters``.

Counters always conserve: ``enqueued == dequeued + depth + lost``.  Every lost
envelope is covered by exactly one ``GapRecord`` for the worker (``take_gaps``); a run
of consecutive losses of one stream and generation is one gap (rule G5, ``append_gap``),
so the lane's ``lost`` counter equals the sum of the gaps' counts.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from fastsim_record.core.captured import SIZE_CEILING, CapturedItem, LaneName
from fastsim_record.core.errors import InvalidLimits, LanePolicyError, RuleId
from fastsim_record.core.gaps import GapReason, GapRecord, append_gap

__all__ = [
    "ACCEPTED", "PRESSED", "Admission", "AdmissionOutcome", "AdmissionRule", "Lane", "LaneCounters",
    "LaneSpec", "OverloadPolicy", "overload_problem",
]


class OverloadPolicy(enum.Enum):
    """What a full lane does with the next envelope."""

    FAIL_RUN = "fail_run"
    DROP_OLDEST = "drop_oldest"
    DROP_NEWEST = "drop_newest"
    DEGRADE_RECORDING = "degrade_recording"

    @property
    def lossy(self) -> bool:
        """True for the policies that lose data instead of failing the run."""
        return self is not OverloadPolicy.FAIL_RUN


class AdmissionOutcome(enum.Enum):
    """The answer of ``try_publish``."""

    ACCEPTED = "accepted"  # admitted, nothing lost
    EVICTED = "evicted"  # admitted after dropping the oldest envelope(s)
    DROPPED = "dropped"  # not admitted; lost as an exact gap
    FATAL = "fatal"  # not admitted; a fatal error is latched


class AdmissionRule(RuleId):
    """The admission rules of the module table."""

    OPEN = "A1"
    FATAL_LATCHED = "A2"
    DEGRADED = "A3"
    FULL_FAIL_RUN = "A4"
    FULL_DROP_NEWEST = "A5"
    FULL_EVICT_OLDEST = "A6"
    NEVER_FITS = "A7"
    FULL_DEGRADE = "A8"
    REQUIRED_LOSS = "A9"


@attrs.frozen
class Admission:
    """Decision for one ``try_publish``: outcome, gaps it created, a reason and the rule."""

    outcome: AdmissionOutcome
    gaps: tuple[GapRecord, ...] = ()
    reason: str = ""
    rule: AdmissionRule = AdmissionRule.OPEN  # the admission rule that decided (A1-A9)

    @property
    def admitted(self) -> bool:
        """True when the envelope entered the lane."""
        return self.outcome is AdmissionOutcome.ACCEPTED or self.outcome is AdmissionOutcome.EVICTED

    @property
    def fatal(self) -> bool:
        """True when the lane has latched a fatal error."""
        return self.outcome is AdmissionOutcome.FATAL

    @property
    def required_loss(self) -> bool:
        """True when the refusal is rule A9: a lossy rule would have lost a required envelope."""
        return self.rule is AdmissionRule.REQUIRED_LOSS


#: The one pre-allocated answer for the common case (rule A1).
ACCEPTED = Admission(AdmissionOutcome.ACCEPTED)
#: Rule A1 when the lane then holds at least ``pressure_items`` items or ``pressure_bytes``
#: bytes: admitted, drain soon.
PRESSED = Admission(AdmissionOutcome.ACCEPTED, (), "lane under pressure", AdmissionRule.OPEN)


@attrs.frozen(kw_only=True)
class LaneSpec:
    """A lane's configured limits and overload policy."""

    name: LaneName
    max_items: int
    max_bytes: int
    overload: OverloadPolicy = OverloadPolicy.FAIL_RUN


def overload_problem(spec: LaneSpec, stream_required: Iterable[bool]) -> str | None:
    """Rules L1-L3: a one-line problem with ``spec`` for its streams, or ``None``."""
    if spec.max_items <= 0 or spec.max_bytes <= 0:
        return f"queues.{spec.name.value}: max_items and max_bytes must be positive"
    if not spec.overload.lossy:
        return None
    if spec.name is LaneName.CRITICAL:
        return f"queues.critical.overload: the critical lane is always fail_run, not {spec.overload.value}"
    if any(stream_required):
        return (
            f"queues.{spec.name.value}.overload: {spec.overload.value} is legal only when every "
            f"stream in the {spec.name.value} lane is optional; use fail_run"
        )
    return None


@attrs.frozen
class LaneCounters:
    """A snapshot of one lane's counters for the finalizer summary."""

    lane: LaneName
    capacity_items: int
    capacity_bytes: int
    depth: int
    depth_bytes: int
    high_water: int
    enqueued: int
    dequeued: int
    lost: int
    failures: int
    degradations: int
    degraded: bool
    fatal: str | None


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
        items = self._items
        held = self._bytes + size
        if len(items) < self._admit_items and held <= self._max_bytes:  # A1
            items.append(carrier)
            self._bytes = held
            pressure = self.pressure_items
            if pressure is not None and len(items) >= pressure:
                return PRESSED
            pressure = self.pressure_bytes
            return ACCEPTED if pressure is None or held < pressure else PRESSED
        return self._overload(carrier, self._envelope(carrier), size)

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
                f"{name} lane overflow under fail_run: {len(self._items)}/{self._max_items} items, "
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
        while len(items) - evict >= self._max_items or self._bytes - freed + size > self._max_bytes:
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
        if len(self._items) > self._high_water:
            self._high_water = len(self._items)

    def pop(self) -> CapturedItem | None:
        """Remove and return the oldest admitted envelope, or ``None`` when empty."""
        if not self._items:
            return None
        self._mark_high_water()
        envelope = self._envelope(self._items.popleft())
        self._bytes -= envelope.admission_size
        self._dequeued += 1
        return envelope

    def drain(self, limit: int | None = None) -> list[CapturedItem]:
        """Remove and return up to ``limit`` (default: all) oldest envelopes in order."""
        items = self._items
        n = len(items) if limit is None else min(limit, len(items))
        self._mark_high_water()
        out = [self._envelope(items.popleft()) for _ in range(n)]
        self._bytes -= sum(envelope.admission_size for envelope in out)
        self._dequeued += n
        return out

    def drain_held(self) -> list[Any]:
        """Remove and return everything held, carriers unbuilt (accounting as ``drain()``)."""
        self._mark_high_water()
        out = list(self._items)
        self._items.clear()
        self._bytes = 0
        self._dequeued += len(out)
        return out

    def take_gaps(self) -> list[GapRecord]:
        """Remove and return the gaps of every envelope lost since the last call (coalesced, G5)."""
        gaps = self._gaps
        self._gaps = []
        return gaps

    # -- observation ----------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Envelopes currently held."""
        return len(self._items)

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
        depth = len(self._items)
        return LaneCounters(
            lane=self.spec.name, capacity_items=self._max_items, capacity_bytes=self._max_bytes,
            depth=depth, depth_bytes=self._bytes, high_water=self._high_water,
            enqueued=self._dequeued + depth + self._lost, dequeued=self._dequeued, lost=self._lost,
            failures=self._failures, degradations=self._degradations, degraded=self._degraded,
            fatal=self._fatal,
        )
