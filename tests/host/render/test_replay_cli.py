"""``fsr replay`` without a host, and the Replay's reading of its source FSR (no simulator needed)."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.render.replay import read_track
from fastsim_record.cli import _host
from fastsim_record.cli import replay as replay_cli
from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec
from fastsim_recording_format.codecs.render_state import encode_render_state


def test_replay_without_an_installed_host_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no fastsim.hosts/embedded-replay entry point, fsr replay explains that in one line and exits 2."""
    monkeypatch.setattr(_host, "entry_points", lambda **_: ())
    parser = argparse.ArgumentParser()
    replay_cli.add_arguments(parser)
    args = parser.parse_args(["source.fsr", "run.yaml"])
    assert replay_cli.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == "fsr replay: no FastSim host with render Replay is installed (fastsim.hosts / embedded-replay)"


def test_replay_with_a_broken_host_exits_2_naming_the_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A host entry point that fails to load is reported as one line, never a traceback."""

    class Broken:
        name = replay_cli.ENTRY
        value = "broken.module:COMMAND"

        def load(self) -> Any:
            raise ImportError("no module named broken\nsecond line")

    monkeypatch.setattr(_host, "entry_points", lambda **_: (Broken(),))
    args = argparse.Namespace(source="s.fsr", run="r.yaml")
    assert replay_cli.run(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == "fsr replay: broken.module:COMMAND: ImportError: no module named broken"


def _source(path: Path, generations: list[int]) -> Path:
    state = {
        "rigid/a/pose": np.array([0, 0, 0, 0, 0, 0, 1.0]),
        "rigid/a/linear_velocity": np.zeros(3),
        "rigid/a/angular_velocity": np.zeros(3),
    }
    payload = encode_render_state(state)
    records = [
        RecordIn.data(1, i + 1, i + 1, generation, (i + 1) * 33_333_333, payload)
        for i, generation in enumerate(generations)
    ]
    with FsrWriter(path, RunMetadata("r", "c"), [StreamSpec(1, "render.state", "render.state")]) as writer:
        writer.write_batch(records)
        writer.seal({})
    return path


def test_read_track_describes_the_complete_source_sequence(tmp_path: Path) -> None:
    """The Replay source names the source's SHA-256, its full stream/global sequence and generations."""
    path = _source(tmp_path / "s.fsr", [0, 0, 1, 1, 2])
    track = read_track(path)
    assert track.source.fence() == {
        "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "source_name": "s.fsr",
        "stream": "render.state",
        "records": 5,
        "stream_sequence": {"first": 1, "last": 5},
        "global_sequence": {"first": 1, "last": 5},
        "generations": [0, 1, 2],
        "complete": True,
    }


def test_read_track_refuses_a_source_whose_generations_skip(tmp_path: Path) -> None:
    """Replay keeps the source's generations, so a source jumping from generation 0 to 2 is refused."""
    with pytest.raises(RunConfigError) as info:
        read_track(_source(tmp_path / "s.fsr", [0, 0, 2]))
    assert "render.state record 3 is in generation 2 after 0" in str(info.value.issues[0])


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_read_track_closes_its_source_on_close_and_on_refusal(tmp_path: Path) -> None:
    """The track's reader is closed by ``close`` and never leaked when the source is refused."""
    before = _open_fds()
    track = read_track(_source(tmp_path / "s.fsr", [0, 0, 1]))
    assert _open_fds() == before + 1
    track.close()
    track.close()  # idempotent
    assert _open_fds() == before
    with pytest.raises(RunConfigError):
        read_track(_source(tmp_path / "bad.fsr", [0, 2]))
    assert _open_fds() == before
