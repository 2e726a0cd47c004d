"""``fsr record`` / ``fsr replay`` hand over to a ``fastsim.hosts`` entry point (shared helper)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from fastsim_record.cli import _host
from fastsim_record.cli import record as record_cli


class _EntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name, self.value, self._target = name, f"host.{name}:COMMAND", target

    def load(self) -> Any:
        return self._target


class _Host:
    def __init__(self, code: int) -> None:
        self.code = code
        self.seen: list[argparse.Namespace] = []

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--flag")

    def run(self, args: argparse.Namespace) -> int:
        self.seen.append(args)
        return self.code


def test_record_without_a_host_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No fastsim.hosts entry point: fsr record takes RUN.yaml, explains in one line and exits 2."""
    monkeypatch.setattr(_host, "entry_points", lambda **_: ())
    parser = argparse.ArgumentParser()
    record_cli.add_arguments(parser)
    assert record_cli.run(parser.parse_args(["run.yaml"])) == 2
    assert capsys.readouterr().err == "fsr record: no FastSim host is installed (entry point group fastsim.hosts)\n"


def test_record_prefers_the_embedded_host_and_returns_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """With several hosts the embedded one serves; its arguments and exit code pass through."""
    other, embedded = _Host(0), _Host(1)
    monkeypatch.setattr(_host, "entry_points", lambda **_: (_EntryPoint("core", other), _EntryPoint("embedded", embedded)))
    parser = argparse.ArgumentParser()
    record_cli.add_arguments(parser)
    args = parser.parse_args(["--flag", "x"])
    assert record_cli.run(args) == 1
    assert (embedded.seen, other.seen) == ([args], [])


def test_record_falls_back_to_any_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the embedded host, another installed host serves fsr record."""
    other = _Host(0)
    monkeypatch.setattr(_host, "entry_points", lambda **_: (_EntryPoint("core", other),))
    assert record_cli.run(argparse.Namespace()) == 0
    assert len(other.seen) == 1


def test_a_host_named_for_one_command_does_not_serve_another(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command without any_host needs its own entry point name."""
    command = _host.HostCommand("x", "wanted", "none here", (("a", "A"),))
    monkeypatch.setattr(_host, "entry_points", lambda **_: (_EntryPoint("other", _Host(0)),))
    assert command.run(argparse.Namespace()) == 2
    assert capsys.readouterr().err == "fsr x: none here\n"
