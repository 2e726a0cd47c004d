"""FastSimRun-v0's ``render_mode="rgb_array"`` and the forms of its ``run`` argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastsim_record as fr
from fastsim_contract.run import load_run
from fastsim_contract.run_compiler import compile_run, discover_catalogs
from fastsim_embedded.gym import ENV_ID, FastSimRunEnv
from fastsim_recording_format import validate

from .conftest import PICK, camera_run, reach_run

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # check_env's advice on unbounded Boxes


def test_render_rgb_array_is_the_latest_recorded_frame_and_the_last_one_after_the_end(tmp_path: Path) -> None:
    """gym.make(render_mode="rgb_array"): render() is a copy of the camera's latest frame (PNG: equal to the file's), also after the terminal step."""
    env = gym.make(f"fastsim_embedded.gym:{ENV_ID}", run=camera_run(tmp_path, camera_hz=30.0, duration_s=0.2),
                   output_dir=tmp_path / "out", render_mode="rgb_array")
    assert env.render_mode == "rgb_array"
    assert env.metadata["render_modes"] == ["rgb_array"]
    env.reset(seed=1)
    frames: list[Any] = [env.render()]
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(np.zeros(7))
        done = terminated or truncated
        frames.append(env.render())
    assert info["committed"]  # the episode ended and committed: render() still gives its last frame
    again = env.render()
    assert again is not frames[-1]
    env.close()
    assert all(f.shape == (24, 32, 3) and f.dtype == np.uint8 for f in frames)
    np.testing.assert_array_equal(again, frames[-1])
    with fr.open(info["committed"][0]) as rec:
        recorded = [frame.image for frame in rec.frames("cam00")]
    assert len(recorded) == len(frames)
    for shown, kept in zip(frames, recorded, strict=True):
        np.testing.assert_array_equal(shown, kept)
    with pytest.raises(RuntimeError, match=r"render\(\) after close\(\)"):
        env.unwrapped.render()


def test_check_env_with_its_render_check_passes(tmp_path: Path) -> None:
    """Gymnasium's check_env, render check included, on the camera scene; render() before reset() is a clear error."""
    env = FastSimRunEnv(camera_run(tmp_path), tmp_path / "out", render_mode="rgb_array")
    with pytest.raises(RuntimeError, match=r"render\(\) before reset\(\)"):
        env.render()
    check_env(env)
    env.close()
    assert FastSimRunEnv(camera_run(tmp_path), tmp_path / "bare", record=False).render() is None  # no render mode


def test_render_on_the_mujoco_scene_is_the_wrist_frame_the_policy_sees(tmp_path: Path) -> None:
    """The DROID-like pick: render() is the recorded wrist camera, equal to the observation's image and not the same array."""
    env = FastSimRunEnv(PICK, tmp_path / "out", cameras=True, render_mode="rgb_array")
    observation, _ = env.reset(seed=2)
    shown = env.render()
    assert shown is not None
    np.testing.assert_array_equal(shown, observation["sensors.wrist.camera.rgb"])
    observation = env.step(env.action_space.sample())[0]
    shown = env.render()
    assert shown is not None
    np.testing.assert_array_equal(shown, observation["sensors.wrist.camera.rgb"])
    shown[:] = 0  # the caller's copy: neither the observation nor the recorded frame changes
    assert observation["sensors.wrist.camera.rgb"].any()
    env.close()


def test_a_bad_render_mode_or_a_scene_without_a_camera_is_one_line(tmp_path: Path) -> None:
    """render_mode other than rgb_array, or rgb_array on a scene without a camera: ValueError of one line."""
    with pytest.raises(ValueError, match=r"^FastSimRun-v0: render_mode must be None or 'rgb_array' \(got 'depth'\)$"):
        FastSimRunEnv(camera_run(tmp_path), tmp_path / "out", render_mode="depth")
    with pytest.raises(ValueError, match=r"^render_mode='rgb_array', but the Run's scene \(synthetic\) declares no camera$"):
        FastSimRunEnv(reach_run(tmp_path), tmp_path / "out", render_mode="rgb_array")
    assert FastSimRunEnv(reach_run(tmp_path), tmp_path / "out2").metadata["render_modes"] == []


def test_run_may_be_a_file_a_run_document_or_a_compiled_run(tmp_path: Path) -> None:
    """The issue's `run`: a Run file or a compiled Run (a RunDocument too); anything else is one line."""
    path = reach_run(tmp_path, duration_s=0.2)
    document = load_run(path)
    compiled = compile_run(document, discover_catalogs())
    runs: tuple[Any, ...] = (path, document, compiled)
    for k, run in enumerate(runs):
        env = FastSimRunEnv(run, tmp_path / f"out{k}")
        env.reset(seed=3)
        env.step(env.action_space.sample())
        env.close()
        (committed,) = env.committed
        assert validate(committed).validated_bytes == Path(committed).stat().st_size
    with pytest.raises(TypeError, match=r"^FastSimRun-v0: run must be a Run file, a RunDocument or a CompiledRun \(got int\)$"):
        FastSimRunEnv(42, tmp_path / "bad")  # type: ignore[arg-type]
