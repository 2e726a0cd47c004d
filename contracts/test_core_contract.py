"""The Core contract suite (``core-contract.md``), run against every implementation."""

from __future__ import annotations

import json
import threading
from typing import cast

import attrs
import numpy as np
import pytest

from contracts.conftest import MakeCore
from contracts.kit import (
    CHANNELS,
    MANDATORY,
    NAMES,
    CommittingFinalizer,
    Recorder,
    ScriptedFinalizer,
    ScriptedGauge,
    plan,
    receipt,
    write_sealed,
)
from fastsim_contract.errors import GrantRefused, LeaseError, SubscriptionRefused, TerminalError
from fastsim_contract.harness import CameraDriver, HarnessOutputPolicy
from fastsim_contract.run import RATE_POLICIES
from fastsim_contract.values import (
    CameraCapture,
    CameraSample,
    CapturePlan,
    CompletionKind,
    CompletionRequest,
    FinalizerRegistrationRequest,
    GenerationBarrier,
    ObservationTick,
    SourceKind,
)


def _values(k: float) -> dict[str, object]:
    return {name: np.full(3, k + i) for i, name in enumerate(NAMES)}


def _register(core: object, component: str, mode: str = "ok", *, required: bool = True, timeout: float = 10.0) -> ScriptedFinalizer:
    finalizer = ScriptedFinalizer(component, mode)
    request = FinalizerRegistrationRequest(component, required, timeout, ("lifecycle",))
    core.register_finalizer(request, finalizer)  # type: ignore[attr-defined]
    return finalizer


# -- 1. the run context --------------------------------------------------------------------


def test_run_context_states_identity_rates_policy_and_live_facts(make_core: MakeCore) -> None:
    """The run context names the Run and its completion, rates, policies, channels, and follows tick, time and generation."""
    policy = HarnessOutputPolicy(integrity="sha256", preserve_incomplete=True, publish_incomplete=False)
    driver = make_core(capture=plan(), channels=CHANNELS, sensor_hz=50.0, output_policy=policy)
    core = driver.core("record")
    run = core.run
    assert isinstance(run.run_id, str)
    assert run.run_id
    assert isinstance(run.completion_id, str)
    assert run.completion_id not in ("", run.run_id)
    assert run.sensor_hz == 50.0
    assert run.rate_policy in RATE_POLICIES
    assert run.physics_hz >= run.sensor_hz
    assert run.output_policy.integrity == "sha256"
    assert (run.output_policy.preserve_incomplete, run.output_policy.publish_incomplete) == (True, False)
    assert tuple(run.channels) == CHANNELS
    assert (run.generation, run.tick) == (0, 0)
    driver.tick(_values(0))
    driver.tick(_values(1))
    assert (core.run.tick, core.run.sim_time_ns) == (2, 2 * 20_000_000)  # read afresh: may be a snapshot
    driver.reset()
    assert core.run.generation == 1


# -- 2/4. sequencing and subscriptions ---------------------------------------------------


def test_history_replays_items_published_before_subscription(make_core: MakeCore) -> None:
    """A subscription from sequence 1 replays items published before prepare, then goes live."""
    driver = make_core(capture=plan())
    driver.publish_lifecycle("run.created")
    driver.publish_plugin_event("early", {"n": 1})
    driver.publish_lifecycle("generation.started", generation=0)
    seen = Recorder()
    driver.core("record").subscribe("lifecycle", seen, from_sequence=1)
    driver.publish_lifecycle("run.started")
    assert [e.payload["event"] for e in seen.items] == ["run.created", "generation.started", "run.started"]  # type: ignore[index]
    assert seen.globals() == [1, 3, 4]
    assert seen.sources() == [1, 2, 3]


