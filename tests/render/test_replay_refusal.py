"""`fsr replay` never overwrites an existing output: exit 2 naming the file; --overwrite opts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastsim_record.cli import main as fsr_main
from fastsim_record.fsr import FsrReader

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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
