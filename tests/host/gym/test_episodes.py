"""FastSimRun-v0 episodes: what a policy sends and sees is what Record commits."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.env_checker import check_env

import fastsim_record as fr
from fastsim_embedded.gym import ENV_ID, FastSimRunEnv
from fastsim_recording_format import validate

from .conftest import PICK, reach_run

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # check_env's advice on unbounded Boxes


def test_check_env_passes_on_the_synthetic_reach_scene(tmp_path: Path) -> None:
    """Gymnasium's own conformance check, on the synthetic scene with its reach task."""
    env = FastSimRunEnv(reach_run(tmp_path), tmp_path / "out")
    check_env(env, skip_render_check=True)
    env.close()
    assert env.committed
    assert all(validate(p).validated_bytes == Path(p).stat().st_size for p in env.committed)


def test_check_env_passes_on_the_mujoco_pick_scene_with_cameras(tmp_path: Path) -> None:
    """The DROID-like scene: 7 arm joint targets + finger_joint's (rad, ranges from the model), images observed."""
    env = FastSimRunEnv(PICK, tmp_path / "out", cameras=True)
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    assert space.shape == (8,)
    assert env.controls[0].element_names == (*(f"joint{k}" for k in range(1, 8)), "finger_joint")
    assert env.controls[0].units == ("rad",) * 8
    assert space.low[3] == pytest.approx(-3.0718)
    assert space.high[3] == pytest.approx(-0.0698)
    assert (space.low[7], space.high[7]) == (0.0, 0.8)  # finger_joint's range in the MJCF
    observations = env.observation_space
    assert isinstance(observations, gym.spaces.Dict)
    assert observations["sensors.wrist.camera.rgb"].shape == (120, 160, 3)
    assert "sensors.exterior_left.camera.rgb" not in observations.spaces  # the Run records the wrist only
    assert env.channel_info["robot.joint_position"]["element_names"][0] == "joint1"
    check_env(env, skip_render_check=True)
    env.close()


def _recorded(path: str) -> tuple[list[Mapping[str, Any]], dict[str, np.ndarray], list[Any]]:
    with fr.open(path) as rec:
        issued = [e.data for e in rec.control() if e.data.get("event") == "command.issued"]
        numeric = {name: series.values for name, series in rec.numeric_all().items()}
        results = [e.data["data"] for e in rec.events() if e.data.get("event") == "task.result"]
        return issued, numeric, results


def test_three_random_episodes_commit_three_files_holding_exactly_what_was_sent_and_seen(tmp_path: Path) -> None:
    """Audit == actions sent, numeric channels == observations returned (bit for bit), reward == task.reward."""
    env = gym.make(f"fastsim_embedded.gym:{ENV_ID}", run=reach_run(tmp_path, duration_s=0.5),
                   output_dir=tmp_path / "out")
    env.action_space.seed(0)
    episodes = []
    for k in range(3):
        obs, info = env.reset(seed=10 + k)
        observations, actions, rewards = [obs], [], []
        done = False
        while not done:
            action = env.action_space.sample()
            obs, reward, terminated, truncated, info = env.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(reward)
            done = terminated or truncated
        assert truncated
        assert not terminated
        assert len(info["committed"]) == 1
        episodes.append((info["committed"][0], observations, actions, rewards))
    env.close()
    paths = [e[0] for e in episodes]
    assert len(set(paths)) == 3
    assert all(Path(p).name.endswith("-env0.fsr") for p in paths)
    for path, observations, actions, rewards in episodes:
        assert validate(path).validated_bytes == Path(path).stat().st_size
        issued, numeric, results = _recorded(path)
        assert [d["args"]["targets"] for d in issued] == [a.tolist() for a in actions]  # exactly, as floats
        for channel in observations[0]:
            expected = np.stack([o[channel] for o in observations])
            np.testing.assert_array_equal(numeric[channel], expected)
        np.testing.assert_array_equal(numeric["task.reward"][1:, 0], np.array(rewards))
        (result,) = results
        assert result["success"] is False
        assert result["steps"] == len(rewards) == len(observations) - 1  # the reset's tick is not a step
        assert result["return"] == pytest.approx(sum(float(r) for r in rewards))
        assert result["return"] == pytest.approx(float(numeric["task.reward"][1:].sum()))
        with fr.open(path) as rec:
            assert rec.info.completion == "normal"