def test_global_sequence_is_contiguous_over_captured_sources(make_core: MakeCore) -> None:
    """Every captured item gets the next global sequence, from 1, without holes."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    for source in ("lifecycle", "events", "control.audit", "control.result", "observations"):
        core.subscribe(source, seen)
    driver.publish_lifecycle("run.started")
    driver.start_producers()
    driver.issue_control("c1")
    driver.tick(_values(0))
    driver.publish_plugin_event("marker")
    driver.reset()
    driver.tick(_values(1))
    assert sorted(seen.globals()) == list(range(1, len(seen.items) + 1))
    assert len(seen.items) == 8  # lifecycle, audit, result, tick, event, barrier, generation.started, tick


def test_unplanned_sources_are_not_sequenced(make_core: MakeCore) -> None:
    """With no numeric channel selected, ticks allocate no global sequence and need no grant."""
    driver = make_core(capture=plan(observations=False), channels=CHANNELS)
    seen = Recorder()
    driver.core("record").subscribe("lifecycle", seen)
    driver.publish_lifecycle("a")
    driver.tick(_values(0))
    driver.reset()
    driver.publish_lifecycle("b")
    assert [e.global_sequence for e in seen.items if e.payload["event"] in ("a", "b")] == [1, 3]  # type: ignore[index]
    with pytest.raises(GrantRefused):
        driver.core("record").request_grant("observation")
    with pytest.raises(SubscriptionRefused):
        driver.core("record").subscribe("observations", Recorder())


def test_envelopes_are_immutable(make_core: MakeCore) -> None:
    """Envelopes are frozen, event payloads read-only, observation arrays not writeable."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    core.subscribe("lifecycle", seen)
    core.subscribe("observations", seen)
    driver.publish_lifecycle("run.started", nested={"k": [1, 2]})
    driver.tick(_values(0))
    event, tick = seen.items
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.global_sequence = 99  # type: ignore[misc]
    with pytest.raises(TypeError):
        event.payload["event"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        event.payload["nested"]["k"] = 3  # type: ignore[index]
    json.dumps(event.payload)
    assert isinstance(tick.payload, ObservationTick)
    for sample in tick.payload.samples:
        with pytest.raises(ValueError, match="read-only"):
            sample.value[0] = 1.0  # type: ignore[index]


def test_observation_tick_holds_every_selected_channel(make_core: MakeCore) -> None:
    """One ObservationTick per tick, carrying every selected channel in plan order."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    core.subscribe("observations", seen, channels=NAMES)
    for k in range(3):
        driver.tick(_values(k))
    assert len(seen.items) == 3
    for k, envelope in enumerate(seen.items):
        assert envelope.source is SourceKind.OBSERVATION
        assert envelope.tick == k + 1
        payload = envelope.payload
        assert isinstance(payload, ObservationTick)
        assert [s.channel for s in payload.samples] == list(NAMES)
        assert payload.capture_sequence == envelope.source_sequence
        assert float(payload.samples[1].value[0]) == k + 1  # type: ignore[index]


def test_capture_sequence_is_contiguous_over_ticks_and_barriers(make_core: MakeCore) -> None:
    """Generation barriers take the next capture_sequence; envelopes carry the new generation."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    core.subscribe("observations", seen)
    driver.tick(_values(0))
    driver.reset()
    driver.tick(_values(1))
    driver.tick(_values(2))
    driver.reset()
    driver.tick(_values(3))
    assert seen.sources() == [1, 2, 3, 4, 5, 6]
    kinds = [e.source for e in seen.items]
    assert kinds[1] is SourceKind.GENERATION_BARRIER
    assert kinds[4] is SourceKind.GENERATION_BARRIER
    barrier = seen.items[4].payload
    assert isinstance(barrier, GenerationBarrier)
    assert (barrier.generation, barrier.previous) == (2, 1)
    assert [e.generation for e in seen.items] == [0, 1, 1, 1, 2, 2]


def test_observations_need_the_grant_and_the_planned_channels(make_core: MakeCore) -> None:
    """No grant, or a channel set other than the plan's, is refused."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    with pytest.raises(SubscriptionRefused):
        core.subscribe("observations", Recorder())
    core.request_grant("observation")
    with pytest.raises(SubscriptionRefused):
        core.subscribe("observations", Recorder(), channels=NAMES[:1])
    with pytest.raises(GrantRefused):
        core.request_grant("no.such.grant")


def test_control_is_subscribed_before_producers_start(make_core: MakeCore) -> None:
    """Control subscribed in prepare sees every command; after producers start it is refused."""
    driver = make_core(capture=plan())
    core = driver.core("record")
    audit, result = Recorder(), Recorder()
    core.subscribe("control.audit", audit)
    core.subscribe("control.result", result)
    driver.start_producers()
    driver.issue_control("c1")
    driver.issue_control("c2")
    assert [e.payload["command_id"] for e in audit.items] == ["c1", "c2"]  # type: ignore[index]
    assert [e.payload["command_id"] for e in result.items] == ["c1", "c2"]  # type: ignore[index]
    assert audit.items[0].global_sequence < result.items[0].global_sequence
    with pytest.raises(SubscriptionRefused):
        core.subscribe("control.audit", Recorder())


def test_history_closes_at_the_prepare_boundary(make_core: MakeCore) -> None:
    """After the boundary a subscription from an already-published sequence is refused."""
    driver = make_core(capture=plan())
    driver.publish_lifecycle("run.created")
    driver.start_producers()
    with pytest.raises(SubscriptionRefused):
        driver.core("late").subscribe("lifecycle", Recorder(), from_sequence=1)


def test_subscription_close_is_idempotent(make_core: MakeCore) -> None:
    """A closed subscription receives nothing more; closing twice is fine."""
    driver = make_core(capture=plan())
    seen = Recorder()
    sub = driver.core("record").subscribe("lifecycle", seen)
    driver.publish_lifecycle("a")
    sub.close()
    sub.close()
    driver.publish_lifecycle("b")
    assert len(seen.items) == 1


# -- 3. portable byte size ---------------------------------------------------------------------


def test_portable_size_is_the_canonical_json_length(make_core: MakeCore) -> None:
    """Lifecycle and plugin-event envelopes carry the byte length of their canonical JSON."""
    driver = make_core(capture=plan())
    seen = Recorder()
    driver.core("record").subscribe("lifecycle", seen)
    driver.core("record").subscribe("events", seen)
    driver.publish_lifecycle("run.started", note="héllo")
    driver.publish_plugin_event("marker", {"b": [1, 2], "a": None})
    for envelope in seen.items:
        canonical = json.dumps(envelope.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert envelope.portable_size == len(canonical.encode("utf-8"))


def test_older_core_omits_portable_size(make_core: MakeCore) -> None:
    """A Core without producer-computed sizes leaves portable_size None (consumer charges 1 MiB)."""
    driver = make_core(capture=plan(), portable_sizes=False)
    seen = Recorder()
    driver.core("record").subscribe("lifecycle", seen)
    driver.publish_lifecycle("run.started")
    assert seen.items[0].portable_size is None


# -- 6. terminal coordinator ----------------------------------------------------------------------


def test_first_completion_wins(make_core: MakeCore) -> None:
    """Only the first completion request is accepted; it is the cut's completion."""
    driver = make_core(capture=plan())
    core = driver.core("record")
    first = CompletionRequest(CompletionKind.FAILED, "lane overflow", "record")
    assert core.request_completion(first) is True
    assert core.request_completion(CompletionRequest(CompletionKind.NORMAL, "done", "host")) is False
    finish = driver.finish(CompletionRequest(CompletionKind.CANCELLED, "late", "host"))
    assert finish.cut.completion == first
    assert finish.status == "failed"


def test_the_cut_is_exact(make_core: MakeCore) -> None:
    """The cut names the last global sequence and each source's last sequence."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    core.request_grant("observation")
    seen = Recorder()
    for source in ("lifecycle", "events", "control.audit", "control.result", "observations"):
        core.subscribe(source, seen)
    _register(core, "record")
    driver.start_producers()
    for k in range(4):
        driver.tick(_values(k))
        driver.issue_control(f"c{k}")
    driver.reset()
    driver.publish_plugin_event("marker")
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "done", "host"))
    cut = finish.cut
    assert cut.final_global_sequence == max(seen.globals())
    assert sorted(seen.globals()) == list(range(1, cut.final_global_sequence + 1))
    last: dict[str, int] = {}
    for envelope in seen.items:
        key = "observations" if envelope.source is SourceKind.GENERATION_BARRIER else envelope.source.value
        last[key] = envelope.source_sequence
    assert {k: cut.source_final_sequences.get(k, 0) for k in last} == last
    assert cut.final_generation == 1
    with pytest.raises(TerminalError):
        driver.publish_lifecycle("after.cut")


def test_finalizer_gets_the_cut_and_an_absolute_deadline(make_core: MakeCore) -> None:
    """finalize(cut, deadline) runs once after the cut with a monotonic deadline in the future."""
    import time

    driver = make_core(capture=plan())
    finalizer = _register(driver.core("record"), "record", timeout=5.0)
    before = time.monotonic()
    finish = driver.finish()
    (cut, deadline), = finalizer.cuts
    assert cut == finish.cut
    assert deadline > before
    assert finish.status == "succeeded"
    assert finish.finalizers[0].ok


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (CompletionKind.NORMAL, "succeeded"),
        (CompletionKind.FAILED, "failed"),
        (CompletionKind.CANCELLED, "cancelled"),
        (CompletionKind.STOPPED, "stopped"),
    ],
)
def test_completion_kind_sets_the_run_status(make_core: MakeCore, kind: CompletionKind, status: str) -> None:
    """normal/failed/cancelled/stopped completions end the Run with that status."""
    driver = make_core(capture=plan())
    _register(driver.core("record"), "record")
    finish = driver.finish(CompletionRequest(kind, "why", "host"))
    assert finish.status == status
    assert finish.cut.completion.kind is kind


def test_required_finalizer_failure_fails_a_normal_run(make_core: MakeCore) -> None:
    """A required finalizer's failure fails the Run even though another source won with normal."""
    driver = make_core(capture=plan())
    _register(driver.core("record"), "record", "fail", required=True)
    _register(driver.core("other"), "other", "ok", required=False)
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "duration reached", "host"))
    assert finish.status == "failed"
    assert finish.reason is not None
    assert "record" in finish.reason


