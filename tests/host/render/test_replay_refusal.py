"""`fsr replay` never overwrites an existing output: exit 2 naming the file; --overwrite opts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastsim_record.cli import main as fsr_main
from fastsim_recording_format import FsrReader

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.mujoco
def test_replay_refuses_an_existing_output_and_overwrite_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second Replay into replay.fsr exits 2 with one line and leaves the first file; --overwrite replaces it."""
    out = str(tmp_path)
    assert fsr_main(["record", str(EXAMPLES / "render-once" / "run.yaml"), "--output-dir", out,
                     "--duration", "0.2", "--no-progress"]) == 0
    replay = ["replay", str(tmp_path / "source.fsr"), str(EXAMPLES / "render-replay" / "run.yaml"), "--output-dir", out]
    assert fsr_main(replay) == 0
    first = (tmp_path / "replay.fsr").read_bytes()
    capsys.readouterr()
    assert fsr_main(replay) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"fsr replay: {tmp_path / 'replay.fsr'}: already exists; refusing to overwrite it "
                   "(pass --overwrite to replace it)")
    assert (tmp_path / "replay.fsr").read_bytes() == first
    assert fsr_main([*replay, "--overwrite"]) == 0
    with FsrReader(tmp_path / "replay.fsr") as reader:
        assert reader.mode == "render"


@pytest.mark.slow
@pytest.mark.mujoco
def test_sigterm_stops_a_replay_and_commits_what_was_rendered(tmp_path: Path) -> None:
    """SIGTERM during `fsr replay`: one line, the rendered part committed with completion stopped, exit 3."""
    import os
    import signal
    import subprocess
    import sys
    import time

    fsr = str(Path(sys.executable).with_name("fsr"))
    env = {**os.environ, "MUJOCO_GL": "egl"}
    subprocess.run([fsr, "record", str(EXAMPLES / "render-once" / "run.yaml"), "--output-dir", str(tmp_path),
                    "--duration", "20", "--no-progress"], check=True, env=env, capture_output=True)
    proc = subprocess.Popen([fsr, "replay", str(tmp_path / "source.fsr"), str(EXAMPLES / "render-replay" / "run.yaml"),
                             "--output-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    end = time.monotonic() + 60
    while not (tmp_path / "replay.fsr.incomplete").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, (stdout, stderr)
    assert stderr.strip() == "fsr replay: SIGTERM: stopping; what was recorded is being committed (completion: stopped)"
    with FsrReader(tmp_path / "replay.fsr") as reader:
        fence = reader.footer["terminal_fence"]
        assert (fence["completion"], fence["completion_reason"]) == ("stopped", "stopped by SIGTERM")


@pytest.mark.mujoco
def test_replay_uses_the_seed_its_source_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A source recorded with --seed 7 replays with seed 7 (same lights and camera jitter), unless RUN sets one."""
    out = str(tmp_path)
    assert fsr_main(["record", str(EXAMPLES / "render-once" / "run.yaml"), "--output-dir", out,
                     "--duration", "0.2", "--no-progress", "--seed", "7"]) == 0
    assert fsr_main(["replay", str(tmp_path / "source.fsr"), str(EXAMPLES / "render-replay" / "run.yaml"),
                     "--output-dir", out]) == 0
    with FsrReader(tmp_path / "replay.fsr") as reader:
        assert reader.run.attributes["run"]["seed"] == 7
        assert reader.run.attributes["scene"]["backend"]["randomized"]["seed"] == 7
