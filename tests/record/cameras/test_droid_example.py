"""The README main job's Run: examples/droid-like/run.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml

from fastsim_record.cli import main

RUN = Path(__file__).resolve().parents[3] / "examples" / "droid-like" / "run.yaml"


def test_droid_like_run_is_the_documented_main_job() -> None:
    """MuJoCo, three cameras, explicit joint position and velocity, episode.fsr, a reset halfway."""
    run = yaml.safe_load(RUN.read_text())
    config = run["plugins"]["record"]["config"]
    assert run["backend"] == "mujoco"
    assert config["output"]["name"] == "episode.fsr"
    assert set(config["streams"]["cameras"]) == {"exterior_left", "exterior_right", "wrist"}
    observations = config["streams"]["observations"]
    assert observations["mode"] == "explicit"
    assert {e["channel"] for e in observations["include"].values()} == {
        "robot.joint_position", "robot.joint_velocity",
    }
    reset = run["scenario"]["scene"]["mujoco"]["reset_every_s"]
    assert 2 * reset == run["runtime"]["duration_s"]


def test_droid_like_run_compiles() -> None:
    """``fsr check`` accepts the main job's Run."""
    assert main(["check", str(RUN)]) == 0
