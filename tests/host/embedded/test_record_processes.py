"""`fsr record` as real processes: contending recorders, signals, a frozen writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fastsim_recording_format import FsrReader

HERE = Path(__file__).parent
FSR = str(Path(sys.executable).with_name("fsr"))
ENV = {**os.environ, "MUJOCO_GL": "egl", "PYTHONUNBUFFERED": "1"}


def _run_file(tmp_path: Path, *, duration: float = 30.0, timeout_s: float = 60.0, name: str = "episode.fsr") -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "proc", "backend": "synthetic", "scenario": {},
        "runtime": {"sensor_hz": 60.0, "duration_s": duration},
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": {
            "output": {"name": name}, "finalize": {"requested_timeout_s": timeout_s}}}},
    }))
    return path


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def _wait_for(path: Path, process: subprocess.Popen[str], limit_s: float = 60.0) -> None:
    """Until ``path`` exists (the Run is recording); fails if the process ends first."""
    end = time.monotonic() + limit_s
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


def _completion(path: Path) -> tuple[str, str]:
    with FsrReader(path) as reader:
        fence = reader.footer["terminal_fence"]
        return str(fence["completion"]), str(fence["completion_reason"])


def _contend(out: Path, round_: int) -> tuple[list[int], list[str]]:
    script = str(HERE / "output_contender.py")
    procs = [
        subprocess.Popen([sys.executable, script, str(out), "episode.fsr", f"token-{round_}-{k}", "0.2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        for k in range(2)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    return [p.returncode for p in procs], [r[0].strip() + r[1].strip() for r in results]


def test_two_processes_contending_for_one_name_never_both_commit(tmp_path: Path) -> None:
    """20 pairs of real processes started together: exactly one commits, the other is refused naming the file; nothing else is touched."""
    locked = 0
    for round_ in range(20):
        out = tmp_path / f"r{round_}"
        codes, texts = _contend(out, round_)
        assert sorted(codes) == [0, 2], texts
        winner = codes.index(0)
        loser_text = texts[1 - winner]
        assert loser_text.startswith("refused: "), loser_text
        assert "episode.fsr" in loser_text
        assert ("another recorder is writing" in loser_text) or ("already exists" in loser_text)
        locked += "another recorder is writing" in loser_text
        assert (out / "episode.fsr").read_text() == f"token-{round_}-{winner}"
        assert sorted(p.name for p in out.iterdir()) == ["episode.fsr"]  # no quarantine, staging or lock
    assert locked >= 10  # the pairs really overlapped: the lock, not the finished file, refused most


def _record_pair(tmp_path: Path, out: Path) -> None:
    run = _run_file(tmp_path, duration=1.0)
    args = [FSR, "record", str(run), "--output-dir", str(out), "--no-progress", "--realtime", "2"]
    procs = [_start(args) for _ in range(2)]
    results = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], results
    loser_err = results[codes.index(2)][1]
    assert loser_err.count("\n") == 1
    assert "episode.fsr" in loser_err
    assert "Traceback" not in loser_err
    assert ("another recorder is writing" in loser_err) or ("already exists" in loser_err)
    winner_out = results[codes.index(0)][0]
    assert f"committed {out / 'episode.fsr'}" in winner_out
    assert _completion(out / "episode.fsr")[0] == "normal"
    assert sorted(p.name for p in out.iterdir()) == ["episode.fsr"]


def test_two_fsr_record_processes_of_one_name_one_commits_one_refuses(tmp_path: Path) -> None:
    """Two `fsr record` started together into one name: one commits a valid file, the other exits 2 with one line."""
    _record_pair(tmp_path, tmp_path / "out")


@pytest.mark.slow
def test_more_pairs_of_fsr_record_processes(tmp_path: Path) -> None:
    """8 more pairs of real `fsr record` into one name (the lock itself: 20 pairs above): never two commits, never a moved winner."""
    for round_ in range(8):
        _record_pair(tmp_path, tmp_path / f"out{round_}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_commits_a_stopped_episode_and_exits_3(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM, SIGINT and SIGHUP each stop the Run: the partial file is committed with completion stopped, one line, exit 3."""
    out = tmp_path / "out"
    proc = _start([FSR, "record", str(_run_file(tmp_path)), "--output-dir", str(out), "--no-progress",
                   "--realtime", "1"])
    _wait_for(out / "episode.fsr.incomplete", proc)
    time.sleep(0.3)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr
    assert stderr.strip() == f"fsr record: {sig.name}: stopping; what was recorded is being committed (completion: stopped)"
    assert "completion stopped (stopped by " + sig.name + ")" in stdout
    assert _completion(out / "episode.fsr") == ("stopped", f"stopped by {sig.name}")
    assert sorted(p.name for p in out.iterdir()) == ["episode.fsr"]


