"""``render()`` of ``FastSimRun-v0`` (``render_mode="rgb_array"``): the latest frame of one camera.

The frame is the camera's reading in the latest tick's result, read only when ``render()``
asks (a tick without one: the backend's frame now, else the latest seen); nothing is done
per step but keeping the tick's result.  At the episode's end the frame is kept, because
the episode's scene closes with its commit and Gymnasium wrappers (``RecordVideo``) render
after the terminal step.  ``render()`` returns a copy, never the array Record records.
"""

from __future__ import annotations

import numpy as np

from fastsim_embedded.gym.spaces import ObservationReader
from fastsim_embedded.session.loop import TickResult
from fastsim_embedded.session.session import Session

__all__ = ["RenderView"]


class RenderView:
    """``render()``'s frame: the camera's reading of the latest tick, read when asked (nothing per step
    but keeping the tick's result); at the episode's end it is kept, since its scene then closes."""

    def __init__(self, channel: str, shape: tuple[int, ...]) -> None:
        self.channel, self.shape = channel, shape
        self.result: TickResult | None = None
        self._reader: ObservationReader | None = None
        self._kept: np.ndarray | None = None

    def start(self, episode: Session, result: TickResult) -> None:
        self._reader = ObservationReader(episode.backend, (), (self.channel,))
        self.result, self._kept = result, None

    def keep(self) -> None:
        self._kept = self.frame()

    def frame(self) -> np.ndarray:
        if self._kept is not None:
            return self._kept.copy()
        if self._reader is None or self.result is None:
            raise RuntimeError("FastSimRun-v0: render() before reset(); call reset() first")
        image = self._reader.cameras(self.result.cameras, {self.channel: self.shape})[self.channel]
        return np.array(image, dtype=np.uint8, copy=True)  # never the published (recorded) array
