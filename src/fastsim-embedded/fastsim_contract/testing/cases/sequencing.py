"""Contract cases, sections 1-4: the run context, the global sequence, subscriptions,
immutable envelopes and portable sizes."""

# ruff: noqa: S101 - a contract case states the contract as assertions (check_core refuses -O)
from __future__ import annotations

import json

import attrs

from fastsim_contract.errors import GrantRefused, SubscriptionRefused
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.run import RATE_POLICIES
from fastsim_contract.testing.check import case
from fastsim_contract.testing.kit import (
    ALL_SOURCES,
    CHANNELS,
    NAMES,
    MakeCore,
    Recorder,
    plan,
    raises,
    values_at,
    watch,
)
from fastsim_contract.values import (
    GenerationBarrier,
    ObservationTick,
    SourceKind,
)

# -- 1. the run context --------------------------------------------------------------------


@case
def case_run_context_states_identity_rates_policy_and_live_facts(make: MakeCore) -> None:
    """The run context names the Run and its completion, rates, policies, channels, and follows tick, time and generation."""
    policy = RunOutputPolicy(integrity="sha256", preserve_incomplete=True, publish_incomplete=False)
    driver = make(capture=plan(), channels=CHANNELS, sensor_hz=50.0, output_policy=policy)
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
    driver.tick(values_at(0))
    driver.tick(values_at(1))
    assert (core.run.tick, core.run.sim_time_ns) == (2, 2 * 20_000_000)  # read afresh: may be a snapshot
    driver.reset()
    assert core.run.generation == 1


# -- 2/4. sequencing and subscriptions ---------------------------------------------------


@case
def case_history_replays_items_published_before_subscription(make: MakeCore) -> None:
    """A subscription from sequence 1 replays items published before prepare, then goes live."""
    driver = make(capture=plan())
    driver.publish_lifecycle("run.created")
    driver.publish_plugin_event("early", {"n": 1})
    driver.publish_lifecycle("generation.started", generation=0)
    seen = Recorder()
    driver.core("record").subscribe("lifecycle", seen, from_sequence=1)
    driver.publish_lifecycle("run.started")
    assert [e.payload["event"] for e in seen.items] == ["run.created", "generation.started", "run.started"]  # type: ignore[index]
    assert seen.globals() == [1, 3, 4]
    assert seen.sources() == [1, 2, 3]


@case
def case_global_sequence_is_contiguous_over_captured_sources(make: MakeCore) -> None:
    """Every captured item gets the next global sequence, from 1, without holes."""
    driver = make(capture=plan(), channels=CHANNELS)
    _core, seen = watch(driver, *ALL_SOURCES)
    driver.publish_lifecycle("run.started")
    driver.start_producers()
    driver.issue_control("c1")
    driver.tick(values_at(0))
    driver.publish_plugin_event("marker")
    driver.reset()
    driver.tick(values_at(1))
    assert sorted(seen.globals()) == list(range(1, len(seen.items) + 1))
    assert len(seen.items) == 8  # lifecycle, audit, result, tick, event, barrier, generation.started, tick


@case
def case_unplanned_sources_are_not_sequenced(make: MakeCore) -> None:
    """With no numeric channel selected, ticks allocate no global sequence and need no grant."""
    driver = make(capture=plan(observations=False), channels=CHANNELS)
    _, seen = watch(driver, "lifecycle")
    driver.publish_lifecycle("a")
    driver.tick(values_at(0))
    driver.reset()
    driver.publish_lifecycle("b")
    assert [e.global_sequence for e in seen.items if e.payload["event"] in ("a", "b")] == [1, 3]  # type: ignore[index]
    with raises(GrantRefused):
        driver.core("record").request_grant("observation")
    with raises(SubscriptionRefused):
        driver.core("record").subscribe("observations", Recorder())


@case
def case_envelopes_are_immutable(make: MakeCore) -> None:
    """Envelopes are frozen, event payloads read-only, observation arrays not writeable."""
    driver = make(capture=plan(), channels=CHANNELS)
    _core, seen = watch(driver, "lifecycle", "observations")
    driver.publish_lifecycle("run.started", nested={"k": [1, 2]})
    driver.tick(values_at(0))
    event, tick = seen.items
    with raises(attrs.exceptions.FrozenInstanceError):
        event.global_sequence = 99  # type: ignore[misc]
    with raises(TypeError):
        event.payload["event"] = "changed"  # type: ignore[index]
    with raises(TypeError):
        event.payload["nested"]["k"] = 3  # type: ignore[index]
    json.dumps(event.payload)
    assert isinstance(tick.payload, ObservationTick)
    for sample in tick.payload.samples:
        with raises(ValueError, match="read-only"):
            sample.value[0] = 1.0  # type: ignore[index]


