"""A failed Run whose data source asked to keep what was recorded (contract FR1-FR5;
``pipeline/finalizer.py`` rows 2-3): committed after full validation, saying ``failed``;
a recording failure still aborts."""

from __future__ import annotations

from pathlib import Path

from fastsim_contract.values import CompletionKind, CompletionRequest
from fastsim_record.testing.harness import Harness
from fastsim_recording_format.reading import open as open_recording
from fastsim_recording_format.validate import validate

_WAIT = 30.0
_REASON = "the env raised RuntimeError: the physics blew up"


def test_a_kept_failed_run_commits_after_full_validation_and_says_failed(tmp_path: Path) -> None:
    """Row 2: the same seal -> readback -> confirm path as any commit; the fence says failed."""
    h = Harness.started()
    h.run_ticks(10)
    result = h.finish(CompletionKind.FAILED, reason=_REASON, keep_recorded=True)
    assert result.ok, result.reason
    assert result.committed_name == "episode.fsr"
    assert h.core.outputs.steps() == ["open_write", "seal", "open_readback", "confirm_validation", "commit"]
    fence = h.reader().footer["terminal_fence"]
    assert (fence["completion"], fence["completion_reason"]) == ("failed", _REASON)
    assert fence["decision"] == "commit"
    assert fence["final_global_sequence"] == h.core.global_sequence
    path = tmp_path / "episode.fsr"
    path.write_bytes(h.data())
    validate(path)  # FormatError on a defect
    with open_recording(path) as rec:
        assert (rec.info.completion, rec.info.completion_reason) == ("failed", _REASON)
    assert h.core.status() == ("failed", _REASON)


def test_a_kept_failed_run_with_a_corrupt_readback_is_never_committed() -> None:
    """FR5: keeping lifts only Core's refusal; a readback that fails validation still aborts."""
    h = Harness.started()
    h.core.outputs.faults.corrupt_readback = True
    h.run_ticks(10)
    result = h.finish(CompletionKind.FAILED, reason=_REASON, keep_recorded=True)
    assert not result.ok
    assert "readback validation failed" in (result.reason or "")
    assert h.core.outputs.committed == {}
    assert h.core.outputs.steps()[-1] == "abort"


def test_a_kept_failed_run_with_a_latched_record_error_is_never_committed() -> None:
    """FR5: the source's kept failure wins, then Record latches a capture error: aborted, never published."""
    h = Harness.started()
    h.run_ticks(5)
    kept = CompletionRequest(CompletionKind.FAILED, _REASON, "host", keep_recorded=True)
    assert h.core.request_completion(kept)
    h.core.deliver_raw("events", {"not": "an envelope"})
    h.plugin.monitor.join(_WAIT)
    result = h.finish(CompletionKind.FAILED, reason="late", keep_recorded=True)
    assert h.core.cut().completion == kept
    assert not result.ok
    assert "stamped contract Envelope" in (result.reason or "")
    assert h.core.outputs.committed == {}
    assert "commit" not in h.core.outputs.steps()


def test_a_plain_failed_run_is_still_aborted() -> None:
    """Row 3 (FR1): without keep_recorded a failed completion aborts (the reason says why)."""
    h = Harness.started()
    h.run_ticks(10)
    result = h.finish(CompletionKind.FAILED, reason=_REASON)
    assert not result.ok
    assert "completed as failed" in (result.reason or "")
    assert h.core.outputs.committed == {}
