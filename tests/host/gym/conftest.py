"""Runs for the FastSimRun-v0 tests: short synthetic reach Runs and the MuJoCo pick example."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("gymnasium")

ROOT = Path(__file__).resolve().parents[3]
PICK = ROOT / "examples" / "policy" / "pick.yaml"
REACH = ROOT / "examples" / "policy" / "run.yaml"


def reach_run(
    folder: Path, *, duration_s: float = 1.0, name: str = "episode.fsr", task: dict[str, object] | None = None,
    record: dict[str, object] | None = None,
) -> Path:
    """A synthetic reach Run of ``duration_s`` at 30 Hz with no scripted commands."""
    path = folder / "reach-run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "reach", "backend": "synthetic",
        "scenario": {"scene": {
            "robots": {"robot": {"use": "robot://example/robot"}},
            "synthetic": {"command_every_s": None, "event_every_s": None},
            "task": task if task is not None else {"reach": {"tolerance_m": 0.05, "hold_s": 0.2}},
        }},
        "runtime": {"sensor_hz": 30.0, "duration_s": duration_s},
        "plugins": {"record": {"use": "plugin://fastsim/record",
                               "config": record or {"output": {"name": name}}}},
    }))
    return path


def camera_run(folder: Path, *, camera_hz: float = 15.0, duration_s: float = 1.0) -> Path:
    """A synthetic+cameras reach Run (one 32x24 camera at ``camera_hz``, sensors at 30 Hz), recorded as PNG."""
    path = folder / "cams.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "cams", "backend": "synthetic+cameras",
        "scenario": {"scene": {
            "robots": {"robot": {"use": "robot://example/robot"}},
            "synthetic": {"cameras": 1, "camera_width": 32, "camera_height": 24, "camera_hz": camera_hz,
                          "command_every_s": None, "event_every_s": None},
            "task": {"reach": {}},
        }},
        "runtime": {"sensor_hz": 30.0, "duration_s": duration_s},
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": {"streams": {"cameras": {"cam00": {
            "rgb": "sensors.cam00.camera.rgb", "intrinsics": "sensors.cam00.camera.intrinsics",
            "translation": "sensors.cam00.camera.extrinsics.translation",
            "quaternion_xyzw": "sensors.cam00.camera.extrinsics.quaternion_xyzw", "encoding": "png"}}}}}},
    }))
    return path
