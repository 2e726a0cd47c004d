"""Defects a user hit (docs/notes/audit-gym.md): each test is the user's repro, read back from the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest
from gymnasium import spaces
from tests.distributions import source_path
from tests.record.gym.envs import SampledEnv as SpaceEnv
from tests.record.gym.play import assert_recorded, play

import fastsim_record as fr
from fastsim_record.cli import main
from fastsim_record.gym import GymWrapError, RecordEpisodes, RecordVectorEpisodes, read_episode
from fastsim_record.gym._single import EXIT_REASON
from fastsim_recording_format import validate


def test_scalar_box_spaces_are_recorded_not_silently_dropped(tmp_path: Path) -> None:
    """A Box of shape () (its samples are 0-d arrays) records every row, observation and action."""
    scalar = spaces.Box(-1.0, 1.0, shape=(), dtype=np.float64)
    env = RecordEpisodes(SpaceEnv(scalar, spaces.Box(-1.0, 1.0, shape=(), dtype=np.float32)), tmp_path)
    played = play(env, [3])
    env.close()
    recorded = assert_recorded(env.files[0].path, played[0])
    assert recorded.observations["observation"].shape == (7,)
    assert recorded.actions["action"].dtype == np.float32


def test_a_publishing_failure_is_not_committed_as_a_normal_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When packing rows breaks off the env thread, the file says so (stopped, the reason) instead of 'normal' and empty."""
    from fastsim_embedded.gymnasium_host import capture

    def broken(self: Any, chunk: Any) -> Any:
        raise RuntimeError("packing broke")

    monkeypatch.setattr(capture.RowLayout, "pack", broken)
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    play(env, [1], max_steps=5)
    env.close()
    assert env.files[0].completion == "stopped"
    assert "packing broke" in env.files[0].reason
    with fr.open(env.files[0].path) as rec:
        assert rec.info.completion == "stopped"
        assert "packing broke" in (rec.info.completion_reason or "")


