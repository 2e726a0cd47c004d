"""Flow control through the fake Core: an unpaced host waits for Record instead of
overrunning a lane; a stalled output still fails the Run; declared loss stays exact."""

from __future__ import annotations

import time

import pytest

from fastsim_contract.values import CompletionKind
from fastsim_record.testing.harness import Harness, make_config, summary_of
from fastsim_recording_format.model import RecordKind

_GUARD_S = 30.0  # a hang guard, never a timing assertion


def _lost(summary: dict[str, object]) -> int:
    lanes = summary["lanes"]
    assert isinstance(lanes, dict)
    return sum(int(lane["lost"]) + int(lane["failures"]) for lane in lanes.values())


def test_an_unpaced_host_waits_for_a_slow_writer_and_loses_nothing() -> None:
    """A 32-item lane and a 5-ms-per-batch writer: the unpaced host waits, and all 400 ticks commit."""
    config = make_config(numeric=(32, 1 << 30, "fail_run"), batching=(4, 1 << 30, 1000.0))
    h = Harness.started(config)
    h.core.outputs.faults.slow_write_s = 0.005
    assert h.run_ticks(400, control=False, unpaced=True) == 400
    result = h.finish()
    assert result.ok, result.reason
    summary = summary_of(result)
    assert _lost(summary) == 0
    assert summary["lanes"]["numeric"]["high_water"] <= 32
    assert h.core.flow_waits > 0  # the host did wait on Record
    assert h.reader().footer["records"] == h.core.global_sequence


def test_a_stalled_output_fails_an_unpaced_run_within_the_deadline() -> None:
    """A never-returning output: the host stops waiting, the lane overflows, one-line failure, no commit, no hang."""
    config = make_config(
        numeric=(16, 1 << 30, "fail_run"), batching=(2, 1 << 30, 1000.0), timeout_s=1.0
    )
    h = Harness.started(config, flow_stall_s=0.3)
    h.core.outputs.faults.stall = True
    started = time.monotonic()
    try:
        ticks = h.run_ticks(100_000, control=False, unpaced=True)
        assert ticks < 100_000  # stopped by Record's failed completion, not by the count
        winner = h.core.winner
        assert winner is not None
        assert winner.kind is CompletionKind.FAILED
        assert "numeric lane overflow" in winner.reason
        assert "\n" not in winner.reason
        result = h.finish()
        assert not result.ok
        assert "commit" not in h.core.outputs.steps()
        assert h.core.outputs.committed == {}
        assert time.monotonic() - started < _GUARD_S
    finally:
        h.core.outputs.release_stall()


@pytest.mark.parametrize("policy", ["drop_newest", "drop_oldest", "degrade_recording"])
def test_declared_loss_in_an_unpaced_run_is_written_as_exact_gaps(policy: str) -> None:
    """Stalled output: after the host's bound the lossy optional lane drops, as exact gaps in a degraded file."""
    config = make_config(
        observations="explicit",
        include={"joints": ("robot.c000", False)},
        numeric=(4, 1 << 30, policy),
        batching=(2, 1 << 30, 1000.0),
    )
    h = Harness.started(config, flow_stall_s=0.2)
    h.core.outputs.faults.stall = True
    h.run_ticks(3, control=False, unpaced=True)
    assert h.core.outputs.stalled.wait(_GUARD_S)
    h.run_ticks(60, control=False, unpaced=True)
    assert h.core.flow_released  # the host gave up waiting on the stalled consumer
    h.core.outputs.release_stall()
    result = h.finish()
    assert result.ok, result.reason
    reader = h.reader()
    gaps: set[int] = set()
    for record in reader.records():
        if record.kind is RecordKind.GAP:
            gaps.update(range(record.global_sequence, record.global_last + 1))
    numeric = summary_of(result)["lanes"]["numeric"]
    assert numeric["lost"] == len(gaps) > 0
    data = {r.global_sequence for r in reader.records() if r.kind is not RecordKind.GAP}
    assert data.isdisjoint(gaps)
    assert data | gaps == set(range(1, h.core.global_sequence + 1))
    assert reader.degraded
