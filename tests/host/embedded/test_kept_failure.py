"""Contract FR1-FR4 on the embedded host with the real Record plugin and real files: a
driver whose data source failed keeps what was recorded (``Session.close(FAILED, ...,
keep_recorded=True)``); a backend exception inside ``step`` and a plugin's request stay a
plain ``failed`` that publishes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import fastsim_record as fr
from fastsim_contract.values import CompletionKind, CompletionRequest
from fastsim_embedded.backends.base import ControlCommand
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import Session
from fastsim_recording_format import validate

RECORD = "plugin://fastsim/record"
REASON = "the env raised RuntimeError: the physics blew up"


def _session(tmp_path: Path) -> Session:
    path = tmp_path / "kept.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "kept", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 1.0},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": "kept.fsr"}}}},
    }))
    return Session.open(prepare_run(path, seed=1), tmp_path / "out")


def _steps(session: Session, n: int) -> list[float]:
    offsets = [0.01 * k for k in range(1, n + 1)]
    for k, offset in enumerate(offsets, 1):
        session.step([ControlCommand(f"driver-{k}", "set_joint_offset", "robot", {"offset": offset})])
    return offsets


def test_a_driver_whose_source_failed_commits_what_was_recorded_as_failed(tmp_path: Path) -> None:
    """FR2: status failed; the file committed, valid, completion failed with the reason, every stepped tick in it."""
    session = _session(tmp_path)
    offsets = _steps(session, 4)
    outcome = session.close(CompletionKind.FAILED, REASON, keep_recorded=True).outcome
    assert outcome.status == "failed"
    assert outcome.completion.keep_recorded
    path = tmp_path / "out" / "kept.fsr"
    assert [Path(p) for p in outcome.committed] == [path]
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        assert (rec.info.completion, rec.info.completion_reason) == ("failed", REASON)
        issued = [e.data for e in rec.control() if e.data.get("event") == "command.issued"]
        assert [d["args"]["offset"] for d in issued] == offsets
        assert rec.info.records["observations"] == 4
    assert not list((tmp_path / "out").glob("*.incomplete"))


def test_a_failed_close_without_keep_publishes_nothing(tmp_path: Path) -> None:
    """FR1: the same episode closed failed without keep_recorded leaves no final file."""
    session = _session(tmp_path)
    _steps(session, 4)
    outcome = session.close(CompletionKind.FAILED, REASON).outcome
    assert outcome.status == "failed"
    assert outcome.committed == ()
    assert not (tmp_path / "out" / "kept.fsr").exists()


def test_a_backend_exception_in_step_stays_a_plain_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend failure inside step is FR1 even when close later asks to keep: the host's plain failed won first."""
    session = _session(tmp_path)
    _steps(session, 2)

    def broken(self: object, substeps: int) -> None:
        raise RuntimeError("the physics blew up")

    monkeypatch.setattr(type(session.backend), "step", broken)
    with pytest.raises(RuntimeError, match="blew up"):
        session.step()
    outcome = session.close(CompletionKind.FAILED, REASON, keep_recorded=True).outcome
    assert not outcome.completion.keep_recorded
    assert outcome.committed == ()
    assert not (tmp_path / "out" / "kept.fsr").exists()


def test_a_plugins_keep_request_is_a_plain_failure(tmp_path: Path) -> None:
    """FR3: through a plugin's Core services keep_recorded is dropped: nothing is published."""
    session = _session(tmp_path)
    _steps(session, 2)
    asked = CompletionRequest(CompletionKind.FAILED, "mine", "other", keep_recorded=True)
    assert session.host.core_for("other").request_completion(asked)
    outcome = session.close(CompletionKind.FAILED, REASON, keep_recorded=True).outcome
    assert outcome.completion.reason == "mine"
    assert not outcome.completion.keep_recorded
    assert outcome.committed == ()


@pytest.mark.parametrize("kind", [CompletionKind.NORMAL, CompletionKind.STOPPED, CompletionKind.CANCELLED])
def test_keep_recorded_applies_to_a_failed_completion_only(kind: CompletionKind) -> None:
    """FR4: any other kind with keep_recorded is refused when the request is built."""
    with pytest.raises(ValueError, match="failed completion only"):
        CompletionRequest(kind, "why", "host", keep_recorded=True)
    assert not CompletionRequest(kind, "why", "host").keep_recorded


@pytest.mark.parametrize("keep", [1, "yes", 1.0, None])
def test_keep_recorded_is_a_bool_never_a_truthy_stand_in(keep: object) -> None:
    """FR2's flag publishes a failed Run, so only ``True`` asks for it: anything else is a TypeError."""
    with pytest.raises(TypeError, match="keep_recorded must be True or False"):
        CompletionRequest(CompletionKind.FAILED, "why", "host", keep_recorded=keep)  # type: ignore[arg-type]
