"""Child processes end with the process that started them: never an orphan that runs on.

A host's episode processes (``fsr record --episodes``) and a plugin's pool workers
(``--jobs``) call :func:`end_with_parent` first thing; the parent starts them with
:func:`child_environment`, which names it.

    | # | where       | how the child learns that its parent is gone                        |
    |---|-------------|---------------------------------------------------------------------|
    | 1 | Linux       | ``prctl(PR_SET_PDEATHSIG, sig)``: the kernel sends ``sig`` when the  |
    |   |             | parent exits, however it exits (``kill -9`` too)                     |
    | 2 | everywhere  | a daemon thread checks every ``poll_s`` that ``getppid()`` is       |
    |   |             | unchanged and the watched process is alive, and sends ``sig`` to    |
    |   |             | this process when not (the parent died before the ``prctl``, a      |
    |   |             | platform without it, or a grandparent to watch)                     |

``sig`` is ``SIGTERM``: an episode commits what it recorded (``completion: stopped``)
and ends; a pool worker removes its staging and ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import signal
import sys
import threading
import time
from typing import Any

__all__ = ["PARENT_ENV", "child_environment", "child_report", "end_with_parent", "pid_alive"]

#: the environment variable that names the parent's PID
PARENT_ENV = "FASTSIM_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def child_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child that must end with this process."""
    return {**(os.environ if base is None else base), PARENT_ENV: str(os.getpid())}


def child_report(code: int, stdout: str, stderr: str) -> tuple[dict[str, Any] | None, str]:
    """What an episode child reported: the last line of ``stdout`` that is a JSON object
    (``None`` when there is none), and the reason to give when it is missing: the last
    line of ``stderr``, else the exit code."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data, ""
    text = stderr.strip().splitlines()
    return None, text[-1] if text else f"the episode process exited with code {code}"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def end_with_parent(sig: int = signal.SIGTERM, watch: int | None = None, poll_s: float = 0.5) -> None:
    """Receive ``sig`` when the parent dies (rows 1-2).  ``watch``: another process whose
    death counts too (default: the PID in ``FASTSIM_PARENT_PID``, when set)."""
    parent = os.getppid()
    if watch is None:
        with contextlib.suppress(ValueError):
            watch = int(os.environ.get(PARENT_ENV, "") or 0) or None
    _pdeathsig(sig)

    def gone() -> bool:
        return os.getppid() != parent or (watch is not None and not pid_alive(watch))

    if watch is not None and not pid_alive(watch):  # gone before this process got here
        os.kill(os.getpid(), sig)
        return

    def poll() -> None:
        while not gone():
            time.sleep(poll_s)
        os.kill(os.getpid(), sig)

    threading.Thread(target=poll, name="end-with-parent", daemon=True).start()
