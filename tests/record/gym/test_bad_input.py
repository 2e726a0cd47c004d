"""Bad input is refused at wrap time with one line, before anything is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from tests.record.gym.envs import SpaceEnv
from tests.record.gym.play import play

from fastsim_record.gym import GymWrapError, RecordEpisodes, read_episode


@pytest.mark.parametrize(("space", "kind"), [
    (spaces.Text(8), "Text"),
    (spaces.Graph(spaces.Box(0, 1, (2,)), spaces.Discrete(2)), "Graph"),
    (spaces.Sequence(spaces.Discrete(3)), "Sequence"),
])
def test_an_unmappable_space_is_refused_naming_its_path(tmp_path: Path, space: spaces.Space, kind: str) -> None:  # type: ignore[type-arg]
    """Graph, Sequence and Text are refused at wrap time, naming the space path; no directory, no file."""
    with pytest.raises(GymWrapError) as caught:
        RecordEpisodes(SpaceEnv(space), tmp_path / "out")
    assert str(caught.value).startswith(f"observation.bad: a {kind} space cannot be recorded")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_a_directory_with_this_runs_names_is_refused_unless_resumed(tmp_path: Path) -> None:
    """Existing episode files are never overwritten: refused, or numbering continues after them with resume=True."""
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    play(env, [1, 2])
    env.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(GymWrapError, match=r"episode-000000\.fsr: this directory already holds 2 file\(s\)"):
        RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    (tmp_path / "other-000000.fsr").write_bytes(b"")  # another prefix does not count
    resumed = RecordEpisodes(gym.make("CartPole-v1"), tmp_path, resume=True)
    play(resumed, [3])
    resumed.close()
    assert [f.path.name for f in resumed.files] == ["episode-000002.fsr"]
    assert read_episode(resumed.files[0].path).seed == 3
    assert all((tmp_path / name).read_bytes() == data for name, data in before.items())


@pytest.mark.parametrize(("options", "message"), [
    ({"colour": "red"}, "unknown option 'colour'"),
    ({"encoding": "webp"}, "encoding: must be 'jpeg' or 'png'"),
    ({"quality": 0}, "quality: must be an integer from 1 to 100"),
    ({"prefix": "a/b"}, "prefix: must be"),
    ({"fps": -1}, "fps: must be a positive number"),
    ({"info_keys": "distance"}, "info_keys: must be a list"),
    ({"durable": "yes"}, "durable: must be True or False"),
])
def test_bad_options_are_one_line(tmp_path: Path, options: dict[str, object], message: str) -> None:
    """Each bad option is refused with one line naming it."""
    with pytest.raises(GymWrapError, match=f"^{message}"):
        RecordEpisodes(gym.make("CartPole-v1"), tmp_path, **options)


def test_frame_stacked_images_are_numeric_channels(tmp_path: Path) -> None:
    """A (k, H, W) uint8 observation (frame stacking) is a numeric channel, recorded exactly; no encoder sees it."""
    env = gym.wrappers.FrameStackObservation(
        gym.wrappers.TransformObservation(
            gym.make("CartPole-v1"),
            lambda o: np.full((12, 16), int(abs(o[0]) * 1000) % 256, np.uint8),
            spaces.Box(0, 255, (12, 16), np.uint8),
        ),
        stack_size=3,
    )
    recorded = RecordEpisodes(env, tmp_path)
    played = play(recorded, [9])
    recorded.close()
    episode = read_episode(recorded.files[0].path)
    assert episode.observations["observation"].shape == (len(played[0].observations), 3, 12, 16)
    np.testing.assert_array_equal(episode.observations["observation"], np.stack(played[0].observations))


@pytest.mark.parametrize("layout", ["k,H,W,3", "H,W,3k"])
def test_stacked_rgb_frames_are_numeric_channels_never_cameras(tmp_path: Path, layout: str) -> None:
    """RGB frames stacked as (k, H, W, 3) (FrameStackObservation) or along the channels (H, W, 3k): exact numeric channels, no camera."""
    from tests.record.gym.envs import ImageEnv

    image = ImageEnv.H, ImageEnv.W, 3
    rgb = gym.wrappers.TransformObservation(ImageEnv(), lambda o: o["image"], spaces.Box(0, 255, image, np.uint8))
    env: gym.Env[Any, Any] = gym.wrappers.FrameStackObservation(rgb, stack_size=3)
    if layout == "H,W,3k":
        env = gym.wrappers.TransformObservation(
            env, lambda o: np.concatenate(list(o), axis=-1), spaces.Box(0, 255, (*image[:2], 9), np.uint8),
        )
    recorded = RecordEpisodes(env, tmp_path)  # images=True (the default): still not a camera
    played = play(recorded, [2])
    recorded.close()
    episode = read_episode(recorded.files[0].path)
    assert recorded.files[0].completion == "normal"
    assert episode.description["camera"] == "no camera recorded: render frames not asked for"
    expected = np.stack(played[0].observations)
    assert expected.shape == ((len(played[0].observations), 3, *image) if layout == "k,H,W,3"
                              else (len(played[0].observations), *image[:2], 9))
    np.testing.assert_array_equal(episode.observations["observation"], expected)


class _Shrinking(gym.Wrapper[Any, Any, Any, Any]):
    """Returns an observation that breaks the env's own space at step 3."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.t = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.t = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        observation, reward, terminated, truncated, info = self.env.step(action)
        return (observation[:2] if self.t == 3 else observation), float(reward), terminated, truncated, info


