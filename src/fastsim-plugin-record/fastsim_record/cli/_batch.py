"""The batch commands' shared options, declared once: ``--jobs``/``--ray`` and ``--integrity``.

``fsr info``, ``validate``, ``index``, ``upload`` and ``export`` take ``--jobs J`` (a
local process pool, the default) or ``--ray [ADDRESS]``; ``fsr validate`` and ``fsr
index`` take ``--integrity PROFILE``.  ``run_all`` runs the jobs on the executor the
options ask for (``fastsim_record.batch.runner``), with one progress bar on a terminal
(never with ``--json``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TypeVar

from fastsim_record.batch.jobs import Outcome
from fastsim_record.batch.runner import executor_of, failures, files, shows_progress
from fastsim_record.batch.runner import run_all as run_on
from fastsim_recording_format import VALIDATION_PROFILES

__all__ = [
    "add_executor_arguments", "add_integrity_argument", "default_policy", "failures", "files", "run_all",
]

T = TypeVar("T")


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


def add_integrity_argument(parser: argparse.ArgumentParser) -> None:
    """``--integrity PROFILE``: the validation profile of each file (default: structural)."""
    parser.add_argument(
        "--integrity", choices=VALIDATION_PROFILES, default="structural",
        help="the validation profile of each file: structural (default; no payload byte read), "
        "crc (every payload vs its CRC-32C), fast or strong (SHA-256; need the output policy "
        "integrity sha256, the default for them)",
    )


def default_policy(integrity: str) -> str:
    """The output policy integrity a profile is checked against unless told: ``sha256`` for
    ``fast``/``strong``, else ``none``."""
    return "sha256" if integrity in ("fast", "strong") else "none"


def run_all(prog: str, args: argparse.Namespace, fn: Callable[[T], Outcome],
            items: Sequence[T]) -> list[Outcome] | int:
    """Every job's outcome on the executor ``args`` ask for (a progress bar on a terminal);
    an exit code when it cannot start."""
    return run_on(prog, executor_of(args.jobs, args.ray), fn, items,
                  progress=shows_progress(bool(getattr(args, "json", False))))