def test_two_leaves_with_one_channel_name_are_refused_at_wrap_time(tmp_path: Path) -> None:
    """{"a.b": ..., "a": {"b": ...}} would write two leaves into one channel: refused naming it, nothing written."""
    space = spaces.Dict({"a.b": spaces.Discrete(2), "a": spaces.Dict({"b": spaces.Discrete(3)})})
    with pytest.raises(GymWrapError, match=r"^observation\.a\.b: two leaves"):
        RecordEpisodes(SpaceEnv(space, spaces.Discrete(2)), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_dict_with_integer_keys_is_recorded(tmp_path: Path) -> None:
    """A Dict space keyed by ints records each leaf (its value is found by the key itself, not its text)."""
    space = spaces.Dict({1: spaces.Discrete(4), 2: spaces.Box(-1.0, 1.0, (2,), np.float32)})  # type: ignore[dict-item]
    env = RecordEpisodes(SpaceEnv(space, spaces.Discrete(2)), tmp_path)
    played = play(env, [5])
    env.close()
    recorded = read_episode(env.files[0].path)
    np.testing.assert_array_equal(recorded.observations["observation.1"], [o[1] for o in played[0].observations])
    np.testing.assert_array_equal(recorded.observations["observation.2"], [o[2] for o in played[0].observations])


class ArrayReward(gym.Wrapper[Any, Any, Any, Any]):
    """Returns the reward as a one-element array (a common custom-env slip)."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, np.array([reward]), terminated, truncated, info


def test_a_reward_that_is_not_one_number_is_one_line_and_keeps_the_steps_before(tmp_path: Path) -> None:
    """A (1,) array reward raises GymWrapError naming 'reward' (no TypeError traceback); the file commits failed (kept)."""
    env = RecordEpisodes(ArrayReward(gym.make("CartPole-v1")), tmp_path)
    env.reset(seed=1)
    with pytest.raises(GymWrapError, match=r"^step\(\): reward: the env returned ndarray of shape \(1,\)"):
        env.step(0)
    env.close()
    assert env.files[0].completion == "failed"
    assert env.files[0].reason.startswith("reward: the env returned ndarray of shape (1,)")
    assert read_episode(env.files[0].path).observations["observation"].shape[0] >= 1


def test_spec_kwargs_keep_their_numpy_values_as_data(tmp_path: Path) -> None:
    """gym.make kwargs that are NumPy values are recorded as bools and lists, not as their text."""
    desc = np.array([list("SF"), list("FG")])
    env = RecordEpisodes(gym.make("FrozenLake-v1", desc=desc, is_slippery=np.bool_(False)), tmp_path)
    env.reset(seed=1)
    env.step(0)
    env.close()
    kwargs = read_episode(env.files[0].path).description["spec"]["kwargs"]
    assert kwargs["desc"] == [["S", "F"], ["F", "G"]]
    assert kwargs["is_slippery"] is False


def test_an_episode_of_an_empty_observation_space_reads_back(tmp_path: Path) -> None:
    """read_episode on an env whose observation is an empty Dict returns its steps (no IndexError)."""
    env = RecordEpisodes(SpaceEnv(spaces.Dict({}), spaces.Discrete(2)), tmp_path)
    played = play(env, [2])
    env.close()
    recorded = read_episode(env.files[0].path)
    assert recorded.steps == 6
    np.testing.assert_array_equal(recorded.actions["action"], played[0].actions)


def test_an_autoreset_episode_has_no_seed_in_the_file_or_the_index(tmp_path: Path) -> None:
    """A vector autoreset episode (gym.reset seed null) is not listed as seed 0 by fsr info or fsr index."""
    envs = RecordVectorEpisodes(gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync"), tmp_path / "eps")
    envs.action_space.seed(0)
    envs.reset(seed=7)
    for _ in range(60):
        envs.step(envs.action_space.sample())
    envs.close()
    autoreset = [f for f in envs.files if f.seed is None]
    assert autoreset
    with fr.open(autoreset[0].path) as rec:
        assert rec.info.seed is None
    assert main(["index", str(tmp_path / "eps"), "-o", str(tmp_path / "index.parquet")]) == 0
    rows = {Path(r["path"]).name: r["seed"] for r in pq.read_table(tmp_path / "index.parquet").to_pylist()}
    assert rows[autoreset[0].path.name] is None
    assert sorted(s for s in rows.values() if s is not None) == [7, 8]


def test_a_single_envs_wrapper_stack_is_recorded_once(tmp_path: Path) -> None:
    """A single env's recorded wrapper stack is its stack, without a second 'sub-env:' copy of it."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    env.reset(seed=1)
    env.step(0)
    env.close()
    wrappers = read_episode(env.files[0].path).description["wrappers"]
    assert wrappers == ["TimeLimit", "OrderEnforcing", "PassiveEnvChecker", "CartPoleEnv"]


def test_a_vector_envs_sub_env_stack_is_recorded_beside_the_vector_stack(tmp_path: Path) -> None:
    """A vector env records its own stack and, once, the stack of its sub-envs."""
    envs = RecordVectorEpisodes(gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync"), tmp_path)
    envs.reset(seed=1)
    envs.step(envs.action_space.sample())
    envs.close()
    wrappers = read_episode(envs.files[0].path).description["wrappers"]
    assert wrappers[-1] == "sub-env: TimeLimit > OrderEnforcing > PassiveEnvChecker > CartPoleEnv"
    assert sum(w.startswith("sub-env:") for w in wrappers) == 1


def test_a_gymnasium_recording_without_joints_exports_to_lerobot_with_its_observation_as_state(tmp_path: Path) -> None:
    """A gym-pusht-like env (image + state Dict, no joints) exports to LeRobot: state = its observation, action = its actions."""
    from tests.record.gym.envs import ImageEnv

    env = RecordEpisodes(ImageEnv(), tmp_path / "eps")
    played = play(env, [4])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr"),
                 "--video-codec", "h264"]) == 0
    rows = pq.read_table(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    observed = np.array([o["state"] for o in played[0].observations], np.float32)
    np.testing.assert_array_equal([r["observation.state"] for r in rows], observed)
    actions = [*played[0].actions, played[0].actions[-1]]  # the last frame holds the last action
    np.testing.assert_array_equal([r["action"] for r in rows], np.array(actions, np.float32))


def test_a_numeric_only_recording_exports_to_lerobot_at_its_tick_rate(tmp_path: Path) -> None:
    """CartPole without render frames exports to LeRobot (no video): one row per tick, state and action as returned."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "eps")
    played = play(env, [6])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr")]) == 0
    info = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())
    assert info["fps"] == 50  # CartPole's render_fps: the recorded tick rate
    assert not any(f["dtype"] == "video" for f in info["features"].values())
    rows = pq.read_table(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    np.testing.assert_array_equal([r["observation.state"] for r in rows], np.array(played[0].observations, np.float32))
    actions = [*played[0].actions, played[0].actions[-1]]
    np.testing.assert_array_equal([r["action"] for r in rows], np.array(actions, np.float32))


def test_a_dict_action_space_is_the_recordings_actions_and_its_lerobot_action(tmp_path: Path) -> None:
    """A Dict action space: actions() joins its leaves in space order, and the LeRobot export carries them as action."""
    action_space = spaces.Dict({"arm": spaces.Box(-1, 1, (2,), np.float32), "grip": spaces.Discrete(2)})
    env = RecordEpisodes(SpaceEnv(spaces.Box(-1, 1, (3,), np.float32), action_space), tmp_path / "eps")
    env.action_space.seed(3)
    env.reset(seed=1)
    sent, truncated = [], False
    while not truncated:  # SpaceEnv truncates after 6 steps: the episode commits normal
        action = env.action_space.sample()
        sent.append([*action["arm"].tolist(), float(action["grip"])])
        truncated = env.step(action)[3]
    env.close()
    (path,) = sorted((tmp_path / "eps").glob("*.fsr"))
    with fr.open(path) as rec:
        actions = rec.actions()
    assert actions.names == ("action.arm[0]", "action.arm[1]", "action.grip")
    np.testing.assert_array_equal(actions.values[:6], np.array(sent, np.float32).astype(np.float64))
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr")]) == 0
    rows = pq.read_table(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    np.testing.assert_array_equal([r["action"] for r in rows][:6], np.array(sent, np.float32))



@pytest.mark.parametrize("mode", ["single", "vector"])
def test_ctrl_c_without_close_commits_the_open_episodes(tmp_path: Path, mode: str) -> None:
    """A real process ended by SIGINT before close(): every open episode is committed (stopped), none left .incomplete."""
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": f"{source_path()}{os.pathsep}{here.parents[2]}", "MUJOCO_GL": "egl"}
    done = subprocess.run([sys.executable, str(here / "interrupted_recorder.py"), str(tmp_path), mode],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    assert "KeyboardInterrupt" in done.stderr
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".fsr"))
    assert left == []  # no .incomplete, no reservation lock
    stopped = []
    for path in sorted(tmp_path.glob("*.fsr")):
        assert validate(path).validated_bytes == path.stat().st_size
        with fr.open(path) as rec:
            if rec.info.completion == "stopped":
                stopped.append(rec.info.completion_reason)
    assert stopped == [EXIT_REASON] * (1 if mode == "single" else 3)
