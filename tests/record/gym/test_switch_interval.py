"""The interpreter's switch interval while a wrapper records frames (``fastsim_record.gym._switch``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from tests.record.gym.envs import ImageEnv
from tests.record.gym.play import play

from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes
from fastsim_record.gym._switch import DEFAULT_SWITCH_INTERVAL, SwitchInterval


@pytest.fixture(autouse=True)
def _interpreter_default() -> Iterator[None]:
    """Each test starts at the interpreter's 5 ms and leaves it there."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_the_first_hold_lowers_and_the_last_release_restores() -> None:
    """Rows 1-3: the lowest asked value holds while any hold is open; the saved value comes back after the last."""
    first, second = SwitchInterval(200e-6), SwitchInterval(100e-6)
    first.hold()
    assert sys.getswitchinterval() == pytest.approx(200e-6)
    second.hold()
    assert sys.getswitchinterval() == pytest.approx(100e-6)
    first.release()
    first.release()  # idempotent
    assert sys.getswitchinterval() == pytest.approx(100e-6)
    second.release()
    assert sys.getswitchinterval() == 0.005


def test_an_interval_set_by_someone_else_is_left_as_it_is() -> None:
    """Rows 2-3: a value the program set while a hold was open is neither lowered nor restored over."""
    first = SwitchInterval(200e-6)
    first.hold()
    sys.setswitchinterval(0.002)
    second = SwitchInterval(50e-6)
    second.hold()
    assert sys.getswitchinterval() == 0.002
    second.release()
    first.release()
    assert sys.getswitchinterval() == 0.002


def test_a_longer_interval_already_shorter_than_asked_is_kept() -> None:
    """Row 1: ``min(saved, asked)``: a program already at 50 us stays there, and is not raised back either."""
    sys.setswitchinterval(50e-6)
    hold = SwitchInterval(200e-6)
    hold.hold()
    assert sys.getswitchinterval() == pytest.approx(50e-6)
    hold.release()
    assert sys.getswitchinterval() == pytest.approx(50e-6)


def test_a_wrapper_that_records_frames_holds_it_until_close(tmp_path: Path) -> None:
    """A camera recording runs at the default 200 us and close() restores 5 ms; the episode records as before."""
    env = RecordEpisodes(ImageEnv(), tmp_path / "out")
    assert sys.getswitchinterval() == pytest.approx(DEFAULT_SWITCH_INTERVAL)
    play(env, [1])
    env.close()
    assert sys.getswitchinterval() == 0.005
    assert [f.completion for f in env.files] == ["normal"]


def test_numeric_recordings_and_none_leave_it_alone(tmp_path: Path) -> None:
    """No frames (CartPole), or ``switch_interval=None`` on a camera recording: the interpreter's value throughout."""
    numeric = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "numeric")
    assert sys.getswitchinterval() == 0.005
    numeric.close()
    off = RecordEpisodes(ImageEnv(), tmp_path / "off", switch_interval=None)
    assert sys.getswitchinterval() == 0.005
    play(off, [1])
    off.close()
    assert sys.getswitchinterval() == 0.005


def test_a_vector_wrapper_asks_its_own_value(tmp_path: Path) -> None:
    """RecordVectorEpisodes holds the interval it is given while its sub-envs' frames are recorded."""
    envs = RecordVectorEpisodes(gym.vector.SyncVectorEnv([ImageEnv, ImageEnv]), tmp_path / "out", switch_interval=1e-4)
    assert sys.getswitchinterval() == pytest.approx(1e-4)
    envs.close()
    assert sys.getswitchinterval() == 0.005
