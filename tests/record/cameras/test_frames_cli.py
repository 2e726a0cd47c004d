"""``fsr frames`` and reading camera FSR files back (decode, legacy raw RGB, calibration history)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from tests.decode import decode_frame

from fastsim_contract.calibration import calibration_digest
from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder
from fastsim_record.cli import main
from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_record.testing.cameras import profile_for, write_camera_fsr
from fastsim_recording_format import FsrReader
from fastsim_recording_format.reading.calibration_history import rebuild_calibration_history

PLAN = [(0, 1, 60.0), (0, 2, 60.0), (0, 3, 60.0), (1, 4, 75.0), (1, 5, 75.0)]


def _read_png(path: Path) -> np.ndarray:
    bgr = cv2.imdecode(np.frombuffer(path.read_bytes(), np.uint8), cv2.IMREAD_COLOR)
    assert bgr is not None
    return np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))


def test_frames_writes_png_exact_frames(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PNG camera's frames come out of ``fsr frames`` pixel-exact, named by generation and sequence."""
    fsr = tmp_path / "cams.fsr"
    frames = write_camera_fsr(fsr, {"wrist": PngEncoder(64, 48)}, PLAN)
    assert main(["frames", str(fsr), "--camera", "wrist", "-o", str(tmp_path / "out")]) == 0
    assert "wrote 5 frames" in capsys.readouterr().out
    written = sorted((tmp_path / "out").iterdir())
    assert [p.name for p in written][:2] == ["wrist-g0-000001.png", "wrist-g0-000002.png"]
    assert written[3].name == "wrist-g1-000004.png"
    for tick, path in enumerate(written, start=1):
        assert np.array_equal(_read_png(path), frames[("wrist", tick)])


def test_frames_every_n(tmp_path: Path) -> None:
    """``--every 2`` writes the first, third and fifth frame of a JPEG camera."""
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"left": JpegEncoder(64, 48)}, PLAN)
    assert main(["frames", str(fsr), "--camera", "left", "-o", str(tmp_path / "o"), "--every", "2"]) == 0
    assert len(list((tmp_path / "o").iterdir())) == 3


def test_frames_decodes_legacy_raw_rgb(tmp_path: Path) -> None:
    """A 0.3.0-era raw-RGB stream (codec names only its size) decodes to the exact frames."""
    fsr = tmp_path / "legacy.fsr"
    frames = write_camera_fsr(fsr, {"old": PngEncoder(32, 24)}, PLAN[:2], legacy_raw=True)
    with FsrReader(fsr) as reader:
        descriptor = ImageDescriptor.from_dict(reader.stream("cameras.old.rgb").codec)
        assert descriptor.payload_codec == "raw_rgb"
        first = next(iter(reader.records("cameras.old.rgb")))
        assert np.array_equal(decode_frame(first.payload, descriptor), frames[("old", 1)])
    assert main(["frames", str(fsr), "--camera", "old", "-o", str(tmp_path / "o")]) == 0
    assert np.array_equal(_read_png(tmp_path / "o" / "old-g0-000002.png"), frames[("old", 2)])


def test_frames_unknown_camera_names_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asking for an absent camera is a usage error (exit 2) listing the file's cameras."""
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"wrist": PngEncoder(16, 16)}, PLAN[:1])
    assert main(["frames", str(fsr), "--camera", "nope", "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no camera 'nope'" in err
    assert "wrist" in err
    assert "Traceback" not in err


def test_frames_rejects_a_corrupt_file_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated FSR gives one ``invalid:`` line and exit 1."""
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"wrist": PngEncoder(16, 16)}, PLAN[:1])
    fsr.write_bytes(fsr.read_bytes()[:-10])
    assert main(["frames", str(fsr), "--camera", "wrist", "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid:")
    assert "Traceback" not in err


def test_frames_usage_errors(tmp_path: Path) -> None:
    """A missing file or ``--every 0`` is a usage error (exit 2)."""
    assert main(["frames", str(tmp_path / "none.fsr"), "--camera", "a", "-o", str(tmp_path)]) == 2
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"a": PngEncoder(16, 16)}, PLAN[:1])
    assert main(["frames", str(fsr), "--camera", "a", "-o", str(tmp_path), "--every", "0"]) == 2


def test_calibration_history_rebuilt_from_a_file(tmp_path: Path) -> None:
    """Reading a camera FSR's records alone rebuilds each camera's generation-to-digest history."""
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"wrist": PngEncoder(32, 24), "left": JpegEncoder(32, 24)}, PLAN)
    with FsrReader(fsr) as reader:
        history = rebuild_calibration_history(reader.streams, reader.records())
    assert history.problems == ()
    assert history.cameras() == ("left", "wrist")
    for camera in ("left", "wrist"):
        assert history.digests(camera) == {
            0: (calibration_digest(profile_for(camera, 32, 24, 60.0)),),
            1: (calibration_digest(profile_for(camera, 32, 24, 75.0)),),
        }
        assert history.epoch(camera, 0).intrinsics_records == 3
