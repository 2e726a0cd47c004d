"""A carrier converter's pump admits the contract envelopes as carriers; the worker side builds the captured items."""

from __future__ import annotations

import threading

import attrs

from fastsim_contract.values import Envelope, GenerationBarrier, SourceKind
from fastsim_record.adapters.core_binding import EnvelopeConverter
from fastsim_record.core.admission import OverloadPolicy
from fastsim_record.core.captured import CapturedItem, EnvelopeKind, LaneName
from fastsim_record.core.lane import Lane, LaneSpec
from fastsim_record.errors import ContractError
from fastsim_record.pipeline.camera_pump import CameraConverter
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, PressureGauge, Pump
from fastsim_record.ports.sources import CarrierConverter, LaneConverters
from fastsim_record.sources import SOURCES


def _pump() -> tuple[Pump, LaneHandle, Monitor, EnvelopeConverter]:
    handle = LaneHandle(
        Lane(LaneSpec(name=LaneName.CRITICAL, max_items=64, max_bytes=1 << 30), [True]),
        threading.Event(),
    )
    monitor = Monitor(lambda _reason: False)
    convert = EnvelopeConverter("events", "events", LaneName.CRITICAL, True, SOURCES["events"].contract_kinds)
    return Pump("events", convert, handle, monitor), handle, monitor, convert


def _event(seq: int, cap: int, generation: int = 0) -> Envelope:
    return Envelope(seq, SourceKind.PLUGIN_EVENT, generation, cap, cap * 10, {"event": "x"}, 17, cap)


def test_pump_builds_no_core_envelope_and_drain_materializes_the_converted_one() -> None:
    """An ordinary envelope enters the lane as a carrier; drain yields what the converter builds."""
    pump, handle, monitor, convert = _pump()
    items = [_event(1, 1), _event(3, 2)]
    for item in items:
        pump(item)
    assert not any(isinstance(held, CapturedItem) for held in handle.lane._items)
    assert handle.lane.drain() == [convert(item) for item in items]
    assert handle.lane.counters().depth_bytes == 0
    assert monitor.error is None


def test_pump_discontinuity_still_latches_the_rule() -> None:
    """A skipped capture sequence is latched as S2 and not admitted."""
    pump, handle, monitor, _ = _pump()
    pump(_event(1, 1))
    pump(_event(2, 3))
    assert isinstance(monitor.error, ContractError)
    assert handle.lane.depth == 1


def test_converter_build_matches_the_full_conversion_for_barriers() -> None:
    """A barrier converts to a BARRIER core envelope of size 0 through build, as before."""
    convert = EnvelopeConverter(
        "observations", "numeric.tick", LaneName.NUMERIC, True, SOURCES["observations"].contract_kinds, 100
    )
    barrier = Envelope(5, SourceKind.GENERATION_BARRIER, 1, 4, 40, GenerationBarrier(1, 0), None, 3)
    converters = LaneConverters()
    assert converters.register(convert, convert.kinds)
    built = converters.materialize(barrier)
    assert (built.kind, built.size, built.capture_sequence) == (EnvelopeKind.BARRIER, 0, 3)
    assert built == convert(barrier)


def test_pump_wakes_the_worker_at_an_eighth_of_the_lane_bytes() -> None:
    """Byte pressure: events of producer size 17 wake the worker once the lane holds 1/8 of max_bytes."""
    handle = LaneHandle(
        Lane(LaneSpec(name=LaneName.CRITICAL, max_items=4096, max_bytes=8 * 17 * 3), [True]),
        threading.Event(),
    )
    convert = EnvelopeConverter("events", "events", LaneName.CRITICAL, True, SOURCES["events"].contract_kinds)
    pump = Pump("events", convert, handle, Monitor(lambda _reason: False), carries_barriers=False)
    assert (handle.lane.pressure_items, handle.lane.pressure_bytes) == (512, 51)
    pump(_event(1, 1))
    pump(_event(2, 2))
    assert not handle.wake.is_set()  # 34 bytes: below 1/8 of the bytes, far below 1/8 of the items
    pump(_event(3, 3))
    assert handle.wake.is_set()  # 51 bytes


def _marks(gauge: PressureGauge) -> dict[tuple[LaneName, OverloadPolicy], tuple[int | None, int | None]]:
    marks = {}
    for name, overload in (
        (LaneName.NUMERIC, OverloadPolicy.FAIL_RUN), (LaneName.NUMERIC, OverloadPolicy.DROP_OLDEST),
        (LaneName.CRITICAL, OverloadPolicy.FAIL_RUN), (LaneName.MEDIA, OverloadPolicy.FAIL_RUN),
    ):
        lane = Lane(LaneSpec(name=name, max_items=2048, max_bytes=1 << 20, overload=overload), [False])
        LaneHandle(lane, threading.Event(), gauge=gauge)
        marks[name, overload] = (lane.pressure_items, lane.pressure_bytes)
    return marks


