"""Files describe themselves: run metadata (name, backend, seed, config, scene, element names) and `fsr info`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main
from fastsim_recording_format import FsrReader

RECORD = "plugin://fastsim/record"


def _run(tmp_path: Path, backend: str = "synthetic", scene: dict[str, object] | None = None) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "described", "backend": backend, "scenario": {"scene": scene or {}},
        "runtime": {"sensor_hz": 15.0, "duration_s": 0.4},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": "d.fsr"}}}},
    }))
    return path


def test_the_run_metadata_names_the_run_backend_seed_config_and_scene(tmp_path: Path) -> None:
    """The file's run metadata carries the Run name, backend, seed, effective Record config and channel element names."""
    result = run_session(prepare_run(_run(tmp_path), seed=31), tmp_path / "out")
    with FsrReader(result.outcome.committed[0]) as reader:
        attributes = reader.run.attributes
    assert attributes["run"]["name"] == "described"
    assert attributes["run"]["backend"] == "synthetic"
    assert attributes["run"]["seed"] == 31
    assert attributes["record_config"]["output"] == {"name": "d.fsr"}
    assert attributes["record_config"]["queues"]["numeric"]["overload"] == "fail_run"
    assert attributes["scene"]["backend"]["seed"] == 31
    channels = {c["name"]: c for c in attributes["scene"]["channels"]}
    assert channels["robot.joint_position"]["element_names"] == [f"joint{k}" for k in range(1, 8)]
    assert channels["robot.base_pose"]["units"] == ["m", "m", "m", "1", "1", "1", "1"]


@pytest.mark.mujoco
def test_mujoco_files_name_the_13_droid_joints_in_order_and_what_the_seed_varied(tmp_path: Path) -> None:
    """The DROID joint channel keeps its 13 joint names and units (stream descriptor and scene); the scene lists the randomized poses."""
    from fastsim_embedded.backends.mujoco_scene import JOINT_NAMES

    scene: dict[str, object] = {"mujoco": {"width": 32, "height": 24, "cameras": []}}
    result = run_session(prepare_run(_run(tmp_path, "mujoco", scene), seed=4), tmp_path / "out")
    with FsrReader(result.outcome.committed[0]) as reader:
        attributes = reader.run.attributes
        observations = reader.stream("observations").attributes
    assert observations["element_names"]["robot.joint_position"] == list(JOINT_NAMES)
    layout = {c["name"]: c for c in observations["channels"]}
    assert layout["robot.joint_position"]["units"] == ["rad"] * 13
    channels = {c["name"]: c for c in attributes["scene"]["channels"]}
    assert channels["robot.joint_position"]["element_names"] == list(JOINT_NAMES)
    assert len(JOINT_NAMES) == 13
    assert channels["robot.joint_velocity"]["units"] == ["rad/s"] * 13
    randomized = attributes["scene"]["backend"]["randomized"]
    assert randomized["seed"] == 4
    assert set(randomized["objects"]) == {"cube", "can", "block"}


def test_fsr_info_shows_completion_run_seed_and_wall_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr info` (text and --json) reports completion kind and reason, Run name, backend, seed and wall time."""
    out = tmp_path / "out"
    assert main(["record", str(_run(tmp_path)), "--output-dir", str(out), "--seed", "8", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["info", str(out / "d.fsr"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["completion"] == {"kind": "normal", "reason": "duration reached after 6 ticks", "requested_by": "host"}
    assert info["run"] == {"name": "described", "backend": "synthetic", "seed": 8, "episode": 0}
    assert isinstance(info["wall_time_s"], float)
    assert main(["info", str(out / "d.fsr")]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "run described (backend synthetic, seed 8, episode 0)"
    assert text[1].startswith("completion normal, wall time ")
