"""Cameras of any env: uncalibrated render() frames (CartPole) and image observations (format rule 3u).

Every file is read back and compared with what the env returned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from tests.record.gym.envs import ImageEnv
from tests.record.gym.play import play

import fastsim_record as fr
from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes, read_episode
from fastsim_recording_format import FsrReader, validate

pytest.importorskip("pygame", reason="CartPole's rgb_array frames need gymnasium[classic-control]")


def _uncalibrated(rec: Any, alias: str, frames: int, size: tuple[int, int]) -> None:
    """``alias`` is an uncalibrated camera: the profile says so, K and pose are NaN, no problem reported."""
    cal = rec.calibration(alias)
    assert len(cal.k) == frames
    assert np.isnan(cal.k).all()
    assert np.isnan(cal.translation).all()
    assert np.isnan(cal.quaternion_xyzw).all()
    assert cal.problems == ()
    (epoch,) = cal.epochs
    assert epoch.profile["model"] == "uncalibrated"
    assert (epoch.profile["width"], epoch.profile["height"]) == size
    assert epoch.profile["fx"] is None


def test_cartpole_render_frames_are_an_uncalibrated_camera(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CartPole rgb_array: every render() frame recorded exactly (PNG), K and pose NaN under the uncalibrated profile, shown by fsr info; MCAP export refused with one line."""
    from fastsim_record.cli import main

    env = RecordEpisodes(gym.make("CartPole-v1", render_mode="rgb_array"), tmp_path / "out", encoding="png")
    env.action_space.seed(0)
    env.reset(seed=2)
    frames = [env.render().copy()]
    for _ in range(6):
        env.step(env.action_space.sample())
        frames.append(env.render().copy())
    env.close()
    path = env.files[0].path
    assert validate(path).validated_bytes == path.stat().st_size
    episode = read_episode(path)
    assert "render: uncalibrated" in episode.description["camera"]
    with fr.open(path) as rec:
        assert rec.cameras() == ("render",)
        for k, frame in enumerate(rec.frames("render")):
            np.testing.assert_array_equal(frame.image, frames[k])
            assert frame.time_ns == episode.time_ns[k]
        _uncalibrated(rec, "render", 7, (600, 400))
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["cameras"] == {"render": {"model": "uncalibrated", "width": 600, "height": 400, "renderer": None,
                                          "channels": 3}}
    assert main(["info", str(path)]) == 0
    assert "camera render: renderer not recorded, 600x400, uncalibrated (no K, no pose)" in capsys.readouterr().out
    code = main(["export", str(path), "--to", "mcap", "-o", str(tmp_path / "x.mcap"), "--include", "stopped"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1  # ExportError (docs/errors.md)
    assert len(err) == 1
    assert "camera 'render' is uncalibrated (no K, no pose" in err[0]


def test_image_observations_become_cameras_png_exact_and_jpeg_by_default(tmp_path: Path) -> None:
    """A Dict observation: the RGB ``image`` leaf is the camera ``image`` (JPEG by default, PNG exact when asked), ``state`` stays numeric, the 1- and 4-channel images are PNG cameras whatever ``encoding`` says, exact."""
    for encoding in ("png", "jpeg"):
        out = tmp_path / encoding
        options = {"encoding": encoding} if encoding == "png" else {"encoding": "jpeg"}  # jpeg asked explicitly
        env = RecordEpisodes(ImageEnv(), out, **options)
        (played,) = play(env, [3])
        env.close()
        path = env.files[0].path
        assert validate(path).validated_bytes == path.stat().st_size
        with FsrReader(path) as reader:
            codecs = {s.name: s.codec for s in reader.streams if s.name.endswith(".rgb")}
        assert codecs["cameras.image.rgb"]["payload_codec"] == encoding
        assert "channels" not in codecs["cameras.image.rgb"]  # RGB: the FSR 1.2 descriptor
        assert {k: (c["payload_codec"], c["channels"]) for k, c in codecs.items() if k != "cameras.image.rgb"} == {
            "cameras.mask.rgb": ("png", 1), "cameras.rgba.rgb": ("png", 4)}
        episode = read_episode(path)
        assert set(episode.observations) == {"observation.state"}
        np.testing.assert_array_equal(episode.observations["observation.state"],
                                      np.stack([o["state"] for o in played.observations]))
        np.testing.assert_array_equal(episode.rewards, played.rewards)
        assert "mask: uncalibrated" in episode.description["camera"]
        assert "grey (1 channel): PNG, exact" in episode.description["camera"]
        with fr.open(path) as rec:
            assert rec.cameras() == ("image", "mask", "rgba")
            for key, shape in (("mask", (24, 32, 1)), ("rgba", (24, 32, 4))):  # bit-exact, HxWxC
                frames = [f.image for f in rec.frames(key)]
                assert [f.shape for f in frames] == [shape] * len(played.observations)
                np.testing.assert_array_equal(np.stack(frames).reshape(-1, *played.observations[0][key].shape),
                                              np.stack([o[key] for o in played.observations]))
                _uncalibrated(rec, key, len(frames), (32, 24))
            images = [f.image for f in rec.frames("image")]
            assert len(images) == len(played.observations) == episode.steps + 1
            for image, observation in zip(images, played.observations, strict=True):
                if encoding == "png":
                    np.testing.assert_array_equal(image, observation["image"])
                else:  # lossy, close
                    assert np.abs(image.astype(int) - observation["image"]).mean() < 4
            _uncalibrated(rec, "image", len(images), (32, 24))


def test_images_false_keeps_image_observations_numeric(tmp_path: Path) -> None:
    """images=False: the RGB leaf is an exact numeric channel and no camera is recorded."""
    env = RecordEpisodes(ImageEnv(), tmp_path, images=False)
    (played,) = play(env, [4])
    env.close()
    episode = read_episode(env.files[0].path)
    np.testing.assert_array_equal(episode.observations["observation.image"],
                                  np.stack([o["image"] for o in played.observations]))
    with fr.open(env.files[0].path) as rec:
        assert rec.cameras() == ()


def test_add_render_observation_on_cartpole_is_the_uncalibrated_render_camera(tmp_path: Path) -> None:
    """AddRenderObservation(render_only=True) on CartPole: the whole observation is pixels, recorded as the uncalibrated camera ``render``; the episode still reads back (T + 1 frames, T step rows)."""
    inner = gym.wrappers.AddRenderObservation(gym.make("CartPole-v1", render_mode="rgb_array"))
    env = RecordEpisodes(inner, tmp_path, encoding="png")
    (played,) = play(env, [6], max_steps=5)
    env.close()
    episode = read_episode(env.files[0].path)
    assert episode.observations == {}
    assert episode.steps == len(played.actions) == 5
    assert episode.time_ns.shape == (6,)
    with fr.open(env.files[0].path) as rec:
        for frame, observation in zip(rec.frames("render"), played.observations, strict=True):
            np.testing.assert_array_equal(frame.image, observation)
        _uncalibrated(rec, "render", 6, (600, 400))


def test_async_vector_image_observations_are_cameras_of_every_sub_env(tmp_path: Path) -> None:
    """AsyncVectorEnv (sub-envs in other processes): the image travels with the observation, so each sub-env's episode file has its camera, frame for frame what that sub-env returned."""
    envs = gym.vector.AsyncVectorEnv([ImageEnv, ImageEnv])
    env = RecordVectorEpisodes(envs, tmp_path, encoding="png")
    observation, _ = env.reset(seed=[1, 2])
    seen: list[list[Any]] = [[observation["image"][i].copy()] for i in range(2)]
    for _ in range(15):  # ImageEnv ends after 15 steps: one whole episode per sub-env
        observation, *_ = env.step(np.array([0, 2]))
        for i in range(2):
            seen[i].append(observation["image"][i].copy())
    env.close()
    files = sorted((f for f in env.files if f.steps == 15), key=lambda f: f.sub_env or 0)
    assert [f.sub_env for f in files] == [0, 1]
    for f in files:
        assert f.path is not None
        with fr.open(f.path) as rec:
            images = [fr_.image for fr_ in rec.frames("image")]
        assert len(images) == 16
        for image, expected in zip(images, seen[f.sub_env or 0][:16], strict=True):
            np.testing.assert_array_equal(image, expected)


def test_uncalibrated_profile_rule_3u_and_the_record_checks() -> None:
    """Rule 3u: an uncalibrated profile has null fx..cy and unknown extrinsics; Record accepts its all-NaN K and pose and refuses a value under it (never a half-invented K), while a pinhole camera's NaN stays refused."""
    import attrs

    from fastsim_contract.calibration import check_profile, pinhole_profile, uncalibrated_profile
    from fastsim_contract.values import CameraSample
    from fastsim_record.adapters.camera_records import CameraRecordEncoder
    from fastsim_record.adapters.codecs import PngEncoder
    from fastsim_record.errors import CalibrationError
    from fastsim_recording_format.codecs.calibration import CalibrationProfileError, k_matches

    profile = uncalibrated_profile("cam", 64, 48)
    assert check_profile(profile)["model"] == "uncalibrated"
    with pytest.raises(CalibrationProfileError, match=r"^calibration profile fx: must be null for the uncalibrated"):
        check_profile({**profile, "fx": 10.0})
    with pytest.raises(CalibrationProfileError, match=r"^calibration profile model: must be 'pinhole' or 'uncalibrated'"):
        check_profile({**profile, "model": "fisheye"})
    with pytest.raises(CalibrationProfileError, match=r"^calibration profile fx: must be a finite number"):
        check_profile({**pinhole_profile("cam", 64, 48, 60.0), "fx": None})
    assert k_matches(np.full(9, np.nan).tobytes(), profile)
    assert not k_matches(np.eye(3).tobytes(), profile)

    from fastsim_embedded.gymnasium_host.cameras import UncalibratedCamera

    names = ("cameras.cam.rgb", "cameras.cam.intrinsics", "cameras.cam.extrinsics.translation",
             "cameras.cam.extrinsics.quaternion_xyzw")
    readings = UncalibratedCamera("cam").readings(np.zeros((48, 64, 3), np.uint8), names)
    samples = [CameraSample("cam", r.channel, r.role, r.value, r.calibration_digest, i, r.profile)
               for i, r in enumerate(readings)]
    enc = CameraRecordEncoder("cam", PngEncoder(64, 48))
    records = [enc.encode(s) for s in samples]
    assert records[1].metadata["calibration_profile"] == profile
    assert np.isnan(np.frombuffer(records[2].payload, "<f8")).all()
    half = attrs.evolve(samples[2], value=np.array([0.0, np.nan, np.nan]))
    with pytest.raises(CalibrationError, match="uncalibrated camera's values must all be NaN"):
        enc.encode(half)


def test_async_vector_render_frames_of_the_selected_sub_envs(tmp_path: Path) -> None:
    """AsyncVectorEnv CartPole rgb_array, camera_envs=[1]: sub-env 1's file has the uncalibrated camera ``render`` with exactly the frames its process rendered; sub-env 0's has none."""
    envs = gym.vector.AsyncVectorEnv([lambda: gym.make("CartPole-v1", render_mode="rgb_array")] * 2)
    env = RecordVectorEpisodes(envs, tmp_path, camera_envs=[1], encoding="png")
    env.reset(seed=[5, 6])
    seen = [envs.call("render")[1].copy()]
    for _ in range(6):
        _, _, terminated, truncated, _ = env.step(np.array([0, 1]))
        assert not terminated.any()
        assert not truncated.any()
        seen.append(envs.call("render")[1].copy())
    env.close()
    by_env = {f.sub_env: f for f in env.files}
    with fr.open(by_env[0].path) as rec:
        assert rec.cameras() == ()
    with fr.open(by_env[1].path) as rec:
        images = [f.image for f in rec.frames("render")]
        _uncalibrated(rec, "render", 7, (600, 400))
    assert len(images) == 7
    for image, expected in zip(images, seen, strict=True):
        np.testing.assert_array_equal(image, expected)


class _ReusedBufferEnv(gym.Env[Any, Any]):
    """An image-observation env that writes every observation into one array it keeps."""

    observation_space = gym.spaces.Box(0, 255, (8, 10, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.buffer = np.zeros((8, 10, 3), np.uint8)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.buffer[...] = 0
        return self.buffer, {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        self.buffer[...] = 10 * self.t  # in place: the array returned last step changes
        return self.buffer, 0.0, self.t >= 4, False, {}


def test_an_env_that_reuses_its_image_array_keeps_it_writable_and_records_each_frame(tmp_path: Path) -> None:
    """A contiguous image observation is copied on capture: the env's array stays writable, the file holds each step's pixels."""
    env = RecordEpisodes(_ReusedBufferEnv(), tmp_path / "out")
    observation, _ = env.reset(seed=0)
    assert observation.flags.writeable
    for _ in range(4):
        env.step(0)
    env.close()
    with fr.open(env.files[0].path) as rec:
        (alias,) = rec.cameras()
        assert [int(frame.image.max()) for frame in rec.frames(alias)] == [0, 10, 20, 30, 40]


def test_a_frame_is_handed_to_its_publisher_as_the_next_frame_renders_and_none_is_lost(tmp_path: Path) -> None:
    """Frame t's chunk is queued just before frame t + 1 renders, the last at the episode's end; no frame is lost."""
    from fastsim_embedded.gymnasium_host import episode as episode_module

    events: list[tuple[str, int]] = []
    real = episode_module.EpisodeWriter._enqueue
    r, s = ("render", 0), ("stepped", 0)  # the env rendered; step() returned

    def q(first: int) -> tuple[str, int]:
        return ("queued", first)

    def enqueue(self: Any, chunk: Any) -> None:
        events.append(q(chunk.first))
        real(self, chunk)

    class Renders(gym.Wrapper[Any, Any, Any, Any]):
        def render(self) -> Any:
            events.append(r)
            return self.env.render()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(episode_module.EpisodeWriter, "_enqueue", enqueue)
        inner = Renders(gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=5))
        env = RecordEpisodes(inner, tmp_path / "out", encoding="png")
        env.action_space.seed(0)
        recorded: list[list[np.ndarray[Any, Any]]] = []
        for episode in range(2):
            env.reset(seed=episode)
            frames = [env.render().copy()]
            for _ in range(5 if episode == 0 else 3):  # the first ends by truncation, the second by close()
                env.step(env.action_space.sample())
                events.append(s)
                frames.append(env.render().copy())
            recorded.append(frames)
            if episode == 0:  # ended by its truncation at step 5: its held chunk, then its final row
                assert events == [r, r, s, q(0), r, s, q(1), r, s, q(2), r, s, q(3), r, q(4), q(5), s]
                events.clear()
        env.close()
    assert events == [r, r, s, q(0), r, s, q(1), r, s, q(2), q(3)]  # ended by close() after step 3
    events.clear()
    with pytest.MonkeyPatch.context() as mp:  # image observations, nothing rendered: queued within their step
        mp.setattr(episode_module.EpisodeWriter, "_enqueue", enqueue)
        images = RecordEpisodes(ImageEnv(), tmp_path / "images")
        images.reset(seed=0)
        for _ in range(2):
            images.step(images.action_space.sample())
            events.append(s)
        images.close()
    assert events == [q(0), s, q(1), s, q(2)]
    assert len(env.files) == 2
    for file, frames in zip(env.files, recorded, strict=True):
        assert validate(file.path).validated_bytes == file.path.stat().st_size
        with fr.open(file.path) as rec:
            got = [f.image for f in rec.frames("render")]
        assert len(got) == len(frames)
        for image, frame in zip(got, frames, strict=True):
            np.testing.assert_array_equal(image, frame)