def test_a_value_outside_the_envs_own_space_is_one_line_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    """An observation of the wrong shape: one line naming the channel; the episode's earlier rows are committed."""
    env = RecordEpisodes(_Shrinking(gym.make("CartPole-v1")), tmp_path)
    env.reset(seed=1)
    env.step(0)
    env.step(1)
    with pytest.raises(GymWrapError, match=r"^step\(\): observation: the env returned shape \(2,\), its space declares \(4,\)$"):
        env.step(0)
    env.close()
    episode = read_episode(env.files[0].path)
    assert episode.steps == 3  # the three published steps, their rewards and actions (per-step channels)
    assert episode.rewards.shape == (3,)
    assert episode.observations["observation"].shape == (4, 4)
    assert np.isnan(episode.observations["observation"][-1]).all()  # the final observation is a NaN fill
    assert episode.end["error"] == "observation: the env returned shape (2,), its space declares (4,)"
    assert (env.files[0].completion, env.files[0].reason) == ("failed", episode.end["error"])  # kept: contract FR2


def test_max_episode_bytes_ends_the_episode_file_and_keeps_every_step_before_it(tmp_path: Path) -> None:
    """max_episode_bytes: the step that would pass the limit ends the file (truncated, completion stopped, the reason names the limit); the env keeps running unrecorded until its next reset, which starts a new file."""
    from tests.record.gym.play import Played, assert_step_channels

    env = RecordEpisodes(gym.make("Pendulum-v1"), tmp_path, max_episode_bytes=26 * 10)  # a row is 26 bytes
    observation, _ = env.reset(seed=1)
    played = Played(1, [observation])
    env.action_space.seed(0)
    for _ in range(30):
        action = env.action_space.sample()
        result = env.step(action)
        if len(played.actions) < 9:
            played.step(action, *result[:4])
    env.reset(seed=2)
    env.step(env.action_space.sample())
    env.close()
    first, second = env.files
    assert first.steps == 9
    assert first.completion == "stopped"
    assert first.reason == "truncated: max_episode_bytes 260 reached after 9 steps"
    episode = read_episode(first.path)
    np.testing.assert_array_equal(episode.observations["observation"], np.stack(played.observations))
    assert_step_channels(first.path, played)  # 9 steps, 10 rows of 26 bytes: within the limit
    assert (second.steps, second.seed) == (1, 2)
    with pytest.raises(GymWrapError, match=r"^max_episode_bytes: must be a positive integer \(got 0\)$"):
        RecordEpisodes(gym.make("Pendulum-v1"), tmp_path / "x", max_episode_bytes=0)
