"""Whole Runs on the embedded host with the real Record plugin, discovered by entry point."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastsim_contract.values import SourceKind
from fastsim_embedded.backends import register_backend
from fastsim_embedded.backends.base import BackendSpec
from fastsim_embedded.backends.synthetic import SyntheticBackend, create_backend
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import SessionResult, run_session
from fastsim_record.cli import main as fsr_main
from fastsim_recording_format.model import RecordKind
from fastsim_recording_format.reader import FsrReader

RECORD = "plugin://fastsim/record"


def _run(
    tmp_path: Path,
    *,
    duration: float = 1.0,
    config: Mapping[str, Any] | None = None,
    options: Mapping[str, object] | None = None,
    hosts: list[EmbeddedHost] | None = None,
    backend: str = "synthetic",
) -> SessionResult:
    document = {
        "schema": "fastsim/2",
        "name": "record-e2e",
        "backend": backend,
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}}},
        "runtime": {"sensor_hz": 60.0},
        "plugins": {"record": {"use": RECORD, **({"config": dict(config)} if config else {})}},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(document))
    prepared = prepare_run(path, duration_s=duration, backend_options=options)
    return run_session(prepared, tmp_path / "out", on_host=hosts.append if hosts is not None else None)


def _info(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert fsr_main(["info", str(path), "--json"]) == 0
    info: dict[str, Any] = json.loads(capsys.readouterr().out)
    return info


def test_record_run_commits_a_valid_file_with_real_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A synthetic Run commits episode.fsr; fsr info lists lifecycle, events, control and observations with counts."""
    result = _run(tmp_path, duration=2.0, options={"command_every_s": 0.25, "event_every_s": 0.5})
    assert result.outcome.status == "succeeded", result.outcome.reason
    path = tmp_path / "out" / "episode.fsr"
    info = _info(path, capsys)
    counts = {s["name"]: s["records"] for s in info["streams"]}
    assert counts["observations"] == 120
    assert counts["control.audit"] == counts["control.result"] == 8
    assert counts["events"] == 4
    assert counts["lifecycle"] >= 4
    assert info["records"] == sum(counts.values())
    assert info["degraded"] is False
    assert fsr_main(["validate", str(path)]) == 0


def test_startup_history_is_replayed_from_the_hosts_real_sources(tmp_path: Path) -> None:
    """Lifecycle the host published before Record's prepare is the file's first records."""
    result = _run(tmp_path)
    assert result.outcome.status == "succeeded", result.outcome.reason
    with FsrReader(tmp_path / "out" / "episode.fsr") as reader:
        first = list(reader.records())[:2]
        assert [r.global_sequence for r in first] == [1, 2]
        events = [json.loads(r.payload)["event"] for r in first]
    assert events == ["run.created", "generation.started"]


def test_the_file_ends_exactly_at_the_terminal_cut(tmp_path: Path) -> None:
    """Every global sequence 1..cut is recorded and the fence names each source's cut sequence."""
    result = _run(tmp_path, duration=1.5, options={"reset_every_s": 0.5})
    cut = result.outcome.cut
    assert cut is not None
    assert result.outcome.status == "succeeded", result.outcome.reason
    with FsrReader(tmp_path / "out" / "episode.fsr") as reader:
        records = list(reader.records())
        fence = reader.footer["terminal_fence"]
        barriers = [r for r in records if r.kind is RecordKind.BARRIER]
        last_event = json.loads(records[-1].payload)["event"]
    assert [r.global_sequence for r in records] == list(range(1, cut.final_global_sequence + 1))
    assert fence["sources"] == {k: cut.source_final_sequences.get(k, 0) for k in fence["sources"]}
    assert fence["final_global_sequence"] == cut.final_global_sequence
    assert [b.generation for b in barriers] == [1, 2]
    assert last_event == "run.stopping"


class _CountingBackend(SyntheticBackend):
    """The synthetic scene, counting every numeric sampling call."""

    samples = 0

    def sample_numeric_packed(self) -> Any:
        _CountingBackend.samples += 1
        return super().sample_numeric_packed()

    def sample_numeric_blocks(self) -> Any:
        _CountingBackend.samples += 1
        return super().sample_numeric_blocks()

    def sample_numeric(self) -> Any:
        _CountingBackend.samples += 1
        return super().sample_numeric()


def _counting(spec: BackendSpec) -> _CountingBackend:
    base = create_backend(spec)
    return _CountingBackend(
        base.spec, base.entities, base.n_channels, base.dof, base.command_every, base.event_every, base.reset_every
    )


def test_observations_off_records_no_numeric_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With observations off the host sequences no ticks, never polls numeric samples, and the file has no observation stream."""
    register_backend("counting-synthetic", _counting)
    _CountingBackend.samples = 0
    hosts: list[EmbeddedHost] = []
    result = _run(
        tmp_path, config={"streams": {"observations": {"mode": "none", "include": {}}}}, hosts=hosts,
        backend="counting-synthetic",
    )
    assert result.outcome.status == "succeeded", result.outcome.reason
    assert result.ticks == 60
    assert _CountingBackend.samples == 0
    assert not hosts[0].bus.captures(SourceKind.OBSERVATION)
    assert set(hosts[0].context.capture.sources) == {"lifecycle", "events", "control.audit", "control.result"}
    names = [s["name"] for s in _info(tmp_path / "out" / "episode.fsr", capsys)["streams"]]
    assert "observations" not in names


def test_required_overflow_fails_the_run_and_publishes_nothing(tmp_path: Path) -> None:
    """A fail_run numeric lane too small for one tick latches, fails the Run once, and commits nothing."""
    config = {"queues": {"numeric": {"max_items": 8, "max_bytes": 64, "overload": "fail_run"}}}
    result = _run(tmp_path, duration=2.0, config=config)
    outcome = result.outcome
    assert outcome.status == "failed"
    assert outcome.completion.requested_by == RECORD
    assert "numeric lane overflow" in outcome.completion.reason
    assert outcome.cut is not None
    assert outcome.cut.source_final_sequences["observations"] < 120  # the Run stopped early
    assert not (tmp_path / "out" / "episode.fsr").exists()
