"""``run_session``'s collector policy (``session/gc_policy.py``): applied while a Run is
live, with Record on or off, restored on every exit path, and refusable by one variable."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.session import gc_policy
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.gc_policy import GC_POLICY_ENV, RUN_GEN0_THRESHOLD, run_gc_policy
from fastsim_embedded.session.session import Session, SessionResult, run_session
from fastsim_embedded.testing.probe import ProbePlugin

ProbeSession = Callable[..., tuple[SessionResult, ProbePlugin]]
BEFORE = (701, 11, 12)  # a process's own thresholds, distinct from CPython's defaults


@pytest.fixture(autouse=True)
def process_gc() -> Iterator[None]:
    """Each test starts from thresholds ``BEFORE`` and nothing frozen; the process's own state comes back."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(*BEFORE)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _state() -> tuple[tuple[int, ...], int]:
    return gc.get_threshold(), gc.get_freeze_count()


def _seen() -> tuple[list[tuple[tuple[int, ...], int]], Callable[[int], None]]:
    seen: list[tuple[tuple[int, ...], int]] = []

    def work(tick: int) -> None:
        seen.append(_state())

    return seen, work


def test_the_policy_holds_while_the_run_is_live_and_is_restored(probe_session: ProbeSession) -> None:
    """During the ticks the startup heap is frozen and gen 0 raised; afterwards the process's state is back."""
    seen, work = _seen()
    result, _ = probe_session(host_work=work)
    assert result.outcome.status == "succeeded"
    assert seen
    assert all(t == (RUN_GEN0_THRESHOLD, *BEFORE[1:]) and frozen > 0 for t, frozen in seen)
    assert _state() == (BEFORE, 0)


def test_record_off_runs_under_the_same_policy(write_run: Callable[..., Path], tmp_path: Path) -> None:
    """A Run with no plugin (Record off) gets the same policy, so on/off compare fairly."""
    seen, work = _seen()
    prepared = prepare_run(write_run(plugins={}), duration_s=0.2)
    result = run_session(prepared, tmp_path / "out", host_work=work)
    assert result.outcome.ok
    assert seen
    assert all(t[0] == RUN_GEN0_THRESHOLD and frozen > 0 for t, frozen in seen)
    assert _state() == (BEFORE, 0)


def test_inherit_leaves_the_collector_alone(probe_session: ProbeSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """``FASTSIM_RUN_GC=inherit`` opts out: the process's thresholds and freeze are untouched."""
    monkeypatch.setenv(GC_POLICY_ENV, "inherit")
    seen, work = _seen()
    probe_session(host_work=work)
    assert seen
    assert set(seen) == {(BEFORE, 0)}


def test_a_bad_value_is_refused_before_anything_runs(
    probe_session: ProbeSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An unknown value raises one RunConfigError line naming the variable; no output, no policy, backend closed."""
    monkeypatch.setenv(GC_POLICY_ENV, "fast")
    closed: list[bool] = []
    monkeypatch.setattr(SyntheticBackend, "close", lambda self: closed.append(True))
    with pytest.raises(RunConfigError) as caught:
        probe_session()
    assert closed == [True]
    assert str(caught.value) == f"{GC_POLICY_ENV}: expected 'run' or 'inherit', got 'fast' (environment variable)"
    assert not (tmp_path / "out").exists()
    assert _state() == (BEFORE, 0)


@pytest.mark.parametrize("where", ["play_script", "close"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_every_exit_path_restores_the_process_state(
    probe_session: ProbeSession, monkeypatch: pytest.MonkeyPatch, where: str, error: type[BaseException]
) -> None:
    """An exception or KeyboardInterrupt escaping the ticks or the finalization restores the collector."""
    original = getattr(Session, where)
    during: list[tuple[tuple[int, ...], int]] = []

    def broken(self: Session, *args: Any, **kwargs: Any) -> Any:
        during.append(_state())
        if where == "close":
            original(self, *args, **kwargs)  # finalize for real, then fail
        else:
            self.close()
        raise error("escaping")

    monkeypatch.setattr(Session, where, broken)
    with pytest.raises(error):
        probe_session()
    assert during
    assert during[0][0][0] == RUN_GEN0_THRESHOLD
    assert _state() == (BEFORE, 0)


def test_an_interrupt_inside_the_ticks_restores_the_process_state(probe_session: ProbeSession) -> None:
    """KeyboardInterrupt from a tick stops the Run (as before) and the collector comes back."""
    def work(tick: int) -> None:
        if tick == 3:
            raise KeyboardInterrupt

    result, _ = probe_session(host_work=work)
    assert result.outcome.status == "stopped"
    assert _state() == (BEFORE, 0)


def test_overlapping_runs_share_one_policy_and_the_last_restores() -> None:
    """Runs in two threads of a process: the first out keeps the policy, the last restores it."""
    first, second = run_gc_policy(), run_gc_policy()
    first.__enter__()
    second.__enter__()
    assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD
    assert gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert _state() == (BEFORE, 0)


def test_a_process_freeze_and_collection_off_are_kept() -> None:
    """A process that froze its own heap keeps that freeze; a gen-0 threshold of 0 stays 0."""
    gc.set_threshold(0, 10, 10)
    gc.freeze()
    frozen = gc.get_freeze_count()
    with run_gc_policy():
        assert gc.get_threshold() == (0, 10, 10)
    assert _state() == ((0, 10, 10), frozen)


def test_a_higher_threshold_is_never_lowered() -> None:
    """A process that already raised gen 0 above the Run's threshold keeps its own."""
    gc.set_threshold(RUN_GEN0_THRESHOLD * 3, 5, 5)
    with run_gc_policy():
        assert gc.get_threshold() == (RUN_GEN0_THRESHOLD * 3, 5, 5)
    assert gc.get_threshold() == (RUN_GEN0_THRESHOLD * 3, 5, 5)


def test_the_variable_is_read_case_and_space_insensitively() -> None:
    """``run``/``inherit`` in any case and with spaces choose; unset means ``run``."""
    assert gc_policy.gc_policy_enabled({}) is True
    assert gc_policy.gc_policy_enabled({GC_POLICY_ENV: " Inherit "}) is False
    assert gc_policy.gc_policy_enabled({GC_POLICY_ENV: "RUN"}) is True


def test_fsr_record_refuses_a_bad_value_with_exit_2(
    write_run: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fsr record`` with a bad ``FASTSIM_RUN_GC``: exit 2, one line naming the variable, no output."""
    from fastsim_record.cli import main

    monkeypatch.setenv(GC_POLICY_ENV, "sometimes")
    out = tmp_path / "o"
    code = main(["record", str(write_run(plugins={})), "--no-progress", "--duration", "0.2", "--output-dir", str(out)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{GC_POLICY_ENV}: expected 'run' or 'inherit', got 'sometimes' (environment variable)"
    ]
    assert not out.exists()
