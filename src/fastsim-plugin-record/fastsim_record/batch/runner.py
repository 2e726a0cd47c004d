"""Shared shape of the batch commands: ``--jobs``/``--ray``, running jobs, the summary.

    | # | outcome of a batch                     | exit                                |
    |---|----------------------------------------|-------------------------------------|
    | 1 | every file ok                          | 0                                   |
    | 2 | some file invalid (job code 1)         | 1, each failed file named           |
    | 3 | some file unreadable (job code 2)      | 2, each failed file named           |
    | 4 | a SOURCE missing / no FSR in a folder  | 2 before any job runs               |
    | 5 | ``--ray`` without Ray installed        | 2, the ``pip install`` line         |
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from fastsim_record.batch.executors import MissingRay, ProcessPool, RayTasks, choose
from fastsim_record.batch.jobs import Outcome

__all__ = ["add_executor_arguments", "executor_of", "failures", "files", "run_all"]

T = TypeVar("T")


def files(count: int) -> str:
    """``"1 file"``, ``"3 files"``: the count for a summary line."""
    return f"{count} file" if count == 1 else f"{count} files"


def _jobs(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 through 1024 (got {text!r})") from None
    if not 1 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 through 1024 (got {text})")
    return value


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs J`` (a local process pool, the default) and ``--ray [ADDRESS]``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--jobs", type=_jobs, default=None, metavar="J",
                       help="worker processes for many files (default: the number of cores)")
    group.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                       help="run the per-file jobs as Ray tasks (ADDRESS, else RAY_ADDRESS, else a local Ray)")


def executor_of(args: argparse.Namespace) -> ProcessPool | RayTasks:
    """The executor the options ask for."""
    return choose(args.jobs or os.cpu_count() or 1, args.ray)


def run_all(prog: str, args: argparse.Namespace, fn: Callable[[T], Outcome],
            items: Sequence[T]) -> list[Outcome] | int:
    """Every job's outcome, in order; an exit code when the executor cannot start."""
    executor = executor_of(args)
    done = False
    try:
        outcomes = list(executor.map(fn, items))
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
