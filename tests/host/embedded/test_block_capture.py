"""Observation blocks on the embedded host (issue 26, contract section 4, BK1-BK8): a
subscriber that opted in receives k ticks per envelope, with exactly the sequences, ticks,
times and bytes the per-tick path gives."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from fastsim_contract.errors import SubscriptionRefused, TerminalError
from fastsim_contract.protocols import PluginContext
from fastsim_contract.testing.kit import ALL_SOURCES, ScriptedGauge, fingerprint, per_tick
from fastsim_contract.values import (
    CapturePlan,
    Envelope,
    GenerationBarrier,
    ObservationBlock,
    PackedLayout,
    SourceKind,
)
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.flow import FlowControl
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.loop import SCRIPTED_MAX_BLOCK, TickStepper, run_loop
from fastsim_embedded.session.session import Session, SessionResult, run_session
from fastsim_recording_format.reader import FsrReader

RECORD = "plugin://fastsim/record"
NAMES = ("a", "b")
LAYOUT = PackedLayout((("<f8", (3,)), ("<f8", (2,))))
PLAN = CapturePlan(sources=frozenset({"lifecycle", "events", "control.audit", "control.result", "observations"}),
                   observation_channels=NAMES)


def _row(k: int) -> Any:
    row = np.arange(5, dtype=np.float64) + 10.0 * k
    row.flags.writeable = False
    return row


def _bus(*max_blocks: int, bound: int = 8, errors: list[str] | None = None) -> tuple[CaptureBus, list[list[Envelope]], Any]:
    """A bus, one list per subscriber (each ``max_block``), and the block append (or None)."""
    bus = CaptureBus(PLAN, on_sink_error=lambda s, e: errors.append(f"{s}: {e}") if errors is not None else None)
    seen: list[list[Envelope]] = []
    for max_block in max_blocks:
        got: list[Envelope] = []
        bus.subscribe("observations", got.append, max_block=max_block)
        seen.append(got)
    return bus, seen, bus.block_stamper(NAMES, LAYOUT, bound)


def _tick(bus: CaptureBus, append: Any, k: int, generation: int = 0) -> None:
    """One tick: a row of the pending block, or (per tick) the packed stamp."""
    if append is None or not append(generation, k, k * 1000, _row(k), k):
        bus.packed_stamper(NAMES, LAYOUT)(generation, k, k * 1000, _row(k), k)


def _blocks(items: Sequence[Envelope]) -> list[int]:
    return [len(e.payload) if isinstance(e.payload, ObservationBlock) else 1 for e in items]


def test_blocks_only_when_every_observation_subscriber_opted_in() -> None:
    """k = min(max_block, bound) when all opted in; one plain subscriber (or none) keeps per-tick stamping."""
    assert _bus(16, 5)[1:][1] is not None
    assert _bus(16, 5)[0].block_size == 5
    assert _bus(16, bound=120)[0].block_size == 16
    for max_blocks in ((8, 1), (1,), ()):
        bus, _, append = _bus(*max_blocks)
        assert append is None
        assert bus.block_size == 1
    assert _bus(8, bound=1)[2] is None


def test_a_block_holds_the_ticks_the_per_tick_path_stamps() -> None:
    """BK1: k rows, k consecutive global and capture sequences, same ticks, times, channel sequences and bytes."""
    bus, (got,), append = _bus(4)
    plain_bus, (plain,), _ = _bus(1)
    for k in range(1, 11):
        _tick(bus, append, k)
        _tick(plain_bus, None, k)
    bus.flush()
    assert _blocks(got) == [4, 4, 2]
    assert [fingerprint(e) for e in per_tick(got)] == [fingerprint(e) for e in plain]
    first = got[0].payload
    assert isinstance(first, ObservationBlock)
    assert first.layout is LAYOUT
    assert first.channels == NAMES
    assert bytes(first.buffer[2]) == _row(3).tobytes()
    for array in (first.buffer, first.ticks, first.sim_time_ns):
        assert not array.flags.writeable
    assert not np.shares_memory(got[0].payload.buffer, got[1].payload.buffer)  # type: ignore[attr-defined]


def test_every_other_stamp_delivers_the_pending_block_first() -> None:
    """BK2: an event, a control item or a packed tick, from any thread, follows the pending block in global order."""
    bus, (got,), append = _bus(8)
    events: list[Envelope] = []
    bus.subscribe("events", events.append)
    _tick(bus, append, 1)
    _tick(bus, append, 2)
    other = threading.Thread(target=bus.publish, args=(SourceKind.PLUGIN_EVENT,),
                             kwargs={"generation": 0, "tick": 2, "sim_time_ns": 2, "payload": {}})
    other.start()
    other.join()
    assert [e.global_sequence for e in got] == [1]
    assert events[0].global_sequence == 3
    _tick(bus, append, 3)
    stamp = bus.stamper(SourceKind.CONTROL_AUDIT)
    assert stamp is not None
    stamp(0, 3, 3, {}, None)
    _tick(bus, append, 4)
    bus.packed_stamper(NAMES, LAYOUT)(0, 4, 4, _row(4), 5)
    assert [(e.global_sequence, len(per_tick([e]))) for e in got] == [(1, 2), (4, 1), (6, 1), (7, 1)]


def test_a_reset_barrier_cuts_the_block() -> None:
    """BK3: the barrier takes the next capture sequence after the pending ticks; each block is one generation."""
    bus, (got,), append = _bus(8)
    for k in (1, 2):
        _tick(bus, append, k)
    bus.publish(SourceKind.GENERATION_BARRIER, generation=1, tick=2, sim_time_ns=2, payload=GenerationBarrier(1, 0, "reset"))
    _tick(bus, append, 3, generation=1)
    bus.flush()
    assert [(e.source_sequence, e.generation, _blocks([e])[0]) for e in got] == [(1, 0, 2), (3, 1, 1), (4, 1, 1)]
    assert isinstance(got[1].payload, GenerationBarrier)


def test_a_late_plain_subscriber_turns_the_run_back_to_per_tick() -> None:
    """A live subscriber that did not opt in flushes and switches to per-tick stamping; a smaller max_block shrinks k."""
    bus, (got,), append = _bus(8)
    for k in (1, 2, 3):
        _tick(bus, append, k)
    smaller: list[Envelope] = []
    bus.subscribe("observations", smaller.append, from_sequence=4, max_block=2)
    assert bus.block_size == 2
    assert _blocks(got) == [3]
    for k in (4, 5, 6):
        _tick(bus, append, k)
    late: list[Envelope] = []
    bus.subscribe("observations", late.append, from_sequence=7)
    assert bus.block_size == 1
    for k in (7, 8):
        _tick(bus, append, k)
    assert _blocks(got) == [3, 2, 1, 1, 1]
    assert _blocks(smaller) == [2, 1, 1, 1]
    assert [e.source_sequence for e in per_tick(got)] == list(range(1, 9))
    assert [e.source_sequence for e in late] == [7, 8]
    assert _blocks(late) == [1, 1]


def test_history_replays_blocks_cut_split_or_per_tick() -> None:
    """BK7: from 1 and from inside a block: row views for a block subscriber, per-tick envelopes for a plain one."""
    bus, (first,), append = _bus(8)
    for k in range(1, 11):
        _tick(bus, append, k)
    assert _blocks(bus.history("observations")) == [8]  # blocks are kept as blocks; 9-10 pending
    inside: list[Envelope] = []
    bus.subscribe("observations", inside.append, from_sequence=4, max_block=8)
    three: list[Envelope] = []
    bus.subscribe("observations", three.append, max_block=3)
    plain: list[Envelope] = []
    bus.subscribe("observations", plain.append)
    expected = [fingerprint(e) for e in per_tick(first)]
    assert _blocks(inside) == [5, 2]
    assert _blocks(three) == [3, 3, 2, 2]
    assert _blocks(plain) == [1] * 10
    assert [fingerprint(e) for e in per_tick(inside)] == expected[3:]
    assert [fingerprint(e) for e in per_tick(three)] == expected == [fingerprint(e) for e in plain]
    assert np.shares_memory(inside[0].payload.buffer, first[0].payload.buffer)  # type: ignore[attr-defined]


def test_the_cut_delivers_and_counts_pending_ticks() -> None:
    """BK6: seal flushes first; the cut counts every stamped tick; later appends raise."""
    bus, (got,), append = _bus(8)
    for k in (1, 2, 3):
        _tick(bus, append, k)
    final, per_source = bus.seal()
    assert (final, per_source["observations"]) == (3, 3)
    assert _blocks(got) == [3]
    with pytest.raises(TerminalError):
        _tick(bus, append, 4)


def test_a_raising_sink_is_reported_once_per_block() -> None:
    """BK8: on_sink_error once per block; the other subscriber gets every block."""
    errors: list[str] = []
    bus, (got,), append = _bus(4, errors=errors)

    def broken(_: Envelope) -> None:
        raise RuntimeError("boom")

    bus.subscribe("observations", broken, max_block=4)
    for k in range(1, 9):
        _tick(bus, append, k)
    assert _blocks(got) == [4, 4]
    assert errors == ["observations: boom"] * 2


def test_a_buffer_of_another_shape_or_dtype_is_copied_by_its_bytes() -> None:
    """Rows take any buffer of the layout's size (its bytes); a wrong size raises and allocates nothing."""
    bus, (got,), append = _bus(8)
    raw = np.frombuffer(_row(1).tobytes(), np.uint8)
    assert append(0, 1, 1, raw, 1)
    assert append(0, 2, 2, _row(2).reshape(5, 1), 2)
    with pytest.raises(ValueError, match="24 bytes, layout 40"):
        append(0, 3, 3, np.zeros(3), 3)
    bus.flush()
    assert bytes(got[0].payload.buffer) == _row(1).tobytes() + _row(2).tobytes()  # type: ignore[attr-defined]
    assert bus.last_global_sequence == 2


