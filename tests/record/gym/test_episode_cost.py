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


def test_record_config_is_turned_into_plain_data_once_per_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Record's compiled config is built into plain data (attrs.asdict) once per recording, not once per episode file (gym23)."""
    import attrs

    built: list[str] = []
    real = attrs.asdict

    def counted(inst: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inst, RecordConfig):
            built.append(inst.output.name)
        return real(inst, *args, **kwargs)

    monkeypatch.setattr(attrs, "asdict", counted)  # the one module every caller reads it from
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "cp")
    played = play(env, [1, 2, 3, 4])
    env.close()
    assert len(env.files) == 4
    assert len(built) <= 1, built  # the compiled config's, at most; each episode's is derived from it
    for file, episode in zip(env.files, played, strict=True):
        assert_recorded(file.path, episode)


def test_a_renamed_configs_mapping_equals_its_own_and_each_call_is_a_fresh_copy() -> None:
    """A renamed config's derived mapping equals the one attrs builds for it, and callers never share (or change) the kept one (gym23)."""
    import attrs

    from fastsim_record.config.model import _plain

    base = RecordConfig()
    renamed = base.with_output_name("episode_000007.fsr")
    assert renamed.to_mapping() == _plain(attrs.asdict(renamed, recurse=True))
    assert renamed.to_mapping()["output"]["name"] == "episode_000007.fsr"
    assert base.to_mapping()["output"]["name"] == "episode.fsr"
    first = renamed.to_mapping()
    first["output"]["name"] = "changed.fsr"
    first["queues"].clear()
    again = renamed.to_mapping()
    assert again["output"]["name"] == "episode_000007.fsr"
    assert again["queues"]
    assert again == _plain(attrs.asdict(renamed, recurse=True))
    assert base.to_mapping() == _plain(attrs.asdict(base, recurse=True))  # the parts the two keep in common
