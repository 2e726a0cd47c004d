"""kill -9 in the middle of an episode: earlier episodes stay committed, the current one is recoverable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests.distributions import source_path

import fastsim_record as fr
from fastsim_record.gym import read_episode
from fastsim_recording_format import validate

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def test_sigkill_mid_episode_leaves_earlier_episodes_committed_and_the_current_recoverable(tmp_path: Path) -> None:
    """A real process gets a real SIGKILL mid-episode; three files validate, the fourth is rebuilt by fsr recover."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": f"{source_path()}{os.pathsep}{ROOT}", "MUJOCO_GL": "egl"}
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "killed_recorder.py"), str(out)], stdout=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid"
        incomplete = out / "episode-000003.fsr.incomplete"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not incomplete.exists() or incomplete.stat().st_size < 32_768):
            time.sleep(0.05)  # the Record worker has written batches of the episode in progress
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    committed = sorted(out.glob("episode-*.fsr"))
    assert [p.name for p in committed] == ["episode-000000.fsr", "episode-000001.fsr", "episode-000002.fsr"]
    for seed, path in enumerate(committed):
        assert validate(path).validated_bytes == path.stat().st_size
        episode = read_episode(path)
        assert (episode.steps, episode.seed, bool(episode.truncated[-1])) == (20, seed, True)
    incomplete = out / "episode-000003.fsr.incomplete"
    assert incomplete.is_file()
    recovered = tmp_path / "recovered.fsr"
    done = subprocess.run(
        [sys.executable, "-m", "fastsim_record.cli", "recover", str(incomplete), "-o", str(recovered)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert validate(recovered).validated_bytes == recovered.stat().st_size
    sent = [json.loads(line) for line in (tmp_path / "actions.jsonl").read_text().splitlines() if line.endswith("]")]
    with fr.open(recovered) as rec:
        actions = rec.numeric("action").values
        assert rec.info.recovered
    assert 0 < len(actions) <= len(sent)
    np.testing.assert_array_equal(actions[:, 0], np.asarray(sent, np.float32)[: len(actions), 0])


@pytest.mark.parametrize("mode", ["single", "vector"])
def test_durable_episodes_are_committed_before_the_env_goes_on(tmp_path: Path, mode: str) -> None:
    """durable (the default), killed right after episodes ended (no close, no pause): every ended episode is committed and valid; every open one with a slot has its .incomplete."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": f"{source_path()}{os.pathsep}{ROOT}", "MUJOCO_GL": "egl"}
    done = subprocess.run([sys.executable, str(HERE / "killed_fast_recorder.py"), str(out), mode],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    played = json.loads((tmp_path / "played.json").read_text())
    committed = sorted(out.glob("*.fsr"))
    assert len(committed) == len(played) >= (6 if mode == "single" else 3)
    for path in committed:
        assert validate(path).validated_bytes == path.stat().st_size
    if mode == "single":  # the episode begun by the last reset already streams into its file
        assert len(list(out.glob("*.fsr.incomplete"))) == 1
        for path, episode in zip(committed, played, strict=True):
            assert (read_episode(path).steps, read_episode(path).seed) == (episode["steps"], episode["seed"])
    else:  # a writer slot per sub-env (writers=3): each open episode streams into its file
        ended = sorted(int(p.stem.rsplit("-env", 1)[1]) for p in committed)
        assert ended == sorted(e["sub_env"] for e in played)
        assert len(list(out.glob("*.fsr.incomplete"))) == 3
