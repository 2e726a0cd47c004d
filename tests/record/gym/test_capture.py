"""The env thread's capture (``gymnasium_host.capture``), the Run compiled once per recording
(``gymnasium_host.runs``) and the MuJoCo pose computed only when it changes.  Counted, never timed."""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from tests.record.gym.envs import DictEnv
from tests.record.gym.play import assert_recorded, play

import fastsim_record as fr
from fastsim_embedded.backends.gymnasium_env import StepRow, camera_channels
from fastsim_embedded.gymnasium_host import capture as capture_module
from fastsim_embedded.gymnasium_host import mujoco as mujoco_module
from fastsim_embedded.gymnasium_host.capture import Chunk, RowLayout
from fastsim_embedded.gymnasium_host.spaces import leaf_value, space_leaves
from fastsim_embedded.session import session
from fastsim_record.gym import GymWrapError, RecordEpisodes, read_episode


def _row(row: StepRow, observation: Any, action: Any, reward: float, terminated: bool, truncated: bool,
         info: Any) -> bytes:
    """One row packed field by field with ``RowPacker.encode`` (the reference for the bulk
    packer); ``action`` ``None`` is the final row's fill."""
    def leaves(value: Any, space: tuple[Any, ...]) -> list[Any]:
        return [value] if len(space) == 1 and not space[0].path else [leaf_value(value, leaf) for leaf in space]

    parts = row.packer.encode(0, leaves(observation, row.observation))
    step_at = len(row.observation)
    if action is None:
        parts += [np.full(leaf.shape, np.nan if leaf.dtype.kind == "f" else 0, leaf.dtype).tobytes()
                  for leaf in row.action]
    else:
        parts += row.packer.encode(step_at, leaves(action, row.action))
    infos = [float(np.asarray(info[key], np.float64)) if info and key in info else float("nan")
             for key in row.info_keys]
    parts.append(struct.pack("=dBB" + "d" * len(infos), reward, terminated, truncated, *infos))
    return row.packer.join(parts).tobytes()


def test_bulk_packed_rows_are_byte_for_byte_the_row_packers() -> None:
    """A Dict env's rows (several leaves, info keys, the final fill row) packed in bulk equal what ``StepRow`` packs one row at a time."""
    env = DictEnv()
    row = StepRow(space_leaves(env.observation_space, "observation"), space_leaves(env.action_space, "action"),
                  ("distance", "absent"))
    layout = RowLayout(row)
    env.action_space.seed(3)
    observation, _ = env.reset(seed=3)
    chunk, expected = Chunk(0), []
    chunk.obs.append(layout.observation(observation))
    for _ in range(6):
        action = env.action_space.sample()
        before = observation
        observation, reward, terminated, truncated, info = env.step(action)
        expected.append(_row(row, before, action, reward, terminated, truncated, info))
        chunk.steps.append((layout.action(action), float(reward), terminated, truncated))
        chunk.infos.append(layout.info(info))
        chunk.obs.append(layout.observation(observation))
    expected.append(_row(row, observation, None, float("nan"), False, True, None))
    chunk.final = (False, True)
    rows = layout.pack(chunk)
    assert rows.shape == (7, row.packer.nbytes)
    assert not rows.flags.writeable
    for got, want in zip(rows, expected, strict=True):
        assert got.tobytes() == want


def test_the_capture_copies_what_the_env_returned() -> None:
    """An env that reuses its observation buffer: each row keeps the value of its step."""
    leaves = space_leaves(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), "observation")
    layout = RowLayout(StepRow(leaves, space_leaves(gym.spaces.Discrete(2), "action"), ()))
    buffer = np.zeros(3, np.float32)
    kept = []
    for k in range(3):
        buffer[:] = k
        kept.append(layout.observation(buffer))
    assert [float(np.frombuffer(v, np.float32)[0]) for v in kept] == [0.0, 1.0, 2.0]
    assert leaf_value({"a": 1}, leaves[0]) == {"a": 1}  # a one-leaf space is the value itself


def test_a_numpy_scalar_for_a_vector_channel_is_a_shape_error_not_a_kept_value() -> None:
    """The scalar fast path serves one-value channels only: a ``float32`` scalar where the space declares ``(4,)`` raises, naming the channel, as any other wrong shape."""
    leaves = space_leaves(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), "observation")
    layout = RowLayout(StepRow(leaves, space_leaves(gym.spaces.Discrete(2), "action"), ()))
    with pytest.raises(ValueError, match=r"^observation: the env returned shape \(\), its space declares \(4,\)$"):
        layout.observation(np.float32(0.5))
    assert layout.action(np.int64(1)) == 1  # a one-value channel keeps the scalar itself
    assert layout.action(1) == 1  # any other value is cast as RowPacker casts it
    with pytest.raises(ValueError, match=r"^action: the env returned shape \(2,\), its space declares \(\)$"):
        layout.action(np.array([0, 1]))


