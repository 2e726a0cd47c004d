"""Ordering, barriers, seeking and batching of a recording made through the fake Core."""

from __future__ import annotations

import numpy as np
import pytest

from fastsim_record.testing.fake_core import numeric_channels
from fastsim_record.testing.harness import Harness, make_config, summary_of
from fastsim_recording_format.model import RecordKind


def test_global_order_is_contiguous_across_all_streams() -> None:
    """Every published item is written once, in ascending global sequence with no hole."""
    h = Harness.started(before_prepare=2)
    h.run_ticks(50, events_every=7)
    assert h.finish().ok
    seqs = [r.global_sequence for r in h.reader().records()]
    assert seqs == list(range(1, h.core.global_sequence + 1))


def test_startup_history_is_replayed_from_sequence_one() -> None:
    """Lifecycle items published before prepare are recorded (history plus live from 1)."""
    h = Harness.started(before_prepare=3)
    h.run_ticks(2)
    assert h.finish().ok
    lifecycle = list(h.reader().records("lifecycle"))
    assert [r.global_sequence for r in lifecycle][:3] == [1, 2, 3]
    assert ("lifecycle", 1, ()) in h.core.subscribe_calls


def test_atomic_tick_is_one_record_with_described_channels() -> None:
    """All selected numeric channels of a tick form one record whose layout the stream describes."""
    channels = numeric_channels(4, width=3)
    h = Harness.started(channels=channels)
    h.run_ticks(10, control=False)
    assert h.finish().ok
    reader = h.reader()
    stream = reader.stream("observations")
    layout = stream.attributes["channels"]
    assert [c["name"] for c in layout] == [c.name for c in channels]
    assert all(c["dtype"] == "<f8" and c["shape"] == [3] and c["units"] == ["rad"] * 3 for c in layout)
    records = list(reader.records("observations"))
    assert len(records) == 10
    values = np.frombuffer(records[4].payload, "<f8").reshape(4, 3)
    assert values[2, 0] == pytest.approx(5 + 2 / 1000)


def test_reset_writes_a_barrier_and_closes_the_batch() -> None:
    """A reset barrier is a BARRIER record of the new generation and closes the open batch."""
    h = Harness.started()
    h.run_ticks(5)
    h.core.reset()
    h.run_ticks(5)
    result = h.finish()
    assert result.ok
    obs = list(h.reader().records("observations"))
    barriers = [r for r in obs if r.kind is RecordKind.BARRIER]
    assert len(barriers) == 1
    assert barriers[0].generation == 1
    assert [r.stream_sequence for r in obs] == list(range(1, 12))
    assert summary_of(result)["flush_reasons"]["generation"] >= 1


def test_seek_finds_the_records_of_a_reset_generation() -> None:
    """Seeking by stream, generation and simulation time lands in the right generation."""
    h = Harness.started()
    for _ in range(3):
        h.run_ticks(20, control=False)
        h.core.reset()
    h.run_ticks(20, control=False)
    assert h.finish().ok
    reader = h.reader()
    target = list(reader.records("observations"))[45]
    found = next(iter(reader.seek("observations", target.generation, target.sim_time_ns)))
    assert found.generation == target.generation
    assert found.global_sequence <= target.global_sequence


@pytest.mark.parametrize(
    ("batching", "reason"),
    [
        ((4, 1 << 30, 1000.0), "items"),
        ((10_000, 200, 1000.0), "bytes"),
        ((10_000, 1 << 30, 0.05), "sim_span"),
    ],
)
def test_each_limit_flushes_a_batch(batching: tuple[int, int, float], reason: str) -> None:
    """The item, byte and simulation-time limits each close a batch; finalize flushes the rest."""
    h = Harness.started(make_config(batching=batching))
    h.run_ticks(30)
    result = h.finish()
    assert result.ok
    reasons = summary_of(result)["flush_reasons"]
    assert reasons.get(reason, 0) >= 1
    assert set(reasons) <= {reason, "finalize"}
    assert summary_of(result)["batches"] == len(h.reader().batch_index)


def test_generation_change_and_finalize_flush_paths() -> None:
    """A generation change closes a batch, and finalization flushes the partial one."""
    h = Harness.started(make_config(batching=(10_000, 1 << 30, 1000.0)))
    h.run_ticks(3)
    h.core.reset()
    h.run_ticks(3)
    result = h.finish()
    assert result.ok
    assert summary_of(result)["flush_reasons"] == {"generation": 1, "finalize": 1}


def test_no_observations_means_no_numeric_lane_grant_or_subscription() -> None:
    """With observations off there is no numeric or media lane, no grant, no polling."""
    h = Harness.started(make_config(observations="none"))
    h.run_ticks(5)
    assert set(h.wiring.lanes) == {"critical"}
    assert h.core.grants == []
    assert all(source != "observations" for source, _, _ in h.core.subscribe_calls)
    assert h.finish().ok
    assert [s.name for s in h.reader().streams] == [
        "lifecycle", "events", "control.audit", "control.result",
    ]


def test_numeric_selection_requests_the_observation_grant() -> None:
    """Selecting numeric channels requests exactly the observation grant and one subscription."""
    h = Harness.started()
    assert h.core.grants == ["observation"]
    observations = [c for c in h.core.subscribe_calls if c[0] == "observations"]
    assert observations == [("observations", 1, tuple(c.name for c in h.core.channels))]
    assert h.finish().ok
