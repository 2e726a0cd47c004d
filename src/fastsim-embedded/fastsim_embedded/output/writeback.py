"""Early writeback of a staging file: disk work moved from ``seal`` into the Run.

Without it nothing writes a long recording to disk before ``seal``'s ``fsync`` (the
kernel starts background writeback only past ``vm.dirty_background_*``, gigabytes on a
machine with much memory), so that one call writes the whole file, inside finalization:
about 0.22 s for 180 MB on this kind of machine.  With it, every ``WRITEBACK_STEP``
bytes written the write lease wakes one background thread, which ``fdatasync``s the file:

    | # | when                                   | what happens                                  |
    |---|----------------------------------------|-----------------------------------------------|
    | 1 | a write brings the file past the next  | the thread is woken (started on first use);   |
    |   | step                                   | the write returns at once, nothing waits      |
    | 2 | the thread wakes                       | ``fdatasync`` of its own ``dup`` of the fd    |
    |   |                                        | (GIL released; a wake during it: one more)    |
    | 3 | ``seal``                               | ``stop(wait=True)``: a sync under way ends    |
    |   |                                        | first; an error it met is raised by ``seal``  |
    |   |                                        | (the kernel reports a writeback error to one  |
    |   |                                        | ``fsync`` of the shared file description      |
    |   |                                        | only), then ``seal``'s own fsync, as before   |
    | 4 | abort, revocation                      | ``stop(wait=False)``: never waits (a stalled  |
    |   |                                        | disk must not hold up cleanup); the thread    |
    |   |                                        | closes its fd when its sync returns           |

When no thread or fd can be had (a thread limit, ``EMFILE``), the file simply has no
early writeback: the write that found out still succeeds. Only the timing of disk work
changes: what is durable when, and under which name, is exactly as before (``seal``
still fsyncs, ``commit`` still renames and fsyncs the directory; a process killed
mid-Run leaves the same ``.incomplete`` file, with more of it on disk). Pages stay in
the page cache (no ``POSIX_FADV_DONTNEED``, which would drop the clean ones a readback
then reads from disk).
"""

from __future__ import annotations

import os
import threading

__all__ = ["WRITEBACK_STEP", "EarlyWriteback"]

#: bytes written between two early writebacks (0: none)
WRITEBACK_STEP = 16 << 20

_sync = getattr(os, "fdatasync", os.fsync)  # fdatasync is not on every platform


class EarlyWriteback:
    """The early writeback of one staging file (module table); the write lease calls
    :meth:`wrote` after each write (one comparison), ``seal`` and disposal :meth:`stop`."""

    def __init__(self, fd: int, step: int | None = None) -> None:
        self._fd = fd  # the transaction's: dup'ed when the thread starts, never closed here
        step = WRITEBACK_STEP if step is None else step
        self._step = step
        self.next_at = step if step > 0 else -1  # the file size that wakes the thread next
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None
        self.syncs = 0  # writebacks finished (tests and reports)

    def wrote(self, size: int) -> None:
        """The file is now ``size`` bytes long: wake the thread if it passed the next step."""
        if 0 <= self.next_at <= size and not self._stopped:
            self.next_at = size + self._step
            if self._thread is None and not self._start():
                return
            self._wake.set()

    def _start(self) -> bool:
        """Start the thread on its own ``dup`` of the fd; when no fd or thread can be had,
        no early writeback at all (``seal``'s fsync writes everything, as without it)."""
        try:
            fd = os.dup(self._fd)
        except OSError:
            self.next_at = -1
            return False
        thread = threading.Thread(target=self._run, args=(fd,), name="fastsim-output-writeback", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no new thread (thread limit; Python 3.12+ at interpreter exit)
            os.close(fd)
            self.next_at = -1
            return False
        self._thread = thread
        return True

    def _run(self, fd: int) -> None:
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopped:
                    return
                try:
                    _sync(fd)
                except OSError as exc:  # kept for ``seal``, which then fails as its fsync would
                    self._error = exc
                    return
                self.syncs += 1
        finally:
            os.close(fd)

    def stop(self, *, wait: bool) -> OSError | None:
        """No more writebacks; with ``wait``, the one under way ends first and the error
        any met is returned (``None`` when every one succeeded)."""
        self._stopped = True
        thread = self._thread
        if thread is not None:
            self._wake.set()
            if wait:
                thread.join()
        return self._error if wait else None