def test_a_wrongly_shaped_action_still_raises_on_step_and_keeps_the_steps_before(tmp_path: Path) -> None:
    """The check stays on ``step()``: one line naming ``action``; steps 1-2 are committed."""
    env = RecordEpisodes(gym.make("Pendulum-v1"), tmp_path)
    env.reset(seed=5)
    env.step(np.array([0.5], np.float32))
    env.step(np.array([-0.5], np.float32))
    recording = env._recording
    real = recording.layout.action

    def sneaky(value: Any) -> Any:
        return real(np.array([0.1, 0.2], np.float32))  # what a broken action wrapper would pass on

    recording.layout.action = sneaky
    with pytest.raises(GymWrapError, match=r"^step\(\): action: the env returned shape \(2,\), its space declares \(1,\)$"):
        env.step(np.array([0.0], np.float32))
    env.close()
    episode = read_episode(env.files[0].path)
    assert episode.steps == 2
    np.testing.assert_array_equal(episode.actions["action"][:, 0], np.array([0.5, -0.5], np.float32))
    assert env.files[0].completion == "failed"


def test_no_tick_is_published_on_the_env_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Long episodes whose files are open while they run: every ``Session.step`` and every bulk pack runs off the env thread (before: the env thread published each tick once the file was open)."""
    threads: list[str] = []
    real_step, real_pack = session.Session.step, capture_module.RowLayout.pack

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_step(self, *args, **kwargs)

    def pack(self: Any, chunk: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_pack(self, chunk)

    monkeypatch.setattr(session.Session, "step", step)
    monkeypatch.setattr(capture_module.RowLayout, "pack", pack)
    env = RecordEpisodes(gym.make("Pendulum-v1"), tmp_path)
    played = play(env, [1, 2])  # 200 steps each: two chunks and a rest per episode
    env.close()
    assert threads
    assert threading.main_thread().name not in threads
    for file, episode in zip(env.files, played, strict=True):
        assert_recorded(file.path, episode)


def test_the_run_is_compiled_once_per_recording_never_shared_across_options(tmp_path: Path) -> None:
    """Three episodes, one compilation per recording; two recordings with different options each compile their own Run, and each file carries its own name and options."""
    fast = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "fast", fps=50.0, prefix="fast")
    slow = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "slow", fps=5.0, prefix="slow")
    play(fast, [0, 1, 2])
    play(slow, [0, 1, 2])
    fast.close()
    slow.close()
    assert fast._recording.runs.compiled_templates == 1
    assert slow._recording.runs.compiled_templates == 1
    assert fast._recording.runs is not slow._recording.runs
    for env, fps in ((fast, 50.0), (slow, 5.0)):
        for file in env.files:
            with fr.open(file.path) as rec:
                config = rec.info.attributes["record_config"]
                assert config["output"]["name"] == file.path.name
                steps = np.diff(rec.numeric("observation").time_ns)
                assert set(steps.tolist()) == {round(1e9 / fps)}


def test_a_still_mujoco_camera_is_posed_once_and_a_moving_one_at_each_change() -> None:
    """The free camera of a still scene: one pose for three frames; a fixed camera that tracks a moving body: a new pose when the body moved, equal to the GL cameras' mean."""
    computed = []
    real = mujoco_module._quaternion_xyzw

    def counted(m: Any) -> Any:
        computed.append(1)
        return real(m)

    mp = pytest.MonkeyPatch()
    mp.setattr(mujoco_module, "_quaternion_xyzw", counted)
    try:
        env = gym.make("HalfCheetah-v5", render_mode="rgb_array", width=64, height=48)
        env.reset(seed=0)
        calibration = mujoco_module.calibration_of(env, "render")
        assert calibration is not None
        frame: Any = env.render()
        for _ in range(3):
            calibration.readings(frame, camera_channels("render"))
        assert len(computed) == 1
        env.close()
        env = gym.make("HalfCheetah-v5", render_mode="rgb_array", width=64, height=48, camera_id=0)
        env.reset(seed=0)
        calibration = mujoco_module.calibration_of(env, "render")
        assert calibration is not None
        computed.clear()
        for _ in range(3):
            env.step(np.ones(6, np.float32))
            frame = env.render()
            readings = calibration.readings(frame, camera_channels("render"))
            calibration.readings(frame, camera_channels("render"))
            viewer: Any = env.unwrapped.mujoco_renderer.viewer  # type: ignore[attr-defined]
            left, right = viewer.scn.camera[0], viewer.scn.camera[1]
            np.testing.assert_allclose(readings[2].value, (np.array(left.pos) + np.array(right.pos)) / 2, atol=1e-5)
        assert len(computed) == 3
        env.close()
    finally:
        mp.undo()
