"""What users type is checked: scene schemas with did-you-mean, channels and backends at `fsr check`, `fsr channels`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastsim_record.cli import main

RECORD = "plugin://fastsim/record"


def _write(tmp_path: Path, *, backend: str = "synthetic", scene: dict[str, Any] | None = None,
           config: dict[str, Any] | None = None, scenario: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "typed", "backend": backend,
        "scenario": scenario if scenario is not None else {"scene": scene or {}},
        "runtime": {"sensor_hz": 15.0, "duration_s": 0.2},
        "plugins": {"record": {"use": RECORD, "config": config or {}}},
    }))
    return path


def _err(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_mujoco_scene_typos_get_did_you_mean_lines_from_fsr_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """widht, reset_evry_s, camras, a misspelled camera and a bad range: one path: message line each, exit 2."""
    scene = {"robots": {"robot": {"use": "robot://droid/panda-2f85"}},
             "mujoco": {"widht": 320, "reset_evry_s": 4, "camras": ["wrist"], "cameras": ["wirst"],
                        "randomize": {"light_scale": [2, 1]}}}
    assert main(["check", str(_write(tmp_path, backend="mujoco", scene=scene))]) == 2
    assert sorted(_err(capsys)) == sorted([
        "scenario.scene.mujoco.widht: unknown key; did you mean 'width'?",
        "scenario.scene.mujoco.reset_evry_s: unknown key; did you mean 'reset_every_s'?",
        "scenario.scene.mujoco.camras: unknown key; did you mean 'cameras'?",
        "scenario.scene.mujoco.cameras: unknown camera 'wirst'; did you mean 'wrist'?",
        "scenario.scene.mujoco.randomize.light_scale: must be [low, high] with 0.0 <= low <= high <= 3.0 (got [2, 1])",
    ])


def test_an_unknown_robot_and_stray_keys_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown robot use:, a stray scene key and a stray scenario key each get a line; exit 2."""
    scenario = {"scene": {"robots": {"robot": {"use": "robot://droid/panda-2f58"}}, "extra": 1,
                          "synthetic": {"reset_evry_s": 1.0}}, "scnee": {}}
    assert main(["record", str(_write(tmp_path, scenario=scenario)), "--output-dir", str(tmp_path / "o")]) == 2
    assert sorted(_err(capsys)) == sorted([
        "scenario.scnee: unknown key; did you mean 'scene'?",
        "scenario.scene.robots.robot.use: unknown robot 'robot://droid/panda-2f58' for backend 'synthetic'; "
        "did you mean 'robot://droid/panda-2f85'?",
        "scenario.scene.extra: unknown key; valid keys are 'fluid', 'robots', 'synthetic', 'task'",
        "scenario.scene.synthetic.reset_evry_s: unknown key; did you mean 'reset_every_s'?",
    ])
    assert not (tmp_path / "o").exists()


