"""``fsr replay`` without a host: the plugin's command never imports one."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from fastsim_record.cli import _host
from fastsim_record.cli import replay as replay_cli


def test_replay_without_an_installed_host_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no fastsim.hosts/embedded-replay entry point, fsr replay explains that in one line and exits 2."""
    monkeypatch.setattr(_host, "entry_points", lambda **_: ())
    parser = argparse.ArgumentParser()
    replay_cli.add_arguments(parser)
    args = parser.parse_args(["source.fsr", "run.yaml"])
    assert replay_cli.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == "fsr replay: no FastSim host with render Replay is installed (fastsim.hosts / embedded-replay)"


def test_replay_with_a_broken_host_exits_2_naming_the_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A host entry point that fails to load is reported as one line, never a traceback."""

    class Broken:
        name = replay_cli.ENTRY
        value = "broken.module:COMMAND"

        def load(self) -> Any:
            raise ImportError("no module named broken\nsecond line")

    monkeypatch.setattr(_host, "entry_points", lambda **_: (Broken(),))
    args = argparse.Namespace(source="s.fsr", run="r.yaml")
    assert replay_cli.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == "fsr replay: broken.module:COMMAND: ImportError: no module named broken"
