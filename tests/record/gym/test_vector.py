"""RecordVectorEpisodes: Sync and Async vector envs in all three autoreset modes, read back per sub-env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from tests.record.gym.play import Played, assert_recorded

import fastsim_record as fr
from fastsim_record.gym import GymWrapError, RecordVectorEpisodes, read_episode

N = 3


def _vector(mode: AutoresetMode, how: str, env_id: str = "CartPole-v1", n: int = N, **kwargs: Any) -> Any:
    return gym.make_vec(env_id, num_envs=n, vectorization_mode=how, vector_kwargs={"autoreset_mode": mode}, **kwargs)


def drive(envs: Any, mode: AutoresetMode, steps: int, seed: int) -> list[Played]:
    """Step ``envs`` with a seeded random policy; split what they returned into sub-env episodes
    (the suite's own reading of Gymnasium's autoreset rules), in the order episodes start."""
    n = envs.num_envs
    envs.action_space.seed(seed)
    observation, _ = envs.reset(seed=seed)
    open_: dict[int, Played] = {i: Played(seed + i, [observation[i]]) for i in range(n)}
    started = [open_[i] for i in range(n)]
    autoreset = np.zeros(n, bool)
    for _ in range(steps):
        actions = envs.action_space.sample()
        observation, reward, terminated, truncated, info = envs.step(actions)
        for i in range(n):
            if mode is AutoresetMode.NEXT_STEP and autoreset[i]:
                open_[i] = Played(None, [observation[i]])
                started.append(open_[i])
                continue
            done = bool(terminated[i] or truncated[i])
            final = info["final_obs"][i] if mode is AutoresetMode.SAME_STEP and done else observation[i]
            open_[i].step(actions[i], final, reward[i], terminated[i], truncated[i])
            if mode is AutoresetMode.SAME_STEP and done:
                open_[i] = Played(None, [observation[i]])
                started.append(open_[i])
        autoreset = terminated | truncated
        if mode is AutoresetMode.DISABLED and autoreset.any():
            again = int(seed + 1000 + _)
            observation, _info = envs.reset(seed=again, options={"reset_mask": autoreset})
            for i in map(int, np.flatnonzero(autoreset)):
                open_[i] = Played(again + i, [observation[i]])
                started.append(open_[i])
    envs.close()
    return started


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_every_sub_env_episode_is_its_own_file(tmp_path: Path, mode: AutoresetMode, how: str) -> None:
    """Each sub-env episode is one valid file holding exactly what the env returned for it."""
    envs = RecordVectorEpisodes(_vector(mode, how), tmp_path)
    played = drive(envs, mode, steps=70, seed=40)
    files = envs.files
    assert len(files) == len(played)  # every started episode, the open ones committed at close
    assert [f.path.name for f in files] == sorted(p.name for p in tmp_path.iterdir())
    for file, episode in zip(files, played, strict=True):
        seed = "same" if mode is AutoresetMode.DISABLED or episode.seed is not None else "any"
        recorded = assert_recorded(file.path, episode, seed=seed)
        assert f"-env{file.sub_env:03d}.fsr" in file.path.name
        assert recorded.reset["sub_env"] == file.sub_env
        if episode.seed is None:
            assert recorded.reset["how"] == "autoreset"
            assert recorded.seed is None
    assert any(not f.steps or f.completion == "normal" for f in files)


def test_an_unknown_or_missing_autoreset_mode_is_refused(tmp_path: Path) -> None:
    """A mode this recorder does not know is refused at wrap time with one line; nothing is written."""
    envs = _vector(AutoresetMode.NEXT_STEP, "sync")
    envs.metadata = {**envs.metadata, "autoreset_mode": "EveryOtherStep"}
    with pytest.raises(GymWrapError, match=r"^metadata\['autoreset_mode'\]: 'EveryOtherStep' is not") as caught:
        RecordVectorEpisodes(envs, tmp_path / "out")
    assert "\n" not in str(caught.value)
    envs.metadata = {k: v for k, v in envs.metadata.items() if k != "autoreset_mode"}
    with pytest.raises(GymWrapError, match="None is not an autoreset mode"):
        RecordVectorEpisodes(envs, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    envs.close()


def test_camera_frames_for_some_sub_envs_numeric_and_render_state_for_all(tmp_path: Path) -> None:
    """camera_envs=[1]: only sub-env 1's files have the camera; every file has observations and render.state."""
    envs = RecordVectorEpisodes(
        _vector(AutoresetMode.NEXT_STEP, "sync", "HalfCheetah-v5", n=2, render_mode="rgb_array", width=64,
                height=48, max_episode_steps=5),
        tmp_path, camera_envs=[1], render_state=True,
    )
    played = drive(envs, AutoresetMode.NEXT_STEP, steps=8, seed=3)
    for file, episode in zip(envs.files, played, strict=True):
        assert_recorded(file.path, episode, seed="any")
        with fr.open(file.path) as rec:
            assert rec.cameras() == (("render",) if file.sub_env == 1 else ())
            assert rec.info.records["render.state"] == len(episode.observations)
            if file.sub_env == 1:
                assert rec.frame_count("render") == len(episode.observations)
        assert read_episode(file.path).description["num_envs"] == 2


def test_writers_are_a_bounded_pool_whatever_the_number_of_episodes(tmp_path: Path) -> None:
    """Hundreds of short episodes over 8 sub-envs: live threads stay bounded (episodes are opened and committed by a fixed pool; each open episode's Record worker ends with its commit)."""
    import threading

    before = threading.active_count()
    envs = RecordVectorEpisodes(_vector(AutoresetMode.SAME_STEP, "sync", n=8), tmp_path, writers=2)
    envs.action_space.seed(0)
    envs.reset(seed=0)
    peak = 0
    for _ in range(150):
        envs.step(envs.action_space.sample())
        peak = max(peak, threading.active_count())
    envs.close()
    assert len(envs.files) > 40
    # per open episode: its Record worker thread(s); plus the two pools of 2 threads; never one per episode recorded
    assert peak - before <= 8 * 2 + 2 * 2 + 4  # measured: 17
    assert threading.active_count() <= before + 1


def test_a_vector_env_that_seeds_itself_as_a_whole_records_that_seed(tmp_path: Path) -> None:
    """CartPole's own CartPoleVectorEnv takes one seed for all sub-envs: each file records it, and says so."""
    envs = RecordVectorEpisodes(gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point"),
                                tmp_path)
    observation, _ = envs.reset(seed=21)
    envs.close()
    for file in envs.files:
        episode = read_episode(file.path)
        assert episode.seed == 21
        assert episode.reset["how"] == "reset (one seed for the whole vector env)"
        np.testing.assert_array_equal(episode.observations["observation"][0], observation[file.sub_env])
