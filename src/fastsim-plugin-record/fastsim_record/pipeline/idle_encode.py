"""Camera frame encodes at idle CPU priority: the writer worker's codec call, run on a thread of
its own that lowered its scheduling priority.

The JPEG/PNG codec releases the GIL and costs about 1.2 ms of CPU per 640x480 frame.  On the
worker thread it runs at the simulation's priority and takes cores from whatever the
simulation runs beside its own thread (a software GL renderer such as llvmpipe renders on
every core).  :class:`IdleEncodeLane` runs each encode on one dedicated thread that lowered
its own priority once (Linux ``SCHED_IDLE``, else nice 19), so the codec only gets the cycles
the simulation leaves free.  An unprivileged thread cannot raise its priority again, so the
lane's thread stays lowered for its whole life and does nothing else.

    | # | rule                                                                              |
    |---|-----------------------------------------------------------------------------------|
    | 1 | ``encode`` is synchronous: the caller (the worker) hands one frame over, sleeps   |
    |   | without the GIL and gets the payload (or the encoder's own exception) back.       |
    |   | Records are still encoded once and in global order; the frame waits in its lane,  |
    |   | so the lane's declared policy (lossless by default) still bounds what is held.     |
    | 2 | the lane's thread starts on the first encode and sets its priority then; where     |
    |   | the platform cannot lower a thread's priority, the encode runs on the caller      |
    |   | (``offloaded`` False): the same bytes, no thread                                  |
    | 3 | the thread ends after ``IDLE_EXIT_S`` without work, or at :meth:`close`; a later   |
    |   | encode starts a new one (no thread outlives a Run by more than ``IDLE_EXIT_S``)    |
    | 4 | the encoder object is the caller's: the lane only moves the call, so the payload  |
    |   | is byte for byte what ``encoder.encode(frame)`` returns on the caller's thread     |
    | 5 | starvation: when the lane's thread has not taken a frame ``STEAL_AFTER_S`` after   |
    |   | it was handed over (the machine has no idle cycles), the caller takes it back and  |
    |   | encodes it itself, and so the next ``INLINE_AFTER_STEAL`` frames, then tries the   |
    |   | lane again: a busy machine records at the worker's priority, never slower           |

Priority inversion: the lane's thread holds the GIL only to start the codec call and to build
its ``bytes`` (tens of microseconds per frame); the encode itself runs without the GIL.
``FASTSIM_RECORD_ENCODE_PRIORITY`` (``idle``, ``nice`` or ``inline``) overrides the default
``idle`` for measurements (``inline``: the worker encodes, as before this module).
"""

from __future__ import annotations

import os
import threading
from typing import Final

from fastsim_record.ports.encoders import FrameEncoder, ImageDescriptor, RgbFrame

__all__ = ["IDLE_EXIT_S", "INLINE_AFTER_STEAL", "STEAL_AFTER_S", "IdleEncodeLane", "OffloadedFrameEncoder", "lower_thread_priority"]

#: the lane's thread ends after this long without a frame (rule 3)
IDLE_EXIT_S: Final = 2.0
#: rule 5: a frame the lane's thread has not taken after this long is encoded by the caller
#: (longer than one 640x480 llvmpipe render, during which no core is idle)
STEAL_AFTER_S: Final = 0.010
#: rule 5: the frames the caller then encodes itself before it tries the lane again
INLINE_AFTER_STEAL: Final = 32
_PRIORITY_ENV: Final = "FASTSIM_RECORD_ENCODE_PRIORITY"
_POLICIES: Final = ("idle", "nice", "inline")


def lower_thread_priority(policy: str) -> bool:
    """Lower the calling thread's CPU priority for good (``idle``: ``SCHED_IDLE``, falling back
    to nice 19; ``nice``: nice 19); False when the platform cannot."""
    if policy == "idle":
        setscheduler = getattr(os, "sched_setscheduler", None)
        idle = getattr(os, "SCHED_IDLE", None)
        if setscheduler is not None and idle is not None:
            try:
                setscheduler(0, idle, os.sched_param(0))  # pid 0: this thread (Linux)
                return True
            except OSError:
                pass
    if policy in ("idle", "nice") and hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # Linux: a thread id
            return True
        except OSError:
            return False
    return False


