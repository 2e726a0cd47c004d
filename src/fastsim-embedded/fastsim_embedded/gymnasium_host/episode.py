"""One Gymnasium episode being recorded: opened and committed off the env thread.

Opening a ``Session`` reserves its name and stages its file with an fsync; committing it
validates, fsyncs and renames.  Neither belongs on the env thread, and the number of
``Session``\\ s open at once must not grow with the number of sub-envs, so an
``EpisodeWriter`` does not open its ``Session`` itself: the recording's ``WriterPool``
starts it when an open slot is free, and the env thread only captures:

    | # | env thread calls | not started / while the Session opens  | once it is open                   |
    |---|------------------|----------------------------------------|-----------------------------------|
    | 1 | ``tick``         | keep (row, camera readings, events);   | publish the kept ticks in order,  |
    |   |                  | ``max_pending`` kept: start now, even  | then this one (``Session.step``)  |
    |   |                  | without a slot (counted), and wait     |                                   |
    | 2 | ``finish``       | in the commit pool: open (if never started), publish what was kept,  |
    |   |                  | then ``Session.close``; the slot goes to the next episode waiting    |

At most ``writers`` Sessions stream while their episode runs (the slots), and at most
``writers`` more open inside the commit pool's threads: an episode that ends before it got
a slot (short episodes, many sub-envs) is written whole at its commit.  Only an episode
with ``max_pending`` kept ticks and no slot opens beyond that bound (``overflows``), so
RAM stays bounded.  A tick is one read-only row and readings already taken; nothing is
encoded, hashed or written here.  A Session that could not open (or whose Run stopped)
drops its ticks and reports why in its ``SessionResult``/``failure``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import CameraReading, ControlCommand, ScenePluginEvent
from fastsim_embedded.backends.gymnasium_env import GymnasiumBackend
from fastsim_embedded.session.plugins import one_line
from fastsim_embedded.session.session import Session, SessionClosed, SessionResult

__all__ = ["EpisodeWriter", "WriterPool"]

Tick = tuple[Any, Sequence[CameraReading], tuple[ScenePluginEvent, ...], tuple[ControlCommand, ...], Any]


class WriterPool:
    """The opening threads and the ``writers`` open slots shared by every episode of a recording."""

    def __init__(self, writers: int) -> None:
        self.executor = concurrent.futures.ThreadPoolExecutor(writers, "fsr-gym-open")
        self._free = writers
        self._waiting: collections.deque[EpisodeWriter] = collections.deque()
        self._lock = threading.Lock()
        self.overflows = 0  # episodes opened without a slot (their kept ticks were full)
        self.open_now = 0  # Sessions open at this moment
        self.open_peak = 0

    def admit(self, writer: EpisodeWriter) -> None:
        """Queue ``writer``; it starts when a slot is free (at once when one is)."""
        with self._lock:
            self._waiting.append(writer)
        self._start_waiting()

    def _start_waiting(self) -> None:
        with self._lock:  # started under the lock: once off the queue, an episode has its future
            while self._free and self._waiting:
                self._free -= 1
                self._waiting.popleft().start(slot=True)

    def withdraw(self, writer: EpisodeWriter) -> bool:
        """Take ``writer`` off the queue (it starts without a slot); ``False`` when it had left it."""
        with self._lock:
            try:
                self._waiting.remove(writer)
            except ValueError:
                return False
            return True

    def release(self) -> None:
        """A slot's Session closed: the next episode waiting starts."""
        with self._lock:
            self._free += 1
        self._start_waiting()

    def opened(self, delta: int) -> None:
        with self._lock:
            self.open_now += delta
            self.open_peak = max(self.open_peak, self.open_now)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)


class EpisodeWriter:
    """One episode of one (sub-)env (module table)."""

    def __init__(
        self, pool: WriterPool, opener: Callable[[], Session], backend: GymnasiumBackend,
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
        self._pool = pool
        self._opener = opener
        self._max_pending = max_pending
        self._pending: list[Tick] = []
        self._future: concurrent.futures.Future[Session] | None = None
        self._slot = False  # this episode holds one of the pool's open slots
        self._ready: Session | None = None  # the open Session once nothing is kept any more

    def _open(self) -> Session:
        session = self._opener()
        self._pool.opened(+1)
        return session

    def start(self, *, slot: bool) -> None:
        """Open the Session in the opening pool (``slot``: it holds one of the pool's slots)."""
        self._slot = slot
        self._future = self._pool.executor.submit(self._open)

    def _episode(self) -> Session | None:
        """The open Session (waits for it; opens it here when it never started), ``None`` when it failed."""
        try:
            if self._future is None and self._pool.withdraw(self):
                return self._ready_inline()
            future = self._future  # off the queue means started (``WriterPool._start_waiting``)
            if future is None:
                raise RuntimeError("episode left the writer queue without starting")
            return future.result()
        except Exception as exc:
            self.failure = self.failure or f"the episode could not be opened: {one_line(exc)}"
            return None

    def _ready_inline(self) -> Session:
        future: concurrent.futures.Future[Session] = concurrent.futures.Future()
        try:
            future.set_result(self._open())
        except Exception as exc:
            future.set_exception(exc)
        self._future = future
        return future.result()

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
        if episode is None and self._future is not None and self._future.done() and not self._pending:
            episode = self._ready = self._episode()
            if episode is None:
                return
        if episode is not None:
            if self.failure is None:
                self._publish(episode, (row, readings, events, commands, snapshot))
            return
        self._pending.append((row, readings, events, commands, snapshot))
        if len(self._pending) >= self._max_pending and self._future is None and self._pool.withdraw(self):
            self._pool.overflows += 1  # RAM first: this episode streams without a slot
            self.start(slot=False)
        if self._future is not None and (self._future.done() or len(self._pending) >= self._max_pending):
            self._drain()

    def finish(
        self, kind: CompletionKind, reason: str, events: tuple[ScenePluginEvent, ...] = (),
    ) -> SessionResult | None:
        """Row 2 (in the commit pool): publish what was kept (then ``events``, when no row is
        left to carry them), then close (commit); the slot goes on."""
        try:
            self._drain()
            episode = self._episode()
            if episode is None:
                return None
            try:
                if not episode.stopping:
                    for event in events:
                        episode.host.events.publish_plugin_event(event.name, event.data, event.emitter)
                return episode.close(kind, reason)
            finally:
                self._pool.opened(-1)
        finally:
            if self._slot:
                self._pool.release()