def test_lossless_numeric_and_critical_lanes_are_pressed_at_half_their_capacity_once_the_host_has_waited() -> None:
    """Marks at 1/8 until the host waits on the gauge; then the fail_run numeric and critical lanes' are 1/2, the others' stay 1/8."""
    eighth, half = (256, 1 << 17), (1024, 1 << 19)
    gauge = PressureGauge()
    lanes = [Lane(LaneSpec(name=LaneName.NUMERIC, max_items=2048, max_bytes=1 << 20), [False]) for _ in range(2)]
    for lane in lanes:
        LaneHandle(lane, threading.Event(), gauge=gauge)
    before = _marks(gauge)
    assert set(before.values()) == {eighth}
    assert [(lane.pressure_items, lane.pressure_bytes) for lane in lanes] == [eighth, eighth]
    assert not gauge.honoured
    assert gauge.wait_relieved(0.0)  # a host that waits: relieved, so it returns at once
    assert gauge.honoured
    assert [(lane.pressure_items, lane.pressure_bytes) for lane in lanes] == [half, half]
    after = _marks(gauge)  # lanes built after the first wait take the raised mark at once
    assert after.pop((LaneName.NUMERIC, OverloadPolicy.FAIL_RUN)) == half
    assert after.pop((LaneName.CRITICAL, OverloadPolicy.FAIL_RUN)) == half
    assert set(after.values()) == {eighth}


def test_build_through_the_slots_equals_the_constructed_core_envelope() -> None:
    """``build`` fills every slot exactly as the frozen class's ``__init__`` would."""

    convert = EnvelopeConverter("events", "events", LaneName.CRITICAL, False, SOURCES["events"].contract_kinds)
    item = _event(7, 3, generation=2)
    built = convert.build(item)
    expected = CapturedItem(
        global_sequence=7, source="events", capture_sequence=3, stream="events",
        lane=LaneName.CRITICAL, generation=2, tick=3, sim_time_ns=30, required=False,
        size=17, kind=EnvelopeKind.RECORD, channel_sequence=None, payload=item.payload,
    )
    for field in attrs.fields(CapturedItem):
        assert getattr(built, field.name) is getattr(expected, field.name) or (
            getattr(built, field.name) == getattr(expected, field.name)
        ), field.name
    assert built.payload is item.payload
    assert type(built) is CapturedItem


def test_carrier_path_is_chosen_by_the_converter_port_not_its_class() -> None:
    """The Core binding's converter satisfies ``CarrierConverter``; the camera converter does not."""
    convert = EnvelopeConverter("events", "events", LaneName.CRITICAL, True, SOURCES["events"].contract_kinds)
    assert isinstance(convert, CarrierConverter)
    assert not isinstance(CameraConverter({"a": True}), CarrierConverter)
    pump, handle, _, _ = _pump()
    pump(_event(1, 1))
    assert [type(held) for held in handle.lane._items] == [Envelope]


def test_materialize_passes_a_captured_item_through_unchanged() -> None:
    """A lane may hold captured items beside carriers: ``materialize`` returns them as they are."""
    convert = EnvelopeConverter("events", "events", LaneName.CRITICAL, True, SOURCES["events"].contract_kinds)
    item = convert(_event(1, 1))
    converters = LaneConverters()
    assert converters.register(convert, convert.kinds)
    assert converters.materialize(item) is item


def test_the_lane_holds_the_envelope_itself_and_the_pump_leaves_no_tracked_object_per_envelope() -> None:
    """The carrier is the contract envelope: admitting 500 leaves no GC-tracked object behind per envelope."""
    import gc

    pump, handle, monitor, _ = _pump()
    handle.lane.spec = LaneSpec(name=LaneName.CRITICAL, max_items=4096, max_bytes=1 << 30)
    handle.lane._admit_items = 4096
    items = [_event(seq, seq) for seq in range(1, 501)]
    pump(items[0])  # first call: any lazily built state
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_count()[0]
        for item in items[1:]:
            pump(item)
        grown = gc.get_count()[0] - before
    finally:
        if enabled:
            gc.enable()
    assert grown < 5, f"{grown} tracked objects left behind by 499 admissions"
    assert all(held is item for held, item in zip(handle.lane._items, items, strict=True))
    assert monitor.error is None


def test_a_second_converter_of_a_kind_takes_the_full_path_in_the_same_lane() -> None:
    """A lane knows one converter per contract kind: a second pump of that kind admits built items, named right."""
    pump, handle, monitor, _ = _pump()
    other = EnvelopeConverter("events.b", "events.b", LaneName.CRITICAL, True, SOURCES["events"].contract_kinds)
    second = Pump("events.b", other, handle, monitor)
    pump(_event(1, 1))
    second(_event(2, 1))
    assert [type(held) for held in handle.lane._items] == [Envelope, CapturedItem]
    assert [item.source for item in handle.lane.drain()] == ["events", "events.b"]
    assert monitor.error is None


def test_a_lane_handle_refuses_a_lane_that_builds_with_another_function() -> None:
    """The pumps register their converters with the handle: a lane building with anything else is refused."""
    import pytest

    lane = Lane(LaneSpec(name=LaneName.CRITICAL, max_items=4, max_bytes=100), [True], materialize=lambda item: item)
    with pytest.raises(TypeError, match="critical lane"):
        LaneHandle(lane, threading.Event())
