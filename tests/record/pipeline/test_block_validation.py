"""A block of ticks at the pump (issue 26): validated once (Core binding rules 5-8), checked
for continuity as its first tick, admitted as ONE carrier charged its ticks; each malformed
block is refused with one line naming the field."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from fastsim_contract.values import (
    Envelope,
    ObservationBlock,
    ObservationTick,
    PackedLayout,
    PackedValues,
    SampleBlock,
    SourceKind,
)
from fastsim_record.adapters.core_binding import EnvelopeConverter
from fastsim_record.adapters.payloads import NumericTickEncoder
from fastsim_record.core.captured import CapturedRun, LaneName
from fastsim_record.core.generations import ContinuityRule
from fastsim_record.core.lane import Lane, LaneSpec, OverloadPolicy
from fastsim_record.errors import ContractError
from fastsim_record.pipeline.columns import RunBuilder
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, Pump
from fastsim_record.sources import SOURCES
from fastsim_record.testing.fake_core import numeric_channels

CHANNELS = numeric_channels(2, width=3)  # two float64[3] channels: 48 bytes a tick
NAMES = tuple(c.name for c in CHANNELS)
LAYOUT = PackedLayout((("<f8", (3,)), ("<f8", (3,))))
RECORD = 48


def _frozen(array: Any) -> Any:
    array.flags.writeable = False
    return array


def _block(g: int, c: int, k: int, *, layout: PackedLayout = LAYOUT, generation: int = 0,
           times: Any = None) -> Envelope:
    """A well-formed block envelope of ``k`` ticks from global ``g`` and capture ``c``."""
    buffer = _frozen(np.arange(k * 6, dtype=np.float64).reshape(k, 6).view(np.uint8) + 0)
    t = _frozen(np.arange(k, dtype=np.int64) * 10 + 10 * c) if times is None else _frozen(times)
    block = ObservationBlock(c, NAMES, layout, buffer, _frozen(np.arange(c, c + k, dtype=np.int64)), t, c)
    return Envelope(g, SourceKind.OBSERVATION, generation, c, int(t[0]), block, None, c)


def _tick(g: int, c: int) -> Envelope:
    values = PackedValues(_frozen(np.zeros(RECORD, np.uint8)), LAYOUT)
    return Envelope(g, SourceKind.OBSERVATION, 0, c, 10 * c, ObservationTick(c, SampleBlock(NAMES, values, c)), None, c)


def _converter(max_block: int = 8) -> EnvelopeConverter:
    return EnvelopeConverter("observations", "observations", LaneName.NUMERIC, True,
                             SOURCES["observations"].contract_kinds, RECORD, max_block)


def _pump(items: int = 64, policy: OverloadPolicy = OverloadPolicy.FAIL_RUN) -> tuple[Pump, LaneHandle, Monitor]:
    handle = LaneHandle(Lane(LaneSpec(name=LaneName.NUMERIC, max_items=items, max_bytes=1 << 30, overload=policy),
                             [policy is OverloadPolicy.FAIL_RUN]), threading.Event())
    monitor = Monitor(lambda _reason: False)
    return Pump("observations", _converter(), handle, monitor, carries_barriers=True), handle, monitor


def _forged(envelope: Envelope, **fields: Any) -> Envelope:
    """``envelope`` whose block has ``fields`` replaced past the constructor's checks (a hostile Core)."""
    block = envelope.payload
    forged = object.__new__(ObservationBlock)
    for name in ObservationBlock.__slots__:
        object.__setattr__(forged, name, fields.get(name, getattr(block, name)))
    return Envelope(envelope.global_sequence, envelope.source, envelope.generation, envelope.tick,
                    envelope.sim_time_ns, forged, None, envelope.source_sequence)


def _refusal(convert: EnvelopeConverter, item: object) -> str:
    with pytest.raises(ContractError) as info:
        convert.validate_block(item)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("observations: ")
    return message


def test_a_valid_block_is_charged_its_ticks() -> None:
    """validate_block answers k x record bytes; the first block's layout becomes the Run's."""
    convert = _converter()
    assert convert.validate_block(_block(1, 1, 5)) == 5 * RECORD
    assert convert.validate_block(_block(6, 6, 8)) == 8 * RECORD