def test_fsr_check_resolves_channels_and_backends_with_suggestions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelled channel or backend fails at fsr check, with a suggestion."""
    config = {"streams": {"observations": {"mode": "explicit",
                                           "include": {"q": {"channel": "robot.joint_positon"}}}}}
    assert main(["check", str(_write(tmp_path, config=config))]) == 2
    assert _err(capsys) == [
        "plugins.record.config.streams.observations: channel 'robot.joint_positon' is not a numeric channel "
        "of the scene; did you mean 'robot.joint_position'?",
    ]
    assert main(["check", str(_write(tmp_path, backend="synthetc"))]) == 2
    assert _err(capsys)[0].endswith("did you mean 'synthetic'?")


def test_a_camera_bound_to_a_channel_of_the_wrong_kind_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """rgb bound to an intrinsics channel: exit 2 from fsr record, naming the field, before anything runs."""
    base = "sensors.cam00.camera"
    camera = {"rgb": f"{base}.intrinsics", "intrinsics": f"{base}.intrinsics",
              "translation": f"{base}.extrinsics.translation",
              "quaternion_xyzw": f"{base}.extrinsics.quaternion_xyzw"}
    run = _write(tmp_path, backend="synthetic+cameras", scene={"synthetic": {"camera_width": 8, "camera_height": 8}},
                 config={"streams": {"cameras": {"cam00": camera}}})
    assert main(["record", str(run), "--output-dir", str(tmp_path / "o"), "--no-progress"]) == 2
    assert _err(capsys) == [
        "plugins.record.config.streams.cameras.cam00.rgb: channel 'sensors.cam00.camera.intrinsics' has kind "
        "'intrinsics'; rgb needs a channel of kind 'rgb'; did you mean 'sensors.cam00.camera.rgb'?",
    ]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_duration_that_is_not_a_finite_positive_number_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """--duration nan, inf, negative or zero is refused with a line naming the option, exit 2."""
    with pytest.raises(SystemExit) as caught:
        main(["record", str(_write(tmp_path)), "--duration", value])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fsr record: argument --duration: must be a finite number of seconds above 0")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--duration", "soon", "must be a number of seconds (got 'soon')"),
        ("--seed", "x1", "must be an integer from 0 through 2**63-1 (got 'x1')"),
        ("--seed", "-1", "must be an integer from 0 through 2**63-1 (got -1)"),
        ("--seed", str(2**63), f"must be an integer from 0 through 2**63-1 (got {2**63})"),
        ("--episodes", "2.5", "must be a whole number from 1 through 1000000 (got '2.5')"),
        ("--episodes", "0", "must be a whole number from 1 through 1000000 (got 0)"),
        ("--jobs", "1000001", "must be a whole number from 1 through 1000000 (got 1000001)"),
        ("--realtime", "fast", "must be a positive factor (got 'fast')"),
        ("--realtime", "0", "must be a positive finite factor (got 0)"),
        ("--realtime", "inf", "must be a positive finite factor (got inf)"),
    ],
)
def test_a_numeric_option_out_of_its_range_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    """Each numeric option of `fsr record` says what it must be and what it got, exit 2."""
    with pytest.raises(SystemExit) as caught:
        main(["record", str(_write(tmp_path)), option, value])
    assert caught.value.code == 2
    assert capsys.readouterr().err == f"fsr record: argument {option}: {message}\n"


def test_fsr_channels_lists_kind_dtype_shape_units_and_element_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsr channels` prints what the scene declares; --json gives the element names in order."""
    run = _write(tmp_path)
    assert main(["channels", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["channel", "kind", "dtype", "shape", "units", "elements"]
    assert lines[1].split() == ["robot.joint_position", "numeric", "float64", "7", "rad",
                                "joint1,joint2,joint3,joint4,joint5,joint6,joint7"]
    assert main(["channels", str(run), "--json"]) == 0
    channels = json.loads(capsys.readouterr().out)
    pose = next(c for c in channels if c["name"] == "robot.base_pose")
    assert pose["element_names"] == ["x", "y", "z", "qx", "qy", "qz", "qw"]
    assert pose["units"] == ["m", "m", "m", "1", "1", "1", "1"]
    assert main(["channels", str(_write(tmp_path, backend="mujco"))]) == 2
    assert "did you mean 'mujoco'?" in capsys.readouterr().err


def test_a_template_that_renders_a_path_fails_fsr_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """{name} rendered with a Run name holding a slash is caught by fsr check, not at record time."""
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "a/b", "backend": "synthetic",
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": "{name}.fsr"}}}},
    }))
    assert main(["check", str(path)]) == 2
    assert _err(capsys) == ["plugins.record.config.output.name: the rendered name 'a/b.fsr' is not a bare file name"]


def test_fsr_record_json_prints_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one JSON object: status, completion, committed path, seed, sizes, exit code."""
    out = tmp_path / "o"
    assert main(["record", str(_write(tmp_path)), "--output-dir", str(out), "--json", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "succeeded"
    assert report["completion"] == "normal"
    assert report["committed"] == [str(out / "episode.fsr")]
    assert report["seed"] == 3
    assert report["exit_code"] == 0
    assert report["records"] > 0
    assert report["file_bytes"] == (out / "episode.fsr").stat().st_size