def test_optional_finalizer_failure_does_not_fail_the_run(make_core: MakeCore) -> None:
    """An optional finalizer's failure is reported but the Run still succeeds."""
    driver = make_core(capture=plan())
    _register(driver.core("aux"), "aux", "raise", required=False)
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "done", "host"))
    assert finish.status == "succeeded"
    assert not finish.finalizers[0].ok


def test_overrunning_finalizer_is_cancelled_and_fails(make_core: MakeCore) -> None:
    """A finalizer still running at its deadline is cancelled and reported timed out."""
    driver = make_core(capture=plan(), max_finalizer_timeout_s=0.2)
    finalizer = _register(driver.core("record"), "record", "hang", timeout=60.0)
    finish = driver.finish()
    assert finalizer.cancelled.is_set()
    assert finish.finalizers[0].timed_out
    assert finish.status == "failed"


def test_registration_after_the_cut_is_refused(make_core: MakeCore) -> None:
    """The terminal coordinator refuses finalizers once the cut is taken."""
    driver = make_core(capture=plan())
    driver.finish()
    with pytest.raises(TerminalError):
        _register(driver.core("late"), "late")


# -- 7. output leases ---------------------------------------------------------------------------


def _completion_id(driver: object, component: str = "record") -> str:
    cid: str = driver.core(component).run.completion_id  # type: ignore[attr-defined]
    return cid


