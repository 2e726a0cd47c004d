"""Whole Runs on the embedded host, with the probe consumer standing in for Record."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from fastsim_contract.run_errors import RunConfigError
from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends import register_backend
from fastsim_embedded.backends.base import BackendSpec
from fastsim_embedded.backends.synthetic import SyntheticBackend, create_backend
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.plugins import discover_plugin
from fastsim_embedded.session.session import SessionResult
from fastsim_embedded.testing.probe import ProbeOptions, ProbePlugin

ProbeSession = Callable[..., tuple[SessionResult, ProbePlugin]]
NO_OBSERVATIONS = {"record": {"use": "plugin://fastsim/record",
                              "config": {"streams": {"observations": {"mode": "none", "include": {}}}}}}


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_startup_history_is_replayed_from_sequence_1(probe_session: ProbeSession, tmp_path: Path) -> None:
    """Lifecycle published before the plugin's prepare is delivered from global sequence 1."""
    result, probe = probe_session()
    first = sorted(probe.received, key=lambda e: e.global_sequence)[:2]
    assert [e.global_sequence for e in first] == [1, 2]
    assert [e.payload["event"] for e in first] == ["run.created", "generation.started"]  # type: ignore[index]
    assert result.outcome.status == "succeeded"


def test_the_cut_covers_exactly_what_was_published(probe_session: ProbeSession, tmp_path: Path) -> None:
    """The committed probe file holds every item 1..cut, and the cut's per-source ends match."""
    result, _ = probe_session(duration=2.0, backend_options={"reset_every_s": 0.5})
    cut = result.outcome.cut
    assert cut is not None
    lines = _lines(tmp_path / "out" / "probe.jsonl")
    assert [line["g"] for line in lines] == list(range(1, cut.final_global_sequence + 1))
    observations = [line for line in lines if line["source"] in ("observations", "generation")]
    assert len(observations) == cut.source_final_sequences["observations"] == 100 + 3
    assert [line["s"] for line in observations] == list(range(1, 104))
    assert cut.source_final_sequences["control.audit"] == cut.source_final_sequences["control.result"] == 4
    assert lines[-1]["payload"]["event"] == "run.stopping"  # type: ignore[index]


def test_resets_start_new_generations(probe_session: ProbeSession, tmp_path: Path) -> None:
    """Each scripted reset publishes a barrier and generation.started, and stamps later items."""
    result, probe = probe_session(duration=1.0, backend_options={"reset_every_s": 0.4})
    barriers = [e for e in probe.received if e.source.value == "generation"]
    assert [e.generation for e in barriers] == [1, 2]
    started = [e for e in probe.received if e.source.value == "lifecycle" and e.payload["event"] == "generation.started"]  # type: ignore[index]
    assert [e.payload["generation"] for e in started] == [0, 1, 2]  # type: ignore[index]
    assert result.outcome.cut is not None
    assert result.outcome.cut.final_generation == 2


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (CompletionKind.NORMAL, "succeeded"),
        (CompletionKind.FAILED, "failed"),
        (CompletionKind.CANCELLED, "cancelled"),
        (CompletionKind.STOPPED, "stopped"),
    ],
)
def test_plugin_completion_request_wins_and_sets_status(probe_session: ProbeSession, kind: CompletionKind, status: str) -> None:
    """A plugin's completion at tick 5 ends the loop; the host's later normal request loses."""
    result, _ = probe_session(options=ProbeOptions(complete_at_tick=5, complete_kind=kind))
    assert result.ticks == 5
    assert result.outcome.completion.kind is kind
    assert result.outcome.completion.requested_by == "plugin://fastsim/record"
    assert result.outcome.status == status


def test_operator_interrupt_stops_the_run(probe_session: ProbeSession, tmp_path: Path) -> None:
    """KeyboardInterrupt on the simulation thread becomes a stopped completion, still finalized."""
    def work(tick: int) -> None:
        if tick == 3:
            raise KeyboardInterrupt

    result, _ = probe_session(host_work=work)
    assert result.outcome.status == "stopped"
    assert (tmp_path / "out" / "probe.jsonl").is_file()


def test_backend_failure_fails_the_run(probe_session: ProbeSession) -> None:
    """A backend exception fails the Run naming the tick; its commit is refused, nothing published."""
    class Broken(SyntheticBackend):
        def step(self, substeps: int) -> None:
            if self._steps >= 3:
                raise RuntimeError("physics exploded")
            super().step(substeps)

    def broken(spec: BackendSpec) -> Broken:
        base = create_backend(spec)
        return Broken(base.spec, base.entities, base.n_channels, base.dof, None, None, None)

    register_backend("broken-synthetic", broken)
    result, _ = probe_session(run={"backend": "broken-synthetic"})
    assert result.outcome.status == "failed"
    assert result.outcome.reason is not None
    assert "tick 4" in result.outcome.reason
    assert "physics exploded" in result.outcome.reason
    assert result.outcome.committed == ()
    assert len(result.outcome.disposed) == 1


def test_required_finalizer_failure_fails_a_normal_run(probe_session: ProbeSession, tmp_path: Path) -> None:
    """Normal completion, but the required finalizer failed: the Run fails and nothing is published."""
    result, probe = probe_session(options=ProbeOptions(finalize="fail"))
    assert result.outcome.completion.kind is CompletionKind.NORMAL
    assert result.outcome.status == "failed"
    assert not (tmp_path / "out" / "probe.jsonl").exists()
    assert probe.closed == 1


