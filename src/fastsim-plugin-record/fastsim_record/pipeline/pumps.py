"""Pumps: one per selected source, running on Core's publishing thread.

A pump validates one immutable, stamped envelope through its converter port
(``fastsim_record.ports.sources``).  With a ``CarrierConverter`` (the Core binding's) it
calls its lane's non-waiting ``try_admit`` with the contract envelope itself as the
carrier: its converter is registered with the lane (``LaneConverters``) and the writer
worker builds the core ``CapturedItem``, so the simulation thread allocates nothing per
envelope (an allocation there is also where the interpreter's cyclic GC runs: in a
sampled profile half of the pumps' time was collections triggered by the carrier
object and by ``with lock``'s bound methods).
Barriers, discontinuities and plain ``ItemConverter`` objects (cameras) take the full path:
convert, ``SourceContinuity.check``, ``try_publish``.  It does no encoding, compression,
hashing, file access or worker join; the only shared state it touches is its lane
(under the lane's lock) and the worker's wake-up event.

Per envelope (``Pump.__call__``):

    | # | step                                              | on failure              |
    |---|---------------------------------------------------|-------------------------|
    | 1 | cancelled? drop silently                          |                         |
    | 2 | validate (Core binding rules 1-4)                 | latch ContractError     |
    | 3 | continuity (core ``SourceContinuity`` S1-S4)      | latch ContractError     |
    | 4 | ``lane.try_admit`` of the envelope under the lane | FATAL -> latch failure  |
    |   | lock (the worker builds the captured item), taken |                         |
    |   | through pre-bound ``acquire``/``release``         |                         |
    | 5 | wake the worker only under pressure: the lane    |                         |
    |   | holds >= 1/8 of its items or of its bytes (1/2    |                         |
    |   | for a fail_run numeric or critical lane once the  |                         |
    |   | host has waited on the gauge; it                  |                         |
    |   | answers PRESSED),                                 |                         |
    |   | or an item was evicted or refused; then also      |                         |
    |   | press the ``PressureGauge`` (an unpaced host      |                         |
    |   | waits for the worker at the end of the tick)      |                         |

Blocks (issue 26): a pump whose converter is a ``BlockConverter`` of the observation kind
is a ``BlockSink``: ``max_block`` is its lane's ``block_limit`` (1, so no opting in, unless the
lane is ``fail_run``).  When the Core binding subscribes ``blocks`` (it opted in), each
envelope costs one class check more: a block runs rules 1-5 ONCE for its ``k`` ticks
(``validate_block``, ``SourceContinuity.advance_block``, ``Lane.try_admit_block`` charged
``k`` items), and anything else goes to ``__call__``.  A pump that did not opt in is
subscribed itself, so its per-tick path is exactly the one above.  A block admitted as
anything but a plain ACCEPTED (the lane is past its pressure mark) also yields the GIL once
(``time.sleep(0)``) after waking the worker: the per-tick path hands the GIL over on its
own (the lane lock it takes every tick), a block pump takes that lock once per ``k`` ticks,
so without the yield a simulation thread that never waits (a Core without flow control)
could starve the worker into a fail_run overflow.  It never waits on Record's state.

Which contract source kinds a pump accepts and whether its source carries generation
barriers are columns of the source registry (``fastsim_record.sources``); every row
there is wired today: lifecycle, events, control, observations, cameras, render state,
geometry and fluid emissions.
"""

from __future__ import annotations

import threading
from time import sleep as _yield_gil

import attrs

from fastsim_contract.values import Envelope, ObservationBlock, SourceKind
from fastsim_record.core.admission import OverloadPolicy
from fastsim_record.core.captured import LaneName
from fastsim_record.core.generations import SourceContinuity
from fastsim_record.core.lane import ACCEPTED, Admission, Lane
from fastsim_record.errors import ContractError, RecordingFailed, RequiredLossError
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.ports.sources import (
    BlockConverter,
    CarrierConverter,
    Closeable,
    ItemConverter,
    LaneConverters,
)

