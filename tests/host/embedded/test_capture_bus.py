"""The capture bus: atomic history-plus-live under a concurrent publisher."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fastsim_contract.values import (
    CapturePlan,
    Envelope,
    ObservationTick,
    PackedLayout,
    PackedValues,
    SampleBlock,
    SourceKind,
)
from fastsim_embedded.host.bus import CaptureBus

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


def test_packed_observation_built_through_slots_equals_the_constructed_values() -> None:
    """The hot path's slot-built envelope sets every slot and carries what the constructors build."""
    for cls, expected in (
        (PackedValues, {"buffer", "layout"}),
        (SampleBlock, {"channels", "values", "channel_sequence"}),
        (ObservationTick, {"capture_sequence", "samples"}),
    ):  # a new field on any of these must be set by publish_observation_packed too
        assert set(vars(cls)["__slots__"]) - {"__weakref__"} == expected, cls.__name__
    assert Envelope._fields == (  # built from its fields in this order by the stampers
        "global_sequence", "source", "generation", "tick", "sim_time_ns", "payload", "portable_size", "source_sequence",
    )
    bus = CaptureBus(CapturePlan(sources=frozenset({"observations"})))
    layout = PackedLayout((("<f8", (3,)), ("<f4", (2,))))
    buffer = np.arange(4, dtype="<f8")
    buffer.flags.writeable = False
    seen: list[Envelope] = []
    bus.subscribe("observations", seen.append)
    got = bus.publish_observation_packed(2, 7, 70, ("a", "b"), buffer, layout, 5)
    block = SampleBlock(("a", "b"), PackedValues(buffer, layout), 5)
    want = Envelope(1, SourceKind.OBSERVATION, 2, 7, 70, ObservationTick(1, block), None, 1)
    assert seen == [got]

    def facts(e: Envelope) -> tuple[object, ...]:
        tick = e.payload
        assert isinstance(tick, ObservationTick)
        assert isinstance(tick.samples, SampleBlock)
        values = tick.samples.values
        assert isinstance(values, PackedValues)
        return (
            e.global_sequence, e.source, e.generation, e.tick, e.sim_time_ns, e.portable_size,
            e.source_sequence, tick.capture_sequence, tick.samples.channels, tick.samples.channel_sequence,
            id(values.buffer), id(values.layout), [v.tolist() for v in values],  # type: ignore[attr-defined]
        )

    assert facts(got) == facts(want)
    with pytest.raises(ValueError, match="buffer has 8 bytes"):
        bus.publish_observation_packed(2, 8, 80, ("a", "b"), buffer[:1], layout, 6)


def test_envelope_keeps_the_frozen_value_semantics() -> None:
    """An Envelope is built by position or keyword, equal only to an equal Envelope, hashable, unordered, frozen."""
    import attrs

    a = Envelope(3, SourceKind.LIFECYCLE, 0, 2, 20, {"event": "x"}, 17, 2)
    b = Envelope(global_sequence=3, source=SourceKind.LIFECYCLE, generation=0, tick=2, sim_time_ns=20,
                 payload={"event": "x"}, portable_size=17, source_sequence=2)
    assert a == b
    assert not a != b  # noqa: SIM202
    assert Envelope(1, SourceKind.LIFECYCLE, 0, 0, 0, None).portable_size is None
    assert Envelope(1, SourceKind.LIFECYCLE, 0, 0, 0, None).source_sequence == 0
    assert a != Envelope(4, SourceKind.LIFECYCLE, 0, 2, 20, {"event": "x"}, 17, 2)
    plain = (3, SourceKind.LIFECYCLE, 0, 2, 20, {"event": "x"}, 17, 2)
    assert a != plain
    assert plain != a
    assert not a == plain  # noqa: SIM201
    assert not plain == a  # noqa: SIM201
    frozen = Envelope(1, SourceKind.LIFECYCLE, 0, 0, 0, None)
    assert hash(frozen) == hash(Envelope(1, SourceKind.LIFECYCLE, 0, 0, 0, None))
    with pytest.raises(TypeError):
        _ = a < b
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.tick = 9  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.extra = 1
    assert repr(frozen).startswith("Envelope(global_sequence=1, source=<SourceKind.LIFECYCLE")
