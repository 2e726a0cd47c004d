"""RecordEpisodes over real Gymnasium envs: every file read back against what the env returned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from tests.record.gym.envs import DictEnv, Failing
from tests.record.gym.play import assert_recorded, play

import fastsim_record as fr
from fastsim_record.gym import RecordEpisodes, read_episode


def test_cartpole_discrete_episodes_are_one_file_each_with_the_seed_used(tmp_path: Path) -> None:
    """CartPole-v1: three episodes, three committed files in episode order; an unseeded reset records the drawn seed."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    played = play(env, [7, 8, None])
    env.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["episode-000000.fsr", "episode-000001.fsr", "episode-000002.fsr"]
    assert [f.path.name for f in env.files] == names
    for path, episode in zip(sorted(tmp_path.iterdir())[:2], played[:2], strict=True):
        recorded = assert_recorded(path, episode)
        assert recorded.actions["action"].dtype == np.int64  # Discrete: an integer channel
    drawn = assert_recorded(tmp_path / names[2], played[2], seed="any")
    assert drawn.seed is not None
    bare = gym.make("CartPole-v1")
    np.testing.assert_array_equal(bare.reset(seed=drawn.seed)[0], played[2].observations[0])  # the seed really used
    assert drawn.description["spec"]["id"] == "CartPole-v1"
    assert drawn.description["spec"]["max_episode_steps"] == 500
    assert drawn.description["wrappers"][:2] == ["TimeLimit", "OrderEnforcing"]  # the wrapped env's stack
    assert drawn.description["versions"]["gymnasium"] == gym.__version__
    with fr.open(tmp_path / names[0]) as rec:
        assert rec.info.completion == "normal"


def test_pendulum_box_float32_actions_and_truncation(tmp_path: Path) -> None:
    """Pendulum-v1: a Box action keeps float32; the TimeLimit truncation at 200 steps is recorded."""
    env = RecordEpisodes(gym.make("Pendulum-v1"), tmp_path, info_keys=["nothing_here"])
    played = play(env, [3])
    env.close()
    assert len(played[0].actions) == 200
    assert played[0].truncated[-1]
    episode = assert_recorded(env.files[0].path, played[0])
    assert episode.actions["action"].dtype == np.float32
    assert episode.actions["action"].shape == (200, 1)
    assert np.isnan(episode.info["nothing_here"]).all()  # a whitelisted key the env never gave


def test_dict_spaces_flatten_to_channels_named_by_path(tmp_path: Path) -> None:
    """Dict/Tuple/Discrete/MultiBinary/MultiDiscrete observations and actions, dtype kept; info whitelist."""
    check_env(DictEnv(), skip_render_check=True)
    env = RecordEpisodes(gym.wrappers.TimeLimit(DictEnv(), 100), tmp_path, info_keys=["distance"])
    played = play(env, [11, 12])
    env.close()
    for file, episode in zip(env.files, played, strict=True):
        recorded = assert_recorded(file.path, episode)
        assert set(recorded.observations) == {
            "observation.agent_pos", "observation.mode", "observation.flags", "observation.pair.0", "observation.pair.1",
        }
        assert recorded.observations["observation.pair.1"].dtype == np.uint8
        assert recorded.observations["observation.flags"].dtype == np.int8
        assert set(recorded.actions) == {"action.move", "action.grip", "action.keys"}
        np.testing.assert_allclose(
            recorded.info["distance"], [np.linalg.norm(o["agent_pos"]) for o in episode.observations[1:]], rtol=1e-6,
        )


def test_the_reset_options_used_are_recorded_with_the_seed(tmp_path: Path) -> None:
    """reset(seed, options): both as the env used them, in the gym.reset event (CartPole takes low/high bounds)."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    observation, _ = env.reset(seed=4, options={"low": -0.01, "high": 0.01})
    env.step(0)
    env.reset(seed=5)
    env.close()
    first, second = (read_episode(f.path) for f in env.files)
    assert first.reset["seed"] == 4
    assert first.reset["options"] == {"low": -0.01, "high": 0.01}
    assert np.abs(first.observations["observation"][0]).max() <= 0.01  # the options really reached the env
    np.testing.assert_array_equal(first.observations["observation"][0], observation)
    assert (second.reset["seed"], second.reset["options"]) == (5, None)


def test_reset_or_close_mid_episode_commits_it_as_truncated(tmp_path: Path) -> None:
    """An episode still open at reset() or close() is committed, marked truncated."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    env.reset(seed=1)
    for _ in range(5):
        env.step(0 if _ % 2 else 1)
    env.reset(seed=2)
    for _ in range(3):
        env.step(1)
    env.close()
    first, second = (read_episode(f.path) for f in env.files)
    assert (first.steps, second.steps) == (5, 3)
    assert first.end["truncated"]
    assert not first.end["terminated"]
    assert "reset()" in first.end["reason"]
    assert "closed" in second.end["reason"]
    assert [f.completion for f in env.files] == ["stopped", "stopped"]


