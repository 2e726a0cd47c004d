"""The fake Core's flow control (rule 8 of ``fake_core``): registered gauges and ``end_tick``.

``Flow`` is one part of :class:`fastsim_record.testing.fake_core.FakeCore`; it owns the
registered gauges, the gauges it gave up on and the count of ticks that waited.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import attrs

from fastsim_contract.protocols import FlowGauge
from fastsim_record.testing.fake_bus import FakeBus

__all__ = ["Flow", "Gauge"]


@attrs.define(eq=False)
class Gauge:
    """One registered flow gauge."""

    flow: Flow
    gauge: FlowGauge

    def close(self) -> None:
        """Stop reading the gauge (idempotent)."""
        with contextlib.suppress(ValueError):
            self.flow.gauges.remove(self)


@attrs.define(eq=False)
class Flow:
    """Unpaced ticks wait while a registered gauge is pressed, at most ``stall_s`` per gauge."""

    bus: FakeBus  # registration is refused once the cut sealed it
    stall_s: float
    done: Callable[[], bool]  # a completion won: stop waiting
    gauges: list[Gauge] = attrs.field(factory=list)
    released: list[FlowGauge] = attrs.field(factory=list)  # gauges given up on after stall_s
    waits: int = 0  # ticks after which ``end_tick`` waited on a pressed gauge

    def register(self, gauge: FlowGauge) -> Gauge:
        """Read ``gauge`` after unpaced ticks (refused after the cut)."""
        registration = Gauge(self, gauge)
        self.bus.before_cut("register_flow_gauge", lambda: self.gauges.append(registration))
        return registration

    def clear(self) -> None:
        """Drop every gauge (the cut)."""
        self.gauges.clear()

    def end_tick(self, *, paced: bool = False) -> float:
        """Rule 8: the end of a tick; the seconds spent waiting on pressed gauges."""
        if paced:
            return 0.0
        started = time.monotonic()
        for registration in list(self.gauges):
            deadline = time.monotonic() + self.stall_s
            if registration.gauge.pressed:
                self.waits += 1
                self.bus.flush()  # BK5: a pending block first, so the consumer can relieve it
            while registration.gauge.pressed and not self.done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    registration.close()
                    self.released.append(registration.gauge)
                    break
                registration.gauge.wait_relieved(min(0.05, remaining))
        return time.monotonic() - started