def test_reset_commits_an_abandoned_episode_stopped_and_numbers_grow(tmp_path: Path) -> None:
    """A reset mid-episode commits the open one as stopped; the next gets the next number."""
    env = FastSimRunEnv(reach_run(tmp_path, duration_s=2.0), tmp_path / "out")
    env.reset(seed=1)
    env.step(env.action_space.sample())
    env.reset(seed=2)
    first = env.committed[0]
    env.step(env.action_space.sample())
    env.close()  # close commits the open episode, stopped too
    assert [Path(p).name for p in env.committed] == ["episode-00000-env0.fsr", "episode-00001-env0.fsr"]
    for path in env.committed:
        with fr.open(path) as rec:
            assert rec.info.completion == "stopped"
    with fr.open(first) as rec:
        assert "abandoned by reset() after 1 steps" in (rec.info.completion_reason or "")


def test_max_steps_truncates_and_commits_normal(tmp_path: Path) -> None:
    """truncated at max_steps, the file is committed at once with completion normal."""
    env = FastSimRunEnv(reach_run(tmp_path, duration_s=10.0), tmp_path / "out", max_steps=4)
    env.reset(seed=1)
    flags = [env.step(env.action_space.sample())[3] for _ in range(4)]
    assert flags == [False, False, False, True]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(env.action_space.sample())
    env.close()
    with fr.open(env.committed[0]) as rec:
        assert rec.info.completion == "normal"
        assert rec.info.records["observations"] == 5


def test_gym_make_max_episode_steps_truncates_and_commits_normal_at_once(tmp_path: Path) -> None:
    """gym.make's TimeLimit truncates at N: the episode is committed normal at that step, its reason naming N."""
    env = gym.make(f"fastsim_embedded.gym:{ENV_ID}", run=reach_run(tmp_path, duration_s=10.0),
                   output_dir=tmp_path / "out", max_episode_steps=3)
    assert str(env) == "<TimeLimit<OrderEnforcing<PassiveEnvChecker<FastSimRunEnv<FastSimRun-v0>>>>>"  # no extra wrapper
    inner = env.unwrapped
    assert isinstance(inner, FastSimRunEnv)
    assert inner.time_limit == 3
    env.reset(seed=1)
    steps = [env.step(env.action_space.sample()) for _ in range(3)]
    assert [(s[2], s[3]) for s in steps] == [(False, False), (False, False), (False, True)]
    assert [Path(p).name for p in steps[-1][4]["committed"]] == ["episode-00000-env0.fsr"]  # at once, not at reset
    assert inner.episode is None
    env.reset(seed=2)
    env.step(env.action_space.sample())
    env.close()
    first, second = env.unwrapped.committed  # type: ignore[attr-defined]
    assert validate(first).validated_bytes == Path(first).stat().st_size
    with fr.open(first) as rec:
        assert rec.info.completion == "normal"
        assert rec.info.completion_reason == "max_episode_steps after 3 steps"
        assert rec.info.records["observations"] == 4
    with fr.open(second) as rec:
        assert rec.info.completion == "stopped"  # closed after 1 step, before its limit
    unlimited = gym.make(f"fastsim_embedded.gym:{ENV_ID}", run=reach_run(tmp_path), output_dir=tmp_path / "out",
                         max_episode_steps=-1)  # no TimeLimit: nothing to notice
    assert unlimited.unwrapped.time_limit is None  # type: ignore[attr-defined]
    unlimited.close()


