"""Failures: worker-only encoding, capture failures, prepare cleanup, corrupt readback, lease identity."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fastsim_contract.values import (
    ChannelSample,
    CompletionKind,
    Envelope,
    ObservationTick,
    SourceKind,
)
from fastsim_record.adapters.fsr_sink import FsrSink
from fastsim_record.adapters.payloads import JsonEncoder, NumericTickEncoder
from fastsim_record.bootstrap import create_plugin
from fastsim_record.core.captured import LaneName
from fastsim_record.errors import RecordError
from fastsim_record.testing.fake_core import FakeCore, numeric_channels
from fastsim_record.testing.fake_output import FakeReadbackLease, FakeWriteLease
from fastsim_record.testing.harness import Harness, make_config

_WAIT = 30.0


def test_encoding_happens_only_on_the_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every payload is encoded exactly once, and never on a publishing (capture) thread."""
    threads: list[int] = []
    for cls in (JsonEncoder, NumericTickEncoder):
        original = cls.encode

        def spy(self: object, payload: object, _original: object = original) -> bytes:
            threads.append(threading.get_ident())
            return _original(self, payload)  # type: ignore[operator, no-any-return]

        monkeypatch.setattr(cls, "encode", spy)
    h = Harness.started(before_prepare=2)
    publisher = threading.Thread(target=h.run_ticks, args=(40,), kwargs={"events_every": 5})
    publisher.start()
    publisher.join(_WAIT)
    h.run_ticks(10)
    worker = h.wiring.worker
    assert worker is not None
    assert h.finish().ok
    assert len(threads) == h.core.global_sequence
    assert set(threads) == {worker.thread.ident}


def test_capture_failure_fails_the_run_through_one_completion_request() -> None:
    """A malformed item on the capture path latches, requests FAILED once, and prevents commit."""
    h = Harness.started()
    h.run_ticks(5)
    h.core.deliver_raw("events", {"not": "an envelope"})
    h.core.deliver_raw("events", "still not one")
    winner = h.core.wait_completion(_WAIT)
    assert winner is not None
    assert winner.kind is CompletionKind.FAILED
    assert "expected a stamped contract Envelope" in winner.reason
    h.plugin.monitor.join(_WAIT)
    assert len(h.core.completions) == 1
    result = h.finish()
    assert not result.ok
    assert "stamped contract Envelope" in (result.reason or "")
    assert "commit" not in h.core.outputs.steps()


def test_source_discontinuity_is_a_capture_failure() -> None:
    """An envelope that skips a source sequence is rejected at the pump and fails the recording."""
    h = Harness.started()
    h.run_ticks(2)
    bad = Envelope(999, SourceKind.PLUGIN_EVENT, 0, 2, 0, {"x": 1}, 10, 7)
    h.core.deliver_raw("events", bad)
    result = h.finish()
    assert not result.ok
    assert "capture_sequence 7" in (result.reason or "")


def test_encoder_failure_on_the_worker_fails_the_recording() -> None:
    """A tick whose channel drifted from its descriptor fails in the worker, never on capture."""
    h = Harness.started(channels=numeric_channels(2, width=3))
    h.run_ticks(2, control=False)
    drifted = {c.name: np.zeros(5) for c in h.core.channels}
    h.core.publish_tick(drifted)
    result = h.finish()
    assert not result.ok
    assert "expected float64[3], got float64[5]" in (result.reason or "")
    assert h.core.outputs.steps()[-1] == "abort"


@pytest.mark.parametrize(
    "fault",
    ["open_write", "register_finalizer", "request_grant", "subscribe:lifecycle", "subscribe:observations"],
)
def test_prepare_fault_undoes_everything(fault: str) -> None:
    """A fault at any prepare step closes subscriptions, unregisters, stops the worker and aborts."""
    core = FakeCore(channels=numeric_channels(2))
    if fault == "open_write":
        core.outputs.faults.fail_open_write = True
    else:
        core.prepare_faults.add(fault)
    plugin = create_plugin(core.context(make_config()))
    writers = {t for t in threading.enumerate() if t.name == "record-writer"}
    with pytest.raises(RecordError) as raised:
        plugin.prepare()
    assert "\n" not in str(raised.value)
    assert plugin.state == "closed"
    assert all(sub.closed for subs in core.subscribers.values() for sub in subs)
    assert all(not r.active for r in core.registrations)
    assert plugin.wiring is None  # ``wire`` undid its partial wiring before raising
    started = [t for t in threading.enumerate() if t.name == "record-writer" and t not in writers]
    assert not started
    steps = core.outputs.steps()
    assert "commit" not in steps
    if fault != "open_write":
        assert steps[-1] == "abort"
    plugin.close()
    assert core.outputs.steps() == steps


