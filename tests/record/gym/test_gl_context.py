"""``RecordEpisodes`` makes the viewer's GL context current only when it is not (``gym._gl``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.mujoco import mujoco_rendering

import fastsim_record as fr
from fastsim_record.gym import RecordEpisodes


def _cheetah() -> Any:
    return gym.make("HalfCheetah-v5", render_mode="rgb_array", width=96, height=64, max_episode_steps=12)


def _frames(path: Path) -> list[np.ndarray[Any, Any]]:
    with fr.open(path) as rec:
        return [np.array(frame.image) for frame in rec.frames("render")]


def _record(directory: Path, interfere: str | None) -> list[np.ndarray[Any, Any]]:
    """Six steps of a seeded episode (PNG, exact); at step 2 another env (another model and
    size) renders on this thread, and is kept open or closed."""
    env = RecordEpisodes(_cheetah(), directory, encoding="png")
    env.reset(seed=5)
    env.action_space.seed(5)
    other = None
    for step in range(6):
        if step == 2 and interfere is not None:
            other = gym.make("Hopper-v5", render_mode="rgb_array", width=80, height=120)
            other.reset(seed=0)
            other.render()  # its context is current now
            if interfere == "closed":
                other.close()
                other = None
        env.step(env.action_space.sample())
    env.close()
    if other is not None:
        other.close()
    return _frames(env.files[0].path)


def test_the_context_is_made_current_once_while_nothing_else_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten steps with nothing else rendering on the thread make the context current once, not once a frame."""
    calls: list[Any] = []
    original: Any = mujoco_rendering.OffScreenViewer.make_context_current

    def counted(self: Any) -> None:
        calls.append(self)
        original(self)

    env = RecordEpisodes(_cheetah(), tmp_path, encoding="png")
    env.reset(seed=5)  # the viewer is created (and its context made current) by this capture
    env.action_space.seed(5)
    monkeypatch.setattr(mujoco_rendering.OffScreenViewer, "make_context_current", counted)
    for _ in range(10):
        env.step(env.action_space.sample())
    monkeypatch.undo()
    env.close()
    assert len(calls) == 1
    assert len(_frames(env.files[0].path)) == 11


@pytest.mark.parametrize("interfere", ["kept open", "closed"])
def test_frames_are_the_envs_own_when_another_env_renders_mid_episode(tmp_path: Path, interfere: str) -> None:
    """Another env rendering on this thread (kept open or closed) changes no recorded frame, pixel for pixel."""
    alone = _record(tmp_path / "alone", None)
    mixed = _record(tmp_path / "mixed", interfere)
    assert len(mixed) == len(alone) == 7
    assert min(float(f.mean()) for f in mixed) > 10.0  # a black frame has mean 0
    for a, b in zip(alone, mixed, strict=True):
        np.testing.assert_array_equal(a, b)