def test_the_task_spec_is_in_the_run_metadata_and_the_reward_is_a_channel(tmp_path: Path) -> None:
    """fsr channels lists task.reward; the run metadata carries the task spec."""
    env = FastSimRunEnv(reach_run(tmp_path), tmp_path / "out")
    env.reset(seed=4)
    target = env.reset(seed=4)[0]["task.target"]
    env.close()
    with fr.open(env.committed[-1]) as rec:
        task = rec.info.attributes["task"]
        reward = rec.numeric("task.reward")
    assert reward.names == ("reward",)
    assert reward.units == ("1",)
    assert task["kind"] == "reach"
    assert task["tolerance_m"] == 0.05
    assert task["channels"][0] == "task.reward"
    assert task["target"] == target.tolist()


def test_record_false_runs_the_same_scene_and_writes_nothing(tmp_path: Path) -> None:
    """record=False: the Run without its Record plugin gives the same observations and no file."""
    recorded = FastSimRunEnv(reach_run(tmp_path, duration_s=0.3), tmp_path / "on")
    bare = FastSimRunEnv(reach_run(tmp_path, duration_s=0.3), tmp_path / "off", record=False)
    assert bare.observation_space == recorded.observation_space
    for env in (recorded, bare):
        env.action_space.seed(1)
    a, _ = recorded.reset(seed=2)
    b, _ = bare.reset(seed=2)
    for _ in range(5):
        action = recorded.action_space.sample()
        bare.action_space.sample()
        a = recorded.step(action)[0]
        b = bare.step(action)[0]
    for channel in a:
        np.testing.assert_array_equal(a[channel], b[channel])
    recorded.close()
    bare.close()
    assert len(recorded.committed) == 1
    assert bare.committed == []
    assert not [p for p in (tmp_path / "off").iterdir() if not p.name.startswith(".")]


def test_cameras_on_the_synthetic_camera_scene_hold_the_latest_frame(tmp_path: Path) -> None:
    """synthetic+cameras at half the sensor rate: check_env passes; a tick without a frame shows the latest one."""
    path = tmp_path / "cams.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "cams", "backend": "synthetic+cameras",
        "scenario": {"scene": {
            "robots": {"robot": {"use": "robot://example/robot"}},
            "synthetic": {"cameras": 1, "camera_width": 32, "camera_height": 24, "camera_hz": 15.0,
                          "command_every_s": None, "event_every_s": None},
            "task": {"reach": {}},
        }},
        "runtime": {"sensor_hz": 30.0, "duration_s": 1.0},
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": {"streams": {"cameras": {"cam00": {
            "rgb": "sensors.cam00.camera.rgb", "intrinsics": "sensors.cam00.camera.intrinsics",
            "translation": "sensors.cam00.camera.extrinsics.translation",
            "quaternion_xyzw": "sensors.cam00.camera.extrinsics.quaternion_xyzw", "encoding": "png"}}}}}},
    }))
    env = FastSimRunEnv(path, tmp_path / "out", cameras=True)
    check_env(env, skip_render_check=True)
    first, _ = env.reset(seed=1)  # tick 1: no frame yet at 15 Hz
    images = [first["sensors.cam00.camera.rgb"]]
    images += [env.step(np.zeros(7))[0]["sensors.cam00.camera.rgb"] for _ in range(4)]  # ticks 2..5
    env.close()
    assert not images[0].any()
    np.testing.assert_array_equal(images[2], images[1])  # tick 3 holds tick 2's frame
    assert not np.array_equal(images[3], images[2])  # tick 4 is a new frame
    with fr.open(env.committed[-1]) as rec:
        recorded = [frame.image for frame in rec.frames("cam00")]
    np.testing.assert_array_equal(recorded[0], images[1])  # PNG: the recorded frame is the observed one
    np.testing.assert_array_equal(recorded[1], images[3])