def test_the_paced_age_bound_and_the_flow_wait_flush() -> None:
    """BK4: flush_aged delivers a block whose first tick is old enough; BK5: settle flushes only before waiting."""
    bus, (got,), append = _bus(8)
    _tick(bus, append, 1)
    bus.flush_aged(time.monotonic(), 10.0)
    assert got == []
    bus.flush_aged(time.monotonic() + 0.3)
    assert _blocks(got) == [1]
    flushed: list[int] = []
    flow = FlowControl(flush=lambda: flushed.append(1))
    gauge = ScriptedGauge()
    flow.register(gauge, "record")
    flow.settle(lambda: False)
    assert flushed == []
    gauge.press()
    threading.Timer(0.05, gauge.relieve).start()
    flow.settle(lambda: False)
    assert flushed == [1]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_max_block_is_validated(tmp_path: Path, bad: object) -> None:
    """max_block must be an int >= 1, and above 1 only for observations: else one clear refusal."""
    from fastsim_contract.harness import HarnessSpec
    from fastsim_embedded.testing.contract_driver import make_driver

    core = make_driver(HarnessSpec(capture=PLAN), tmp_path).core("record")
    core.request_grant("observation")
    with pytest.raises(SubscriptionRefused, match="max_block must be an int >= 1") as caught:
        core.subscribe("observations", lambda _e: None, max_block=bad)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)
    with pytest.raises(SubscriptionRefused, match="'observations' only"):
        core.subscribe("events", lambda _e: None, max_block=2)
    core.subscribe("events", lambda _e: None, max_block=1)


