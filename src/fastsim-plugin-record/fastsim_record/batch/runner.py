"""Shared shape of the batch commands: running jobs on an executor, the summary.

The options that choose the executor (``--jobs``/``--ray``) are the CLI's
(``fastsim_record.cli._batch``).

    | # | outcome of a batch                     | exit                                |
    |---|----------------------------------------|-------------------------------------|
    | 1 | every file ok                          | 0                                   |
    | 2 | some file invalid (job code 1)         | 1, each failed file named           |
    | 3 | some file unreadable (job code 2)      | 2, each failed file named           |
    | 4 | a SOURCE missing / no FSR in a folder  | 2 before any job runs               |
    | 5 | ``--ray`` without Ray installed        | 2, the ``pip install`` line         |

``run_all`` shows one progress bar (``fastsim_contract.progress.ProgressBar``) while the jobs run, on a terminal only
(stdout and stderr both ttys, never with ``--json``: ``shows_progress``): items done of
N, failed, running, the elapsed time and an ETA (the mean time per item so far over the
rest).  Every batch command (``fsr info``, ``validate``, ``index``, ``upload``,
``export``, the sweep on Ray) gets it through ``run_all``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from rich.console import Console

from fastsim_contract.progress import ProgressBar
from fastsim_record.batch.executors import MissingRay, ProcessPool, RayTasks, choose
from fastsim_record.batch.jobs import Outcome

__all__ = ["executor_of", "failures", "files", "run_all", "shows_progress"]

T = TypeVar("T")


def files(count: int) -> str:
    """``"1 file"``, ``"3 files"``: the count for a summary line."""
    return f"{count} file" if count == 1 else f"{count} files"


def executor_of(jobs: int | None, ray: str | None) -> ProcessPool | RayTasks:
    """The executor asked for: Ray tasks when ``ray`` is given (``""``: RAY_ADDRESS, else a
    local Ray), else a pool of ``jobs`` processes (default: the number of cores)."""
    return choose(jobs or os.cpu_count() or 1, ray)


def shows_progress(json: bool = False) -> bool:
    """Whether a progress bar may be drawn: stdout and stderr are both terminals and the
    output is not ``--json``."""
    return not json and sys.stdout.isatty() and sys.stderr.isatty()


def run_all(prog: str, executor: ProcessPool | RayTasks, fn: Callable[[T], Outcome],
            items: Sequence[T], *, idempotent: bool = True, progress: bool = False,
            console: Any = None) -> list[Outcome] | int:
    """Every job's outcome, in order; an exit code when the executor cannot start.  With
    ``progress``, one ``ProgressBar`` on ``console`` (default: stderr) while the jobs run.  The
    executor is closed here (a pool aborted when the jobs did not all finish)."""
    done = False
    bar = ProgressBar(prog, len(items), (console or Console(stderr=True)) if progress else None,
                      lambda: executor.workers)
    try:
        outcomes = []
        with bar:
            for outcome in executor.map(fn, items, idempotent=idempotent):
                outcomes.append(outcome)
                bar.advance(bool(outcome.code))
        done = True
        return outcomes
    except MissingRay as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        return 2
    except (ConnectionError, RuntimeError, ValueError) as exc:  # Ray could not start or connect
        sys.stderr.write(f"{prog}: --ray: {exc}".splitlines()[0] + "\n")
        return 2
    finally:
        if isinstance(executor, ProcessPool):
            executor.close(abort=not done)
        else:
            executor.close()


def failures(prog: str, outcomes: Sequence[Outcome]) -> int:
    """Name each failed file on stderr; the exit code of the batch (rules 1-3)."""
    failed = [o for o in outcomes if o.code]
    if failed:
        sys.stderr.write(f"{prog}: {len(failed)} of {files(len(outcomes))} failed:\n")
        for outcome in failed:
            sys.stderr.write(f"  {outcome.url}: {outcome.error}\n")
    return max((o.code for o in outcomes), default=0)
