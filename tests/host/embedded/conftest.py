"""Fixtures for the embedded host tests: a Run file writer and a probe-backed session."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastsim_contract.protocols import PluginContext
from fastsim_embedded.session.compile import PreparedRun, prepare_run
from fastsim_embedded.session.session import SessionResult, run_session
from fastsim_embedded.testing.probe import ProbeOptions, ProbePlugin, create_probe

RECORD = "plugin://fastsim/record"


def run_document(
    *,
    plugins: Mapping[str, object] | None = None,
    scene: Mapping[str, object] | None = None,
    runtime: Mapping[str, object] | None = None,
    backend: str = "synthetic",
) -> dict[str, Any]:
    """A Run mapping with the Record component (compiled by its real catalog) by default."""
    return {
        "schema": "fastsim/2",
        "name": "host-test",
        "backend": backend,
        "scenario": {"scene": dict(scene or {"robots": {"robot": {"use": "robot://example/robot"}}})},
        "runtime": {"sensor_hz": 50.0, **(runtime or {})},
        "plugins": dict(plugins if plugins is not None else {"record": {"use": RECORD}}),
    }


@pytest.fixture
def write_run(tmp_path: Path) -> Callable[..., Path]:
    """Write a Run YAML built by ``run_document(**kw)`` and return its path."""
    def write(**kw: Any) -> Path:
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(run_document(**kw)))
        return path

    return write


@pytest.fixture
def probe_session(tmp_path: Path, write_run: Callable[..., Path]) -> Callable[..., tuple[SessionResult, ProbePlugin]]:
    """Run a Run on the embedded host with the probe standing in for Record."""
    def go(
        *,
        options: ProbeOptions | None = None,
        duration: float = 1.0,
        backend_options: Mapping[str, object] | None = None,
        run: Mapping[str, Any] | None = None,
        **session: Any,
    ) -> tuple[SessionResult, ProbePlugin]:
        prepared: PreparedRun = prepare_run(
            write_run(**(run or {})), duration_s=duration, backend_options=backend_options
        )
        probes: list[ProbePlugin] = []

        def factory(context: PluginContext) -> ProbePlugin:
            probe = create_probe(context, options)
            probes.append(probe)
            return probe

        result = run_session(prepared, tmp_path / "out", factories={RECORD: factory}, **session)
        return result, probes[0]

    return go