def test_commit_publishes_the_exact_bytes(make_core: MakeCore) -> None:
    """seal -> exact readback -> confirm -> commit publishes exactly what was written."""
    driver = make_core(capture=plan())
    outputs = driver.core("record").outputs
    data = b"FSR!" * 1000
    lease = write_sealed(outputs, "episode.fsr", data)
    assert driver.artifact("episode.fsr") is None
    readback = outputs.open_readback(lease)
    assert readback.read() == data
    readback.seek(4)
    assert readback.tell() == 4
    readback.close()
    outputs.confirm_validation(readback, receipt(len(data), _completion_id(driver)))
    assert outputs.commit(lease) == "episode.fsr"
    assert driver.artifact("episode.fsr") == data
    assert driver.leftovers("episode.fsr") == ()


def test_confirm_requires_the_exact_readback_lease(make_core: MakeCore) -> None:
    """A superseded, foreign or fake readback lease is refused by confirm_validation."""
    driver = make_core(capture=plan())
    outputs = driver.core("record").outputs
    cid = _completion_id(driver)
    lease = write_sealed(outputs, "a.fsr", b"aaaa")
    other = write_sealed(outputs, "b.fsr", b"bbbb")
    stale = outputs.open_readback(lease)
    current = outputs.open_readback(lease)
    foreign = outputs.open_readback(other)
    with pytest.raises(LeaseError):
        outputs.confirm_validation(stale, receipt(4, cid))
    with pytest.raises(LeaseError):
        outputs.confirm_validation(object(), receipt(4, cid))  # type: ignore[arg-type]
    with pytest.raises(LeaseError):
        outputs.commit(lease)
    outputs.confirm_validation(foreign, receipt(4, cid))
    outputs.confirm_validation(current, receipt(4, cid))
    outputs.commit(lease)
    assert driver.artifact("a.fsr") == b"aaaa"


