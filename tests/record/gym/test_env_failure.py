"""A real Gymnasium env that raises mid-episode (issue 23): every open episode is committed,
completion ``failed`` with the exception's one line (contract FR2), holding exactly the
steps the env returned before it; the exception reaches the caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from tests.record.gym.envs import Failing
from tests.record.gym.play import Played, assert_recorded

import fastsim_record as fr
from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes, read_episode

LINE = "RuntimeError: the physics blew up"  # the exception's first line (Failing adds a second)
REASON = f"the env raised {LINE}"


class FailingAt(gym.Wrapper[Any, Any, Any, Any]):
    """Raises ``RuntimeError`` (two lines) at its ``at``-th step since it was made (``None``: never)."""

    def __init__(self, env: gym.Env[Any, Any], at: int | None) -> None:
        super().__init__(env)
        self.at, self.t = at, 0

    def step(self, action: Any) -> Any:
        self.t += 1
        if self.t == self.at:
            raise RuntimeError("the physics blew up\nsecond line")
        return self.env.step(action)


def _assert_failed(path: Path | None, played: Played) -> None:
    assert path is not None and path.is_file()
    assert not list(path.parent.glob("*.incomplete"))
    with fr.open(path) as rec:
        assert (rec.info.completion, rec.info.completion_reason) == ("failed", REASON)
        assert not rec.info.degraded
    assert_recorded(path, played)  # valid; every observation, action, reward and flag the env returned
    end = read_episode(path).end
    assert end["error"] == LINE
    assert not end["terminated"] and not end["truncated"]


def test_a_single_env_that_raises_commits_its_episode_failed_with_what_it_returned(tmp_path: Path) -> None:
    """CartPole raises at its 4th step of episode 2: episode 1 is normal, episode 2 holds its 3 steps, failed."""
    env = RecordEpisodes(Failing(gym.make("CartPole-v1"), at=4), tmp_path)
    env.action_space.seed(3)
    observation, _ = env.reset(seed=1)
    first = Played(1, [observation])
    while not (first.terminated and first.terminated[-1]) and not (first.truncated and first.truncated[-1]):
        action = env.action_space.sample()
        first.step(action, *env.step(action)[:4])
    observation, _ = env.reset(seed=2)
    second = Played(2, [observation])
    for _ in range(3):
        action = env.action_space.sample()
        second.step(action, *env.step(action)[:4])
    with pytest.raises(RuntimeError, match="the physics blew up") as raised:
        env.step(env.action_space.sample())
    assert "second line" in str(raised.value)  # the caller gets the env's own exception, whole
    env.close()
    ok, failed = env.files
    assert ok.completion == "normal"
    assert_recorded(ok.path, first)
    assert (failed.completion, failed.reason, failed.steps) == ("failed", REASON, 3)
    _assert_failed(failed.path, second)


@pytest.mark.filterwarnings("ignore:.*(Worker-1|Traceback|last exception):UserWarning")
@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_vector_env_whose_sub_env_raises_commits_every_open_episode_failed(tmp_path: Path, how: str) -> None:
    """Sub-env 1 raises at its 5th step: every sub-env's open episode is committed, failed, with the 4 steps
    each returned (no CartPole episode ends that early)."""
    n = 3
    fns = [lambda i=i: FailingAt(gym.make("CartPole-v1"), 5 if i == 1 else None) for i in range(n)]
    vector = gym.vector.SyncVectorEnv(fns) if how == "sync" else gym.vector.AsyncVectorEnv(fns)
    envs = RecordVectorEpisodes(vector, tmp_path)
    envs.action_space.seed(11)
    observation, _ = envs.reset(seed=20)
    played = [Played(20 + i, [observation[i]]) for i in range(n)]
    for _ in range(4):
        actions = envs.action_space.sample()
        observation, reward, terminated, truncated, _ = envs.step(actions)
        assert not (terminated.any() or truncated.any())
        for i in range(n):
            played[i].step(actions[i], observation[i], reward[i], terminated[i], truncated[i])
    with pytest.raises(RuntimeError, match="the physics blew up"):
        envs.step(envs.action_space.sample())
    envs.close_recording()
    files = sorted(envs.files, key=lambda f: f.sub_env)
    assert [f.sub_env for f in files] == list(range(n))
    for file, episode in zip(files, played, strict=True):
        assert (file.completion, file.reason, file.steps) == ("failed", REASON, 4)
        _assert_failed(file.path, episode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.path.name for f in files if f.path)
    vector.close()
