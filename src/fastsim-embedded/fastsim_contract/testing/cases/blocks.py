"""Contract cases, section 4, rules BK1-BK8: observation blocks for a subscriber that
opted in (``subscribe("observations", sink, max_block=k)``).

Every case holds for a Core that ignores ``max_block`` and delivers per tick: each
compares what a subscriber that opted in reconstructs with ``ObservationBlock.tick(i)``
(``kit.per_tick``) with what the per-tick form delivers, and checks the shape of every
block that does arrive (``_check_blocks``).  BK4 (the paced age bound) and BK8 (a raising
sink) are the embedded host's own tests: the driver has no paced loop, and a Core's
handling of a raising sink is outside this suite.
"""

# ruff: noqa: S101 - a contract case states the contract as assertions (check_core refuses -O)
from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import cast

import numpy as np

from fastsim_contract.harness import CameraDriver, CoreDriver
from fastsim_contract.testing.cases.capabilities import CAMERA
from fastsim_contract.testing.check import case
from fastsim_contract.testing.kit import (
    ALL_SOURCES,
    CHANNELS,
    MANDATORY,
    NAMES,
    MakeCore,
    Recorder,
    ScriptedGauge,
    fingerprint,
    per_tick,
    plan,
    values_at,
)
from fastsim_contract.values import (
    CapturePlan,
    Envelope,
    FinalizerRegistrationRequest,
    FinalizerResult,
    ObservationBlock,
    SourceKind,
    TerminalSemanticCut,
)

_EVENTS = ALL_SOURCES[:-1]  # lifecycle, events, control.audit, control.result


def _observe(driver: CoreDriver, max_block: int, seen: Recorder, *, from_sequence: int = 1) -> None:
    core = driver.core("record")
    core.request_grant("observation")
    core.subscribe("observations", seen, from_sequence=from_sequence, max_block=max_block)


def _check_blocks(items: Sequence[Envelope], max_block: int) -> None:
    """Every block delivered is one envelope of the first tick's stamp, at most
    ``max_block`` ticks of read-only arrays; a subscriber that did not opt in gets none."""
    for envelope in items:
        block = envelope.payload
        if not isinstance(block, ObservationBlock):
            continue
        k = len(block)
        assert max_block > 1, "a block reached a subscriber that did not opt in"
        assert 1 <= k <= max_block, f"a block of {k} ticks for max_block={max_block}"
        assert envelope.source is SourceKind.OBSERVATION
        assert envelope.source_sequence == block.capture_sequence
        assert (envelope.tick, envelope.sim_time_ns) == (int(block.ticks[0]), int(block.sim_time_ns[0]))
        assert envelope.portable_size is None
        assert block.buffer.shape == (k, block.layout.nbytes)
        assert block.buffer.flags.c_contiguous
        for array in (block.buffer, block.ticks, block.sim_time_ns):
            assert not array.flags.writeable, "a delivered block is writeable"
        assert bool((np.diff(block.sim_time_ns) >= 0).all()), "a block's times decrease"


def _in_order(items: Sequence[Envelope]) -> list[int]:
    """The global sequences of ``items`` (blocks expanded) in delivery order."""
    return [e.global_sequence for e in per_tick(items)]


def _script(driver: CoreDriver, ticks: int = 30) -> None:
    """Ticks with commands, events and a reset between them."""
    driver.publish_lifecycle("run.started")
    driver.start_producers()
    for k in range(1, ticks + 1):
        driver.tick(values_at(float(k)))
        if k % 7 == 0:
            driver.issue_control(f"c{k}")
        if k % 11 == 0:
            driver.publish_plugin_event("marker", {"k": k})
        if k == 17:
            driver.reset()


def _play(make: MakeCore, *max_blocks: int) -> list[Recorder]:
    """One Run of ``_script``, one recorder per ``max_block`` (each on every source)."""
    driver = make(capture=plan(), channels=CHANNELS)
    core = driver.core("record")
    recorders = [Recorder() for _ in max_blocks]
    for seen, max_block in zip(recorders, max_blocks):
        for source in _EVENTS:
            core.subscribe(source, seen)
        _observe(driver, max_block, seen)
    _script(driver)
    driver.finish()
    return recorders


def _fingerprints(seen: Recorder) -> list[tuple[object, ...]]:
    return [fingerprint(e) for e in per_tick(seen.items)]


@case
def case_a_block_subscriber_sees_the_ticks_a_tick_subscriber_sees(make: MakeCore) -> None:
    """BK1: a max_block=8 subscriber's ticks (tick(i)) equal a per-tick subscriber's: sequences, ticks, times, bytes."""
    (alone,) = _play(make, 8)
    (plain,) = _play(make, 1)
    both = _play(make, 8, 1)
    _check_blocks(alone.items, 8)
    _check_blocks(both[0].items, 8)
    _check_blocks(plain.items, 1)
    _check_blocks(both[1].items, 1)
    expected = _fingerprints(plain)
    assert _in_order(plain.items) == list(range(1, len(expected) + 1))
    assert _fingerprints(alone) == expected
    assert _fingerprints(both[0]) == _fingerprints(both[1]) == expected


