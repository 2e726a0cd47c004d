"""A MuJoCo v5 env with render_mode="rgb_array": frames, honest calibration and render.state."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from tests.record.gym.play import Played, assert_recorded, play

import fastsim_record as fr
from fastsim_record.gym import RecordEpisodes, read_episode


def _z_axis(q: np.ndarray) -> np.ndarray:
    """The third column of the rotation of the unit quaternion ``q`` (x, y, z, w)."""
    x, y, z, w = q
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])


def _cheetah(**kwargs: Any) -> Any:
    return gym.make("HalfCheetah-v5", render_mode="rgb_array", width=96, height=64, max_episode_steps=12, **kwargs)


def test_halfcheetah_frames_are_a_camera_calibrated_from_the_model_and_data(tmp_path: Path) -> None:
    """Frames (PNG: exact), K from the model's field of view, the pose from the camera that drew each frame."""
    env = RecordEpisodes(_cheetah(), tmp_path, encoding="png", render_state=True, geometry=True)
    frames, cams = [], []
    inner: Any = env.unwrapped

    def keep() -> None:
        frames.append(env.render().copy())
        cam = inner.mujoco_renderer.viewer.cam
        cams.append((float(cam.azimuth), float(cam.elevation), float(cam.distance), np.array(cam.lookat)))

    observation, _ = env.reset(seed=4)
    played = Played(4, [observation])
    keep()
    env.action_space.seed(0)
    for _ in range(12):
        action = env.action_space.sample()
        played.step(action, *env.step(action)[:4])
        keep()
    env.close()
    path = env.files[0].path
    episode = assert_recorded(path, played)  # observations, actions, rewards, flags, length, seed
    assert episode.steps == 12
    assert episode.truncated[-1]
    assert episode.description["versions"]["mujoco"]
    with fr.open(path) as rec:
        assert rec.cameras() == ("render",)
        assert rec.frame_count("render") == 13  # one frame per observation row
        for k, frame in enumerate(rec.frames("render")):
            np.testing.assert_array_equal(frame.image, frames[k])
            assert frame.time_ns == episode.time_ns[k]
        calibration = rec.calibration("render")
        fovy = float(inner.model.vis.global_.fovy)  # the free camera's field of view
        f = 32.0 / math.tan(math.radians(fovy) / 2)
        np.testing.assert_allclose(calibration.k[0], np.array([[f, 0, 47.5], [0, f, 31.5], [0, 0, 1]]))
        for k in range(13):  # the optical axis is the free camera's azimuth and elevation; it sits at its distance
            azimuth, elevation, distance, lookat = (np.radians(cams[k][0]), np.radians(cams[k][1]), *cams[k][2:])
            forward: list[float] = [np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth), np.sin(elevation)]
            np.testing.assert_allclose(_z_axis(calibration.quaternion_xyzw[k]), forward, atol=1e-6)
            assert abs(np.linalg.norm(lookat - calibration.translation[k]) - distance) < 0.05  # tracking lags a frame
        assert rec.info.records["render.state"] == 13
        assert rec.info.records["geometry"] == 13  # the meshes once, then the moving bodies' transforms


def test_jpeg_is_the_default_and_encoding_happens_in_the_worker(tmp_path: Path) -> None:
    """The default camera encoding is JPEG (decoded frames close to what render() returned)."""
    env = RecordEpisodes(_cheetah(), tmp_path)
    env.reset(seed=1)
    first = env.render().copy()
    env.close()
    with fr.open(env.files[0].path) as rec:
        frame = next(iter(rec.frames("render")))
        assert np.abs(frame.image.astype(int) - first).mean() < 6
        assert rec.info.attributes is not None


def test_image_observations_of_render_frames_become_the_camera(tmp_path: Path) -> None:
    """AddRenderObservation's pixels (a Box(uint8, HxWx3) leaf) are the calibrated camera, not a numeric channel."""
    inner = gym.wrappers.AddRenderObservation(_cheetah(), render_only=False)
    env = RecordEpisodes(inner, tmp_path, encoding="png")
    played = play(env, [5])
    env.close()
    episode = read_episode(env.files[0].path)
    assert set(episode.observations) == {"observation.state"}
    states = np.stack([o["state"] for o in played[0].observations])
    np.testing.assert_array_equal(episode.observations["observation.state"], states)
    with fr.open(env.files[0].path) as rec:
        assert rec.cameras() == ("render",)
        for k, frame in enumerate(rec.frames("render")):
            np.testing.assert_array_equal(frame.image, played[0].observations[k]["pixels"])
        assert rec.frame_count("render") == len(played[0].observations)


