"""FastSimRun-v0 on the DROID-like scene: the gripper action is ``finger_joint``'s position target
in rad (the joint channel's element name and unit), its bounds the joint's range in the model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import fastsim_record as fr
from fastsim_embedded.gym import FastSimRunEnv
from fastsim_record.cli import main

from .conftest import PICK, ROOT

mujoco = pytest.importorskip("mujoco")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
README = ROOT / "README.md"


def _model() -> Any:
    """The DROID-like MJCF compiled here, straight from the asset (not through the scene)."""
    xml = resources.files("fastsim_embedded.backends").joinpath("assets", "droid_like.xml").read_text("utf-8")
    return mujoco.MjModel.from_xml_string(xml)


def _issued(path: str) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    with fr.open(path) as rec:
        control = [(e.stream, e.data) for e in rec.control()]
    issued = [d for stream, d in control if stream == "control.audit"]
    results = [d for stream, d in control if stream == "control.result"]
    return issued, results


def test_the_gripper_element_is_finger_joint_in_rad_with_the_models_joint_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Names and units are robot.joint_position's (as fsr channels shows them); every bound is the joint's model range."""
    env = FastSimRunEnv(PICK, tmp_path / "out")
    control = env.controls[0]
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    env.close()
    model = _model()
    assert control.element_names[7] == "finger_joint"
    for k, name in enumerate(control.element_names):
        low, high = (float(v) for v in model.joint(name).range)
        assert (space.low[k], space.high[k]) == (low, high), name
    assert (space.low[7], space.high[7]) == (0.0, 0.8)
    assert main(["channels", "--json", str(PICK)]) == 0
    joints = next(c for c in json.loads(capsys.readouterr().out) if c["name"] == "robot.joint_position")
    shown = dict(zip(joints["element_names"], joints["units"], strict=True))
    assert [shown[name] for name in control.element_names] == list(control.units) == ["rad"] * 8
    info = env.channel_info["robot.joint_position"]
    assert dict(zip(info["element_names"], info["units"], strict=True)) == shown


def test_a_gripper_target_is_recorded_exactly_and_finger_joint_goes_there(tmp_path: Path) -> None:
    """The rad target sent is the audit's, the actuator's ctrl and rec.actions()'; finger_joint settles on it."""
    env = FastSimRunEnv(PICK, tmp_path / "out")
    obs, _ = env.reset(seed=7)
    target = 0.4567891234567
    action = np.append(obs["robot.joint_position"][:7], target)  # hold the arm, half-close the gripper
    for _ in range(30):
        obs, *_ = env.step(action)
    env.close()
    finger = obs["robot.joint_position"][7]
    assert finger == pytest.approx(target, abs=0.02)  # rad, not a closure fraction (0.46 x 0.8 = 0.37)
    issued, results = _issued(env.committed[0])
    assert len(issued) == 30
    assert all(d["args"]["targets"] == action.tolist() for d in issued)  # exactly what was sent
    assert [d["accepted"] for d in results] == [True] * 30
    assert all(d["detail"]["actuators"][7] == "gripper" for d in results)  # the MJCF's actuator on finger_joint
    assert all(d["detail"]["ctrl"][7] == target for d in results)  # ctrl = gear (1) * target
    with fr.open(env.committed[0]) as rec:
        acts = rec.actions()
    assert acts.names[7] == "finger_joint"
    assert acts.units[7] == "rad"
    assert (acts.values[:30, 7] == target).all()


def test_an_out_of_range_gripper_target_raises_naming_finger_joint_and_its_bound(tmp_path: Path) -> None:
    """Above 0.8 rad (the old closure 1.0 too) or below 0: ValueError naming the element and bound; nothing recorded."""
    env = FastSimRunEnv(PICK, tmp_path / "out")
    obs, _ = env.reset(seed=7)
    good = np.append(obs["robot.joint_position"][:7], 0.0)
    env.step(good)
    for value, words in ((1.0, r"'finger_joint' \(index 7\) = 1.0 is above its bound 0.8"),
                         (0.81, r"'finger_joint' \(index 7\) = 0.81 is above its bound 0.8"),
                         (-0.01, r"'finger_joint' \(index 7\) = -0.01 is below its bound 0.0")):
        bad = good.copy()
        bad[7] = value
        with pytest.raises(ValueError, match=words):
            env.step(bad)
    env.step(good)  # the episode goes on
    env.close()
    issued, _ = _issued(env.committed[0])
    assert [d["command_id"] for d in issued] == ["gym-2", "gym-3"]
    assert all(d["args"]["targets"][7] == 0.0 for d in issued)


def test_a_pick_policy_sending_finger_joint_targets_succeeds(tmp_path: Path) -> None:
    """The scene's planned pick, sent as actions (gripper open -> closed in rad within the space), succeeds."""
    env = FastSimRunEnv(PICK, tmp_path / "out")
    env.reset(seed=7)
    assert env.episode is not None
    scene = env.episode.backend.scene  # type: ignore[attr-defined]  # the policy plans from the episode's scene
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    sent: list[float] = []
    info: dict[str, Any] = {}
    done, terminated, k = False, False, 0
    while not done:
        action = scene.scripted_command(k, 1 / 15)
        assert space.contains(action)
        _, _, terminated, truncated, info = env.step(action)
        sent.append(float(action[7]))
        done, k = terminated or truncated, k + 1
    env.close()
    assert terminated
    assert info["success"] is True
    assert (min(sent), max(sent)) == (0.0, 0.8)  # the gripper closed fully, in rad
    with fr.open(env.committed[0]) as rec:
        assert rec.actions().values[: len(sent), 7].tolist() == sent
    lo, hi = space.low[7], space.high[7]  # the README's conversion to DROID's [0, 1]
    assert "`(a[7] - lo) / (hi - lo)`" in " ".join(README.read_text().split())
    droid = (np.array(sent) - lo) / (hi - lo)
    assert (droid.min(), droid.max()) == (0.0, 1.0)
    assert lo + droid[-1] * (hi - lo) == sent[-1]


def test_a_lerobot_export_refuses_to_mix_old_closure_files_with_finger_joint_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose gripper element is the old 'gripper' beside a finger_joint file: one line naming both, no dataset."""
    pytest.importorskip("av")
    from fastsim_embedded.backends import mujoco_backend
    from fastsim_embedded.backends.mujoco_scene import COMMAND_NAMES
    from fastsim_embedded.session.compile import prepare_run
    from fastsim_embedded.session.session import run_session

    (new,) = run_session(prepare_run(PICK, duration_s=0.5), tmp_path / "new").outcome.committed
    monkeypatch.setattr(mujoco_backend, "COMMAND_NAMES", (*COMMAND_NAMES[:7], "gripper"))  # as before grip40
    (old,) = run_session(prepare_run(PICK, duration_s=0.5), tmp_path / "old").outcome.committed
    with fr.open(old) as rec:
        assert rec.actions().names[7] == "gripper"
    capsys.readouterr()
    code = main(["export", str(new), str(old), "--to", "lerobot", "-o", str(tmp_path / "ds"), "--quiet"])
    err = capsys.readouterr().err
    assert code != 0
    assert "'gripper']" in err
    assert "'finger_joint']" in err
    assert "differ" in err
    assert not (tmp_path / "ds").exists()
