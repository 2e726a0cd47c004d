"""The batch commands' one progress bar (``batch.runner``): drawn on a terminal only, never with --json."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from fastsim_record.batch.executors import ProcessPool
from fastsim_record.batch.jobs import CheckTask, validate_job
from fastsim_record.batch.runner import run_all, shows_progress
from fastsim_record.batch.sources import expand

FSR = str(Path(sys.executable).with_name("fsr"))


def test_run_all_draws_done_failed_running_and_an_eta_on_a_terminal(dataset: Path) -> None:
    """A forced terminal console: the bar counts the files done and failed; without progress nothing is drawn."""
    (dataset / "broken.fsr").write_bytes(b"\x00" * 64)
    tasks = [CheckTask(e) for e in expand([str(dataset)])]
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    outcomes = run_all("fsr validate", ProcessPool(jobs=1), validate_job, tasks, progress=True, console=console)
    assert not isinstance(outcomes, int)
    assert sorted(o.code for o in outcomes) == [0, 0, 0, 1]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    assert "fsr validate" in text
    assert "0/4 0 failed, 1 running" in text
    assert "4/4 1 failed, 0 running" in text
    assert "ETA 0:00:00" in text
    quiet = io.StringIO()
    run_all("fsr validate", ProcessPool(jobs=1), validate_job, tasks, progress=False,
            console=Console(file=quiet, force_terminal=True))
    assert quiet.getvalue() == ""


def test_no_bar_when_the_output_is_not_a_terminal_or_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Captured (not a tty) or --json: shows_progress is false."""
    assert shows_progress() is False
    assert shows_progress(json=True) is False


def _on_a_terminal(*args: str) -> str:
    leader, follower = pty.openpty()
    process = subprocess.Popen([FSR, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                               env={**os.environ, "COLUMNS": "160"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=120) == 0
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))


def test_fsr_info_over_a_folder_shows_the_bar_on_a_pty_and_never_when_piped_or_json(dataset: Path) -> None:
    """The same command on a pseudo-terminal, piped, and with --json on the terminal."""
    shown = _on_a_terminal("info", str(dataset), "--jobs", "1")
    assert "fsr info" in shown
    assert "3/3 0 failed" in shown
    assert "ETA" in shown
    piped = subprocess.run([FSR, "info", str(dataset), "--jobs", "1"], capture_output=True, text=True,
                           timeout=120, check=True)
    assert "ETA" not in piped.stdout + piped.stderr
    assert "ETA" not in _on_a_terminal("info", str(dataset), "--jobs", "1", "--json")
