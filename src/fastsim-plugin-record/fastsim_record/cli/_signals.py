"""Ctrl-C and SIGTERM for the offline ``fsr`` commands: stop at once, leave nothing half-done.

``install()`` is the first thing ``fsr`` does, before any heavy import, so a signal is
never lost to the seconds the imports take, and never prints a traceback.

    | # | moment                                    | a SIGINT / SIGTERM / SIGHUP N                |
    |---|-------------------------------------------|----------------------------------------------|
    | 1 | anywhere (imports, reading, writing)      | raises :class:`Interrupted` in the main      |
    |   |                                           | thread; each command's ``finally``/``except``|
    |   |                                           | removes its staging; ``fsr`` prints one line |
    |   |                                           | and exits 128 + N (130, 143, 129)            |
    | 2 | inside ``deferred()`` (a publish: rename  | held; raised when the block ends, so a       |
    |   | of the staging over OUT)                  | publish is never cut in half                 |
    | 3 | ``fsr record``/``replay``                 | the host's own ``StopSignals`` take over     |
    |   |                                           | when they are installed (a stopped commit)   |
    | 4 | a native SDK replaced the handler         | ``reinstall()`` (called between records)     |
    |   | (the Rerun and Foxglove SDKs catch SIGINT)| puts it back                                 |
    | 5 | after ``settle()`` (OUT is published: the | ignored, and one held by the publish is      |
    |   | outcome is decided)                       | dropped: exit 128 + N always means that      |
    |   |                                           | nothing was published                        |
    | 6 | while Python runs a callback that cannot  | remembered: ``check()``, called before the   |
    |   | raise (a weakref callback of the import   | command runs and before a host takes over,   |
    |   | machinery, a ``__del__``): Python drops   | raises it there, so it is never lost; and    |
    |   | the exception and reports it as "ignored" | ``install()``'s ``sys.unraisablehook`` keeps |
    |   |                                           | that report off stderr (one line, never a    |
    |   |                                           | traceback); other reports pass on            |

Installed only when ``fsr`` owns the process (the console script), never inside a
library caller or a test runner.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "check", "deferred", "install", "installed", "reinstall", "settle"]

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class _State:
    installed = False
    depth = 0  # nesting of ``deferred()`` blocks
    pending: int | None = None  # the first signal held by them
    checked = 0.0  # when ``reinstall`` last ran
    settled = False  # the command's outcome is decided (row 5)
    raised: int | None = None  # the signal last raised as Interrupted and not yet seen handled (row 6)


_state = _State()


class Interrupted(KeyboardInterrupt):
    """A stop signal reached an offline command (``signum``; exit ``128 + signum``)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(self.name)

    def handled(self) -> Interrupted:
        """Say that this interruption reached a handler (it was not dropped: row 6)."""
        if _state.raised == self.signum:
            _state.raised = None
        return self

    @property
    def name(self) -> str:
        """``SIGINT``, ``SIGTERM`` ..."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """128 + the signal number."""
        return 128 + self.signum


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.settled:
        return
    if _state.depth > 0:
        if _state.pending is None:
            _state.pending = signum
        return
    _state.raised = signum
    raise Interrupted(signum)


def check() -> None:
    """Raise the stop signal that Python dropped in a callback that could not raise (row 6)."""
    signum = _state.raised
    if signum is not None and not _state.settled:
        raise Interrupted(signum)


_previous_hook: Callable[[Any], object] = sys.unraisablehook


def _quiet_dropped(unraisable: Any) -> None:
    """Row 6: a stop signal Python dropped in a callback is remembered (``check`` raises it),
    so its "Exception ignored" report is not printed; any other report goes to the hook
    that was installed before."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    _previous_hook(unraisable)


def install() -> None:
    """Route the stop signals to :class:`Interrupted` (main thread only), and keep a dropped
    one's report quiet (row 6)."""
    global _previous_hook
    for sig in SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _handler)
    if sys.unraisablehook is not _quiet_dropped:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _quiet_dropped
    _state.installed = True
    _state.settled = False


def installed() -> bool:
    """Whether ``install()`` ran in this process."""
    return _state.installed


def reinstall(every_s: float = 0.2) -> None:
    """Put the handlers back (a native SDK may have replaced them); at most every ``every_s``."""
    if not _state.installed:
        return
    now = time.monotonic()
    if now - _state.checked < every_s:
        return
    _state.checked = now
    install()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals for the block (row 2); raise the first one when it ends."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
    pending = _state.pending
    if pending is not None and _state.depth == 0:
        _state.pending = None
        raise Interrupted(pending)


def settle() -> None:
    """The command's output is published, so its outcome is decided (row 5): a signal held
    by the publish is dropped and later ones are ignored, so the command ends with its own
    exit code and never says "interrupted" about a file it has just committed."""
    _state.pending = None
    _state.settled = True
