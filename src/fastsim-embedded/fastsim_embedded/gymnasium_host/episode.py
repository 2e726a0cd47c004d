"""One Gymnasium episode being recorded: opened and committed off the env thread.

Opening an ``Session`` reserves its name and stages its file with an fsync; committing
it validates, fsyncs and renames.  Neither belongs on the env thread, so a
``EpisodeWriter`` opens its ``Session`` in the recording's writer pool and the env thread
only captures:

    | # | env thread calls | while the Session is opening          | once it is open                   |
    |---|------------------|---------------------------------------|-----------------------------------|
    | 1 | ``tick``         | keep (row, camera readings, events)   | publish the kept ticks in order,  |
    |   |                  | (at most ``max_pending``: then wait)  | then this one (``Session.step``)  |
    | 2 | ``finish``       | the writer pool publishes what was kept, then ``Session.close``      |

A tick is one read-only row and readings already taken; nothing is encoded, hashed or
written here.  An Session that could not open (or whose Run stopped) drops its ticks and
reports why in its ``SessionResult``/``failure``.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import CameraReading, ControlCommand, ScenePluginEvent
from fastsim_embedded.backends.gymnasium_env import GymnasiumBackend
from fastsim_embedded.session.plugins import one_line
from fastsim_embedded.session.session import Session, SessionClosed, SessionResult

__all__ = ["EpisodeWriter"]

Tick = tuple[Any, Sequence[CameraReading], tuple[ScenePluginEvent, ...], tuple[ControlCommand, ...], Any]


class EpisodeWriter:
    """One episode of one (sub-)env (module table)."""

    def __init__(
        self, pool: concurrent.futures.Executor, opener: Callable[[], Session], backend: GymnasiumBackend,
        *, number: int, seed: int | None, max_pending: int = 4096,
    ) -> None:
        self.backend = backend
        self.number = number
        self.seed = seed
        self.steps = 0
        self.ret = 0.0
        self.failure: str | None = None
        self.row: Any = None  # observation t's bytes, waiting for its action
        self.readings: Sequence[CameraReading] = ()
        self.cameras: tuple[str, ...] = ()  # the camera aliases this episode declared
        self.bytes = 0  # raw bytes staged so far (``max_episode_bytes``)
        self.snapshot: Any = None  # the render side with observation t (``gymnasium_mujoco.RenderSnapshot``)
        self.events: tuple[ScenePluginEvent, ...] = ()
        self._max_pending = max_pending
        self._pending: list[Tick] = []
        self._future = pool.submit(opener)
        self._ready: Session | None = None  # the open Session once nothing is kept any more

    def _episode(self) -> Session | None:
        """The open Session (waits for it), or ``None`` when it failed to open."""
        try:
            return self._future.result()
        except Exception as exc:
            self.failure = self.failure or f"the episode could not be opened: {one_line(exc)}"
            return None

    def _publish(self, episode: Session, tick: Tick) -> None:
        row, readings, events, commands, snapshot = tick
        self.backend.stage(row, readings, snapshot)
        try:
            episode.step(commands, events=events)
        except SessionClosed as exc:  # the Run stopped (e.g. its recording failed): keep nothing more
            self.failure = self.failure or str(exc)

    def _drain(self) -> None:
        episode = self._episode()
        pending, self._pending = self._pending, []
        if episode is None or self.failure is not None:
            return
        for tick in pending:
            self._publish(episode, tick)

    def tick(
        self, row: Any, readings: Sequence[CameraReading], events: tuple[ScenePluginEvent, ...],
        commands: tuple[ControlCommand, ...] = (), snapshot: Any = None,
    ) -> None:
        """Row 1: publish one tick now, or keep it until the Session is open."""
        episode = self._ready
        if episode is None and self._future.done() and not self._pending:
            episode = self._ready = self._episode()
            if episode is None:
                return
        if episode is not None:
            if self.failure is None:
                self._publish(episode, (row, readings, events, commands, snapshot))
            return
        self._pending.append((row, readings, events, commands, snapshot))
        if self._future.done() or len(self._pending) >= self._max_pending:
            self._drain()

    def finish(
        self, kind: CompletionKind, reason: str, events: tuple[ScenePluginEvent, ...] = (),
    ) -> SessionResult | None:
        """Row 2 (in the writer pool): publish what was kept (then ``events``, when no row is
        left to carry them), then close (commit)."""
        self._drain()
        episode = self._episode()
        if episode is None:
            return None
        if not episode.stopping:
            for event in events:
                episode.host.events.publish_plugin_event(event.name, event.data, event.emitter)
        return episode.close(kind, reason)
