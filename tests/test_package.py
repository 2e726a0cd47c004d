"""The distribution's identity and the ``fsr`` dispatcher."""

from __future__ import annotations

import pytest
from tests.distributions import FOLDERS, ROOT, project

import fastsim_record
from fastsim_contract.run_errors import RunIssue
from fastsim_record.cli import main
from fastsim_record.errors import ConfigError, RecordError


def test_version_is_0_3_12() -> None:
    """The package reports the release this repository builds."""
    assert fastsim_record.__version__ == "0.3.12"


def test_config_error_is_one_line_per_issue() -> None:
    """A ConfigError renders every issue as one `path: message` line."""
    err = ConfigError([RunIssue("a.b", "bad"), RunIssue("c", "worse")])
    assert isinstance(err, RecordError)
    assert str(err) == "a.b: bad\nc: worse"


def test_fsr_without_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr` with no subcommand prints help to stderr and exits 2."""
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


_WITHOUT_TEST_EXTRAS = """
import importlib, pkgutil, sys

class NoTestExtras:  # a plain install: no hypothesis, no pytest
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("hypothesis", "pytest"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoTestExtras())
import fastsim_record.testing, fastsim_recording_format
failed = []
for package in (fastsim_record.testing, fastsim_recording_format):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            failed.append(f"{info.name}: {exc}")
print(failed)
"""


def test_public_fakes_strategies_and_the_format_import_without_the_test_extras() -> None:
    """fastsim_record.testing (strategies included) and the format import with no hypothesis or pytest."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TEST_EXTRAS], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def _pyproject() -> dict[str, object]:
    return project("fastsim-plugin-record")


def test_the_plugin_is_registered_as_fastsim_record_in_both_groups() -> None:
    """pyproject registers `fastsim.record` in fastsim.components and fastsim.plugins, as the plugin README names them."""
    groups = _pyproject()["entry-points"]
    assert isinstance(groups, dict)
    assert groups["fastsim.components"] == {"fastsim.record": "fastsim_record.config.catalog:CATALOG"}
    assert groups["fastsim.plugins"] == {"fastsim.record": "fastsim_record.bootstrap:create_plugin"}


def test_the_project_is_released_under_apache_2() -> None:
    """LICENSE is the Apache License 2.0 text and every distribution's LICENSE and licence field say so."""
    text = (ROOT / "LICENSE").read_text()
    for name, folder in FOLDERS.items():
        assert project(name)["license"] == "Apache-2.0", name
        assert (folder / "LICENSE").read_text() == text, name
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert "All rights reserved" not in text
