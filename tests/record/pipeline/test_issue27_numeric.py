"""Issue 27, two items in the numeric path.

* Numeric ticks keep their diagnostic ``channel_sequence`` (one value per run of ticks in
  a batch plus the exceptions), readable as ``Recording.channel_sequences``.
* The default recording does no payload digest work: the payload CRC-32C is the trusted
  output policy's explicit choice ``runtime.output.payload_crc: true``, recorded in the
  file; ``fsr validate --integrity crc`` and ``fsr recover`` use it when a file has it and
  say so when it does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import fastsim_record as fr
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main as fsr_main
from fastsim_recording_format.reader import FsrReader

RECORD = "plugin://fastsim/record"


def _record(tmp_path: Path, name: str, *, output: dict[str, Any] | None = None, seconds: float = 2.0) -> Path:
    document = {
        "schema": "fastsim/2", "name": name, "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}},
                               "synthetic": {"numeric_channels": 12, "reset_every_s": 0.75,
                                             "command_every_s": 0.3}}},
        "runtime": {"sensor_hz": 120.0, **({"output": output} if output else {})},
        "plugins": {"record": {"use": RECORD}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    result = run_session(prepare_run(path, duration_s=seconds), tmp_path / name)
    assert result.outcome.status == "succeeded", result.outcome.reason
    return tmp_path / name / "episode.fsr"


def _expected_channel_sequences(path: Path) -> np.ndarray[Any, Any]:
    """The embedded host numbers observed ticks 1, 2, 3 ... (its live channel sequence)."""
    with FsrReader(path) as reader:
        spec = reader.stream("observations")
        ticks = sum(1 for r in reader.records(spec.stream_id) if int(r.kind) == 0)
    return np.arange(1, ticks + 1)


def test_numeric_ticks_keep_their_channel_sequence(tmp_path: Path) -> None:
    """Every tick's channel_sequence is kept across resets, carried by few records (CS1)."""
    path = _record(tmp_path, "chan")
    recording = fr.open(path)
    channel = recording.channels()[0]
    got = recording.channel_sequences(channel)
    expected = _expected_channel_sequences(path)
    assert len(got) == len(recording.numeric(channel)) == len(expected) > 200
    np.testing.assert_array_equal(got, expected)
    with FsrReader(path) as reader:
        spec = reader.stream("observations")
        carrying = sum(1 for r in reader.records(spec.stream_id) if "channel_sequence" in r.metadata)
    assert 0 < carrying < len(expected) // 10  # not one metadata map per tick


def test_channel_sequence_on_the_per_record_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ticks that take the per-record path (no run formed) keep it too."""
    from fastsim_embedded.session import loop
    from fastsim_record.pipeline.columns import RunBuilder
    monkeypatch.setattr(loop, "SCRIPTED_MAX_BLOCK", 1)  # per-tick envelopes (no observation blocks)
    monkeypatch.setattr(RunBuilder, "split", lambda self, items, materialize: list(map(materialize, items)))
    path = _record(tmp_path, "chan1")
    recording = fr.open(path)
    np.testing.assert_array_equal(
        recording.channel_sequences(recording.channels()[0]), _expected_channel_sequences(path)
    )


def test_default_recording_has_no_payload_crc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """By default no payload CRC is made; validate --integrity crc says why it cannot check."""
    path = _record(tmp_path, "plain", seconds=0.5)
    with FsrReader(path) as reader:
        assert reader.payload_crc is False
    capsys.readouterr()
    assert fsr_main(["validate", "--integrity", "crc", str(path)]) == 2
    err = capsys.readouterr().err
    assert "without payload CRC-32Cs" in err
    assert "runtime.output.payload_crc: true" in err
    assert fsr_main(["validate", str(path)]) == 0


def test_payload_crc_is_the_output_policys_explicit_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``runtime.output.payload_crc: true`` records a CRC-32C per batch; validate checks it."""
    path = _record(tmp_path, "crc", output={"payload_crc": True}, seconds=0.5)
    with FsrReader(path) as reader:
        assert reader.payload_crc is True
    assert fsr_main(["validate", "--integrity", "crc", str(path)]) == 0


@pytest.mark.parametrize("payload_crc", [False, True])
def test_recovery_says_whether_payloads_were_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload_crc: bool
) -> None:
    """``fsr recover`` names whether it checked payloads against CRC-32Cs."""
    path = _record(tmp_path, f"rec{payload_crc}", output={"payload_crc": payload_crc}, seconds=0.5)
    data = path.read_bytes()
    torn = tmp_path / "torn.fsr.incomplete"
    with FsrReader(path) as reader:
        end = int(reader.batch_index["offset"][-1] + reader.batch_index["length"][-1])
    torn.write_bytes(data[:end])  # the batches, without index and footer
    capsys.readouterr()
    assert fsr_main(["recover", str(torn), "-o", str(tmp_path / "out.fsr")]) == 0
    out = capsys.readouterr().out
    if payload_crc:
        assert "payloads checked against their CRC-32Cs" in out
    else:
        assert "payloads not checked: the file has no payload CRC-32Cs" in out


def test_upload_says_which_files_had_no_payload_crc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fsr upload`` validates at crc where a file has CRCs and counts the files that had none."""
    plain = _record(tmp_path, "up-plain", seconds=0.3)
    checked = _record(tmp_path, "up-crc", output={"payload_crc": True}, seconds=0.3)
    folder = tmp_path / "dataset"
    folder.mkdir()
    plain.rename(folder / "plain.fsr")
    checked.rename(folder / "crc.fsr")
    capsys.readouterr()
    store = tmp_path / "store"
    assert fsr_main(["upload", str(folder), f"file://{store}", "--no-index", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 uploaded and verified" in out
    assert "1 file had no payload CRC-32Cs" in out
