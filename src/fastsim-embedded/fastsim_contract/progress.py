"""The one progress bar of a batch on a terminal, for the host's sweep and the plugin's
batch commands alike (both CLIs run episodes or jobs in parallel): items done of N,
failed, running, the elapsed time and an ETA (the mean time per item so far over the
rest).  Built with ``console=None`` it draws and measures nothing.  ``TerminalProgress``
is what every progress display shares: a rich ``Progress`` started and stopped around the
work, or ``None`` (no terminal: nothing is drawn, and rich is not even imported).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ProgressBar", "TerminalProgress"]


class TerminalProgress:
    """A rich ``Progress`` (``progress``) shown while the ``with`` block runs, or nothing."""

    progress: Any = None

    def __enter__(self) -> Self:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


class ProgressBar(TerminalProgress):
    """Done of ``total``, failed, running (``workers()`` at most), elapsed, ETA, on ``console``."""

    def __init__(self, label: str, total: int, console: Console | None,
                 workers: Callable[[], int] = lambda: 1) -> None:
        self.total, self.workers, self.done, self.failed = total, workers, 0, 0
        self.started = time.monotonic()
        self.task = None
        if console is not None:
            from rich.markup import escape
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn(f"[bold]{escape(label)}[/]"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed, {task.fields[running]} running"),
                TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"), console=console, transient=True,
            )
            self.task = self.progress.add_task(label, total=total, failed=0, running=0, eta="-")

    def __enter__(self) -> Self:
        self.show(self.done, self.failed, min(self.workers(), self.total - self.done))
        return super().__enter__()

    def advance(self, failed: bool = False) -> None:
        """One item finished (``failed``: with a nonzero code)."""
        self.done += 1
        self.failed += bool(failed)
        self.show(self.done, self.failed, min(self.workers(), self.total - self.done))

    def show(self, done: int, failed: int, running: int) -> None:
        """Draw these counts (a caller that counts for itself calls this, not ``advance``)."""
        if self.progress is None or self.task is None:
            return
        eta = "-"
        if done:
            left = (time.monotonic() - self.started) / done * (self.total - done)
            eta = f"{int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}"
        self.progress.update(self.task, completed=done, failed=failed, running=running, eta=eta)