__all__ = ["HONOURED_PRESSURE_SHARE", "PRESSURE_SHARE", "LaneHandle", "PressureGauge", "Pump"]

#: A pump wakes the worker early only when its lane holds this share of its item or
#: byte capacity; otherwise the worker drains on its own poll.  Waking a thread from the
#: simulation thread on every envelope costs a GIL hand-off per envelope.
PRESSURE_SHARE = 8
#: ... except a lossless (``fail_run``) numeric or critical lane once the host has waited
#: on the gauge (``PressureGauge.wait_relieved``): its mark is then half its capacity.
#: Each wake-up costs the worker ~0.4 ms of cold-started work whatever it drains
#: (``bench_worker``: 3.6 us a record at one 240-tick block a wake, 2.5 us at four), and
#: an unpaced host waits at every mark: at 1/8 the README's unpaced Run woke it ~125
#: times in 36,000 ticks (the numeric lane's 256 ticks), at 1/2 ~31 times; a driven
#: ``FastSimRun-v0`` waited every ~256 steps (the critical lane's 512 command events),
#: at 1/2 about once a second.  A host that waits stops at the end of the tick in which
#: the mark is passed, so the lane holds at most the mark and one tick's items.  A host
#: that never waits (a paced Run, or a Core without flow control) keeps 1/8: the worker
#: may not run for a while after the pump's wake-up (a loaded machine), and 7/8 of the
#: lane stays headroom.
HONOURED_PRESSURE_SHARE = 2

_BARRIER = SourceKind.GENERATION_BARRIER
_BLOCK = ObservationBlock
_HONOURED_LANES = frozenset({LaneName.NUMERIC, LaneName.CRITICAL})
_FAIL_RUN = OverloadPolicy.FAIL_RUN


class PressureGauge:
    """Record's ``FlowGauge`` (contract section 10), one per plugin.

    Pumps press it together with waking the worker (rule 5); the worker relieves it
    after every drain, when the lanes are empty.  An unpaced host that reads it pressed
    at the end of a tick waits for the worker instead of overrunning a lane; a paced
    host never reads it.  The ``Event`` is the pressure: set means relieved; ``honoured``
    records the host's first wait, which raises the marks ``raise_when_honoured`` names.
    """

    __slots__ = ("_honoured", "_raise", "_relieved")

    def __init__(self) -> None:
        self._relieved = threading.Event()
        self._relieved.set()
        self._honoured = False
        #: (lane, items, bytes): marks a lane takes when the host first waits (``honoured``)
        self._raise: list[tuple[Lane, int, int]] = []

    @property
    def honoured(self) -> bool:
        """The host has waited on this gauge: it honours flow control."""
        return self._honoured

    def raise_when_honoured(self, lane: Lane, items: int, nbytes: int) -> None:
        """Give ``lane`` these pressure marks once the host waits on the gauge (at once if
        it already has)."""
        if self._honoured:
            lane.pressure_items, lane.pressure_bytes = items, nbytes
        else:
            self._raise.append((lane, items, nbytes))

    @property
    def pressed(self) -> bool:
        """Read by the host once per unpaced tick."""
        return not self._relieved.is_set()

    def press(self) -> None:
        """A pump saw pressure (rule 5); only the first press takes the Event's lock (every
        admission above a lane's mark answers PRESSED, on the simulation thread)."""
        relieved = self._relieved
        if relieved.is_set():
            relieved.clear()

    def relieve(self) -> None:
        """The worker drained every lane (or ended: never hold the host up)."""
        self._relieved.set()

    def wait_relieved(self, timeout_s: float) -> bool:
        """The host's bounded wait; the first one raises the marks ``raise_when_honoured``
        names (an int store each, read by the pumps under their lane's lock)."""
        if not self._honoured:
            self._honoured = True
            for lane, items, nbytes in self._raise:
                lane.pressure_items, lane.pressure_bytes = items, nbytes
            self._raise.clear()
        return self._relieved.wait(timeout_s)