def test_malformed_blocks_are_refused_with_one_line_each() -> None:
    """Wrong layout, writable or wrong-sized buffer, decreasing times, too many ticks: one line each."""
    convert = _converter()
    convert.validate_block(_block(1, 1, 2))  # the Run's layout is LAYOUT from here on
    other = PackedLayout((("<f8", (3,)), ("<f8", (3,))))  # equal, but not the Run's object
    assert "layout at global sequence 3 is not the Run's" in _refusal(convert, _block(3, 3, 2, layout=other))
    writable = _block(3, 3, 2)
    payload: Any = writable.payload
    buffer = np.array(payload.buffer)  # a writable copy
    assert "read-only, C-contiguous" in _refusal(convert, _forged(writable, buffer=buffer))
    strided = np.zeros((2, 2 * RECORD), np.uint8)[:, ::2]
    strided.flags.writeable = False
    assert "read-only, C-contiguous" in _refusal(convert, _forged(writable, buffer=strided))
    short = _frozen(np.zeros((2, RECORD - 8), np.uint8))
    assert f"holds {2 * (RECORD - 8)} bytes, not 2 x {RECORD}" in _refusal(convert, _forged(writable, buffer=short))
    assert "decreases" in _refusal(convert, _block(3, 3, 3, times=np.array([30, 40, 35], np.int64)))
    three_times = _frozen(np.arange(3, dtype=np.int64))
    assert "must be 2 int64 values" in _refusal(convert, _forged(writable, sim_time_ns=three_times))
    assert "exceeds max_block 8" in _refusal(convert, _block(3, 3, 9))
    assert "capture_sequence 4 is not the envelope's 3" in _refusal(convert, _forged(writable, capture_sequence=4))
    assert "travels only as an observation payload" in _refusal(convert, _tick(3, 3))


def test_an_empty_block_or_one_without_int64_ticks_is_refused() -> None:
    """A forged block of 0 ticks or without k int64 ticks is refused with one line; the pump latches, admits nothing."""
    convert = _converter()
    convert.validate_block(_block(1, 1, 2))
    valid = _block(3, 3, 2)
    empty = _forged(valid, buffer=_frozen(np.zeros((0, RECORD), np.uint8)), ticks=_frozen(np.zeros(0, np.int64)),
                    sim_time_ns=_frozen(np.zeros(0, np.int64)))
    assert "block of 0 ticks at global sequence 3" in _refusal(convert, empty)
    assert "ticks at global sequence 3 must be 2 int64 values" in _refusal(
        convert, _forged(valid, ticks=_frozen(np.arange(2, dtype=np.float64))))
    assert "ticks at global sequence 3 must be 2 int64 values" in _refusal(convert, _forged(valid, ticks=[3, 4]))
    pump, handle, monitor = _pump()
    pump.blocks(empty)
    assert handle.lane.counters().enqueued == 0
    assert isinstance(monitor.error, ContractError)


def test_a_first_block_of_another_size_is_refused() -> None:
    """The Run's layout must hold record_bytes a tick."""
    wide = PackedLayout((("<f8", (3,)), ("<f8", (4,))))
    buffer = _frozen(np.zeros((2, 56), np.uint8))
    t = _frozen(np.arange(2, dtype=np.int64))
    block = ObservationBlock(1, NAMES, wide, buffer, t, t, 1)
    envelope = Envelope(1, SourceKind.OBSERVATION, 0, 1, 0, block, None, 1)
    assert f"packed layout of {RECORD} bytes" in _refusal(_converter(), envelope)


def test_a_block_on_a_per_tick_subscription_is_refused() -> None:
    """A pump that did not opt in (its own ``__call__``) names the block it cannot take."""
    pump, handle, monitor = _pump()
    pump(_block(1, 1, 2))
    assert isinstance(monitor.error, ContractError)
    assert "did not opt in" in str(monitor.error)
    assert handle.lane.depth == 0


def test_the_block_sink_admits_one_carrier_charged_its_ticks() -> None:
    """Blocks and ticks through ``blocks``: depth in ticks, one carrier per block, in order."""
    pump, handle, monitor = _pump()
    assert pump.max_block == 8  # the lane's pressure mark: 64 / 8
    first, tick, second = _block(1, 1, 5), _tick(6, 6), _block(7, 7, 3)
    for item in (first, tick, second):
        pump.blocks(item)
    assert monitor.error is None
    assert handle.lane.depth == 9
    assert handle.lane.drain_held() == [first, tick, second]
    assert pump.delivered == 9


