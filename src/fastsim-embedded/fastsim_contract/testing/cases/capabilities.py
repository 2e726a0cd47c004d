"""Contract cases for optional capabilities and flow control: cameras (section 2),
render-side sources and grants (sections 5 and 7), and unpaced flow control (section 10)."""

# ruff: noqa: S101 - a contract case states the contract as assertions (check_core refuses -O)
from __future__ import annotations

import threading
from typing import Any, cast

import numpy as np

from fastsim_contract.errors import GrantRefused, SubscriptionRefused, TerminalError
from fastsim_contract.harness import CameraDriver, RenderDriver
from fastsim_contract.testing.check import case
from fastsim_contract.testing.kit import (
    CHANNELS,
    MANDATORY,
    NAMES,
    MakeCore,
    Recorder,
    ScriptedGauge,
    Skip,
    plan,
    raises,
    values_at,
)
from fastsim_contract.values import (
    CameraCapture,
    CameraSample,
    CapturePlan,
    CompletionKind,
    CompletionRequest,
    ObservationTick,
    SourceKind,
)
from fastsim_recording_format.encoding import readonly

CAMERA = CameraCapture(
    alias="overview",
    rgb="sensors.overview.camera.rgb",
    intrinsics="sensors.overview.camera.intrinsics",
    translation="sensors.overview.camera.extrinsics.translation",
    quaternion_xyzw="sensors.overview.camera.extrinsics.quaternion_xyzw",
)


def _camera_driver(make: MakeCore) -> CameraDriver:
    driver = make(capture=CapturePlan(sources=MANDATORY | {"cameras"}, cameras=(CAMERA,)))
    if not hasattr(driver, "publish_camera"):
        raise Skip("this Core's driver cannot publish camera samples")
    return cast(CameraDriver, driver)


@case
def case_camera_samples_are_sequenced_per_channel(make: MakeCore) -> None:
    """Camera samples carry alias and role, one contiguous sequence per channel, all in the cut."""
    driver = _camera_driver(make)
    core = driver.core("record")
    core.request_grant("camera")
    seen = Recorder()
    core.subscribe("cameras", seen)
    frame = readonly(np.zeros((4, 6, 3), dtype=np.uint8))
    for _ in range(3):
        driver.publish_camera(CAMERA.rgb, frame, "d1")
        driver.publish_camera(CAMERA.translation, np.zeros(3), "d1")
        driver.publish_camera(CAMERA.intrinsics, np.eye(3), "d1", {"model": "pinhole"})
    assert sorted(seen.globals()) == list(range(1, 10))
    by_role: dict[str, list[int]] = {}
    for envelope in seen.items:
        sample = envelope.payload
        assert isinstance(sample, CameraSample)
        assert sample.camera == "overview"
        by_role.setdefault(sample.role, []).append(envelope.source_sequence)
    assert by_role == {"rgb": [1, 2, 3], "translation": [1, 2, 3], "intrinsics": [1, 2, 3]}
    finish = driver.finish()
    assert finish.cut.source_final_sequences["cameras.overview.rgb"] == 3
    assert finish.cut.source_final_sequences["cameras.overview.intrinsics"] == 3


@case
def case_cameras_need_the_grant_and_planned_channels(make: MakeCore) -> None:
    """No camera grant, or a camera channel outside the plan, is refused; no cameras, no grant."""
    driver = _camera_driver(make)
    core = driver.core("record")
    with raises(SubscriptionRefused):
        core.subscribe("cameras", Recorder())
    core.request_grant("camera")
    with raises(SubscriptionRefused):
        core.subscribe("cameras", Recorder(), channels=("sensors.other.camera.rgb",))
    without = make(capture=plan())
    with raises(GrantRefused):
        without.core("record").request_grant("camera")


# -- 5 and 7. grants, channel order, render-side sources ------------------------------------

RENDER_SOURCES = ("render.state", "geometry", "fluid.emissions")
RENDER_PLAN = CapturePlan(
    sources=MANDATORY | set(RENDER_SOURCES), render_state_hz=30.0, geometry_hz=10.0
)
FLUID = frozenset({"fluid.audit"})


