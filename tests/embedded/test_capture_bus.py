"""The capture bus: atomic history-plus-live under a concurrent publisher."""

from __future__ import annotations

import threading

from fastsim_contract.values import CapturePlan, Envelope, SourceKind
from fastsim_embedded.bus import CaptureBus

PLAN = CapturePlan(sources=frozenset({"lifecycle", "events", "control.audit", "control.result"}))


def test_subscribing_during_publication_loses_and_duplicates_nothing() -> None:
    """A subscriber joining mid-stream from sequence 1 sees every item exactly once, in order."""
    bus = CaptureBus(PLAN)
    total = 20_000
    halfway = threading.Event()

    def produce() -> None:
        for i in range(total):
            bus.publish(SourceKind.LIFECYCLE, generation=0, tick=i, sim_time_ns=i, payload={"i": i})
            if i == total // 2:
                halfway.set()

    seen: list[Envelope] = []
    producer = threading.Thread(target=produce)
    producer.start()
    halfway.wait()
    bus.subscribe("lifecycle", seen.append)
    producer.join()
    assert [e.global_sequence for e in seen] == list(range(1, total + 1))


def test_a_raising_sink_does_not_stop_delivery() -> None:
    """One broken subscriber is reported; the others still get every item."""
    errors: list[str] = []
    bus = CaptureBus(PLAN, on_sink_error=lambda stream, exc: errors.append(f"{stream}: {exc}"))

    def broken(_: Envelope) -> None:
        raise RuntimeError("boom")

    seen: list[Envelope] = []
    bus.subscribe("lifecycle", broken)
    bus.subscribe("lifecycle", seen.append)
    bus.publish(SourceKind.LIFECYCLE, generation=0, tick=0, sim_time_ns=0, payload={})
    assert len(seen) == 1
    assert errors == ["lifecycle: boom"]


def test_sources_outside_the_plan_are_not_built_or_sequenced() -> None:
    """Publishing an unplanned source returns None and consumes no global sequence."""
    bus = CaptureBus(PLAN)
    assert bus.publish(SourceKind.OBSERVATION, generation=0, tick=1, sim_time_ns=0, payload=None) is None
    first = bus.publish(SourceKind.LIFECYCLE, generation=0, tick=1, sim_time_ns=0, payload={})
    assert first is not None
    assert first.global_sequence == 1