def test_optional_finalizer_failure_keeps_success(probe_session: ProbeSession) -> None:
    """An optional finalizer's failure does not fail the Run."""
    result, _ = probe_session(options=ProbeOptions(finalize="raise", required=False))
    assert result.outcome.status == "succeeded"
    assert not result.outcome.finalizers[0].result.ok


def test_finalizer_timeout_cancels_revokes_and_quarantines(probe_session: ProbeSession, tmp_path: Path) -> None:
    """A finalizer past its deadline is cancelled; Core revokes its lease and quarantines the file."""
    result, probe = probe_session(options=ProbeOptions(finalize="hang", requested_timeout_s=0.3))
    (outcome,) = result.outcome.finalizers
    assert outcome.timed_out
    assert probe.cancelled.is_set()
    assert result.outcome.status == "failed"
    out = tmp_path / "out"
    assert not (out / "probe.jsonl").exists()
    assert not (out / "probe.jsonl.incomplete").exists()
    quarantined = list((out / ".quarantine").rglob("probe.jsonl.incomplete"))
    assert len(quarantined) == 1
    assert result.outcome.disposed == (quarantined[0],)


def test_prepare_failure_fails_and_cleans_up(probe_session: ProbeSession, tmp_path: Path) -> None:
    """A plugin failing in prepare fails the Run before any tick; it is closed and nothing is published."""
    result, probe = probe_session(options=ProbeOptions(fail_prepare=True))
    assert result.ticks == 0
    assert result.outcome.status == "failed"
    assert result.outcome.reason is not None
    assert result.outcome.reason.startswith("prepare failed")
    assert probe.closed == 1
    assert not (tmp_path / "out" / "probe.jsonl").exists()


def test_observations_none_creates_no_observation_source(probe_session: ProbeSession) -> None:
    """With observations mode none there is no grant, no observation item and no sequence hole."""
    result, probe = probe_session(run={"plugins": NO_OBSERVATIONS})
    assert all(e.source.value not in ("observations", "generation") for e in probe.received)
    assert result.outcome.status == "succeeded"
    assert result.outcome.cut is not None
    assert "observations" not in result.outcome.cut.source_final_sequences


def test_portable_size_can_be_switched_off(probe_session: ProbeSession) -> None:
    """Lifecycle envelopes carry a portable size by default and None when the host is 'older'."""
    _, probe = probe_session(duration=0.1)
    assert all(isinstance(e.portable_size, int) for e in probe.received if e.source.value == "lifecycle")
    _, older = probe_session(duration=0.1, portable_sizes=False)
    assert all(e.portable_size is None for e in older.received if e.source.value in ("lifecycle", "events"))


def test_record_plugin_is_found_through_its_entry_point() -> None:
    """The host discovers plugin://fastsim/record via the installed fastsim.plugins entry point `fastsim.record`."""
    factory = discover_plugin("plugin://fastsim/record")
    assert factory.__module__ == "fastsim_record.bootstrap"
    with pytest.raises(RunConfigError) as caught:
        discover_plugin("plugin://nobody/nothing")
    assert "no entry point 'nobody.nothing' in group 'fastsim.plugins'" in str(caught.value)


class _EntryPoint:
    """An installed entry point as ``discover_plugin`` sees it."""

    def __init__(self, name: str, value: object) -> None:
        self.name, self._value = name, value

    def load(self) -> object:
        return self._value


def _factory(context: object) -> None:
    return None


def test_the_host_looks_the_plugin_up_by_its_dotted_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """plugin://fastsim/record is the entry point `fastsim.record`; one named `record` is not it."""
    import fastsim_embedded.session.plugins as session

    monkeypatch.setattr(session, "entry_points", lambda **_: (_EntryPoint("record", print),
                                                              _EntryPoint("fastsim.record", _factory)))
    assert discover_plugin("plugin://fastsim/record") is cast(object, _factory)
    monkeypatch.setattr(session, "entry_points", lambda **_: (_EntryPoint("record", _factory),))
    with pytest.raises(RunConfigError):
        discover_plugin("plugin://fastsim/record")


def test_a_found_plugin_is_not_looked_up_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later Run reuses the factory found first (no rescan); a name not found is looked up again."""
    import fastsim_embedded.session.plugins as session

    scans: list[str] = []

    def lookup(**options: str) -> tuple[_EntryPoint, ...]:
        scans.append(options["group"])
        return (_EntryPoint("fastsim.record", _factory),)

    monkeypatch.setattr(session, "entry_points", lookup)
    assert discover_plugin("plugin://fastsim/record") is cast(object, _factory)
    assert discover_plugin("plugin://fastsim/record") is cast(object, _factory)
    assert scans == ["fastsim.plugins"]
    for _ in range(2):
        with pytest.raises(RunConfigError):
            discover_plugin("plugin://nobody/nothing")
    assert len(scans) == 3


def test_unknown_backend_is_a_config_error(write_run: Callable[..., Path]) -> None:
    """An unregistered backend name is reported at `backend`."""
    with pytest.raises(RunConfigError) as caught:
        prepare_run(write_run(backend="no-such-backend"))
    assert str(caught.value.issues[0]).startswith("backend: unknown backend 'no-such-backend'")


def test_exact_rate_policy_rejects_a_fractional_physics_rate(write_run: Callable[..., Path]) -> None:
    """rate_policy exact needs physics_hz to be a whole multiple of sensor_hz."""
    with pytest.raises(RunConfigError) as caught:
        prepare_run(write_run(runtime={"physics_hz": 75.0}))
    assert str(caught.value.issues[0]).startswith("runtime.physics_hz:")