def test_receipt_must_match_the_sealed_write(make_core: MakeCore) -> None:
    """A receipt with the wrong size, completion or a digest under integrity none is refused."""
    driver = make_core(capture=plan())
    outputs = driver.core("record").outputs
    cid = _completion_id(driver)
    lease = write_sealed(outputs, "a.fsr", b"abc")
    readback = outputs.open_readback(lease)
    for bad in (
        receipt(2, cid),
        receipt(3, "another-completion"),
        receipt(3, cid, content_sha256="00" * 32),
        {"validated_bytes": 3},
    ):
        with pytest.raises(LeaseError):
            outputs.confirm_validation(readback, bad)
    outputs.confirm_validation(readback, receipt(3, cid))


def test_sha256_policy_requires_a_matching_digest(make_core: MakeCore) -> None:
    """Under integrity sha256 the receipt must carry the file's SHA-256."""
    import hashlib

    driver = make_core(capture=plan(), output_policy=HarnessOutputPolicy(integrity="sha256"))
    outputs = driver.core("record").outputs
    cid = _completion_id(driver)
    lease = write_sealed(outputs, "a.fsr", b"abc")
    readback = outputs.open_readback(lease)
    with pytest.raises(LeaseError):
        outputs.confirm_validation(readback, receipt(3, cid))
    outputs.confirm_validation(readback, receipt(3, cid, content_sha256=hashlib.sha256(b"abc").hexdigest()))
    outputs.commit(lease)
    assert driver.artifact("a.fsr") == b"abc"


def test_transaction_steps_out_of_order_are_refused(make_core: MakeCore) -> None:
    """No write after seal, no readback before seal, no path-like names."""
    driver = make_core(capture=plan())
    outputs = driver.core("record").outputs
    lease = outputs.open_write("a.fsr")
    with pytest.raises(LeaseError):
        outputs.open_readback(lease)
    outputs.seal(lease)
    with pytest.raises(LeaseError):
        lease.write(b"more")
    with pytest.raises(LeaseError):
        outputs.seal(lease)
    for name in ("../evil.fsr", "dir/x.fsr", ""):
        with pytest.raises(LeaseError):
            outputs.open_write(name)


