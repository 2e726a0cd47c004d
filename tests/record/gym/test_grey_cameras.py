"""Grey and RGBA image observations are PNG cameras (docs/fsr-format.md 9.2), read back bit-exactly.

Real Gymnasium wrappers: ``GrayscaleObservation`` over CartPole's ``AddRenderObservation`` pixels
(``(H, W)`` and ``(H, W, 1)``), and a small env whose observation is one RGBA ``Box``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from tests.record.gym.play import play

import fastsim_record as fr
from fastsim_record.cli import main
from fastsim_record.gym import RecordEpisodes, read_episode
from fastsim_recording_format import FsrReader, validate


def _grey_cartpole(keep_dim: bool) -> gym.Env[Any, Any]:
    pytest.importorskip("pygame", reason="CartPole's rgb_array frames need gymnasium[classic-control]")
    pixels = gym.wrappers.AddRenderObservation(gym.make("CartPole-v1", render_mode="rgb_array"))
    return gym.wrappers.GrayscaleObservation(pixels, keep_dim=keep_dim)


class RgbaEnv(gym.Env[np.ndarray, Any]):
    """A 16x20 RGBA observation whose alpha counts the steps; ends after 5 steps."""

    metadata = {"render_modes": [], "render_fps": 10}  # noqa: RUF012 (Gymnasium declares it per instance)

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0, 255, (16, 20, 4), np.uint8)
        self.action_space: spaces.Space[Any] = spaces.Discrete(2)
        self._t = 0

    def _obs(self) -> np.ndarray:
        image = self.np_random.integers(0, 256, (16, 20, 4), dtype=np.uint8)
        image[..., 3] = (self._t * 40 + np.arange(20)[None, :]) % 256
        return image

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._t += 1
        return self._obs(), float(action), self._t >= 5, False, {}


@pytest.mark.parametrize("keep_dim", [False, True], ids=["HxW", "HxWx1"])
def test_grayscale_observation_is_a_grey_png_camera_read_back_bit_exactly(
    tmp_path: Path, keep_dim: bool, capsys: pytest.CaptureFixture[str],
) -> None:
    """GrayscaleObservation(AddRenderObservation(CartPole)): the grey pixels are the camera ``render``, PNG although JPEG is the default, every frame (H, W, 1) exactly what the env returned; fsr validate and fsr info agree."""
    env = RecordEpisodes(_grey_cartpole(keep_dim), tmp_path / "out")  # encoding: the default, jpeg
    (played,) = play(env, [4], max_steps=6)
    env.close()
    path = env.files[0].path
    assert path is not None
    assert validate(path).validated_bytes == path.stat().st_size
    with FsrReader(path) as reader:
        codec = reader.stream("cameras.render.rgb").codec
    assert (codec["payload_codec"], codec["channels"], codec["lossy"]) == ("png", 1, False)
    episode = read_episode(path)
    assert episode.observations == {}  # the pixels are the camera, not a channel
    assert "grey (1 channel): PNG, exact" in episode.description["camera"]
    with fr.open(path) as rec:
        assert rec.cameras() == ("render",)
        frames = [f.image for f in rec.frames("render")]
        assert rec.frame("render", -1).image.shape == (400, 600, 1)
    assert len(frames) == len(played.observations) == 7
    for frame, observation in zip(frames, played.observations, strict=True):
        assert frame.shape == (400, 600, 1)
        assert frame.dtype == np.uint8
        np.testing.assert_array_equal(frame.reshape(observation.shape), observation)
    sample = fr.Dataset(path, channels=["reward"], cameras=["render"], include="stopped")[2]
    np.testing.assert_array_equal(sample["render"], frames[sample["frame_index"]])  # a Dataset gives (H, W, 1) too
    assert main(["validate", str(path)]) == 0
    capsys.readouterr()
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cameras"]["render"]["channels"] == 1
    assert main(["info", str(path)]) == 0
    assert "camera render: renderer not recorded, 600x400, uncalibrated (no K, no pose), 1 channel (grey)" in (
        capsys.readouterr().out)


def test_an_rgba_observation_is_an_rgba_png_camera_alpha_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A whole-observation Box(uint8, (H, W, 4)): the camera ``observation``, RGBA PNG, alpha kept, bit-exact; fsr frames writes RGBA PNGs of the same pixels."""
    import cv2

    env = RecordEpisodes(RgbaEnv(), tmp_path / "out", encoding="jpeg")
    (played,) = play(env, [7])
    env.close()
    path = env.files[0].path
    assert path is not None
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        assert rec.cameras() == ("observation",)
        frames = [f.image for f in rec.frames("observation")]
    np.testing.assert_array_equal(np.stack(frames), np.stack(played.observations))
    assert main(["frames", str(path), "--camera", "observation", "-o", str(tmp_path / "png")]) == 0
    written = sorted((tmp_path / "png").iterdir())
    assert len(written) == len(frames) == 6
    for file, expected in zip(written, played.observations, strict=True):
        bgra = cv2.imread(str(file), cv2.IMREAD_UNCHANGED)
        assert bgra is not None
        np.testing.assert_array_equal(cv2.cvtColor(bgra, cv2.COLOR_BGRA2RGBA), expected)
    assert main(["info", str(path)]) == 0
    assert ", 4 channels (RGBA)" in capsys.readouterr().out


def test_a_uint8_board_without_image_bounds_and_frame_stacks_stay_numeric(tmp_path: Path) -> None:
    """Box(uint8, (8, 8)) with bounds 0..12 (a board, not Gymnasium's image space) and a stack of grey frames (k, H, W) stay exact numeric channels: no camera."""
    board = gym.wrappers.TransformObservation(
        gym.make("CartPole-v1"), lambda o: np.full((8, 8), int(abs(o[0]) * 100) % 13, np.uint8),
        spaces.Box(0, 12, (8, 8), np.uint8),
    )
    grey = gym.wrappers.TransformObservation(
        gym.make("CartPole-v1"), lambda o: np.full((12, 16), int(abs(o[0]) * 1000) % 256, np.uint8),
        spaces.Box(0, 255, (12, 16), np.uint8),
    )
    for name, inner in (("board", board), ("stack", gym.wrappers.FrameStackObservation(grey, stack_size=3))):
        env = RecordEpisodes(inner, tmp_path / name)
        (played,) = play(env, [5], max_steps=4)
        env.close()
        path = env.files[0].path
        assert path is not None
        with fr.open(path) as rec:
            assert rec.cameras() == ()
        np.testing.assert_array_equal(read_episode(path).observations["observation"], np.stack(played.observations))
