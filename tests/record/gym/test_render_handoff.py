"""The rendering env's hand-off (``GymRecording.before_render``, ``EpisodeWriter.hand``'s
``defer``), the one-row ``RowLayout.pack`` and the frame copy (``mujoco.frame_copy``).
Ordered and compared, never timed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from tests.record.gym.envs import DictEnv

import fastsim_record as fr
from fastsim_embedded.backends.gymnasium_env import StepRow
from fastsim_embedded.gymnasium_host import episode as episode_module
from fastsim_embedded.gymnasium_host.capture import Chunk, RowLayout
from fastsim_embedded.gymnasium_host.mujoco import frame_copy, joints_of
from fastsim_embedded.gymnasium_host.spaces import space_leaves
from fastsim_record.gym import RecordEpisodes


class _Rendering(gym.Wrapper[Any, Any, Any, Any]):
    """Notes each ``render()`` in ``events``."""

    def __init__(self, env: gym.Env[Any, Any], events: list[str]) -> None:
        super().__init__(env)
        self.events = events

    def render(self) -> Any:
        self.events.append("render")
        return self.env.render()


def test_a_rendering_env_publishes_while_it_renders_and_records_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's publisher task is submitted right before the next render (the env thread runs without the GIL there), never between a render and the end of step(); every frame and row is recorded."""
    events: list[str] = []
    real = episode_module.EpisodeWriter._publish_queue

    def publish(self: Any) -> None:
        events.append("publish")
        real(self)

    monkeypatch.setattr(episode_module.EpisodeWriter, "_publish_queue", publish)
    submit = episode_module.WriterPool.__init__

    def pool_init(self: Any, *args: Any) -> None:
        submit(self, *args)
        inner = self.executor.submit

        def noted(fn: Any, *a: Any) -> Any:
            if getattr(fn, "__name__", "") == "publish":
                events.append("submit")
            return inner(fn, *a)

        self.executor.submit = noted

    monkeypatch.setattr(episode_module.WriterPool, "__init__", pool_init)
    env = RecordEpisodes(_Rendering(gym.make("CartPole-v1", render_mode="rgb_array"), events), tmp_path / "out",
                         encoding="png", durable=True)  # durable: the file is open before the first step
    env.action_space.seed(0)
    env.reset(seed=2)
    frames = [env.render().copy()]
    for _ in range(8):
        env.step(env.action_space.sample())
        events.append("returned")
        frames.append(env.render().copy())
        writer = env._recording._open[0]
        for _ in range(10_000):  # the publisher idle again (at most 10 s) before the next step
            if not writer._scheduled:
                break
            time.sleep(0.001)
    submits = events.count("submit")
    env.close()
    # a task submitted before step t's render also takes step t's row (it is still running then): the
    # next task is submitted before step t + 2's render; the last rows are published by close
    assert submits >= 3, " ".join(events)
    order = [e for e in events if e in ("submit", "render", "returned")]
    for i, event in enumerate(order[:-1]):
        if event == "submit":
            assert order[i + 1] == "render", order  # submitted just before the render
        if event == "render" and i > 0:
            assert order[i + 1] != "submit", order  # ... never after it, within the same step
    with fr.open(env.files[0].path) as rec:
        assert len(rec.numeric("observation").values) == 9
        for k, frame in enumerate(rec.frames("render")):
            np.testing.assert_array_equal(frame.image, frames[k])
        assert k == 8


def test_one_row_chunks_pack_byte_for_byte_as_the_structured_path() -> None:
    """A MuJoCo env's one-row chunks (observation, joints, action, reward, flags) take the byte path, byte for byte the structured one's; a Dict env has none."""
    env = gym.make("HalfCheetah-v5")
    joints = joints_of(env)
    assert joints is not None
    row = StepRow(space_leaves(env.observation_space, "observation"), space_leaves(env.action_space, "action"), (),
                  joints=len(joints.names))
    layout = RowLayout(row)
    plan = layout._one
    assert plan is not None
    env.action_space.seed(1)
    observation, _ = env.reset(seed=1)
    for t in range(40):
        chunk = Chunk(t)
        chunk.obs.append(layout.observation(observation))
        chunk.joints.append(joints.sample())
        action = env.action_space.sample()
        observation, reward, _, _, _ = env.step(action)
        chunk.steps.append((layout.action(action), float("nan") if t % 9 == 0 else float(reward), t % 5 == 0,
                            np.bool_(t % 3 == 0)))
        fast = layout.pack(chunk)
        layout._one = None
        try:
            slow = layout.pack(chunk)
        finally:
            layout._one = plan
        assert fast.shape == slow.shape == (1, row.packer.nbytes)
        assert fast.tobytes() == slow.tobytes()
        assert not fast.flags.writeable
    env.close()
    dict_env = DictEnv()
    assert RowLayout(StepRow(space_leaves(dict_env.observation_space, "observation"),
                             space_leaves(dict_env.action_space, "action"), ()))._one is None


def test_the_frame_copy_is_a_read_only_copy_of_any_layout() -> None:
    """A bottom-up view, a contiguous and a strided frame are copied (C order, read-only); the env's array stays writable, its later writes never reach the copy."""
    base = np.arange(6 * 5 * 3, dtype=np.uint8).reshape(6, 5, 3)
    for frame in (base[::-1], base, base[:, ::2], base[::2, :, ::-1]):
        expected = np.array(frame, order="C")
        copy = frame_copy(frame)
        assert copy.flags.c_contiguous
        assert not copy.flags.writeable
        np.testing.assert_array_equal(copy, expected)
        base += 1
        np.testing.assert_array_equal(copy, expected)
    assert base.flags.writeable
