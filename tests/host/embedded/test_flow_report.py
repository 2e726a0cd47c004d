"""Issue 26: ``fsr record`` reports the flow-control gauge -- how often and for how long
the simulation waited on Record -- in ``--verbose`` and ``--json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from fastsim_record.cli import main as fsr_main


def test_record_reports_the_flow_gauge(
    tmp_path: Path, write_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """--json carries ``flow`` (waits, waited_s); --verbose prints the same as a table."""
    run = write_run(runtime={"sensor_hz": 120.0})
    out = tmp_path / "out"
    assert fsr_main(["record", str(run), "--duration", "1", "--output-dir", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    flow = report["flow"]
    assert isinstance(flow["waits"], int)
    assert 0 <= flow["waits"] <= 120
    assert isinstance(flow["waited_s"], float)
    assert flow["waited_s"] >= 0.0
    assert fsr_main(["record", str(run), "--duration", "1", "--output-dir", str(tmp_path / "v"),
                     "--verbose", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "flow control" in text
    assert "waited_s" in text
    assert "of 120 ticks" in text