def test_abort_never_publishes(make_core: MakeCore) -> None:
    """abort leaves nothing under the final name, is idempotent, and is refused after commit."""
    driver = make_core(capture=plan())
    outputs = driver.core("record").outputs
    lease = write_sealed(outputs, "a.fsr", b"abc")
    outputs.abort(lease)
    outputs.abort(lease)
    assert driver.artifact("a.fsr") is None
    with pytest.raises(LeaseError):
        outputs.commit(lease)
    done = write_sealed(outputs, "b.fsr", b"b")
    readback = outputs.open_readback(done)
    outputs.confirm_validation(readback, receipt(1, _completion_id(driver)))
    outputs.commit(done)
    with pytest.raises(LeaseError):
        outputs.abort(done)
    assert driver.artifact("b.fsr") == b"b"


@pytest.mark.parametrize(
    ("publish", "preserve", "expect"),
    [(True, True, "published"), (False, True, "quarantined"), (False, False, "deleted")],
)
def test_overrun_revokes_the_lease_and_disposes_by_policy(
    make_core: MakeCore, publish: bool, preserve: bool, expect: str
) -> None:
    """After a finalizer overran, Core revokes its lease and disposes the staging file by policy."""
    policy = HarnessOutputPolicy(preserve_incomplete=preserve, publish_incomplete=publish)
    driver = make_core(capture=plan(), max_finalizer_timeout_s=0.2, output_policy=policy)
    core = driver.core("record")
    lease = core.outputs.open_write("a.fsr")
    lease.write(b"partial")
    _register(core, "record", "hang", timeout=60.0)
    finish = driver.finish()
    assert finish.finalizers[0].timed_out
    with pytest.raises(LeaseError):
        lease.write(b"more")
    assert driver.artifact("a.fsr") is None
    leftovers = driver.leftovers("a.fsr")
    if expect == "published":
        assert "a.fsr.incomplete" in leftovers
    elif expect == "quarantined":
        assert leftovers
        assert "a.fsr.incomplete" not in leftovers
    else:
        assert leftovers == ()


def test_a_component_cannot_use_another_components_lease(make_core: MakeCore) -> None:
    """Leases are bound to the component whose Core services opened them."""
    driver = make_core(capture=plan())
    mine, theirs = driver.core("record").outputs, driver.core("other").outputs
    lease = write_sealed(mine, "a.fsr", b"abc")
    with pytest.raises(LeaseError):
        theirs.open_readback(lease)
    readback = mine.open_readback(lease)
    with pytest.raises(LeaseError):
        theirs.confirm_validation(readback, receipt(3, _completion_id(driver)))
    with pytest.raises(LeaseError):
        theirs.abort(lease)
    mine.confirm_validation(readback, receipt(3, _completion_id(driver)))
    with pytest.raises(LeaseError):
        theirs.commit(lease)
    mine.commit(lease)
    assert driver.artifact("a.fsr") == b"abc"


@pytest.mark.parametrize(
    ("kind", "published"),
    [
        (CompletionKind.NORMAL, True),
        (CompletionKind.STOPPED, True),
        (CompletionKind.CANCELLED, True),
        (CompletionKind.FAILED, False),
    ],
)
def test_a_failed_run_never_publishes(make_core: MakeCore, kind: CompletionKind, published: bool) -> None:
    """Once the winning completion is failed, Core refuses commit; other kinds may commit."""
    driver = make_core(capture=plan())
    core = driver.core("record")
    finalizer = CommittingFinalizer("record", core.outputs, _completion_id(driver))
    core.register_finalizer(FinalizerRegistrationRequest("record", True, 10.0, ("lifecycle",)), finalizer)
    finish = driver.finish(CompletionRequest(kind, "why", "host"))
    assert (driver.artifact("final.fsr") is not None) is published
    assert isinstance(finalizer.error, LeaseError) is (not published)
    assert finish.finalizers[0].ok is published


# -- cameras (optional driver capability) ---------------------------------------------------------

CAMERA = CameraCapture(
    alias="overview",
    rgb="sensors.overview.camera.rgb",
    intrinsics="sensors.overview.camera.intrinsics",
    translation="sensors.overview.camera.extrinsics.translation",
    quaternion_xyzw="sensors.overview.camera.extrinsics.quaternion_xyzw",
)