def test_an_exception_inside_the_env_commits_what_was_recorded_with_its_one_line(tmp_path: Path) -> None:
    """The env raises in episode 2: episode 1 is whole; episode 2 is committed, completion failed (the data source failed: contract FR2), with the exception's one line as reason and error."""
    env = RecordEpisodes(Failing(gym.make("CartPole-v1"), at=4), tmp_path)
    play(env, [5])
    env.reset(seed=6)
    for _ in range(3):
        env.step(1)
    with pytest.raises(RuntimeError, match="blew up"):
        env.step(1)
    env.close()
    assert len(env.files) == 2
    path = env.files[1].path
    with fr.open(path) as rec:
        assert rec.info.completion == "failed"
        assert rec.info.completion_reason == "the env raised RuntimeError: the physics blew up"
    assert (env.files[1].completion, env.files[1].reason) == ("failed", "the env raised RuntimeError: the physics blew up")
    failed = read_episode(path)
    assert failed.steps == 3
    assert failed.end["error"] == "RuntimeError: the physics blew up"
    assert not failed.end["terminated"]
    assert not failed.end["truncated"]


def test_episodes_work_with_the_dataset_and_fsr_index(tmp_path: Path) -> None:
    """The Dataset samples every recorded row of every episode; fsr index lists every file."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from fastsim_record.cli import main

    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "out")
    played = play(env, [1, 2, 3])
    env.close()
    paths = sorted((tmp_path / "out").glob("*.fsr"))
    states = fr.Dataset(paths, channels=["observation"])
    assert len(states) == sum(len(p.observations) for p in played)  # observations only: T + 1 per episode
    np.testing.assert_array_equal(states[len(states) - 1]["observation"], played[-1].observations[-1])
    dataset = fr.Dataset(paths, channels=["observation", "action", "reward"])
    assert len(dataset) == sum(len(p.actions) for p in played)  # with a per-step channel: T per episode
    last = dataset[len(dataset) - 1]  # observation T-1, the action chosen from it and its reward
    np.testing.assert_array_equal(last["observation"], played[-1].observations[-2])
    assert last["action"] == played[-1].actions[-1]
    assert last["reward"] == played[-1].rewards[-1]
    with fr.open(paths[0]) as rec:
        table = rec.numeric_table(["observation", "reward"])
    steps = len(played[0].actions)
    assert table.num_rows == steps + 1
    assert table.column("reward").null_count == 1
    assert table.column("reward").to_pylist()[:steps] == played[0].rewards
    assert main(["index", str(tmp_path / "out"), "-o", str(tmp_path / "index.parquet")]) == 0
    assert pq.read_table(tmp_path / "index.parquet").num_rows == 3


def test_an_episode_that_cannot_be_opened_is_reported_never_raised_into_the_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host refuses to open episode 1's file: the env keeps running, episodes 0 and 2 are committed, and close() warns one line naming episode 1 and why."""
    from fastsim_embedded.output.transaction import OutputRefused
    from fastsim_embedded.session import session

    real_open = session.Session.open.__func__  # type: ignore[attr-defined]
    calls = {"n": 0}

    def flaky_open(cls: Any, /, prepared: object, output_dir: Path, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OutputRefused(output_dir / "episode-000001.fsr", "another recorder is writing this name now")
        return real_open(cls, prepared, output_dir, **kwargs)

    monkeypatch.setattr(session.Session, "open", classmethod(flaky_open))
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    played = play(env, [1, 2, 3])
    with pytest.warns(RuntimeWarning, match=r"^episode 1: not committed: the episode could not be opened: "
                                            r"OutputRefused: .*another recorder is writing this name now$"):
        env.close()
    assert [f.path is not None for f in env.files] == [True, False, True]
    assert_recorded(env.files[0].path, played[0])
    assert_recorded(env.files[2].path, played[2])


def test_mcap_export_has_one_per_step_message_per_step(tmp_path: Path) -> None:
    """fsr export --to mcap: /numeric/reward has T messages (the env's rewards), /numeric/observation T + 1."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    mcap_reader = pytest.importorskip("mcap.reader")
    import json

    from fastsim_record.cli import main

    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "out")
    played = play(env, [4])
    env.close()
    out = tmp_path / "x.mcap"
    assert main(["export", str(env.files[0].path), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    with out.open("rb") as f:
        reader = mcap_reader.make_reader(f)
        rewards = [json.loads(m.data)["values"] for _, _, m in reader.iter_messages(topics=["/numeric/reward"])]
    with out.open("rb") as f:
        observations = list(mcap_reader.make_reader(f).iter_messages(topics=["/numeric/observation"]))
    assert len(observations) == len(played[0].observations)
    assert [r[0] for r in rewards] == played[0].rewards