def _policy() -> str:
    chosen = os.environ.get(_PRIORITY_ENV, "idle").strip().lower() or "idle"
    return chosen if chosen in _POLICIES else "idle"


class IdleEncodeLane:
    """One dedicated low-priority thread that runs frame encodes for one caller (module table)."""

    def __init__(self, policy: str | None = None) -> None:
        self.policy = _policy() if policy is None else policy
        self.offloaded = self.policy != "inline"
        self._mutex = threading.Lock()  # one caller at a time
        self._state = threading.Lock()  # guards _thread / _closing
        self._slot = threading.Lock()  # guards _job: the thread or a stealing caller takes it once
        self._job_ready = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._job: tuple[FrameEncoder, RgbFrame] | None = None
        self._result: bytes | BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.lowered: bool | None = None  # whether the thread lowered its priority (None: not started)
        self.steals = 0  # frames taken back from a starved lane (rule 5)
        self._inline_left = 0

    def encode(self, encoder: FrameEncoder, frame: RgbFrame) -> bytes:
        """``encoder.encode(frame)``, run on the lane's thread (rule 1)."""
        if not self.offloaded:
            return encoder.encode(frame)
        with self._mutex:
            if self._inline_left:  # rule 5: after a steal
                self._inline_left -= 1
                return encoder.encode(frame)
            with self._slot:
                self._job = (encoder, frame)
            self._hand_over()
            if not self._done.acquire(timeout=STEAL_AFTER_S):
                with self._slot:
                    stolen, self._job = self._job, None
                if stolen is not None:  # the thread never took it: no result will come
                    self.steals += 1
                    self._inline_left = INLINE_AFTER_STEAL
                    return encoder.encode(frame)
                self._done.acquire()  # the thread took it: its result comes
            result, self._result = self._result, None
        if self.lowered is False:  # rule 2: this platform cannot lower the thread: encode here
            self.offloaded = False
            self.close()
        if isinstance(result, BaseException):
            raise result
        if result is None:  # the thread always sets one before it signals: never reached
            raise RuntimeError("the encode lane signalled without a result")
        return result

    def close(self) -> None:
        """End the lane's thread (it ends by itself after ``IDLE_EXIT_S`` too)."""
        with self._state:
            thread, self._closing = self._thread, True
        if thread is not None:
            self._job_ready.release()

    def _hand_over(self) -> None:
        with self._state:  # the thread's idle exit checks the semaphore under this lock too
            self._closing = False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="record-encode", daemon=True)
                self._thread.start()
            self._job_ready.release()

    def _run(self) -> None:
        lowered = lower_thread_priority(self.policy)
        self.lowered = lowered
        while True:
            if not self._job_ready.acquire(timeout=IDLE_EXIT_S):
                with self._state:
                    if not self._job_ready.acquire(blocking=False):  # no job arrived as the wait ended
                        self._thread = None
                        return
            with self._slot:
                job, self._job = self._job, None  # taken once: a second wake or a steal never repeats it
            if job is None:  # close(), or a spurious wake
                with self._state:
                    if self._closing:
                        self._thread = None
                        return
                continue
            try:
                self._result = job[0].encode(job[1])
            except BaseException as exc:  # handed back to the caller, raised there
                self._result = exc
            self._done.release()


class OffloadedFrameEncoder:
    """A :class:`FrameEncoder` whose ``encode`` runs on an :class:`IdleEncodeLane` (rule 4)."""

    def __init__(self, inner: FrameEncoder, lane: IdleEncodeLane) -> None:
        self.inner = inner
        self.lane = lane

    @property
    def descriptor(self) -> ImageDescriptor:
        """The inner encoder's descriptor."""
        return self.inner.descriptor

    def encode(self, frame: RgbFrame) -> bytes:
        """The inner encoder's payload for ``frame``, computed on the lane's thread."""
        return self.lane.encode(self.inner, frame)