def test_a_second_signal_while_stopping_prints_no_traceback(tmp_path: Path) -> None:
    """Two quick SIGINTs: one line each, no traceback, the stopped file committed, exit 3."""
    out = tmp_path / "out"
    proc = _start([FSR, "record", str(_run_file(tmp_path)), "--output-dir", str(out), "--no-progress",
                   "--realtime", "1"])
    _wait_for(out / "episode.fsr.incomplete", proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr
    assert "Exception" not in stderr
    assert _completion(out / "episode.fsr")[0] == "stopped"


def _stalled(tmp_path: Path, timeout_s: float) -> tuple[subprocess.Popen[str], Path]:
    out = tmp_path / "out"
    run = _run_file(tmp_path, timeout_s=timeout_s)
    proc = _start([sys.executable, str(HERE / "stalled_record.py"), "1000", str(run), "--output-dir", str(out),
                   "--no-progress", "--realtime", "1"])
    _wait_for(out / "episode.fsr.incomplete", proc)
    time.sleep(0.5)
    return proc, out


def test_a_frozen_writer_cannot_hold_the_stop_past_the_finalizer_deadline(tmp_path: Path) -> None:
    """Writes that never return: SIGTERM still ends the process soon after the 1-s deadline, naming what is left on disk."""
    proc, out = _stalled(tmp_path, timeout_s=1.0)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, (stdout, stderr)
    assert elapsed < 1.0 + 16.0  # the deadline plus the documented grace
    assert "Traceback" not in stderr
    left = [p for p in (out / ".quarantine").rglob("episode.fsr.incomplete")]
    assert len(left) == 1
    assert f"left on disk: {left[0]}" in stderr
    assert not (out / "episode.fsr").exists()


def test_a_third_signal_abandons_and_names_the_incomplete_file(tmp_path: Path) -> None:
    """A stuck stop and three SIGTERMs: exit 128+15, one line naming the .incomplete to recover, no lock file left."""
    proc, out = _stalled(tmp_path, timeout_s=60.0)
    for _ in range(20):  # until the third is delivered (the kernel may merge two quick ones)
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert lines[1].startswith("fsr record: SIGTERM again: already stopping")
    staging = out / "episode.fsr.incomplete"
    assert lines[2] == (f"fsr record: abandoned on SIGTERM; left on disk: {staging} "
                        f"(a partial recording: fsr recover {staging} -o NEW.fsr)")
    assert sorted(p.name for p in out.iterdir()) == ["episode.fsr.incomplete"]


@pytest.mark.slow
def test_a_teardown_stuck_after_the_commit_cannot_keep_the_process_alive(tmp_path: Path) -> None:
    """The main thread stuck after the commit: the watchdog ends the process after the deadline plus grace, naming the committed file."""
    out = tmp_path / "out"
    run = _run_file(tmp_path, duration=0.5, timeout_s=1.0)
    proc = _start([sys.executable, str(HERE / "stalled_record.py"), "close", str(run), "--output-dir", str(out),
                   "--no-progress"])
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, (stdout, stderr)
    assert stderr.strip() == (
        "fsr record: the Run did not end within the finalizer's deadline plus the grace; "
        f"committed {out / 'episode.fsr'}"
    )
    assert _completion(out / "episode.fsr")[0] == "normal"


@pytest.mark.slow
@pytest.mark.mujoco
def test_repeated_ctrl_c_on_a_mujoco_run_prints_no_traceback_and_commits(tmp_path: Path) -> None:
    """Two Ctrl-C on the DROID-like MuJoCo Run: one line each, no traceback from threads or EGL, exit 3."""
    run = Path(__file__).resolve().parents[3] / "examples" / "droid-like" / "run.yaml"
    out = tmp_path / "out"
    proc = _start([FSR, "record", str(run), "--output-dir", str(out), "--no-progress", "--duration", "30"])
    _wait_for(out / "episode.fsr.incomplete", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert lines[0] == "fsr record: SIGINT: stopping; what was recorded is being committed (completion: stopped)"
    # the kernel merges a second SIGINT that arrives before the first is delivered: 0 or 1 more line
    assert len(lines) <= 2, lines
    assert all(line.startswith("fsr record: SIGINT again: already stopping") for line in lines[1:]), lines
    assert "Traceback" not in stderr
    assert "Exception" not in stderr
    assert _completion(out / "episode.fsr") == ("stopped", "stopped by SIGINT")


def test_after_a_kill_the_next_run_keeps_the_incomplete_file_and_points_to_recover(tmp_path: Path) -> None:
    """SIGKILL leaves <name>.incomplete; the next `fsr record` there exits 2 naming it and `fsr recover`, bytes untouched."""
    out = tmp_path / "out"
    run = _run_file(tmp_path)
    proc = _start([FSR, "record", str(run), "--output-dir", str(out), "--no-progress", "--realtime", "1"])
    staging = out / "episode.fsr.incomplete"
    _wait_for(staging, proc)
    time.sleep(0.3)
    proc.kill()
    proc.communicate(timeout=60)
    before = staging.read_bytes()
    again = subprocess.run([FSR, "record", str(run), "--output-dir", str(out), "--no-progress"],
                           capture_output=True, text=True, env=ENV, timeout=120, check=False)
    assert again.returncode == 2
    assert again.stderr.startswith(f"fsr record: {staging}: a crashed or stopped Run's data is here")
    assert f"fsr recover {staging} -o" in again.stderr
    assert again.stderr.count("\n") == 1
    assert staging.read_bytes() == before
    assert not (out / "episode.fsr").exists()