def _render_driver(make: MakeCore, **spec: Any) -> RenderDriver:
    driver = make(**spec)
    if not hasattr(driver, "publish_render"):
        raise Skip("this Core's driver cannot publish render-side items")
    return cast(RenderDriver, driver)


def _pose(k: float) -> dict[str, object]:
    position = readonly(np.full(3, k))
    return {"rigid/box/position": position}


@case
def case_the_write_lease_grant_is_always_given(make: MakeCore) -> None:
    """output.write_lease is granted whatever the plan selects; an unknown grant is refused."""
    for capture in (plan(), plan(observations=False), RENDER_PLAN):
        core = make(capture=capture, channels=CHANNELS).core("record")
        core.request_grant("output.write_lease")
        with raises(GrantRefused):
            core.request_grant("no.such.grant")


@case
def case_render_grants_follow_the_plan(make: MakeCore) -> None:
    """render.state and scene.geometry@2 are granted only when the plan enables each of them."""
    enabled = make(capture=RENDER_PLAN, services=FLUID).core("record")
    enabled.request_grant("render.state")
    enabled.request_grant("scene.geometry@2")
    disabled = make(capture=plan()).core("record")
    for grant in ("render.state", "scene.geometry@2"):
        with raises(GrantRefused):
            disabled.request_grant(grant)
    state_only = CapturePlan(sources=MANDATORY | {"render.state"}, render_state_hz=30.0)
    core = make(capture=state_only).core("record")
    core.request_grant("render.state")
    with raises(GrantRefused):
        core.request_grant("scene.geometry@2")


