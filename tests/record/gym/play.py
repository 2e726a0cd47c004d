"""What the env returned, kept by the test, and the comparison with what was recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
from tests.record.gym.envs import flat

import fastsim_record as fr
from fastsim_record.gym import read_episode
from fastsim_recording_format import validate


@attrs.define
class Played:
    """One episode as the env returned it."""

    seed: int | None
    observations: list[Any] = attrs.field(factory=list)
    actions: list[Any] = attrs.field(factory=list)
    rewards: list[float] = attrs.field(factory=list)
    terminated: list[bool] = attrs.field(factory=list)
    truncated: list[bool] = attrs.field(factory=list)

    def step(self, action: Any, observation: Any, reward: float, terminated: bool, truncated: bool) -> None:
        self.actions.append(action)
        self.observations.append(observation)
        self.rewards.append(float(reward))
        self.terminated.append(bool(terminated))
        self.truncated.append(bool(truncated))


def play(env: Any, seeds: list[int | None], *, policy_seed: int = 0, max_steps: int = 10_000) -> list[Played]:
    """Play one episode per seed with a seeded random policy; every returned value kept."""
    env.action_space.seed(policy_seed)
    played = []
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        episode = Played(seed, [observation])
        for _ in range(max_steps):
            action = env.action_space.sample()
            observation, reward, terminated, truncated, _ = env.step(action)
            episode.step(action, observation, reward, terminated, truncated)
            if terminated or truncated:
                break
        played.append(episode)
    return played


def stacked(values: list[Any], name: str) -> dict[str, np.ndarray]:
    """Values by channel, stacked over time."""
    per = [flat(v, name) for v in values]
    return {key: np.stack([p[key] for p in per]) for key in per[0]} if per else {}


def assert_recorded(path: Path, played: Played, *, seed: int | str | None = "same") -> Any:
    """The file is valid and holds exactly the episode: observations, actions, rewards, flags, length, seed."""
    path = Path(path)
    assert validate(path).validated_bytes == path.stat().st_size
    episode = read_episode(path)
    steps = len(played.actions)
    assert episode.steps == steps
    observations = stacked(played.observations, "observation")
    assert set(episode.observations) == set(observations)
    for name, expected in observations.items():
        assert episode.observations[name].shape[0] == steps + 1
        assert episode.observations[name].dtype == expected.dtype, name
        np.testing.assert_array_equal(episode.observations[name], expected, err_msg=name)
    for name, expected in stacked(played.actions, "action").items():
        np.testing.assert_array_equal(episode.actions[name], expected.astype(episode.actions[name].dtype), err_msg=name)
    np.testing.assert_array_equal(episode.rewards, np.asarray(played.rewards, np.float64))
    np.testing.assert_array_equal(episode.terminated, played.terminated)
    np.testing.assert_array_equal(episode.truncated, played.truncated)
    if seed == "same":
        assert episode.seed == played.seed
    # one tick per observation: action row t shares observation row t's time (one stream)
    assert episode.time_ns.shape == (steps + 1,)
    assert bool(np.all(np.diff(episode.time_ns) > 0))
    assert_step_channels(path, played)
    return episode


def assert_step_channels(path: Path, played: Played) -> None:
    """The reading API itself: per-step channels have T rows, timed with observations 0..T-1."""
    steps = len(played.actions)
    with fr.open(path) as rec:
        reward = rec.numeric("reward")
        first = next(c for c in rec.channels() if c.split(".")[0] == "observation")
        observation = rec.numeric(first)
        assert len(observation) == steps + 1
        assert len(reward) == steps
        np.testing.assert_array_equal(reward.values, np.asarray(played.rewards, np.float64))
        np.testing.assert_array_equal(reward.time_ns, observation.time_ns[:steps])
        both = rec.numeric_all(["reward", "terminated", first])
        assert [len(both[n]) for n in both] == [steps, steps, steps + 1]
        np.testing.assert_array_equal(both["terminated"].values.astype(bool), played.terminated)