@attrs.define(eq=False)
class LaneHandle:
    """A core lane shared by pumps (publishing threads) and the worker, with its lock.

    The lane's ``materialize`` is its ``converters``' (installed here when the lane was
    built without one): the carrier converters of the pumps that feed it.
    """

    lane: Lane
    wake: threading.Event
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    gauge: PressureGauge = attrs.field(factory=PressureGauge)  # shared like ``wake``
    converters: LaneConverters = attrs.field(factory=LaneConverters)

    def __attrs_post_init__(self) -> None:
        lane = self.lane
        owner = getattr(lane.materialize, "__self__", None)
        if lane.materialize is None:
            lane.materialize = self.converters.materialize
        elif isinstance(owner, LaneConverters):
            self.converters = owner
        else:  # the pumps register their converters here: the lane must build with them
            raise TypeError(f"{lane.spec.name.value} lane: materialize must be the lane's LaneConverters")
        spec = lane.spec
        if lane.pressure_items is None and lane.pressure_bytes is None and (
            spec.name in _HONOURED_LANES and spec.overload is _FAIL_RUN
        ):  # a host that waits on the gauge gets the higher mark (HONOURED_PRESSURE_SHARE)
            share = HONOURED_PRESSURE_SHARE
            self.gauge.raise_when_honoured(lane, max(1, spec.max_items // share), max(1, spec.max_bytes // share))
        if lane.pressure_items is None:  # the lane answers PRESSED from this depth on
            lane.pressure_items = max(1, spec.max_items // PRESSURE_SHARE)
        if lane.pressure_bytes is None:  # ... or from this many admitted bytes on
            lane.pressure_bytes = max(1, spec.max_bytes // PRESSURE_SHARE)


class Pump:
    """The sink Core calls for one selected source (rules 1-5)."""

    __slots__ = (
        "_acquire", "_advance", "_block", "_cancelled", "_carrier", "_continuity", "_convert", "_gauge", "_lane",
        "_lock", "_monitor", "_release", "_try_admit", "_validate", "_wake",
        "delivered", "name", "subscription",
    )

    def __init__(
        self,
        name: str,
        convert: ItemConverter,
        handle: LaneHandle,
        monitor: Monitor,
        *,
        carries_barriers: bool = False,
    ) -> None:
        self.name = name
        self._convert = convert
        # a carrier converter admits its envelopes as carriers (rule 2 without building the
        # captured item) once the lane knows it; else (a kind another converter holds) the
        # full path
        self._carrier = convert if isinstance(convert, CarrierConverter) and handle.converters.register(
            convert, convert.kinds
        ) else None
        self._validate = None if self._carrier is None else self._carrier.validate
        # the kind first: a runtime Protocol check costs ~20 us, and only the observation pump needs it
        carrier = self._carrier
        self._block = convert if carrier is not None and SourceKind.OBSERVATION in carrier.kinds and (
            isinstance(convert, BlockConverter)
        ) else None
        if self._block is not None:  # module doc, Blocks: the lane decides how large
            self._block.max_block = handle.lane.block_limit(self._block.fixed_size)
        self._continuity = SourceContinuity(name, carries_barriers=carries_barriers)
        self._advance = self._continuity.advance
        self._lane = handle.lane
        self._try_admit = handle.lane.try_admit
        self._lock = handle.lock
        self._acquire = handle.lock.acquire  # bound once: ``with lock`` binds two methods per use
        self._release = handle.lock.release
        self._wake = handle.wake
        self._gauge = handle.gauge
        self._monitor = monitor
        self._cancelled = False
        self.delivered = 0
        self.subscription: Closeable | None = None

    def __call__(self, item: object) -> None:
        """Validate and admit one envelope; never waits, never raises into Core."""
        if self._cancelled:
            return
        validate = self._validate
        if validate is None:  # a plain converter (cameras): build the captured item
            self._admit_envelope(item)
            return
        try:
            size = validate(item)
        except Exception as exc:
            self._capture_failed(exc)
            return
        contract: Envelope = item  # type: ignore[assignment]  # validate checked the class
        if contract.source is _BARRIER or not self._advance(
            contract.global_sequence, contract.source_sequence, contract.generation
        ):  # rare: barriers and discontinuities take the full path
            self._admit_envelope(item)
            return
        self._acquire()
        try:  # the envelope is the carrier: the worker builds the captured item
            admission = self._try_admit(contract, size)
        finally:
            self._release()
        if admission is ACCEPTED:
            self.delivered += 1
            return
        self._admitted(admission)

    @property
    def max_block(self) -> int:
        """The largest block this pump takes (``BlockSink``; 1: it does not opt in)."""
        return 1 if self._block is None else self._block.max_block

    @max_block.setter
    def max_block(self, value: int) -> None:
        if self._block is not None:  # the binding's probe found a Core without blocks: 1
            self._block.max_block = value

    def blocks(self, item: object) -> None:
        """The sink of a subscription that opted into blocks (module doc, Blocks)."""
        block = self._block
        if item.__class__ is not Envelope or item.payload.__class__ is not _BLOCK or block is None:
            self(item)
            return
        if self._cancelled:
            return
        try:
            size = block.validate_block(item)
        except Exception as exc:
            self._capture_failed(exc)
            return
        contract: Envelope = item
        count = len(contract.payload.ticks)  # type: ignore[attr-defined]  # validated: a block
        problem = self._continuity.advance_block(
            contract.global_sequence, contract.source_sequence, count, contract.generation
        )
        if problem is not None:
            self._monitor.latch(ContractError(problem.reason, rule=problem.rule))
            return
        self._acquire()
        try:  # ONE carrier charged its ticks; the worker makes it one run
            admission = self._lane.try_admit_block(contract, count, size)
        finally:
            self._release()
        self.delivered += count - 1
        self._admitted(admission)
        if admission is not ACCEPTED:  # module doc, Blocks: let a waiting worker run
            _yield_gil(0)

    def _admit_envelope(self, item: object) -> None:
        try:
            envelope = self._convert(item)
        except Exception as exc:
            self._capture_failed(exc)
            return
        problem = self._continuity.check(envelope)
        if problem is not None:
            self._monitor.latch(ContractError(problem.reason, rule=problem.rule))
            return
        with self._lock:
            admission = self._lane.try_publish(envelope)
        self._admitted(admission)

    def _capture_failed(self, exc: Exception) -> None:
        """Rule 2's failures: a contract violation latches as itself, anything else as a
        capture failure; neither propagates into Core's thread."""
        if isinstance(exc, ContractError):
            self._monitor.latch(exc)
        else:
            self._monitor.latch(RecordingFailed(f"{self.name}: capture failed: {exc!r}"))

    def _admitted(self, admission: Admission) -> None:
        """Rule 5: anything but a plain ACCEPTED (PRESSED, a loss, a fatal) wakes the worker
        and presses the gauge."""
        self.delivered += 1
        if admission is ACCEPTED:
            return
        if admission.fatal:
            error_type = RequiredLossError if admission.required_loss else RecordingFailed
            self._monitor.latch(error_type(admission.reason, lane=self._lane.spec.name.value))
        if not self._wake.is_set():
            self._wake.set()
        self._gauge.press()

    @property
    def last_capture(self) -> int:
        """The last capture sequence this pump admitted or rejected."""
        return self._continuity.last_capture

    def cancel(self) -> None:
        """Stop admitting and close the subscription (idempotent)."""
        self._cancelled = True
        subscription = self.subscription
        self.subscription = None
        if subscription is not None:
            try:
                subscription.close()
            except Exception as exc:  # a failing close must not hide the original outcome
                self._monitor.latch(ContractError(f"{self.name}: subscription close failed: {exc}"))
