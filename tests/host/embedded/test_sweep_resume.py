"""Resuming a sweep (`--resume`), the Run checked once before any episode, and the sweep's progress bar."""

from __future__ import annotations

import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from fastsim_recording_format import FsrReader

FSR = str(Path(sys.executable).with_name("fsr"))
ENV = {**os.environ, "MUJOCO_GL": "egl", "PYTHONUNBUFFERED": "1"}
NAME = "{name}-s{seed}-e{episode:03d}.fsr"


def _write(folder: Path, robot: str = "robot://example/robot") -> Path:
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "resume", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": robot}}}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 0.2},
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": {"output": {"name": NAME}}}},
    }))
    return path


def _fsr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FSR, *args], capture_output=True, text=True, env=ENV, timeout=300, check=False)


def _files(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """name -> (seed, episode, observation payloads) of every committed file."""
    out = {}
    for path in sorted(folder.glob("*.fsr")):
        with FsrReader(path) as reader:
            run = reader.run.attributes["run"]
            out[path.name] = (run["seed"], run["episode"], b"".join(r.payload for r in reader.records("observations")))
    return out


def test_resume_records_exactly_the_missing_episodes_as_a_fresh_sweep_would(tmp_path: Path) -> None:
    """2 episodes, 1 deleted, --episodes 4 --resume: the 3 missing ones match a fresh sweep; a rerun names --resume."""
    run = _write(tmp_path)
    fresh, part = tmp_path / "fresh", tmp_path / "part"
    assert _fsr("record", str(run), "--episodes", "4", "--seed", "3", "--jobs", "2",
                "--output-dir", str(fresh)).returncode == 0
    assert _fsr("record", str(run), "--episodes", "2", "--seed", "3", "--output-dir", str(part)).returncode == 0
    (part / "resume-s4-e001.fsr").unlink()
    kept = (part / "resume-s3-e000.fsr").stat().st_mtime_ns
    refused = _fsr("record", str(run), "--episodes", "4", "--seed", "3", "--output-dir", str(part))
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[0] == (
        f"fsr record: {part / 'resume-s3-e000.fsr'}: already exists; refusing to overwrite it "
        "(pass --overwrite to replace it, or --resume to record only the episodes without a file)")
    done = _fsr("record", str(run), "--episodes", "4", "--seed", "3", "--jobs", "2", "--resume",
                "--output-dir", str(part))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fsr record: --resume: 1 of 4 episodes committed already, 0 left as .incomplete; recording 3" in done.stderr
    assert "sweep of 4 episodes: 1 committed before, 3 committed, 0 stopped, 0 failed, 0 not run" in done.stdout
    assert sorted(line.split(" (")[0] for line in done.stdout.splitlines() if line.startswith("episode ") and "(seed" in line) == [
        f"episode {k}" for k in range(1, 4)]
    assert _files(part) == _files(fresh)
    assert len(_files(fresh)) == 4
    assert (part / "resume-s3-e000.fsr").stat().st_mtime_ns == kept
    again = _fsr("record", str(run), "--episodes", "4", "--seed", "3", "--resume", "--output-dir", str(part))
    assert again.returncode == 0
    assert "sweep of 4 episodes: 4 committed before, 0 committed" in again.stdout


def test_resume_lists_an_incomplete_with_its_recover_command_and_never_touches_it(tmp_path: Path) -> None:
    """An .incomplete is listed with its `fsr recover` command, left byte for byte, not recorded (exit 3)."""
    run = _write(tmp_path)
    out = tmp_path / "out"
    assert _fsr("record", str(run), "--episodes", "2", "--output-dir", str(out)).returncode == 0
    staging = out / "resume-s1-e001.fsr.incomplete"
    (out / "resume-s1-e001.fsr").rename(staging)
    before = staging.read_bytes()
    done = _fsr("record", str(run), "--episodes", "3", "--resume", "--output-dir", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    command = f"fsr recover {staging} -o {out / 'resume-s1-e001.fsr'}"
    assert (f"fsr record: episode 1 (seed 1) is left as .incomplete and is never overwritten; "
            f"recover it with `{command}`") in done.stderr
    assert "sweep of 3 episodes: 1 committed before, 1 committed, 0 stopped, 0 failed, 1 not run" in done.stdout
    assert staging.read_bytes() == before
    assert not (out / "resume-s1-e001.fsr").exists()
    assert (out / "resume-s2-e002.fsr").exists()
    recovered = subprocess.run([FSR, *shlex.split(command)[1:]], capture_output=True, text=True, env=ENV,
                               timeout=120, check=False)
    assert recovered.returncode == 0, recovered.stderr
    finished = _fsr("record", str(run), "--episodes", "3", "--resume", "--output-dir", str(out))
    assert finished.returncode == 0, finished.stderr
    assert "sweep of 3 episodes: 3 committed before, 0 committed" in finished.stdout


def test_resume_needs_a_sweep_and_excludes_overwrite(tmp_path: Path) -> None:
    """--resume without --episodes, or with --overwrite: one line, exit 2, nothing recorded."""
    run = _write(tmp_path)
    alone = _fsr("record", str(run), "--resume", "--output-dir", str(tmp_path / "a"))
    assert (alone.returncode, alone.stderr.strip()) == (2, "--resume: only with --episodes")
    both = _fsr("record", str(run), "--episodes", "2", "--resume", "--overwrite", "--output-dir", str(tmp_path / "b"))
    assert (both.returncode, both.stderr.strip()) == (2, "fsr record: --resume and --overwrite: choose one")
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_a_scene_typo_fails_the_sweep_once_with_exit_2_before_any_episode(tmp_path: Path) -> None:
    """A misspelled robot: the one line `fsr check` gives and exit 2, not N failed episodes and exit 1."""
    run = _write(tmp_path, robot="robot://example/robt")
    check = _fsr("check", str(run))
    sweep = _fsr("record", str(run), "--episodes", "4", "--output-dir", str(tmp_path / "out"))
    assert check.returncode == sweep.returncode == 2
    assert sweep.stderr.splitlines() == check.stderr.splitlines()
    assert len(sweep.stderr.splitlines()) == 1
    assert "robot://example/robt" in sweep.stderr
    assert sweep.stdout == ""
    assert not (tmp_path / "out").exists()


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``fsr`` with stdout and stderr on a pseudo-terminal: (exit code, everything it wrote)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([FSR, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                               env={**ENV, "COLUMNS": "160"})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    text = b"".join(chunks).decode(errors="replace")
    return process.wait(timeout=300), re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_a_sweep_shows_one_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """On a pty: episodes done of N, failed, running and an ETA; piped or --json: no bar."""
    run = _write(tmp_path)
    code, shown = _on_a_terminal("record", str(run), "--episodes", "2", "--jobs", "2",
                                 "--output-dir", str(tmp_path / "tty"))
    assert code == 0, shown
    assert "0/2 0 failed, 2 running" in shown
    assert "2/2" in shown
    assert "ETA 0:00:0" in shown
    piped = _fsr("record", str(run), "--episodes", "2", "--output-dir", str(tmp_path / "piped"))
    assert piped.returncode == 0
    assert "running" not in piped.stdout + piped.stderr
    assert "ETA" not in piped.stdout + piped.stderr
    code, quiet = _on_a_terminal("record", str(run), "--episodes", "2", "--json", "--output-dir", str(tmp_path / "json"))
    assert code == 0
    assert "running" not in quiet
    assert "ETA" not in quiet
