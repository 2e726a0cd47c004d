"""Flow control for unpaced Runs (contract section 10): the host slows its own loop.

An unpaced Run (the default of ``fsr record``, and how datasets are generated) steps as
fast as the CPU allows and has no wall-clock deadline.  A consumer that cannot keep up
registers a ``FlowGauge``; at the end of every tick of an unpaced Run the host reads
each gauge and, while one is pressed, waits for it to be relieved.  This is the host's
choice about its own loop: no pump ever waits, and a paced Run never reads a gauge.

Rules (``FlowControl.settle``, run on the loop thread after each tick):

    | #   | rule                                                                        |
    |-----|-----------------------------------------------------------------------------|
    | FC1 | a paced Run (``--realtime``) never calls ``settle``: it never waits here     |
    | FC2 | a gauge that is not pressed costs one attribute read per tick                |
    | FC3 | a pressed gauge is waited for in slices of ``WAIT_SLICE_S``; a completion   |
    |     | request ends the wait at the next slice                                     |
    | FC4 | bounded: a gauge still pressed after ``stall_s`` of continuous waiting is   |
    |     | *released*: the host never waits on it again in this Run, and the           |
    |     | consumer's own overload policy decides (a ``fail_run`` lane fails the Run)  |
    | FC5 | a gauge that raises is released too (the error is kept, never propagated)   |
    | FC6 | registration closes at the terminal cut (``TerminalError``)                 |
    | FC7 | before waiting on a pressed gauge the host delivers its pending observation  |
    |     | block (``flush``, BK5), so the consumer can relieve it; reading a gauge that |
    |     | is not pressed (FC2) delivers nothing                                        |
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs

from fastsim_contract.errors import TerminalError
from fastsim_contract.protocols import FlowGauge

__all__ = ["DEFAULT_STALL_S", "WAIT_SLICE_S", "FlowControl", "GaugeRegistration"]

#: FC3: how often a waiting loop looks for a completion request (an operator's Ctrl-C).
WAIT_SLICE_S = 0.05
#: FC4: a consumer that relieves nothing for this long is stalled, not slow.  Well under
#: the finalizer deadline (60 s by default), so a stalled output still ends the Run
#: through the consumer's own overload policy long before that deadline matters.
DEFAULT_STALL_S = 5.0


@attrs.define(eq=False)
class GaugeRegistration:
    """``Subscription`` for one registered gauge."""

    flow: FlowControl
    component: str
    gauge: FlowGauge

    def close(self) -> None:
        """Unregister (idempotent)."""
        self.flow._drop(self)


@attrs.define(eq=False)
class FlowControl:
    """The host's registry of gauges and its waiting rule (the module table)."""

    stall_s: float = DEFAULT_STALL_S
    clock: Callable[[], float] = time.monotonic
    #: components whose gauge was released (FC4/FC5), with why
    released: list[tuple[str, str]] = attrs.field(factory=list)
    waited_s: float = 0.0  # total time the loop waited on consumers
    waits: int = 0  # ticks after which it waited
    #: FC7: the bus's ``flush`` (delivers a pending observation block, ``host.blocks``)
    flush: Callable[[], None] = attrs.field(default=lambda: None, kw_only=True)
    _active: tuple[GaugeRegistration, ...] = attrs.field(init=False, default=())
    _closed: bool = attrs.field(init=False, default=False)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def register(self, gauge: FlowGauge, component: str) -> GaugeRegistration:
        """FC6: add ``gauge``; refused after the terminal cut."""
        registration = GaugeRegistration(self, component, gauge)
        with self._lock:
            if self._closed:
                raise TerminalError(f"register_flow_gauge: {component} after the terminal cut")
            self._active = (*self._active, registration)
        return registration

    def _drop(self, registration: GaugeRegistration) -> None:
        with self._lock:
            self._active = tuple(r for r in self._active if r is not registration)

    def close(self) -> None:
        """The cut: no more registrations, no more waiting."""
        with self._lock:
            self._closed = True
            self._active = ()

    @property
    def active(self) -> bool:
        """Whether any gauge is registered (the loop skips ``settle`` otherwise)."""
        return bool(self._active)

    def settle(self, stop: Callable[[], bool]) -> float:
        """FC2-FC5 after one unpaced tick; the seconds waited."""
        waited = 0.0
        for registration in self._active:
            gauge = registration.gauge
            try:
                if not gauge.pressed:  # FC2
                    continue
                self.flush()  # FC7
                waited += self._wait(registration, stop)
            except Exception as exc:  # FC5: a broken gauge never breaks the Run loop
                self._release(registration, f"gauge failed: {exc!r}")
        if waited:
            self.waited_s += waited
            self.waits += 1
        return waited

    def _wait(self, registration: GaugeRegistration, stop: Callable[[], bool]) -> float:
        clock = self.clock
        started = clock()
        deadline = started + self.stall_s
        gauge = registration.gauge
        while not stop():  # FC3
            remaining = deadline - clock()
            if remaining <= 0:  # FC4
                self._release(registration, f"still pressed after {self.stall_s:g} s of waiting")
                break
            if gauge.wait_relieved(min(WAIT_SLICE_S, remaining)):
                break
        return clock() - started

    def _release(self, registration: GaugeRegistration, why: str) -> None:
        self._drop(registration)
        self.released.append((registration.component, why))
