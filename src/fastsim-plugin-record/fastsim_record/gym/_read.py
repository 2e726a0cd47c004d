"""``read_episode``: one recorded Gymnasium episode as step arrays.

A file of T steps holds T + 1 rows (``fastsim_embedded.backends.gymnasium_env``): every
observation channel keeps all T + 1 rows (the reset observation first, the final one
last); ``action*``, ``reward``, ``terminated``, ``truncated`` and ``info.*`` are per-step
channels: the reading API already drops their final row, which is only the fill.  The ``gym.reset`` and ``gym.episode_end`` events give
the seed, the reset options, the sub-env and how the episode ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_recording_format.reading import open as open_recording

__all__ = ["GymEpisode", "read_episode"]


@attrs.frozen
class GymEpisode:
    """One episode: observations (T + 1 rows), step channels (T rows), events and description."""

    observations: dict[str, npt.NDArray[Any]]
    actions: dict[str, npt.NDArray[Any]]
    rewards: npt.NDArray[np.float64]
    terminated: npt.NDArray[np.bool_]
    truncated: npt.NDArray[np.bool_]
    info: dict[str, npt.NDArray[np.float64]]
    time_ns: npt.NDArray[np.int64]
    reset: dict[str, Any]
    end: dict[str, Any]
    description: dict[str, Any]

    @property
    def steps(self) -> int:
        """T: the number of transitions."""
        return int(self.rewards.shape[0])

    @property
    def seed(self) -> int | None:
        """The seed the episode's reset used (``None`` for an autoreset)."""
        seed = self.reset.get("seed")
        return None if seed is None else int(seed)


def read_episode(path: str | Path) -> GymEpisode:
    """Read one Gymnasium episode file (``fastsim_recording_format.reading`` errors as they are)."""
    with open_recording(path) as rec:
        series = rec.numeric_all()
        names = [n for n in series if n.split(".")[0] == "observation"]
        # T + 1 ticks: an observation channel's clock, else (all pixels: cameras) the first camera's
        # frames, else (an empty observation space) the steps' clock: T ticks
        cameras = rec.cameras()
        time_ns = (np.asarray(series[names[0]].time_ns) if names else
                   np.array([f.time_ns for f in rec.frames(cameras[0])], np.int64) if cameras else
                   np.asarray(series["reward"].time_ns))
        events = {e.data.get("event"): e.data.get("data", {}) for e in rec.events()}
        description = dict(rec.info.attributes.get("scene", {}).get("backend", {}) or {})
    end = dict(events.get("gym.episode_end") or {})
    steps = int(end.get("steps", len(series["reward"].values)))

    def step_rows(name: str) -> npt.NDArray[Any]:
        return np.asarray(series[name].values[:steps])

    return GymEpisode(
        observations={n: np.asarray(s.values) for n, s in series.items() if n.split(".")[0] == "observation"},
        actions={n: step_rows(n) for n in series if n.split(".")[0] == "action"},
        rewards=step_rows("reward").astype(np.float64),
        terminated=step_rows("terminated").astype(bool),
        truncated=step_rows("truncated").astype(bool),
        info={n.removeprefix("info."): step_rows(n) for n in series if n.startswith("info.")},
        time_ns=time_ns,
        reset=dict(events.get("gym.reset") or {}),
        end=end,
        description=description,
    )
