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
