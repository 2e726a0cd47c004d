"""FastSimRun-v0 under bad input and interruption: nothing recorded is lost, nothing bad is recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_embedded.backends.base import ControlOutcome
from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.gym import FastSimRunEnv
from fastsim_recording_format import validate

from .conftest import reach_run

DRIVER = Path(__file__).with_name("driver.py")


def _audit(path: str) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    with fr.open(path) as rec:
        issued = [e.data for e in rec.control() if e.data.get("event") == "command.issued"]
        applied = [e.data for e in rec.control() if e.data.get("event") == "command.applied"]
    return issued, applied


def test_an_action_outside_the_space_raises_naming_element_and_bound_and_records_nothing(tmp_path: Path) -> None:
    """ValueError names element and bound; the refused actions never reach Core; the episode goes on."""
    env = FastSimRunEnv(reach_run(tmp_path, duration_s=2.0), tmp_path / "out")
    env.reset(seed=1)
    good = np.zeros(7)
    env.step(good)
    bad = good.copy()
    bad[2] = 3.5
    with pytest.raises(ValueError, match=r"'joint3' \(index 2\) = 3.5 is above its bound 3.14159"):
        env.step(bad)
    bad[2] = -4.0
    with pytest.raises(ValueError, match=r"'joint3' .* below its bound -3.14159"):
        env.step(bad)
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"'joint3' .* not a finite number"):
        env.step(bad)
    with pytest.raises(ValueError, match=r"expected shape \(7,\), got \(6,\)"):
        env.step(np.zeros(6))
    env.step(good)  # the episode goes on
    env.close()
    issued, _ = _audit(env.committed[0])
    assert [d["command_id"] for d in issued] == ["gym-2", "gym-3"]  # the refused actions never reached Core
    with fr.open(env.committed[0]) as rec:
        assert rec.info.records["observations"] == 3


def test_step_before_reset_and_after_close_raise_a_clear_error(tmp_path: Path) -> None:
    """step before reset, step or reset after close: a RuntimeError that says what to do; close is idempotent."""
    env = FastSimRunEnv(reach_run(tmp_path), tmp_path / "out")
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):
        env.step(np.zeros(7))
    env.reset(seed=1)
    env.close()
    with pytest.raises(RuntimeError, match=r"step\(\) after close\(\)"):
        env.step(np.zeros(7))
    with pytest.raises(RuntimeError, match=r"reset\(\) after close\(\)"):
        env.reset(seed=1)
    env.close()  # idempotent
    assert len(env.committed) == 1


def test_a_refused_command_is_visible_in_info_and_in_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command the scene refuses is in info['refused'] and info['control'], and in control.result."""
    env = FastSimRunEnv(reach_run(tmp_path, duration_s=2.0), tmp_path / "out")
    env.reset(seed=1)
    original = SyntheticBackend.apply_control
    monkeypatch.setattr(SyntheticBackend, "apply_control",
                        lambda self, command: ControlOutcome(False, {"error": "the arm is braked"}))
    info = env.step(np.zeros(7))[-1]
    monkeypatch.setattr(SyntheticBackend, "apply_control", original)
    assert info["refused"] == ["gym-2"]
    assert info["control"] == [{"command_id": "gym-2", "accepted": False, "detail": {"error": "the arm is braked"}}]
    assert env.step(np.zeros(7))[-1]["refused"] == []
    env.close()
    _, applied = _audit(env.committed[0])
    assert [(d["command_id"], d["accepted"]) for d in applied] == [("gym-2", False), ("gym-3", True)]
    assert applied[0]["detail"] == {"error": "the arm is braked"}


def _driver(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(reach_run(tmp_path, duration_s=1e5)), str(tmp_path / "out"), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _only_file(folder: Path, pattern: str) -> Path:
    (path,) = folder.glob(pattern)
    return path


def test_an_exception_in_user_code_commits_the_open_episode_stopped_at_exit(tmp_path: Path) -> None:
    """An exception escaping the user's program: the finaliser commits the open episode stopped at exit."""
    process = _driver(tmp_path, "raise")
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "the user's policy broke" in err
    path = _only_file(tmp_path / "out", "*.fsr")
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        assert rec.info.completion == "stopped"
        assert "never closed" in (rec.info.completion_reason or "")
        assert rec.info.records["observations"] == 6
    assert not list((tmp_path / "out").glob("*.incomplete"))


def _stepping(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "stepping"


def test_sigint_inside_the_step_loop_stops_and_commits(tmp_path: Path) -> None:
    """Ctrl-C in a step loop commits the episode stopped, a valid file, and the program ends by KeyboardInterrupt."""
    process = _driver(tmp_path, "loop")
    try:
        _stepping(process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()  # never leave a stepping driver behind a failed assertion
    assert process.returncode != 0
    assert "KeyboardInterrupt" in err
    path = _only_file(tmp_path / "out", "*.fsr")
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        assert rec.info.completion == "stopped"
        assert rec.info.records["observations"] >= 6


def test_kill_9_leaves_the_recoverable_incomplete(tmp_path: Path) -> None:
    """kill -9 mid-episode leaves only the .incomplete, and fsr recover makes it a valid file."""
    process = _driver(tmp_path, "loop")
    try:
        _stepping(process)
        time.sleep(3.0)  # several batch intervals: batches reach the disk before the kill
    finally:
        process.kill()
    process.communicate(timeout=60)
    assert not list((tmp_path / "out").glob("*.fsr"))
    partial = _only_file(tmp_path / "out", "*.incomplete")
    recovered = tmp_path / "recovered.fsr"
    done = subprocess.run([sys.executable, "-m", "fastsim_record.cli", "recover", str(partial), "-o", str(recovered)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert validate(recovered).validated_bytes == recovered.stat().st_size


def test_a_scene_failure_in_step_fails_the_episode_and_the_next_step_says_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scene exception in step: re-raised, no final file (as fsr record), step asks for reset(), then all is well."""
    env = FastSimRunEnv(reach_run(tmp_path, duration_s=2.0), tmp_path / "out")
    env.reset(seed=1)
    env.step(np.zeros(7))

    def broken(self: object, substeps: int) -> None:
        raise RuntimeError("the physics blew up")

    monkeypatch.setattr(SyntheticBackend, "step", broken)
    with pytest.raises(RuntimeError, match="blew up"):
        env.step(np.zeros(7))
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match=r"the episode has ended; call reset\(\)"):
        env.step(np.zeros(7))
    assert env.committed == []
    assert not list((tmp_path / "out").glob("episode*"))
    env.reset(seed=2)  # a new episode works
    env.close()
    assert [Path(p).name for p in env.committed] == ["episode-00001-env0.fsr"]
