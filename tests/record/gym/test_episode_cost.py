"""Issue 23 (gym23c): work that one committed episode file repeats, done once where it can be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from tests.record.gym.play import assert_recorded, play

from fastsim_record.config.model import RecordConfig
from fastsim_record.gym import RecordEpisodes


def test_each_episode_maps_records_config_once_in_the_host_and_once_in_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Preparing an episode maps Record's compiled config once (capture plan and output names share it), Record once for the file's attributes."""
    calls: list[str] = []
    real = RecordConfig.to_mapping

    def counted(self: RecordConfig) -> Any:
        calls.append(self.output.name)
        return real(self)

    monkeypatch.setattr(RecordConfig, "to_mapping", counted)
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "cp")
    played = play(env, [1, 2, 3])
    env.close()
    assert len(env.files) == 3
    for file, episode in zip(env.files, played, strict=True):
        assert calls.count(file.path.name) == 2, calls
        assert_recorded(file.path, episode)


def test_the_env_thread_neither_builds_nor_frees_an_episodes_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each episode's backend is built, and its Session freed, in the writer pools: never on the env thread (cp23)."""
    import threading
    import weakref

    from fastsim_embedded.backends.gymnasium_env import GymnasiumBackend
    from fastsim_embedded.session.session import Session

    env_thread = threading.get_ident()
    built: list[int] = []
    freed: list[int] = []
    real_init, real_open = GymnasiumBackend.__init__, Session.open.__func__  # type: ignore[attr-defined]

    def init(self: GymnasiumBackend, *args: Any, **kwargs: Any) -> None:
        built.append(threading.get_ident())
        real_init(self, *args, **kwargs)

    def opened(cls: type[Session], *args: Any, **kwargs: Any) -> Session:
        session: Session = real_open(cls, *args, **kwargs)
        weakref.finalize(session, lambda: freed.append(threading.get_ident()))
        return session

    monkeypatch.setattr(GymnasiumBackend, "__init__", init)
    monkeypatch.setattr(Session, "open", classmethod(opened))
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "cp", writers=1)
    played = play(env, [1, 2, 3, 4])
    env.close()
    assert len(built) == 4
    assert env_thread not in built
    assert len(freed) == 4
    assert env_thread not in freed
    for file, episode in zip(env.files, played, strict=True):
        assert_recorded(file.path, episode)


def test_a_cartpole_step_calls_no_layout_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CartPole's action (its channel's NumPy scalar) and observation (its channel's array) are checked inline per step (cp23)."""
    from fastsim_embedded.gymnasium_host.capture import RowLayout

    calls: list[str] = []
    def counted(method: str) -> Any:
        real = getattr(RowLayout, method)

        def call(self: RowLayout, value: Any) -> Any:
            calls.append(method)
            return real(self, value)
        return call

    for method in ("action", "observation"):
        monkeypatch.setattr(RowLayout, method, counted(method))
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "cp")
    played = play(env, [5])
    env.close()
    assert calls == ["observation"], calls  # the reset observation only (begin)
    assert_recorded(env.files[0].path, played[0])