@case
def case_nothing_is_stamped_inside_a_block(make: MakeCore) -> None:
    """BK2: events and camera samples published mid-block (also from another thread) follow the block in global order."""
    capture = CapturePlan(
        sources=MANDATORY | {"observations", "cameras"}, observation_channels=NAMES, cameras=(CAMERA,)
    )
    driver = make(capture=capture, channels=CHANNELS)
    cameras = hasattr(driver, "publish_camera")
    core = driver.core("record")
    seen = Recorder()
    for source in _EVENTS:
        core.subscribe(source, seen)
    if cameras:
        core.request_grant("camera")
        core.subscribe("cameras", seen)
    _observe(driver, 8, seen)
    driver.start_producers()
    for k in range(1, 21):
        driver.tick(values_at(float(k)))
        if k == 12:
            driver.publish_plugin_event("from.the.simulation.thread")
        elif k == 5 or (k == 9 and cameras):  # mid-block, from another thread
            other = threading.Thread(target=driver.publish_plugin_event, args=("from.another.thread",))
            if k == 9:
                camera = cast(CameraDriver, driver)
                other = threading.Thread(target=camera.publish_camera, args=(CAMERA.translation, np.zeros(3), "d1"))
            other.start()
            other.join()
    driver.finish()
    _check_blocks(seen.items, 8)
    order = _in_order(seen.items)
    assert order == list(range(1, len(order) + 1)), "an envelope was stamped inside a block"
    assert sum(e.source is SourceKind.OBSERVATION for e in per_tick(seen.items)) == 20


@case
def case_a_reset_cuts_a_block(make: MakeCore) -> None:
    """BK3: a block never spans a generation barrier; capture sequences stay contiguous over both."""
    driver = make(capture=plan(), channels=CHANNELS)
    seen = Recorder()
    _observe(driver, 8, seen)
    driver.start_producers()
    for generation, ticks in enumerate((3, 4, 2)):
        if generation:
            driver.reset()
        for k in range(ticks):
            driver.tick(values_at(float(k)))
    driver.finish()
    _check_blocks(seen.items, 8)
    items = per_tick(seen.items)
    assert [e.source_sequence for e in items] == list(range(1, 12))
    assert [e.generation for e in items] == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2]
    assert [e.source for e in items].count(SourceKind.GENERATION_BARRIER) == 2


class _Snapshot:
    """A finalizer that counts the observation ticks its recorder holds at the cut."""

    def __init__(self, seen: Recorder) -> None:
        self.seen = seen
        self.ticks: list[int] = []

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        """Count what was delivered before finalization."""
        self.ticks.append(sum(e.source is SourceKind.OBSERVATION for e in per_tick(self.seen.items)))
        return FinalizerResult("record", ok=True, reason=None)

    def cancel(self) -> None:
        """Nothing to cancel."""


@case
def case_the_cut_counts_and_delivers_pending_ticks(make: MakeCore) -> None:
    """BK6: ticks still pending in a block are in the cut's counts and delivered before any finalizer runs."""
    driver = make(capture=plan(), channels=CHANNELS)
    seen = Recorder()
    _observe(driver, 64, seen)
    snapshot = _Snapshot(seen)
    driver.core("record").register_finalizer(
        FinalizerRegistrationRequest("record", True, 10.0, ("observations",)), snapshot
    )
    driver.start_producers()
    for k in range(5):
        driver.tick(values_at(float(k)))
    finish = driver.finish()
    _check_blocks(seen.items, 64)
    assert snapshot.ticks == [5]
    assert finish.cut.source_final_sequences["observations"] == 5
    assert [e.source_sequence for e in per_tick(seen.items)] == [1, 2, 3, 4, 5]
    assert max(_in_order(seen.items)) <= finish.cut.final_global_sequence


@case
def case_history_replays_blocks_from_1_and_from_inside_a_block(make: MakeCore) -> None:
    """BK7: history replay from 1 and from inside a block gives each subscriber the per-tick envelopes, in its max_block."""
    driver = make(capture=plan(), channels=CHANNELS)
    first = Recorder()
    _observe(driver, 8, first)
    for k in range(10):
        driver.tick(values_at(float(k)))
    late = {1: Recorder(), 8: Recorder(), 3: Recorder()}
    core = driver.core("record")
    core.subscribe("observations", late[1], from_sequence=1)
    core.subscribe("observations", late[8], from_sequence=4, max_block=8)
    core.subscribe("observations", late[3], from_sequence=1, max_block=3)
    driver.start_producers()
    for k in range(10, 13):
        driver.tick(values_at(float(k)))
    driver.finish()
    for max_block, seen in ((8, first), *late.items()):
        _check_blocks(seen.items, max_block)
    expected = _fingerprints(late[1])
    assert [e.source_sequence for e in per_tick(late[1].items)] == list(range(1, 14))
    assert _fingerprints(first) == expected
    assert _fingerprints(late[3]) == expected
    assert _fingerprints(late[8]) == expected[3:]


@case
def case_a_pressed_gauge_gets_the_pending_ticks_before_the_wait(make: MakeCore) -> None:
    """BK5: before an unpaced tick waits on a pressed gauge, Core delivers the ticks pending in a block."""
    driver = make(capture=plan(), channels=CHANNELS, flow_stall_s=5.0)
    seen = Recorder()
    _observe(driver, 64, seen)
    gauge = ScriptedGauge()
    driver.core("record").register_flow_gauge(gauge)
    driver.start_producers()
    for k in range(3):
        driver.tick(values_at(float(k)))
    gauge.press()
    relieved_by_delivery = threading.Event()

    def relieve_when_delivered() -> None:
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            if len(per_tick(list(seen.items))) == 3:
                relieved_by_delivery.set()
                break
            time.sleep(0.005)
        gauge.relieve()

    watcher = threading.Thread(target=relieve_when_delivered)
    watcher.start()
    waited = driver.end_tick()
    watcher.join()
    driver.finish()
    _check_blocks(seen.items, 64)
    assert relieved_by_delivery.is_set(), "the pending ticks were not delivered while the loop waited"
    assert waited < 4.0