def _camera_driver(make_core: MakeCore) -> CameraDriver:
    driver = make_core(capture=CapturePlan(sources=MANDATORY | {"cameras"}, cameras=(CAMERA,)))
    if not hasattr(driver, "publish_camera"):
        pytest.skip("this Core's driver cannot publish camera samples")
    return cast(CameraDriver, driver)


def test_camera_samples_are_sequenced_per_channel(make_core: MakeCore) -> None:
    """Camera samples carry alias and role, one contiguous sequence per channel, all in the cut."""
    driver = _camera_driver(make_core)
    core = driver.core("record")
    core.request_grant("camera")
    seen = Recorder()
    core.subscribe("cameras", seen)
    frame = np.zeros((4, 6, 3), dtype=np.uint8)
    frame.flags.writeable = False
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


def test_cameras_need_the_grant_and_planned_channels(make_core: MakeCore) -> None:
    """No camera grant, or a camera channel outside the plan, is refused; no cameras, no grant."""
    driver = _camera_driver(make_core)
    core = driver.core("record")
    with pytest.raises(SubscriptionRefused):
        core.subscribe("cameras", Recorder())
    core.request_grant("camera")
    with pytest.raises(SubscriptionRefused):
        core.subscribe("cameras", Recorder(), channels=("sensors.other.camera.rgb",))
    without = make_core(capture=plan())
    with pytest.raises(GrantRefused):
        without.core("record").request_grant("camera")


# -- 10. flow control for unpaced Runs ---------------------------------------------------
def test_an_unpaced_tick_waits_until_a_pressed_gauge_is_relieved(make_core: MakeCore) -> None:
    """FC2/FC3: an unpaced tick waits on a pressed gauge until it is relieved."""
    driver = make_core(capture=plan(), channels=CHANNELS)
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


def test_a_paced_tick_never_reads_a_gauge(make_core: MakeCore) -> None:
    """FC1: a paced tick never calls wait_relieved, however pressed the gauge is."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    gauge.press()
    assert driver.end_tick(paced=True) == 0.0
    assert gauge.waits == 0


def test_a_stalled_gauge_is_released_after_the_stall_bound(make_core: MakeCore) -> None:
    """FC4: a gauge still pressed after the stall bound is released and never waited on again."""
    driver = make_core(capture=plan(), channels=CHANNELS, flow_stall_s=0.3)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    gauge.press()
    waited = driver.end_tick()
    assert 0.25 <= waited < 3.0
    waits = gauge.waits
    assert driver.end_tick() < 0.05  # released: never waited on again in this Run
    assert gauge.waits == waits


def test_a_completion_request_ends_the_wait(make_core: MakeCore) -> None:
    """FC3: a completion request ends a wait on a pressed gauge."""
    driver = make_core(capture=plan(), channels=CHANNELS, flow_stall_s=30.0)
    core = driver.core("record")
    gauge = ScriptedGauge()
    core.register_flow_gauge(gauge)
    gauge.press()
    stop = CompletionRequest(CompletionKind.STOPPED, "operator", "host")
    threading.Timer(0.2, core.request_completion, (stop,)).start()
    assert driver.end_tick() < 5.0


def test_a_closed_gauge_registration_is_never_waited_on(make_core: MakeCore) -> None:
    """Closing the registration (idempotent) stops Core from reading the gauge."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    gauge = ScriptedGauge()
    registration = driver.core("record").register_flow_gauge(gauge)
    registration.close()
    registration.close()  # idempotent
    gauge.press()
    assert driver.end_tick() < 0.05
    assert gauge.waits == 0


def test_flow_gauges_cannot_be_registered_after_the_cut(make_core: MakeCore) -> None:
    """FC6: registration is refused with TerminalError after the cut."""
    driver = make_core(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    gauge = ScriptedGauge()
    core.register_flow_gauge(gauge)
    gauge.press()
    driver.finish()
    with pytest.raises(TerminalError):
        core.register_flow_gauge(ScriptedGauge())