def test_fsr_replay_poses_the_env_from_the_recorded_render_state(tmp_path: Path) -> None:
    """render_state=True: fsr replay with backend gymnasium re-renders every recorded state of the env exactly."""
    from fastsim_record.cli import main

    env = RecordEpisodes(_cheetah(), tmp_path / "out", render_state=True, encoding="png")
    played = play(env, [3])
    env.close()
    source = env.files[0].path
    run = tmp_path / "replay.yaml"
    run.write_text(
        "schema: fastsim/2\nname: cheetah-replay\nbackend: gymnasium\n"
        "scenario: {scene: {gymnasium: {id: HalfCheetah-v5, width: 96, height: 64}}}\n"
        "runtime: {sensor_hz: 20}\n"
        "plugins:\n  record:\n    use: plugin://fastsim/record\n    config:\n      output: {name: replayed.fsr}\n"
        "      streams: {cameras: {render: {rgb: cameras.render.rgb, intrinsics: cameras.render.intrinsics,\n"
        "        translation: cameras.render.extrinsics.translation,\n"
        "        quaternion_xyzw: cameras.render.extrinsics.quaternion_xyzw, encoding: png}}}\n"
    )
    assert main(["replay", str(source), str(run), "--output-dir", str(tmp_path / "replayed")]) == 0
    with fr.open(source) as recorded, fr.open(tmp_path / "replayed" / "replayed.fsr") as replayed:
        assert replayed.info.mode == "render"
        joints = recorded.numeric("robot.joint_position")
        np.testing.assert_array_equal(replayed.numeric("robot.joint_position").values, joints.values)
        np.testing.assert_array_equal(replayed.numeric("robot.joint_position").time_ns, joints.time_ns)
        assert replayed.frame_count("render") == len(played[0].observations)
        for live, posed in zip(recorded.frames("render"), replayed.frames("render"), strict=True):
            # the live frame shows the kinematics MuJoCo computed before its last integration step
            assert np.abs(live.image.astype(int) - posed.image).mean() < 3
        np.testing.assert_allclose(replayed.calibration("render").k, recorded.calibration("render").k)


def test_frames_stay_drawn_when_another_envs_renderer_is_freed_mid_episode(tmp_path: Path) -> None:
    """Another MuJoCo env closed on this thread (its GL context freed) never turns the recorded frames black."""
    env = RecordEpisodes(_cheetah(), tmp_path / "out", encoding="png")
    env.reset(seed=5)
    env.action_space.seed(5)
    for step in range(6):
        if step == 2:  # a second env renders, then frees its context: nothing is current any more
            other = _cheetah()
            other.reset(seed=0)
            other.render()
            other.close()
        env.step(env.action_space.sample())
    env.close()
    with fr.open(env.files[0].path) as rec:
        means = [float(frame.image.mean()) for frame in rec.frames("render")]
    assert len(means) == 7
    assert min(means) > 10.0, means  # a black frame has mean 0


def test_an_env_record_closed_never_blanks_another_envs_frames_when_collected(tmp_path: Path) -> None:
    """A recorded MuJoCo env, closed and then collected by the GC, deletes no GL object of another env's renderer."""
    import gc

    recorded = RecordEpisodes(_cheetah(), tmp_path / "out", encoding="png")
    play(recorded, [1])
    recorded.close()
    other = _cheetah()
    other.reset(seed=0)
    assert float(other.render().mean()) > 10.0
    del recorded
    gc.collect()  # the closed env's MjrContext goes now, while the other env's context is current
    assert float(other.render().mean()) > 10.0  # a black frame has mean 0
    other.close()


def test_calibration_profiles_name_the_envs_renderer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Profile rule 6: each profile names MuJoCo, the viewer's GL backend and the model's <quality> (HalfCheetah's defaults, not 0); fsr info shows them."""
    import json

    import mujoco

    from fastsim_record.cli import main

    env = RecordEpisodes(_cheetah(), tmp_path, encoding="png")
    play(env, [2], max_steps=2)
    inner: Any = env.unwrapped
    quality, backend = inner.model.vis.quality, inner.mujoco_renderer.viewer.backend
    env.close()
    expected = {"name": "mujoco", "version": mujoco.__version__, "gl_backend": backend,
                "msaa_samples": int(quality.offsamples), "shadow_map_size": int(quality.shadowsize)}
    assert expected["msaa_samples"] > 0  # a hard-coded 0 would fail
    assert expected["shadow_map_size"] > 0
    path = env.files[0].path
    with fr.open(path) as rec:
        calibration = rec.calibration("render")
        assert calibration.problems == ()
        assert [epoch.profile["renderer"] for epoch in calibration.epochs] == [expected] * len(calibration.epochs)
    capsys.readouterr()
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cameras"]["render"]["renderer"] == expected
    assert main(["info", str(path)]) == 0
    shown = (f"camera render: rendered by mujoco {mujoco.__version__} ({backend}), "
             f"MSAA {expected['msaa_samples']} samples, shadow map {expected['shadow_map_size']}")
    assert shown in capsys.readouterr().out
