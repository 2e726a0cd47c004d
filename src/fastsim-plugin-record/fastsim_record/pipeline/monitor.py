"""The failure monitor: a latched pump, lane or worker error -> one Core completion request.

Nothing runs while nothing fails: the monitor holds no thread until the first latch, and
only then (if armed) starts one short-lived thread that asks Core for a failed
completion, so the publishing thread never calls back into Core.

    | # | state when an error latches       | effect                                     |
    |---|-----------------------------------|--------------------------------------------|
    | 1 | first error, armed                | keep it; one thread requests FAILED once   |
    | 2 | first error, not armed            | keep it; no request (prepare or finalize   |
    |   | (before start, after the cut)     | reports it)                                |
    | 3 | any later error                   | ignored: the first error is the reason     |
    | 4 | Core answers False (another       | the finalizer still reports the failure    |
    |   | completion already won)           | (required-finalizer precedence)            |
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fastsim_record.errors import RecordError

__all__ = ["Monitor"]


class Monitor:
    """Latches the first fatal recording error and reports it to Core once."""

    def __init__(self, request_failed_completion: Callable[[str], bool]) -> None:
        self._request = request_failed_completion
        self._lock = threading.Lock()
        self._error: RecordError | None = None
        self._armed = False
        self._requested = False
        self._won: bool | None = None
        self._thread: threading.Thread | None = None

    @property
    def error(self) -> RecordError | None:
        """The first latched error, if any."""
        return self._error

    @property
    def requested(self) -> bool:
        """Whether a completion request was issued."""
        return self._requested

    @property
    def won(self) -> bool | None:
        """Core's answer to the request (None while pending or never asked)."""
        return self._won

    def arm(self) -> None:
        """Enable completion requests (at start); an earlier latch is reported now."""
        with self._lock:
            self._armed = True
            pending = self._error is not None and not self._requested
        if pending:
            self._spawn()

    def disarm(self) -> None:
        """Disable completion requests (at the cut, stop or close)."""
        with self._lock:
            self._armed = False

    def latch(self, error: RecordError) -> None:
        """Keep ``error`` if it is the first (rules 1-3); callable from any thread."""
        with self._lock:
            if self._error is not None:
                return
            self._error = error
            spawn = self._armed and not self._requested
        if spawn:
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            if self._requested:
                return
            self._requested = True
        thread = threading.Thread(target=self._report, name="record-monitor", daemon=True)
        self._thread = thread
        thread.start()

    def _report(self) -> None:
        error = self._error
        reason = str(error) if error is not None else "recording failed"
        self._won = self._request(f"record: {reason}")

    def join(self, timeout: float | None = None) -> None:
        """Wait for an issued request to be delivered (tests, finalizer)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
