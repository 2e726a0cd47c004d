"""Signals and the stop deadline of ``fsr record``: stop cleanly, never hang, never lie.

SIGTERM (Slurm, ``docker stop``, ``timeout``), SIGINT (Ctrl-C) and SIGHUP (a closed
terminal) are caught by the interpreter's C-level handler, which writes the signal
number to a pipe (``signal.set_wakeup_fd``).  A relay thread reads that pipe, so a
signal is acted on even when the main thread is blocked in the kernel, and nothing runs
inside a Python signal handler (no lock is ever taken there, no ``KeyboardInterrupt``
is raised anywhere, so no traceback from ``threading._shutdown`` or atexit handlers).

    | # | event                               | what happens                                    |
    |---|-------------------------------------|-------------------------------------------------|
    | 1 | 1st signal                          | request completion ``stopped`` ("stopped by     |
    |   |                                     | SIGTERM"); the loop stops at its next tick, the |
    |   |                                     | finalizer commits what was recorded; one line   |
    | 2 | 2nd signal                          | one line: already stopping, the deadline, and   |
    |   |                                     | that a 3rd signal abandons the recording        |
    | 3 | 3rd signal                          | abandon: one line per file left on disk (the    |
    |   |                                     | ``.incomplete`` to ``fsr recover``), exit       |
    |   |                                     | 128 + the signal number                         |
    | 4 | the deadline passes (the cut + the  | the same report, exit ``DEADLINE_EXIT`` (or the |
    |   | finalizer's timeout + grace), e.g.  | Run's own exit code once it was decided)        |
    |   | teardown stuck in the kernel        |                                                 |

A signal before the host exists is remembered and requested as soon as it does.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

import attrs

from fastsim_contract.values import CompletionKind
from fastsim_embedded.host.core import EmbeddedHost

__all__ = ["DEADLINE_EXIT", "SIGNALS", "StopSignals", "left_on_disk"]

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
DEADLINE_EXIT = 1
#: time allowed after the finalizer's own deadline: Core's revocation plus teardown
GRACE_S = 5.0


def _noop(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: the wakeup pipe carries the signal to the relay."""


def left_on_disk(host: EmbeddedHost) -> list[str]:
    """One line per artifact of this Run as it is on disk now."""
    lines = []
    for tx in host.outputs.transactions():
        if tx.state == "committed":
            lines.append(f"committed {tx.final}")
        elif tx.disposed_to is not None:
            lines.append(f"left on disk: {tx.disposed_to} (a partial recording; fsr recover it)")
        elif os.path.lexists(tx.staging):
            lines.append(
                f"left on disk: {tx.staging} (a partial recording: "
                f"fsr recover {tx.staging} -o NEW.fsr)"
            )
    return lines or ["nothing of this Run is on disk"]