def test_a_block_whose_first_capture_skips_is_refused_like_a_skipped_tick() -> None:
    """S2 on the block's first tick: latched with the rule and reason a skipped tick gets."""
    pump, handle, monitor = _pump()
    pump.blocks(_block(1, 1, 4))
    pump.blocks(_block(5, 6, 4))  # capture 5 is missing
    by_block = monitor.error
    ticks, _, tick_monitor = _pump()
    for i in range(1, 5):
        ticks.blocks(_tick(i, i))
    ticks.blocks(_tick(5, 6))
    by_tick = tick_monitor.error
    assert isinstance(by_block, ContractError)
    assert isinstance(by_tick, ContractError)
    assert by_block.fields["rule"] is by_tick.fields["rule"] is ContinuityRule.CAPTURE_SEQUENCE
    assert str(by_block) == str(by_tick)
    assert handle.lane.depth == 4


def test_a_lossy_lane_pump_does_not_opt_in() -> None:
    """A drop_newest numeric lane: max_block 1, so the binding subscribes the pump itself."""
    pump, _, _ = _pump(policy=OverloadPolicy.DROP_NEWEST)
    assert pump.max_block == 1


def test_the_run_builder_makes_one_run_of_a_block_and_keeps_the_order() -> None:
    """A block becomes ONE CapturedRun, a lone tick a run of one; a block in another layout goes per record."""
    convert = _converter()
    converters = LaneHandle(Lane(LaneSpec(name=LaneName.NUMERIC, max_items=64, max_bytes=1 << 30), [True]),
                            threading.Event()).converters
    converters.register(convert, convert.kinds)
    encoder = NumericTickEncoder("observations", CHANNELS)
    builder = RunBuilder({"observations": encoder})
    block = _block(1, 1, 5)
    foreign = _block(7, 7, 2, layout=PackedLayout((("<f4", (6,)), ("<f4", (6,)))))  # 48 bytes, not float64[3] x 2
    out: list[Any] = builder.split([block, _tick(6, 6), foreign], converters.materialize)
    run = out[0]
    assert isinstance(run, CapturedRun)
    assert (run.first_global, run.last_global, run.first_capture, run.last_capture) == (1, 5, 1, 5)
    columns: Any = run.payload
    first: Any = block.payload
    assert columns.global_sequence.tolist() == [1, 2, 3, 4, 5]
    assert columns.sim_time_ns is first.sim_time_ns
    assert columns.channel_sequence.tolist() == [1, 2, 3, 4, 5]
    assert columns.channel_steady
    assert bytes(columns.payload) == first.buffer.tobytes()
    assert isinstance(out[1], CapturedRun)  # the lone tick: a run of one
    assert (out[1].first_global, out[1].last_global) == (6, 6)
    assert [x.global_sequence for x in out[2:]] == [7, 8]  # the foreign block's two ticks, per record
    other: Any = foreign.payload
    assert out[2].payload.values.buffer.tobytes() == other.buffer[0].tobytes()
    assert builder.runs == 2


def test_block_runs_carry_what_the_converter_builds_with_one_build_per_lane_and_kind() -> None:
    """A block's run takes source, stream and lane from one build per lane and kind (writer44), the rest from the block."""
    convert = _converter()
    converters = LaneHandle(Lane(LaneSpec(name=LaneName.NUMERIC, max_items=64, max_bytes=1 << 30), [True]),
                            threading.Event()).converters
    converters.register(convert, convert.kinds)
    built: list[Any] = []

    def materialize(item: Any) -> Any:
        built.append(item)
        return converters.materialize(item)

    materialize.__self__ = converters  # type: ignore[attr-defined]  # as the lane's bound method
    builder = RunBuilder({"observations": NumericTickEncoder("observations", CHANNELS)})
    blocks = [_block(1, 1, 3), _block(4, 4, 2), _block(6, 6, 4, generation=2)]
    runs: list[Any] = [r for b in blocks for r in builder.split([b], materialize)]
    assert len(built) == 1  # the first block's first tick, once
    for block, run in zip(blocks, runs, strict=True):
        first = convert.build(block)
        assert isinstance(run, CapturedRun)
        assert (run.source, run.stream, run.lane, run.generation, run.first_global, run.first_capture) == (
            first.source, first.stream, first.lane, first.generation, first.global_sequence, first.capture_sequence)
        payload: Any = block.payload
        assert run.last_global - run.first_global == len(payload.ticks) - 1