# -- whole Runs -------------------------------------------------------------------------


def _run_file(tmp_path: Path, name: str, **knobs: object) -> Path:
    synthetic = {"numeric_channels": 30, "command_every_s": 0.25, "event_every_s": 0.3, "reset_every_s": 0.7, **knobs}
    document = {
        "schema": "fastsim/2", "name": name, "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}, "synthetic": synthetic}},
        "runtime": {"sensor_hz": 120.0, "seed": 7},
        "plugins": {"record": {"use": RECORD}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class _Tiny:
    """A consumer that records every source, opting in to blocks of ``max_block``."""

    def __init__(self, context: PluginContext, max_block: int, inner: Any = None) -> None:
        self.core, self.max_block, self.inner = context.core, max_block, inner
        self.items: list[Envelope] = []

    def prepare(self) -> None:
        """Record's own prepare (when wrapped), then the tiny subscriptions."""
        if self.inner is not None:
            self.inner.prepare()
        else:
            self.core.request_grant("observation")
        for source in ALL_SOURCES[:-1]:
            self.core.subscribe(source, self.items.append)
        self.core.subscribe("observations", self.items.append, max_block=self.max_block)

    def start(self) -> None:
        """Start the wrapped plugin."""
        if self.inner is not None:
            self.inner.start()

    def stop(self) -> None:
        """Stop the wrapped plugin."""
        if self.inner is not None:
            self.inner.stop()

    def close(self) -> None:
        """Close the wrapped plugin."""
        if self.inner is not None:
            self.inner.close()


def _session(tmp_path: Path, name: str, max_block: int, *, record: bool) -> tuple[SessionResult, _Tiny, Path]:
    from fastsim_record.bootstrap import create_plugin

    tiny: list[_Tiny] = []

    def factory(context: PluginContext) -> _Tiny:
        tiny.append(_Tiny(context, max_block, create_plugin(context) if record else None))
        return tiny[0]

    result = run_session(prepare_run(_run_file(tmp_path, name), duration_s=2.0), tmp_path / name,
                         factories={RECORD: factory})
    assert result.outcome.status == "succeeded", result.outcome.reason
    return result, tiny[0], tmp_path / name / "episode.fsr"


def _comparable(items: list[Envelope]) -> list[tuple[object, ...]]:
    """Fingerprints of every delivered item, blocks expanded (lifecycle payloads name Runs: by event only)."""
    out = []
    for envelope in per_tick(items):
        if envelope.source is SourceKind.LIFECYCLE:
            envelope = envelope._replace(payload=envelope.payload["event"], portable_size=None)  # type: ignore[index]
        out.append(fingerprint(envelope))
    return out


def test_a_scripted_run_delivers_blocks_with_the_per_tick_envelopes(tmp_path: Path) -> None:
    """The same seeded Run, once to a subscriber with max_block=8 and once to one without: the same envelopes."""
    blocks_result, blocks, _ = _session(tmp_path, "blocks", 8, record=False)
    ticks_result, ticks, _ = _session(tmp_path, "ticks", 1, record=False)
    assert max(_blocks(blocks.items)) == 8
    assert max(_blocks(ticks.items)) == 1
    assert sum(isinstance(e.payload, ObservationBlock) for e in blocks.items) >= 240 // 8
    assert _comparable(blocks.items) == _comparable(ticks.items)
    assert blocks_result.outcome.cut == ticks_result.outcome.cut


def test_record_writes_the_same_records_whether_or_not_blocks_flow(tmp_path: Path) -> None:
    """Record plus a tiny subscriber with max_block=8 or 1: same envelopes, same FSR records (blocks once Record opts in)."""
    _, opted, opted_file = _session(tmp_path, "opted", 8, record=True)
    _, plain, plain_file = _session(tmp_path, "plain", 1, record=True)
    assert max(_blocks(plain.items)) == 1
    assert _comparable(opted.items) == _comparable(plain.items)

    def records(path: Path) -> list[tuple[object, ...]]:
        with FsrReader(path) as reader:
            observations = reader.stream("observations").stream_id
            return [(r.stream_id, int(r.kind), r.global_sequence, r.stream_sequence, r.generation, r.sim_time_ns,
                     bytes(r.payload) if r.stream_id == observations else None) for r in reader.records()]

    assert records(opted_file) == records(plain_file)


def test_driven_sessions_keep_per_tick_stamping(tmp_path: Path) -> None:
    """Session.step (the Gymnasium paths) binds max_block=1; the scripted driver binds SCRIPTED_MAX_BLOCK."""
    tiny: list[_Tiny] = []

    def factory(context: PluginContext) -> _Tiny:
        tiny.append(_Tiny(context, 64))
        return tiny[-1]

    prepared = prepare_run(_run_file(tmp_path, "driven"), duration_s=0.5)
    session = Session.open(prepared, tmp_path / "driven", factories={RECORD: factory})
    for _ in range(5):
        session.step()
    assert session.host.bus.block_size == 1
    assert max(_blocks(tiny[0].items)) == 1
    session.close()
    prepared = prepare_run(_run_file(tmp_path, "scripted"), duration_s=0.5)
    session = Session.open(prepared, tmp_path / "scripted", factories={RECORD: factory})
    session.play_script(5)
    assert session.host.bus.block_size == min(64, SCRIPTED_MAX_BLOCK)
    assert _blocks(tiny[1].items[-1:]) == [5]  # run_loop delivers what is pending when it returns
    session.close()


def test_a_paced_run_delivers_blocks_by_age(tmp_path: Path) -> None:
    """BK4: a paced Run's blocks hold at most about BLOCK_AGE_S of wall time of ticks."""
    tiny: list[_Tiny] = []

    def factory(context: PluginContext) -> _Tiny:
        tiny.append(_Tiny(context, 120))
        return tiny[-1]

    quiet = {"command_every_s": None, "event_every_s": None, "reset_every_s": None}  # nothing else cuts a block
    prepared = prepare_run(_run_file(tmp_path, "paced", **quiet), duration_s=0.8)
    session = Session.open(prepared, tmp_path / "paced", factories={RECORD: factory})
    stepper = TickStepper(session.host, session.backend, max_block=120)
    run_loop(session.host, session.backend, ticks=96, realtime_factor=1.0, stepper=stepper)
    session.close()
    sizes = [n for n in _blocks(tiny[0].items) if n > 1]
    assert sum(_blocks([e for e in tiny[0].items if e.source is SourceKind.OBSERVATION])) == 96
    assert len(sizes) >= 3
    assert max(sizes) <= 0.25 * 120 + 3