@attrs.define(eq=False)
class StopSignals:
    """Install with ``install()``; hand the host over with ``attach`` (``on_host``)."""

    command: str = "fsr record"  # how its lines start
    #: row 4 (the deadline): only when this process is the command (never inside a test
    #: runner or a library caller, which must not be ended by ``os._exit``)
    watchdog: bool = True
    err: Callable[[str], None] = attrs.field(factory=lambda: _stderr_line)
    exit: Callable[[int], None] = os._exit
    clock: Callable[[], float] = time.monotonic
    host: EmbeddedHost | None = attrs.field(init=False, default=None)
    count: int = attrs.field(init=False, default=0)
    first: str | None = attrs.field(init=False, default=None)
    deadline: float | None = attrs.field(init=False, default=None)
    exit_code: int | None = attrs.field(init=False, default=None)  # decided by the Run
    #: replaces the host rows of the table (a sweep forwards signals to its episodes)
    on_signal: Callable[[int, int], None] | None = None
    _pipe: tuple[int, int] | None = attrs.field(init=False, default=None)
    _previous: dict[int, object] = attrs.field(init=False, factory=dict)
    _old_wakeup: int = attrs.field(init=False, default=-1)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    _closed: bool = attrs.field(init=False, default=False)

    def install(self) -> StopSignals:
        """Route SIGTERM/SIGINT/SIGHUP to the relay thread (main thread only)."""
        read, write = os.pipe()
        os.set_blocking(write, False)
        self._pipe = (read, write)
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, _noop)
        self._old_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._relay, name="fsr-stop-signals", daemon=True)
        self._thread.start()
        return self

    def attach(self, host: EmbeddedHost) -> None:
        """The Run's host exists: a signal that came earlier is requested now."""
        self.host = host
        if self.first is not None:
            self._request(self.first)

    def arm(self, host: EmbeddedHost) -> None:
        """The cut is taken (``on_cut``): bound the rest by the finalizer's deadline."""
        timeouts = [r.request.requested_timeout_s for r in host.terminal.registrations()]
        timeout = min(max(timeouts, default=0.0), host.terminal.max_timeout_s)
        self.deadline = self.clock() + timeout + 2 * host.terminal.revoke_grace_s + GRACE_S

    def _request(self, name: str) -> None:
        host = self.host
        if host is not None and host.request_completion(CompletionKind.STOPPED, f"stopped by {name}"):
            self.err(f"{self.command}: {name}: stopping; what was recorded is being committed (completion: stopped)")

    def _relay(self) -> None:
        assert self._pipe is not None  # noqa: S101 - set by install
        try:
            self._relay_loop(self._pipe[0])
        finally:
            for fd in self._pipe:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _relay_loop(self, read: int) -> None:
        while not self._closed:
            timeout = None if self.deadline is None else max(0.0, self.deadline - self.clock())
            try:
                ready, _, _ = select.select([read], [], [], 0.5 if timeout is None else min(timeout, 0.5))
            except (OSError, ValueError):
                return
            if self._closed:
                return
            if not ready:
                if self.watchdog and self.deadline is not None and self.clock() >= self.deadline:
                    self._abandon("the Run did not end within the finalizer's deadline plus the grace",
                                  self.exit_code if self.exit_code is not None else DEADLINE_EXIT)
                continue
            try:
                data = os.read(read, 64)
            except OSError:
                return
            for signum in data:
                if signum in SIGNALS:
                    self._on_signal(signum)

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        self.count += 1
        if self.on_signal is not None:
            self.on_signal(signum, self.count)
            return
        if self.count == 1:
            self.first = name
            self._request(name)
        elif self.count == 2:
            wait = "" if self.deadline is None else f" (at most {max(0.0, self.deadline - self.clock()):.0f} s more)"
            self.err(f"{self.command}: {name} again: already stopping{wait}; a third signal abandons the recording")
        else:
            self._abandon(f"abandoned on {name}", 128 + signum)

    def _abandon(self, why: str, code: int) -> None:
        lines = left_on_disk(self.host) if self.host is not None else ["nothing of this Run is on disk"]
        if self.host is not None:  # the .incomplete now refuses the name; drop our lock files
            for tx in self.host.outputs.transactions():
                if tx.name_lock is not None:
                    with contextlib.suppress(Exception):
                        tx.name_lock.release()
        self.err(f"{self.command}: {why}; " + "; ".join(lines))
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        self.exit(code)

    def close(self) -> None:
        """Restore the previous handlers; the relay thread closes its pipe and ends."""
        if self._closed or self._pipe is None:
            return
        self._closed = True
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(self._old_wakeup)
        with contextlib.suppress(OSError):
            os.write(self._pipe[1], b"\0")  # wake the relay: it closes the pipe and ends
        for sig, handler in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)  # type: ignore[arg-type]


def _stderr_line(text: str) -> None:
    with contextlib.suppress(Exception):
        os.write(2, (text.replace("\n", " ") + "\n").encode("utf-8", "replace"))
