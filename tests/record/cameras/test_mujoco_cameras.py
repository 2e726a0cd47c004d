"""A short, CI-sized MuJoCo-backed camera recording through the whole pipeline."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from tests.decode import decode_frame

from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_recording_format import FsrReader, RecordKind
from fastsim_recording_format.reading.calibration_history import rebuild_calibration_history

from .support import CameraRun, camera_alias

pytestmark = pytest.mark.mujoco

SCENE = {
    "robots": {"robot": {"use": "robot://droid/panda-2f85"}},
    "mujoco": {"width": 320, "height": 240, "control_hz": 15, "reset_every_s": 0.5},
}
CAMERAS = {
    "exterior_left": camera_alias("exterior_left"),
    "exterior_right": camera_alias("exterior_right", quality=92),
    "wrist": camera_alias("wrist", encoding="png"),
}


def _psnr(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> CameraRun:
    """One second of the DROID-like scene at 15 Hz with three cameras and a reset halfway."""
    run = CameraRun(tmp_path_factory.mktemp("mujoco-cameras"))
    result = run(
        inner="mujoco", scene=SCENE, cameras=CAMERAS, sensor_hz=15.0, duration_s=1.0,
        observations={
            "mode": "explicit",
            "include": {
                "q": {"channel": "robot.joint_position", "required": True},
                "qd": {"channel": "robot.joint_velocity", "required": True},
            },
        },
    )
    assert result.outcome.ok, result.outcome.reason
    return run


def _published(run: CameraRun, camera: str, role: str) -> list[Any]:
    assert run.backend is not None
    return [r for _, r in run.backend.kept if r.camera == camera and r.role == role]


def test_jpeg_q92_psnr_on_rendered_frames(recorded: CameraRun) -> None:
    """Every rendered frame recorded as JPEG q92 4:4:4 decodes at a PSNR of at least 40 dB."""
    with FsrReader(recorded.output) as reader:
        for camera in ("exterior_left", "exterior_right"):
            descriptor = ImageDescriptor.from_dict(reader.stream(f"cameras.{camera}.rgb").codec)
            records = [r for r in reader.records(f"cameras.{camera}.rgb") if r.kind is RecordKind.DATA]
            originals = _published(recorded, camera, "rgb")
            assert len(records) == len(originals) == 15
            worst = min(
                _psnr(decode_frame(r.payload, descriptor), o.value) for r, o in zip(records, originals)
            )
            assert worst >= 40.0, f"{camera}: worst PSNR {worst:.1f} dB"


def test_png_wrist_frames_are_pixel_exact(recorded: CameraRun) -> None:
    """The PNG wrist camera's rendered frames read back pixel-exact, with moving extrinsics."""
    with FsrReader(recorded.output) as reader:
        descriptor = ImageDescriptor.from_dict(reader.stream("cameras.wrist.rgb").codec)
        records = [r for r in reader.records("cameras.wrist.rgb") if r.kind is RecordKind.DATA]
        for record, original in zip(records, _published(recorded, "wrist", "rgb"), strict=True):
            assert np.array_equal(decode_frame(record.payload, descriptor), original.value)
        translations = [
            np.frombuffer(r.payload, "<f8")
            for r in reader.records("cameras.wrist.extrinsics.translation")
        ]
    assert not np.allclose(translations[0], translations[6])


def test_calibration_history_spans_the_reset(recorded: CameraRun) -> None:
    """The records alone give every camera one calibration epoch per generation, the backend's digest."""
    with FsrReader(recorded.output) as reader:
        history = rebuild_calibration_history(reader.streams, reader.records())
    assert history.problems == ()
    assert history.cameras() == ("exterior_left", "exterior_right", "wrist")
    for camera in history.cameras():
        digest = _published(recorded, camera, "intrinsics")[0].calibration_digest
        assert history.digests(camera) == {0: (digest,), 1: (digest,)}


def test_joint_state_recorded_alongside(recorded: CameraRun) -> None:
    """The explicit joint position and velocity channels are recorded as one atomic tick record."""
    with FsrReader(recorded.output) as reader:
        ticks = [r.payload for r in reader.records("observations") if r.kind is RecordKind.DATA]
        layout = reader.stream("observations").attributes["channels"]
    assert [c["name"] for c in layout] == ["robot.joint_position", "robot.joint_velocity"]
    assert len(ticks) == 15
    assert all(len(t) == 2 * 13 * 8 for t in ticks)


def test_calibration_profiles_say_how_the_frames_were_made(
    recorded: CameraRun, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each camera's profile names renderer, version, MSAA and shadow map; fsr info shows them."""
    import json

    import mujoco

    from fastsim_record.cli import main as fsr_main

    with FsrReader(recorded.output) as reader:
        history = rebuild_calibration_history(reader.streams, reader.records())
    expected = {"name": "mujoco", "version": mujoco.__version__, "msaa_samples": 0, "shadow_map_size": 0}
    for camera in history.cameras():
        profile = _published(recorded, camera, "intrinsics")[0].profile
        assert {k: profile["renderer"][k] for k in expected} == expected
        assert profile["renderer"]["gl_backend"]
    capsys.readouterr()
    assert fsr_main(["info", str(recorded.output), "--json"]) == 0
    cameras = json.loads(capsys.readouterr().out)["cameras"]
    assert set(cameras) == {"exterior_left", "exterior_right", "wrist"}
    assert all({k: c["renderer"][k] for k in expected} == expected for c in cameras.values())
    assert fsr_main(["info", str(recorded.output)]) == 0
    text = capsys.readouterr().out
    assert f"camera wrist: rendered by mujoco {mujoco.__version__}" in text
    assert "MSAA 0 samples, shadow map 0" in text
