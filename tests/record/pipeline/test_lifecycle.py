"""Plugin lifecycle and the terminal coordinator: completion kinds, precedence, timeout, stop/close."""

from __future__ import annotations

import pytest

from fastsim_contract.values import CompletionKind, CompletionRequest
from fastsim_record.testing.harness import Harness, make_config

_WAIT = 30.0


@pytest.mark.parametrize("kind", [CompletionKind.NORMAL, CompletionKind.CANCELLED, CompletionKind.STOPPED])
def test_normal_cancelled_and_stopped_completions_commit(kind: CompletionKind) -> None:
    """Normal, cancelled and stopped completions each commit, with the kind in the fence."""
    h = Harness.started()
    h.run_ticks(10)
    result = h.finish(kind)
    assert result.ok, result.reason
    assert result.committed_name == "episode.fsr"
    fence = h.reader().footer["terminal_fence"]
    assert fence["completion"] == kind.value
    assert fence["final_global_sequence"] == h.core.global_sequence


def test_failed_completion_consumes_through_the_cut_and_aborts() -> None:
    """After a failed completion Record consumes everything but aborts: no false success."""
    h = Harness.started()
    h.run_ticks(10)
    result = h.finish(CompletionKind.FAILED)
    assert not result.ok
    assert "completed as failed" in (result.reason or "")
    assert h.core.outputs.steps() == ["open_write", "abort"]
    assert h.core.outputs.committed == {}
    assert h.core.run_failed()


def test_terminal_fence_matches_the_exact_cut() -> None:
    """The recording ends exactly at the cut: every selected source consumed through its final sequence."""
    h = Harness.started(before_prepare=1)
    h.run_ticks(7, events_every=3)
    h.core.reset()
    result = h.finish()
    assert result.ok
    cut = h.core.cut()
    fence = h.reader().footer["terminal_fence"]
    assert fence["sources"] == {
        s: cut.source_final_sequences[s]
        for s in ("lifecycle", "events", "control.audit", "control.result", "observations")
    }
    assert h.reader().footer["global_sequence"]["last"] == cut.final_global_sequence


def test_required_finalizer_failure_wins_over_an_earlier_normal_completion() -> None:
    """If another source already completed normally, Record's failure still fails the run."""
    h = Harness.started()
    h.run_ticks(3)
    assert h.core.request_completion(CompletionRequest(CompletionKind.NORMAL, "done", "scene"))
    h.core.deliver_raw("events", object())
    h.plugin.monitor.join(_WAIT)
    assert h.plugin.monitor.requested
    assert h.plugin.monitor.won is False
    result = h.finish()
    assert not result.ok
    assert h.core.winner is not None
    assert h.core.winner.kind is CompletionKind.NORMAL
    assert h.core.run_failed()


def test_finalizer_timeout_cancels_without_the_abort_path() -> None:
    """At the host deadline Record cancels pumps and writer and never calls abort."""
    h = Harness.started(make_config(batching=(2, 1 << 30, 1000.0), timeout_s=0.2))
    h.core.outputs.faults.stall = True
    h.run_ticks(5)
    assert h.core.outputs.stalled.wait(_WAIT)
    result = h.finish()
    assert not result.ok
    assert "deadline" in (result.reason or "")
    finalizer = h.wiring.finalizer
    assert finalizer is not None
    assert finalizer.cancelled
    assert "abort" not in h.core.outputs.steps()
    assert all(sub.closed for subs in h.core.subscribers.values() for sub in subs)
    h.plugin.close()
    h.core.outputs.release_stall()
    worker = h.wiring.worker
    assert worker is not None
    assert worker.join(_WAIT)
    assert "abort" not in h.core.outputs.steps()
    assert "commit" not in h.core.outputs.steps()


def test_stop_and_close_are_idempotent_after_commit() -> None:
    """Repeated stop and close after a commit change nothing and never abort."""
    h = Harness.started()
    h.run_ticks(3)
    assert h.finish().ok
    for _ in range(2):
        h.plugin.stop()
        h.plugin.close()
    assert h.core.outputs.steps().count("commit") == 1
    assert "abort" not in h.core.outputs.steps()


def test_close_before_finalization_aborts_once() -> None:
    """Closing before a successful finalization aborts the output, once, however often it is called."""
    h = Harness.started()
    h.run_ticks(3)
    h.plugin.stop()
    h.plugin.stop()
    h.plugin.close()
    h.plugin.close()
    assert h.core.outputs.steps() == ["open_write", "abort"]
    assert all(sub.closed for subs in h.core.subscribers.values() for sub in subs)
    worker = h.wiring.worker
    assert worker is not None
    assert not worker.thread.is_alive()


def test_second_finalize_returns_the_first_result() -> None:
    """Calling finalize again returns the first result and does not redo the transaction."""
    h = Harness.started()
    h.run_ticks(3)
    first = h.finish()
    finalizer = h.wiring.finalizer
    assert finalizer is not None
    again = finalizer.finalize(h.core.cut(), 0.0)
    assert again is first
    assert h.core.outputs.steps().count("commit") == 1


def test_record_registers_one_required_finalizer_for_its_selected_sources() -> None:
    """Prepare registers exactly one required FinalizerRegistrationRequest naming the selected sources and the timeout."""
    h = Harness.started(make_config(timeout_s=42.0))
    (registration,) = h.core.registrations
    request = registration.request
    assert request.required is True
    assert request.requested_timeout_s == 42.0
    assert set(request.sources) == {"lifecycle", "events", "control.audit", "control.result", "observations"}
    assert h.finish().ok
    none = Harness.started(make_config(observations="none"))
    assert "observations" not in none.core.registrations[0].request.sources
    assert none.finish().ok