@case
def case_observation_channels_are_subscribed_in_plan_order(make: MakeCore) -> None:
    """A subscription naming the planned channels in another order is refused; the plan's order is accepted."""
    driver = make(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    with raises(SubscriptionRefused):
        core.subscribe("observations", Recorder(), channels=tuple(reversed(NAMES)))
    core.subscribe("observations", Recorder(), channels=NAMES)


@case
def case_ticks_follow_the_plan_order_not_the_scene_order(make: MakeCore) -> None:
    """A tick carries the plan's channels in the plan's order, whatever order the scene declares."""
    backwards = tuple(reversed(NAMES))
    capture = CapturePlan(sources=MANDATORY | {"observations"}, observation_channels=backwards)
    driver = make(capture=capture, channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    core.subscribe("observations", seen, channels=backwards)
    values = values_at(0)
    driver.tick(values)
    (envelope,) = seen.items
    tick = envelope.payload
    assert isinstance(tick, ObservationTick)
    assert [s.channel for s in tick.samples] == list(backwards), [s.channel for s in tick.samples]
    for sample in tick.samples:
        assert np.array_equal(sample.value, values[sample.channel]), sample.channel  # type: ignore[arg-type]


@case
def case_planned_render_sources_can_be_subscribed(make: MakeCore) -> None:
    """render.state, geometry and fluid.emissions in the plan are subscribable sources (no driver capability needed)."""
    core = make(capture=RENDER_PLAN, services=FLUID).core("record")
    for source in RENDER_SOURCES:
        core.subscribe(source, Recorder()).close()


@case
def case_render_sources_are_sequenced_and_read_only(make: MakeCore) -> None:
    """render.state, geometry and fluid.emissions take global and per-source sequences, are read-only and are in the cut."""
    driver = _render_driver(make, capture=RENDER_PLAN, services=FLUID)
    core = driver.core("record")
    assert "fluid.audit" in core.run.services
    seen = Recorder()
    for source in ("lifecycle", *RENDER_SOURCES):
        core.subscribe(source, seen)
    driver.publish_lifecycle("run.started")
    driver.publish_render("render.state", _pose(0))
    driver.publish_render("geometry", {"transforms": (("box", 0.0),)})
    driver.publish_render("fluid.emissions", {"accepted": 3, "refused": 0})
    driver.publish_render("render.state", _pose(1))
    assert seen.globals() == [1, 2, 3, 4, 5], seen.globals()
    kinds = [e.source for e in seen.items[1:]]
    expected = [SourceKind.RENDER_STATE, SourceKind.GEOMETRY, SourceKind.FLUID_EMISSION, SourceKind.RENDER_STATE]
    assert kinds == expected, kinds
    assert seen.sources()[1:] == [1, 1, 1, 2]
    for envelope in seen.items[1:]:
        with raises(TypeError):
            envelope.payload["added"] = 1  # type: ignore[index]
    finals = driver.finish().cut.source_final_sequences
    assert {s: finals.get(s, 0) for s in RENDER_SOURCES} == {"render.state": 2, "geometry": 1, "fluid.emissions": 1}


@case
def case_render_sources_outside_the_plan_are_refused_and_not_sequenced(make: MakeCore) -> None:
    """Without render sources in the plan, subscribing is refused and publishing allocates no sequence."""
    driver = _render_driver(make, capture=plan(observations=False))
    core = driver.core("record")
    for source in RENDER_SOURCES:
        with raises(SubscriptionRefused):
            core.subscribe(source, Recorder())
    seen = Recorder()
    core.subscribe("lifecycle", seen)
    driver.publish_lifecycle("a")
    for source in RENDER_SOURCES:
        assert driver.publish_render(source, _pose(0)) is None, source
    driver.publish_lifecycle("b")
    assert seen.globals() == [1, 2], seen.globals()


# -- 10. flow control for unpaced Runs ---------------------------------------------------
@case
def case_an_unpaced_tick_waits_until_a_pressed_gauge_is_relieved(make: MakeCore) -> None:
    """FC2/FC3: an unpaced tick waits on a pressed gauge until it is relieved."""
    driver = make(capture=plan(), channels=CHANNELS)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    assert driver.end_tick() < 0.05  # not pressed: no wait
    assert gauge.waits == 0
    gauge.press()
    threading.Timer(0.2, gauge.relieve).start()
    waited = driver.end_tick()
    assert 0.15 <= waited < 2.0
    assert gauge.waits >= 1
    assert not gauge.pressed


@case
def case_a_paced_tick_never_reads_a_gauge(make: MakeCore) -> None:
    """FC1: a paced tick never calls wait_relieved, however pressed the gauge is."""
    driver = make(capture=plan(), channels=CHANNELS)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    gauge.press()
    assert driver.end_tick(paced=True) == 0.0
    assert gauge.waits == 0


@case
def case_a_stalled_gauge_is_released_after_the_stall_bound(make: MakeCore) -> None:
    """FC4: a gauge still pressed after the stall bound is released and never waited on again."""
    driver = make(capture=plan(), channels=CHANNELS, flow_stall_s=0.3)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    gauge.press()
    waited = driver.end_tick()
    assert 0.25 <= waited < 3.0
    waits = gauge.waits
    assert driver.end_tick() < 0.05  # released: never waited on again in this Run
    assert gauge.waits == waits


@case
def case_a_completion_request_ends_the_wait(make: MakeCore) -> None:
    """FC3: a completion request ends a wait on a pressed gauge."""
    driver = make(capture=plan(), channels=CHANNELS, flow_stall_s=30.0)
    core = driver.core("record")
    gauge = ScriptedGauge()
    core.register_flow_gauge(gauge)
    gauge.press()
    stop = CompletionRequest(CompletionKind.STOPPED, "operator", "host")
    threading.Timer(0.2, core.request_completion, (stop,)).start()
    assert driver.end_tick() < 5.0


@case
def case_a_closed_gauge_registration_is_never_waited_on(make: MakeCore) -> None:
    """Closing the registration (idempotent) stops Core from reading the gauge."""
    driver = make(capture=plan(), channels=CHANNELS)
    gauge = ScriptedGauge()
    registration = driver.core("record").register_flow_gauge(gauge)
    registration.close()
    registration.close()  # idempotent
    gauge.press()
    assert driver.end_tick() < 0.05
    assert gauge.waits == 0


@case
def case_flow_gauges_cannot_be_registered_after_the_cut(make: MakeCore) -> None:
    """FC6: registration is refused with TerminalError after the cut."""
    driver = make(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    gauge = ScriptedGauge()
    core.register_flow_gauge(gauge)
    gauge.press()
    driver.finish()
    with raises(TerminalError):
        core.register_flow_gauge(ScriptedGauge())