@case
def case_observation_tick_holds_every_selected_channel(make: MakeCore) -> None:
    """One ObservationTick per tick, carrying every selected channel in plan order."""
    driver = make(capture=plan(), channels=CHANNELS)
    _core, seen = watch(driver, "observations", channels=NAMES)
    for k in range(3):
        driver.tick(values_at(k))
    assert len(seen.items) == 3
    for k, envelope in enumerate(seen.items):
        assert envelope.source is SourceKind.OBSERVATION
        assert envelope.tick == k + 1
        payload = envelope.payload
        assert isinstance(payload, ObservationTick)
        assert [s.channel for s in payload.samples] == list(NAMES)
        assert payload.capture_sequence == envelope.source_sequence
        assert float(payload.samples[1].value[0]) == k + 1  # type: ignore[index]


@case
def case_capture_sequence_is_contiguous_over_ticks_and_barriers(make: MakeCore) -> None:
    """Generation barriers take the next capture_sequence; envelopes carry the new generation."""
    driver = make(capture=plan(), channels=CHANNELS)
    _core, seen = watch(driver, "observations")
    driver.tick(values_at(0))
    driver.reset()
    driver.tick(values_at(1))
    driver.tick(values_at(2))
    driver.reset()
    driver.tick(values_at(3))
    assert seen.sources() == [1, 2, 3, 4, 5, 6]
    kinds = [e.source for e in seen.items]
    assert kinds[1] is SourceKind.GENERATION_BARRIER
    assert kinds[4] is SourceKind.GENERATION_BARRIER
    barrier = seen.items[4].payload
    assert isinstance(barrier, GenerationBarrier)
    assert (barrier.generation, barrier.previous) == (2, 1)
    assert [e.generation for e in seen.items] == [0, 1, 1, 1, 2, 2]


@case
def case_observations_need_the_grant_and_the_planned_channels(make: MakeCore) -> None:
    """No grant, or a channel set other than the plan's, is refused."""
    driver = make(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    with raises(SubscriptionRefused):
        core.subscribe("observations", Recorder())
    core.request_grant("observation")
    with raises(SubscriptionRefused):
        core.subscribe("observations", Recorder(), channels=NAMES[:1])
    with raises(GrantRefused):
        core.request_grant("no.such.grant")


@case
def case_control_is_subscribed_before_producers_start(make: MakeCore) -> None:
    """Control subscribed in prepare sees every command; after producers start it is refused."""
    driver = make(capture=plan())
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
    with raises(SubscriptionRefused):
        core.subscribe("control.audit", Recorder())


@case
def case_history_closes_at_the_prepare_boundary(make: MakeCore) -> None:
    """After the boundary a subscription from an already-published sequence is refused."""
    driver = make(capture=plan())
    driver.publish_lifecycle("run.created")
    driver.start_producers()
    with raises(SubscriptionRefused):
        driver.core("late").subscribe("lifecycle", Recorder(), from_sequence=1)


@case
def case_subscription_close_is_idempotent(make: MakeCore) -> None:
    """A closed subscription receives nothing more; closing twice is fine."""
    driver = make(capture=plan())
    seen = Recorder()
    sub = driver.core("record").subscribe("lifecycle", seen)
    driver.publish_lifecycle("a")
    sub.close()
    sub.close()
    driver.publish_lifecycle("b")
    assert len(seen.items) == 1


# -- 3. portable byte size ---------------------------------------------------------------------


@case
def case_portable_size_is_the_canonical_json_length(make: MakeCore) -> None:
    """Lifecycle and plugin-event envelopes carry the byte length of their canonical JSON."""
    driver = make(capture=plan())
    _, seen = watch(driver, "lifecycle", "events")
    driver.publish_lifecycle("run.started", note="héllo")
    driver.publish_plugin_event("marker", {"b": [1, 2], "a": None})
    for envelope in seen.items:
        canonical = json.dumps(envelope.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert envelope.portable_size == len(canonical.encode("utf-8"))


@case
def case_older_core_omits_portable_size(make: MakeCore) -> None:
    """A Core without producer-computed sizes leaves portable_size None (consumer charges 1 MiB)."""
    driver = make(capture=plan(), portable_sizes=False)
    _, seen = watch(driver, "lifecycle")
    driver.publish_lifecycle("run.started")
    assert seen.items[0].portable_size is None