def test_corrupt_readback_is_never_committed() -> None:
    """A readback that fails structural validation aborts the output with the defect's offset."""
    h = Harness.started()
    h.core.outputs.faults.corrupt_readback = True
    h.run_ticks(20)
    result = h.finish()
    assert not result.ok
    assert "readback validation failed" in (result.reason or "")
    assert "offset" in (result.reason or "")
    assert h.core.outputs.steps() == ["open_write", "seal", "open_readback", "abort"]
    assert h.core.outputs.committed == {}


def test_wrong_readback_lease_is_refused_and_never_committed() -> None:
    """Confirming with a readback lease not bound to the sealed write fails closed."""
    h = Harness.started()
    h.core.outputs.faults.wrong_readback = True
    h.run_ticks(5)
    result = h.finish()
    assert not result.ok
    assert "confirm_validation" in (result.reason or "")
    steps = h.core.outputs.steps()
    assert "commit" not in steps
    assert steps[-1] == "abort"


def test_confirmation_uses_the_exact_readback_lease_that_was_validated() -> None:
    """The receipt is confirmed with the very readback lease object of this write, closed first."""
    h = Harness.started()
    h.run_ticks(5)
    assert h.finish().ok
    sink = h.wiring.sink
    assert isinstance(sink, FsrSink)
    readback, lease = sink.readback_lease, sink.lease
    assert isinstance(readback, FakeReadbackLease)
    assert isinstance(lease, FakeWriteLease)
    assert readback.write is lease
    assert readback.closed
    assert lease.confirmed
    receipt = h.core.outputs.receipts[0]
    assert receipt["validated_bytes"] == len(h.data())
    assert receipt["content_sha256"] is None
    assert receipt["completion_id"] == h.core.run.completion_id


def test_failing_write_fails_the_recording() -> None:
    """An I/O error on the write lease latches an output failure and the run fails."""
    h = Harness.started(make_config(batching=(2, 1 << 30, 1000.0)))
    h.core.outputs.faults.fail_write_after = 3
    h.run_ticks(10)
    winner = h.core.wait_completion(_WAIT)
    assert winner is not None
    assert "injected write failure" in winner.reason
    result = h.finish()
    assert not result.ok
    assert h.core.outputs.committed == {}


def test_malformed_observation_payload_is_rejected_at_the_pump() -> None:
    """An observation envelope whose payload is not an ObservationTick is a contract error."""
    h = Harness.started()
    h.run_ticks(1)
    wrong = Envelope(50, SourceKind.OBSERVATION, 0, 1, 0, {"not": "a tick"}, None, 2)
    h.core.deliver_raw("observations", wrong)
    tick = ObservationTick(3, (ChannelSample("robot.c000", np.zeros(7), 1),))
    h.core.deliver_raw("observations", Envelope(51, SourceKind.OBSERVATION, 0, 1, 0, tick, None, 3))
    result = h.finish()
    assert not result.ok
    assert "must be an ObservationTick" in (result.reason or "")


@pytest.mark.parametrize("integrity", ["fast", "strong"])
def test_tamper_evident_modes_commit_with_the_content_digest(integrity: str) -> None:
    """fast and strong validate the readback with one full-file SHA-256 that Core checks."""
    import hashlib

    from fastsim_contract.output_policy import RunOutputPolicy

    h = Harness.started(make_config(integrity=integrity), output_policy=RunOutputPolicy(integrity="sha256"))
    h.run_ticks(10)
    result = h.finish()
    assert result.ok, result.reason
    receipt = h.core.outputs.receipts[0]
    assert receipt["integrity"] == integrity
    assert receipt["content_sha256"] == hashlib.sha256(h.data()).hexdigest()


def test_tamper_evident_mode_without_sha256_policy_fails_prepare() -> None:
    """Asking for fast integrity under an output policy without sha256 is a one-line config error."""
    from fastsim_record.errors import ConfigError

    with pytest.raises(ConfigError, match="requires the Run output policy integrity 'sha256'"):
        Harness.started(make_config(integrity="fast"))


@pytest.mark.parametrize(("portable", "overflows"), [(True, False), (False, True)])
def test_critical_admission_charges_the_ceiling_without_a_portable_size(portable: bool, overflows: bool) -> None:
    """Events without a producer size are charged 1 MiB each; with one they fit a small lane."""
    config = make_config(critical=(4096, 3 << 20, "fail_run"), batching=(1, 1 << 30, 1000.0))
    h = Harness.started(config, portable_sizes=portable)
    h.core.outputs.faults.stall = True
    h.core.publish("events", {"first": True})
    assert h.core.outputs.stalled.wait(_WAIT)
    for i in range(6):
        h.core.publish("events", {"i": i})
    lane = h.wiring.lanes[LaneName.CRITICAL].lane
    assert (lane.fatal is not None) is overflows
    h.core.outputs.release_stall()
    assert h.finish().ok is not overflows
