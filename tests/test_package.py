"""The distribution's identity and the ``fsr`` dispatcher."""

from __future__ import annotations

import pytest

import fastsim_record
from fastsim_record.cli import main
from fastsim_record.errors import ConfigError, ConfigIssue, RecordError


def test_version_is_0_3_12() -> None:
    """The package reports the release this repository builds."""
    assert fastsim_record.__version__ == "0.3.12"


def test_config_error_is_one_line_per_issue() -> None:
    """A ConfigError renders every issue as one `path: message` line."""
    err = ConfigError([ConfigIssue("a.b", "bad"), ConfigIssue("c", "worse")])
    assert isinstance(err, RecordError)
    assert str(err) == "a.b: bad\nc: worse"


def test_fsr_without_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr` with no subcommand prints help to stderr and exits 2."""
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
