"""Terminal finalization where no thread can start (Python 3.12+ at interpreter exit).

Python 3.12 refuses ``Thread.start`` once the interpreter finalizes, and an exit-time
commit (``FastSimRun-v0``'s ``weakref.finalize``) runs then.  These tests make
``Thread.start`` refuse as 3.12 does and check that the terminal coordinator runs each
finalizer inline on the calling thread, bounded by its deadline, that the output
service's lease revocation runs inline too, and that a whole episode still commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import fastsim_record as fr
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    FinalizerRegistrationRequest,
    FinalizerResult,
    TerminalSemanticCut,
)
from fastsim_embedded.host.terminal import TerminalCoordinator
from fastsim_embedded.output.transaction import FileOutputService
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import Session
from fastsim_recording_format import validate

RECORD = "plugin://fastsim/record"


def _refuse_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``Thread.start`` refuses as Python 3.12's does at interpreter exit; the names it refused."""
    refused: list[str] = []

    def refuse(self: threading.Thread) -> None:
        refused.append(self.name)
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    return refused


@pytest.fixture
def no_new_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No thread starts during the test; the names of those refused."""
    return _refuse_threads(monkeypatch)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Finalizer:
    """Records where and with which deadline it ran; ``takes_s`` advances the clock."""

    def __init__(self, name: str, clock: _Clock, *, takes_s: float = 0.0, fails: bool = False) -> None:
        self.name, self.clock, self.takes_s, self.fails = name, clock, takes_s, fails
        self.calls: list[tuple[int, float]] = []
        self.cancelled = False

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        self.calls.append((threading.get_ident(), deadline_monotonic))
        self.clock.now += self.takes_s
        if self.fails:
            raise OSError("the disk is gone")
        return FinalizerResult(self.name, ok=True, reason=None, committed_name=f"{self.name}.fsr")

    def cancel(self) -> None:
        self.cancelled = True


def _cut() -> TerminalSemanticCut:
    return TerminalSemanticCut(0, {}, CompletionRequest(CompletionKind.STOPPED, "t", "finalised at exit"), 0)


def _revoker(revoked: list[tuple[str, float]]) -> Callable[[str, float], bool]:
    def revoke(owner: str, deadline: float) -> bool:
        revoked.append((owner, deadline))
        return True

    return revoke


def _register(terminal: TerminalCoordinator, finalizer: _Finalizer, timeout_s: float) -> None:
    terminal.register(FinalizerRegistrationRequest(finalizer.name, True, timeout_s, ()), finalizer, finalizer.name)


def test_finalizers_run_inline_on_the_calling_thread_when_no_thread_can_start(no_new_threads: list[str]) -> None:
    """Each finalizer runs on the caller, handed its own absolute deadline; results and failures are as threaded."""
    clock = _Clock()
    terminal = TerminalCoordinator(clock=clock)
    record, probe = _Finalizer("record", clock, takes_s=2.0), _Finalizer("probe", clock, fails=True)
    _register(terminal, record, 30.0)
    _register(terminal, probe, 10.0)
    revoked: list[tuple[str, float]] = []
    outcomes = terminal.run_finalizers(_cut(), _revoker(revoked))
    assert no_new_threads == ["finalizer-record", "finalizer-probe"]
    here = threading.get_ident()
    assert record.calls == [(here, 130.0)]
    assert probe.calls == [(here, 110.0)]  # the cut instant plus its own timeout, not shifted by record's run
    assert [(o.result.ok, o.result.committed_name, o.timed_out) for o in outcomes] == [
        (True, "record.fsr", False), (False, None, False),
    ]
    assert outcomes[1].result.reason == "finalizer raised: the disk is gone"
    assert revoked == []
    assert not record.cancelled
    assert not probe.cancelled


def test_an_inline_finalizer_that_returns_after_its_deadline_is_cancelled_and_revoked(
    no_new_threads: list[str],
) -> None:
    """Inline, a finalizer past its deadline is row 3 (timed out, cancelled, its leases revoked), as threaded."""
    clock = _Clock()
    terminal = TerminalCoordinator(clock=clock, revoke_grace_s=5.0)
    slow = _Finalizer("record", clock, takes_s=12.0)
    _register(terminal, slow, 10.0)
    revoked: list[tuple[str, float]] = []
    (outcome,) = terminal.run_finalizers(_cut(), _revoker(revoked))
    assert outcome.timed_out
    assert not outcome.result.ok
    assert "timed out at its deadline (10 s)" in (outcome.result.reason or "")
    assert slow.cancelled
    assert revoked == [("record", 117.0)]


def test_revoke_open_runs_inline_when_no_thread_can_start(tmp_path: Path, no_new_threads: list[str]) -> None:
    """Lease revocation revokes and disposes on the caller and reports that it finished in time."""
    service = FileOutputService(tmp_path, RunOutputPolicy(preserve_incomplete=False), "cid-1")
    lease = service.open_write("episode.fsr", owner="record")
    lease.write(b"header")
    lease.flush()
    assert (tmp_path / "episode.fsr.incomplete").exists()
    assert service.revoke_open(float("inf"), "record") is True
    assert no_new_threads == ["fastsim-output-revoke"]
    (tx,) = service.transactions()
    assert tx.state == "revoked"
    assert not [p for p in tmp_path.iterdir() if "episode.fsr" in p.name]  # deleted, as the policy says


def test_revoke_open_inline_past_its_deadline_says_so(tmp_path: Path, no_new_threads: list[str]) -> None:
    """Inline revocation cannot stop at the deadline; it reports that it did not finish by it."""
    service = FileOutputService(tmp_path, RunOutputPolicy(), "cid-1")
    service.open_write("episode.fsr").write(b"header")
    assert service.revoke_open(0.0) is False
    assert service.transactions()[0].state == "revoked"


def test_an_episode_closed_where_no_thread_can_start_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Record's finalizer commits a valid file, stopped, on the thread that closes the episode."""
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "at-exit", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 10.0},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": "at-exit.fsr"}}}},
    }))
    episode = Session.open(prepare_run(run, seed=1), tmp_path / "out")
    for _ in range(6):
        episode.step()
    refused = _refuse_threads(monkeypatch)  # from here on, as at interpreter exit
    outcome = episode.close(CompletionKind.STOPPED, "the environment was never closed (finalised at exit)").outcome
    monkeypatch.undo()
    assert any(name.startswith("finalizer-") for name in refused)
    (path,) = (Path(p) for p in outcome.committed)
    assert path.name == "at-exit.fsr"
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        assert rec.info.completion == "stopped"
        assert "never closed" in (rec.info.completion_reason or "")
        assert rec.info.records["observations"] == 6
    assert not list((tmp_path / "out").glob("*.incomplete"))
