"""One Gymnasium episode being recorded: opened, published and committed off the env thread.

Opening a ``Session`` reserves its name and stages its file with an fsync; committing it
validates, fsyncs and renames; publishing a tick runs the host's bus and Record's pumps.
None of it belongs on the env thread, and the number of ``Session``\\ s open at once must
not grow with the number of sub-envs, so an ``EpisodeWriter`` does not open its
``Session`` itself: the recording's ``WriterPool`` starts it when an open slot is free, and
the env thread only captures (``gymnasium_host.capture``: checked copies appended to a chunk):

    | # | who                   | what                                                             |
    |---|-----------------------|------------------------------------------------------------------|
    | 1 | env thread: ``hand``  | a full chunk (or the episode's last) joins the queue (a frame's  |
    |   | (``release``)         | is held until the next frame is rendered: ``release``); once the |
    |   |                       | Session is open a publisher task is scheduled for it.  Queued    |
    |   |                       | rows reach ``max_pending`` before a slot: a spill task is        |
    |   |                       | scheduled (``spills`` counts such episodes).  Either way the env |
    |   |                       | thread then waits for that task (``waits``, counted): RAM stays  |
    |   |                       | bounded                                                          |
    | 2 | opening pool          | open the Session, then publish what was spilled and queued       |
    | 3 | opening pool: publish | one chunk at a time, in order: packed in bulk                    |
    |   |                       | (``RowLayout.pack``), then one ``Session.step`` per row; the     |
    |   |                       | spilled chunks first, read back one at a time                    |
    |   | ... spill (no Session | each queued chunk to the episode's spill file, then freed        |
    |   | open yet)             | (``gymnasium_host.spill``)                                       |
    | 4 | commit pool:          | open (if never started), publish what is left, then              |
    |   | ``finish``            | ``Session.close``; the slot goes to the next episode waiting.   |
    |   |                       | A ``failed`` end is the env's (it raised): what was recorded is  |
    |   |                       | kept (``keep_recorded``, contract FR2), committed as ``failed``  |

At most ``writers`` Sessions stream while their episode runs (the slots), and at most
``writers`` more open inside the commit pool's threads: an episode that ends before it got
a slot (short episodes, many sub-envs) is written whole at its commit.  An episode that
outlives ``max_pending`` queued rows without a slot spills them to disk instead of opening
beyond that bound, so open Sessions never exceed ``2 * writers`` and each waiting episode
keeps at most ``max_pending`` rows (and its current chunk, and one held for the next render) in RAM.
Nothing is encoded, hashed or written on the env thread.  A Session that could not open
(or whose Run stopped) drops its rows and reports why in its ``SessionResult``/``failure``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ControlCommand, ScenePluginEvent
from fastsim_embedded.backends.gymnasium_env import ACTION_COMMAND, GymnasiumBackend
from fastsim_embedded.gymnasium_host.capture import Chunk, RowLayout
from fastsim_embedded.gymnasium_host.spill import SpillFile, SpillFolder
from fastsim_embedded.session.plugins import one_line
from fastsim_embedded.session.session import Session, SessionClosed, SessionResult

__all__ = ["MAX_PENDING_ROWS", "EpisodeWriter", "WriterPool", "run_here"]

#: Numeric rows an episode keeps queued (in RAM) while it has no Session: beyond them they
#: spill to disk (row 1).  An episode with cameras keeps ``media_queue_items`` rows instead.
MAX_PENDING_ROWS = 4096

class WriterPool:
    """The opening threads and the ``writers`` open slots shared by every episode of a recording."""

    def __init__(self, writers: int, directory: Path) -> None:
        self.executor = concurrent.futures.ThreadPoolExecutor(writers, "fsr-gym-open")
        self._free = writers
        self._waiting: collections.deque[EpisodeWriter] = collections.deque()
        self._lock = threading.Lock()
        self.spill = SpillFolder(directory)  # where episodes without a slot keep their rows
        self.spills = 0  # episodes that spilled rows (their kept rows were full before a slot)
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
        """Take ``writer`` off the queue (its commit opens it); ``False`` when it had left it."""
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
        self.spill.remove()


class EpisodeWriter:
    """One episode of one (sub-)env (module table)."""

    def __init__(
        self, pool: WriterPool, opener: Callable[[], Session], layout: RowLayout,
        *, number: int, seed: int | None, max_pending: int | None = None,
    ) -> None:
        self.layout = layout
        self.number = number
        self.seed = seed
        self._steps = 0  # steps handed over (``steps``: with the current chunk's)
        self._ret = 0.0  # their return, summed in step order
        self.failure: str | None = None
        self.chunk = Chunk(0)  # the env thread's rows not handed over yet
        self._held: Chunk | None = None  # handed over, not queued yet (``hand(hold=True)``)
        self.cameras: tuple[str, ...] = ()  # the camera aliases this episode declared
        self.bytes = 0  # raw bytes staged so far (``max_episode_bytes``)
        self.waits = 0  # times the env thread waited for the publisher (queued rows at ``max_pending``)
        self._pool = pool
        self._opener = opener
        self._max_pending = MAX_PENDING_ROWS if max_pending is None else max_pending
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._queue: collections.deque[Chunk] = collections.deque()
        self._queued = 0  # rows handed over, not published yet
        self._scheduled = False  # a publisher task owns the queue
        self._future: concurrent.futures.Future[Session] | None = None
        self._session: Session | None = None
        self._opened = False  # the open was tried: ``_session`` or ``failure``
        self._slot = False  # this episode holds one of the pool's open slots
        self._spill = SpillFile(pool.spill)  # rows kept on disk while no Session is open
        self._spilled = False  # counted in ``pool.spills``

    # -- env thread -----------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Transitions recorded so far."""
        return self._steps + len(self.chunk.steps)

    @property
    def ret(self) -> float:
        """Their return (rewards summed in step order)."""
        ret = self._ret
        for step in self.chunk.steps:
            ret += step[1]
        return ret

    def hand(self, *, hold: bool = False) -> None:
        """Row 1: the current chunk goes to the queue (published off this thread), after the
        one held; ``hold``: it is held instead, until ``release`` (or the next ``hand``)."""
        chunk = self.chunk
        self._ret = self.ret
        self._steps += len(chunk.steps)
        self.chunk = Chunk(chunk.first + len(chunk))
        self.release()
        if hold:
            self._held = chunk
        else:
            self._enqueue(chunk)

    def release(self) -> None:
        """Row 1: the held chunk, if any, goes to the queue.  A rendered frame's chunk is held
        until the wrapper renders the next frame (``RecordEpisodes.step``), so the publisher it
        wakes does not take the GIL in the middle of the capture (its frame copy releases it)."""
        held = self._held
        if held is not None:
            self._held = None
            self._enqueue(held)

    def _enqueue(self, chunk: Chunk) -> None:
        with self._lock:
            self._queue.append(chunk)
            self._queued += len(chunk)
            full = self._queued >= self._max_pending
            spill = full and not self._opened and not self._scheduled
            publish = (self._opened or spill) and not self._scheduled
            if publish:
                self._scheduled = True
        if spill and not self._spilled:  # once per episode (not again after a failed spill emptied its file)
            self._spilled = True
            self._pool.spills += 1
        if publish:
            self._pool.executor.submit(self._publish_queue)
        if full:  # RAM: wait for the publisher or the spill task (both free queued rows)
            with self._lock:
                while self._queued >= self._max_pending and not (self._opened and self._session is None):
                    self.waits += 1
                    self._room.wait()

    # -- opening pool ---------------------------------------------------------------------
    def wait_opened(self) -> None:
        """Return once the open that ``start`` began has ended (at once when not started:
        an episode waiting for a slot).  A failed open is kept in ``failure``, not raised."""
        future = self._future
        if future is not None:
            concurrent.futures.wait((future,))

    def start(self, *, slot: bool) -> None:
        """Open the Session in the opening pool (``slot``: it holds one of the pool's slots)."""
        self._slot = slot
        self._future = self._pool.executor.submit(self._open_and_publish)

    def _open(self) -> Session | None:
        try:
            session = self._opener()
        except Exception as exc:
            self.failure = self.failure or f"the episode could not be opened: {one_line(exc)}"
            session = None
        else:
            self._pool.opened(+1)
        with self._lock:
            self._session, self._opened = session, True
        return session

    def _open_and_publish(self) -> Session:
        session = self._open()
        with self._lock:
            publish = (bool(self._queue) or bool(self._spill.chunks)) and not self._scheduled
            if publish:
                self._scheduled = True
            else:
                self._room.notify_all()
        if publish:
            self._publish_queue()
        if session is None:
            raise RuntimeError(self.failure or "the episode could not be opened")
        return session

    def _publish_queue(self) -> None:
        """Publish (rows 2-3), or spill while no Session is open, every queued chunk in
        order, the spilled ones first (the one task that owns the queue)."""
        while True:
            with self._lock:
                opened = self._opened
                replay = opened and self._spill.chunks > 0
                if not replay and not self._queue:
                    self._scheduled = False
                    self._room.notify_all()
                    return
                chunk = None if replay else self._queue.popleft()
            try:
                if replay:
                    for spilled in self._spill.replay():
                        self._publish_chunk(spilled)
                elif self.failure is not None:
                    pass  # rows are dropped once one could not be kept (``finish`` says why)
                elif not opened:
                    self._spill.append(chunk)
                else:
                    self._publish_chunk(chunk)  # type: ignore[arg-type]
            except Exception as exc:  # packing, the host or the disk broke: keep nothing more, say why
                self.failure = self.failure or f"{'publishing' if opened else 'spilling'} failed: {one_line(exc)}"
                self._spill.discard()
            finally:
                with self._lock:
                    self._queued -= 0 if chunk is None else len(chunk)
                    self._room.notify_all()

    def _publish_chunk(self, chunk: Chunk) -> None:
        if self._session is not None and self.failure is None:
            self._publish(self._session, chunk)

    def _publish(self, episode: Session, chunk: Chunk) -> None:
        rows = self.layout.pack(chunk)
        stage, step = cast(GymnasiumBackend, episode.backend).stage, episode.step  # built by the opener
        readings, snapshots, events = chunk.readings, chunk.snapshots, chunk.events
        for i in range(len(rows)):
            stage(rows[i], readings[i] if readings else (), snapshots[i] if snapshots else None)
            target = chunk.targets[i] if i < len(chunk.targets) else None
            commands = () if target is None else (
                ControlCommand(f"action-{chunk.first + i + 1}", ACTION_COMMAND, "robot", {"targets": target.tolist()}),)
            try:
                step(commands, events=events.get(i, ()))
            except SessionClosed as exc:  # the Run stopped (e.g. its recording failed): keep nothing more
                self.failure = self.failure or str(exc)
                return

    # -- commit pool ----------------------------------------------------------------------
    def _publish_rest(self) -> Session | None:
        """The open Session (opened here when the episode never started) with every queued row published."""
        if self._future is None and self._pool.withdraw(self):
            self._future = concurrent.futures.Future()
            self._future.set_result(self._open())  # type: ignore[arg-type]
        future = self._future
        if future is None:
            self.failure = self.failure or "the episode could not be opened: it left the writer queue without starting"
            return None
        future.exception()  # wait until the open was tried (a failure is in ``failure``)
        with self._lock:
            while self._scheduled:
                self._room.wait()
            self._scheduled = True
        self._publish_queue()
        return self._session

    def finish(
        self, kind: CompletionKind, reason: str, events: tuple[ScenePluginEvent, ...] = (),
    ) -> SessionResult | None:
        """Row 4 (in the commit pool): publish what is queued (then ``events``, when no row
        is left to carry them), then close (commit); the slot goes on."""
        try:
            episode = self._publish_rest()
            if episode is None:
                self._spill.discard()
                return None
            if self.failure is not None:  # rows were dropped: never committed as a whole episode
                kind, reason = CompletionKind.STOPPED, f"failed: {self.failure}"
            try:
                if not episode.stopping:
                    for event in events:
                        episode.host.events.publish_plugin_event(event.name, event.data, event.emitter)
                # the recorder's ``failed`` is always its env's (the data source's): keep what was recorded (FR2)
                return episode.close(kind, reason, keep_recorded=kind is CompletionKind.FAILED)
            finally:
                self._pool.opened(-1)
        finally:
            self._session = self._future = None  # the Session's objects are freed here, not on the env thread
            if self._slot:
                self._pool.release()


def run_here(call: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
    """``call(*args)`` on this thread, as a done future (where no pool thread can start)."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    try:
        future.set_result(call(*args))
    except Exception as exc:  # reported where the future is read, as a pool's failure
        future.set_exception(exc)
    return future
