"""A real Gymnasium env that raises mid-episode (issue 23): every open episode is committed,
completion ``failed`` with the exception's one line (contract FR2), holding exactly the
steps the env returned before it; the exception reaches the caller."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from tests.record.gym.envs import Failing
from tests.record.gym.play import Played, assert_recorded, play

import fastsim_record as fr
from fastsim_record.cli import main
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
    assert path is not None
    assert path.is_file()
    assert not list(path.parent.glob("*.incomplete"))
    with fr.open(path) as rec:
        assert (rec.info.completion, rec.info.completion_reason) == ("failed", REASON)
        assert not rec.info.degraded
    assert_recorded(path, played)  # valid; every observation, action, reward and flag the env returned
    end = read_episode(path).end
    assert end["error"] == LINE
    assert not end["terminated"]
    assert not end["truncated"]


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
    """Sub-env 1 raises at its 5th step: every sub-env's open episode is committed failed with the 4 steps it returned."""
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
        assert not terminated.any()
        assert not truncated.any()
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


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A directory with one normal episode and one committed ``failed`` one (the env raised)."""
    out = tmp_path_factory.mktemp("failed") / "out"
    env = RecordEpisodes(Failing(gym.make("CartPole-v1"), at=4), out)
    play(env, [5])
    env.reset(seed=6)
    for _ in range(3):
        env.step(1)
    with pytest.raises(RuntimeError):
        env.step(1)
    env.close()
    ok, failed = (f.path for f in env.files)
    assert ok is not None
    assert failed is not None
    return out, ok, failed


def test_fsr_validate_info_and_index_read_a_committed_failed_episode(
    failed_run: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """validate exits 0; info says failed with the reason (text and JSON); index has completion failed."""
    pq = pytest.importorskip("pyarrow.parquet")
    out, _ok, failed = failed_run
    assert main(["validate", str(failed)]) == 0
    capsys.readouterr()
    assert main(["info", str(failed)]) == 0
    assert f"completion failed ({REASON})" in capsys.readouterr().out
    assert main(["info", str(failed), "--json"]) == 0
    completion = json.loads(capsys.readouterr().out)["completion"]
    assert (completion["kind"], completion["reason"]) == ("failed", REASON)
    assert main(["index", str(out), "-o", str(tmp_path / "index.parquet")]) == 0
    rows = pq.read_table(tmp_path / "index.parquet").to_pylist()
    by_name = {Path(r["path"]).name: r for r in rows}
    assert (by_name[failed.name]["completion"], by_name[failed.name]["completion_reason"]) == ("failed", REASON)
    assert by_name[failed.name]["error"] is None
    assert (by_name[failed.name]["terminated"], by_name[failed.name]["truncated"]) == (False, False)


def test_export_and_the_dataset_leave_a_failed_episode_out_unless_included(
    failed_run: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """fsr export and the Dataset keep only the normal episode by default; include failed keeps both."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    out, ok, failed = failed_run
    assert main(["export", str(out), "--to", "mcap", "-o", str(tmp_path / "a")]) == 0
    assert "left out 1 of 2 episodes: 1 failed (--include failed keeps them)" in capsys.readouterr().out
    assert main(["export", str(out), "--to", "mcap", "-o", str(tmp_path / "b"), "--include", "failed"]) == 0
    assert "left out none of 2 episodes" in capsys.readouterr().out
    steps = {p: read_episode(p).steps for p in (ok, failed)}
    with pytest.warns(UserWarning, match=r"left out 1 of 2 episodes: 1 failed \(include='failed' keeps them\)"):
        assert len(fr.Dataset([ok, failed], channels=["observation", "reward"])) == steps[ok]
    kept = fr.Dataset([ok, failed], channels=["observation", "reward"], include="failed")
    assert len(kept) == steps[ok] + steps[failed] == steps[ok] + 3


def test_fsr_recover_rebuilds_a_committed_failed_episode(failed_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """recover reads it like any sealed file: every record kept, the result recovered and degraded."""
    _out, _ok, failed = failed_run
    rebuilt = tmp_path / "rebuilt.fsr"
    assert main(["recover", str(failed), "-o", str(rebuilt)]) == 0
    with fr.open(failed) as rec, fr.open(rebuilt) as again:
        assert again.info.records == rec.info.records
        assert (again.info.recovered, again.info.degraded) == (True, True)
    np.testing.assert_array_equal(read_episode(rebuilt).rewards, read_episode(failed).rewards)
