"""Defects found by the stop-39 audit of the embedded host's observation blocks (issue 26):
a block cut early holds only its own rows, and a paced Run's sleep never carries a
pending block past ``BLOCK_AGE_S``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml

from fastsim_contract.protocols import PluginContext
from fastsim_contract.values import (
    CapturePlan,
    Envelope,
    ObservationBlock,
    PackedLayout,
    SourceKind,
)
from fastsim_embedded.host import blocks
from fastsim_embedded.host.blocks import BLOCK_AGE_S
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.session import loop
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.loop import TickStepper, run_loop
from fastsim_embedded.session.session import Session

NAMES = ("a", "b")
LAYOUT = PackedLayout((("<f8", (3,)), ("<f8", (2,))))
PLAN = CapturePlan(sources=frozenset({"lifecycle", "events", "observations"}), observation_channels=NAMES)
RECORD = "plugin://fastsim/record"


def _row(k: int) -> Any:
    row = np.arange(5, dtype=np.float64) + 10.0 * k
    row.flags.writeable = False
    return row


def _owner(array: Any) -> Any:
    """The allocation ``array`` keeps alive (its base chain's owner)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _owned(array: Any) -> int:
    """The bytes of the allocation ``array`` keeps alive."""
    return int(_owner(array).nbytes)


def _stamping() -> tuple[CaptureBus, list[Envelope], Any]:
    """A bus with one ``max_block=120`` subscriber (its envelopes) and the Run's block append."""
    bus = CaptureBus(PLAN)
    got: list[Envelope] = []
    bus.subscribe("observations", got.append, max_block=120)
    append = bus.block_stamper(NAMES, LAYOUT, 120)
    assert append is not None
    return bus, got, append


def test_a_block_cut_early_holds_only_its_own_rows() -> None:
    """A block flushed before it is full (an event, BK2) is a view of its own arena rows, and stays as delivered."""
    bus, got, append = _stamping()
    for k in range(1, 4):
        assert append(0, k, k * 1000, _row(k), k)
    bus.publish(SourceKind.PLUGIN_EVENT, generation=0, tick=3, sim_time_ns=3000, payload={})
    for k in range(4, 130):  # the rows after the cut: a full block of 120 and 6 pending
        assert append(0, k, k * 1000, _row(k), k)
    bus.flush()
    first = got[0].payload
    assert isinstance(first, ObservationBlock)
    assert len(first) == 3
    assert first.buffer.nbytes == 3 * LAYOUT.nbytes
    assert len(first.ticks) == len(first.sim_time_ns) == 3
    assert _owned(first.buffer) == blocks.ARENA_BLOCKS * 120 * LAYOUT.nbytes  # the arena it was cut from
    assert [bytes(first.buffer[i]) for i in range(3)] == [_row(k).tobytes() for k in (1, 2, 3)]
    assert first.ticks.tolist() == [1, 2, 3]
    assert not first.buffer.flags.writeable
    assert [len(e.payload) for e in got] == [3, 120, 6]  # type: ignore[arg-type]
    last = got[2].payload
    assert isinstance(last, ObservationBlock)
    assert [bytes(last.buffer[i]) for i in range(6)] == [_row(k).tobytes() for k in range(124, 130)]
    assert not any(np.shares_memory(a.payload.buffer, b.payload.buffer) for a in got for b in got if a is not b)  # type: ignore[attr-defined]


def _bases(arrays: list[Any]) -> int:
    """The bytes of the distinct allocations ``arrays`` keep alive."""
    owners = {id(owner): owner for owner in map(_owner, arrays)}
    return sum(int(owner.nbytes) for owner in owners.values())


def test_blocks_cut_every_tick_keep_at_most_a_third_more_than_the_lanes_charge_plus_one_arena() -> None:
    """An event after every tick (1-tick blocks) shares arenas: the memory alive stays within 4/3 of the ticks charged, plus one arena."""
    bus, got, append = _stamping()
    for k in range(1, 1001):
        assert append(0, k, k * 1000, _row(k), k)
        bus.publish(SourceKind.PLUGIN_EVENT, generation=0, tick=k, sim_time_ns=k * 1000, payload={})
    delivered = [e.payload for e in got if isinstance(e.payload, ObservationBlock)]
    assert [len(b) for b in delivered] == [1] * 1000
    charged = 1000 * LAYOUT.nbytes
    arena = blocks.ARENA_BLOCKS * 120 * LAYOUT.nbytes
    assert _bases([b.buffer for b in delivered]) <= charged * 4 // 3 + arena
    assert [bytes(b.buffer[0]) for b in delivered] == [_row(k).tobytes() for k in range(1, 1001)]
    assert not any(b.buffer.flags.writeable or b.ticks.flags.writeable for b in delivered)


class _Clock:
    """A virtual wall clock for the paced loop and the bus: ``sleep`` advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        """The virtual time."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Advance the virtual time (no real wait)."""
        self.now += seconds


class _Timed:
    """A consumer that notes when each observation tick reaches it (virtual wall time)."""

    def __init__(self, context: PluginContext, clock: _Clock) -> None:
        self.core, self.clock = context.core, clock
        self.delivered: dict[int, float] = {}

    def prepare(self) -> None:
        """Opt into blocks of 120."""
        self.core.request_grant("observation")
        self.core.subscribe("observations", self.sink, max_block=120)

    def sink(self, envelope: Envelope) -> None:
        """Each tick of a block: delivered now."""
        payload = envelope.payload
        for tick in payload.ticks.tolist() if isinstance(payload, ObservationBlock) else [envelope.tick]:
            self.delivered[tick] = self.clock.now

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def close(self) -> None:
        """Nothing to close."""


def _slow_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, TickStepper, _Timed, _Clock]:
    """A 4-channel synthetic Run whose one consumer opts into blocks of 120, on a virtual clock
    (the loop's and the bus's ``monotonic``): the session, its block stepper, the consumer, the clock."""
    synthetic = {"numeric_channels": 4, "command_every_s": None, "event_every_s": None, "reset_every_s": None}
    document = {
        "schema": "fastsim/2", "name": "slow", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}, "synthetic": synthetic}},
        "runtime": {"sensor_hz": 120.0, "seed": 7}, "plugins": {"record": {"use": RECORD}},
    }
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(document))
    clock = _Clock()
    consumers: list[_Timed] = []

    def factory(context: PluginContext) -> _Timed:
        consumers.append(_Timed(context, clock))
        return consumers[-1]

    session = Session.open(prepare_run(path, duration_s=1.0), tmp_path / "slow", factories={RECORD: factory})
    stepper = TickStepper(session.host, session.backend, max_block=120)
    assert session.host.bus.block_size == 120
    monkeypatch.setattr(loop, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    monkeypatch.setattr(blocks, "_monotonic", clock.monotonic)
    return session, stepper, consumers[0], clock


def test_a_paced_tick_longer_than_the_block_age_is_not_held_through_the_sleep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BK4: with a tick period above BLOCK_AGE_S, a pending tick is delivered before the loop sleeps, not a period later."""
    session, stepper, consumer, clock = _slow_run(tmp_path, monkeypatch)
    stepped: dict[int, float] = {}
    factor = 1.0 / (120 * (BLOCK_AGE_S + 0.1))  # one tick: 0.35 s of (virtual) wall time
    run_loop(session.host, session.backend, ticks=3, realtime_factor=factor, stepper=stepper,
             host_work=lambda tick: stepped.__setitem__(tick, clock.now))
    monkeypatch.undo()
    session.close()
    delivered = consumer.delivered
    assert sorted(delivered) == [1, 2, 3]
    assert [delivered[tick] - stepped[tick] for tick in (1, 2, 3)] == [0.0, 0.0, 0.0]


def test_a_slow_unpaced_run_delivers_a_block_once_it_is_block_age_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BK4 unpaced: ticks of 0.1 s (virtual) are delivered within BLOCK_AGE_S of their step, not at the end of the Run."""
    session, stepper, consumer, clock = _slow_run(tmp_path, monkeypatch)
    stepped: dict[int, float] = {}

    def slow_tick(tick: int) -> None:  # the host's work: 0.1 s of (virtual) wall time a tick
        clock.now += 0.1
        stepped[tick] = clock.now

    run_loop(session.host, session.backend, ticks=8, stepper=stepper, host_work=slow_tick)
    monkeypatch.undo()
    session.close()
    delivered = consumer.delivered
    assert sorted(delivered) == list(range(1, 9))
    assert delivered[1] < stepped[8]  # the first block went out during the Run, not at its end
    assert max(delivered[tick] - stepped[tick] for tick in delivered) <= BLOCK_AGE_S
