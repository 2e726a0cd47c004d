"""``fsr record RUN.yaml``: record a Run on the embedded host.

Reached through the ``fastsim.hosts`` entry point (``fastsim_record`` never imports this
package).  Exit codes:

    | # | code | when                                                                  |
    |---|------|-----------------------------------------------------------------------|
    | 1 | 0    | the Run did not fail (succeeded, stopped, cancelled) and committed    |
    | 2 | 1    | the Run failed: nothing under the final name, the reason in one line  |
    | 3 | 2    | the Run file or the options are invalid (``path: message`` lines)     |

No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.backends import backend_names
from fastsim_embedded.compile import prepare_run
from fastsim_embedded.session import SessionResult, run_session

__all__ = ["COMMAND", "RecordCommand"]


def _flatten(prefix: str, value: object, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out.append((prefix, f"{value:.6g}" if isinstance(value, float) else str(value)))


def _print_summary(console: Console, result: SessionResult) -> None:
    outcome = result.outcome
    for finalizer in outcome.finalizers:
        table = Table(title=f"finalizer {finalizer.request.component}", show_header=False)
        rows: list[tuple[str, str]] = [("ok", str(finalizer.result.ok))]
        if finalizer.result.reason:
            rows.append(("reason", finalizer.result.reason))
        _flatten("", finalizer.result.summary, rows)
        for key, value in rows:
            table.add_row(key, value)
        console.print(table)


@attrs.frozen
class RecordCommand:
    """The ``record`` subcommand as the ``fsr`` dispatcher expects it."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare ``RUN [--output-dir DIR] [--duration SECONDS] [--backend NAME]``."""
        parser.add_argument("run", metavar="RUN.yaml", help="the FastSim v2 Run file")
        parser.add_argument("--output-dir", default=".", metavar="DIR", help="where artifacts are committed (default: .)")
        parser.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                            help="simulated seconds (default: runtime.duration_s, else 10)")
        parser.add_argument("--backend", default=None, metavar="NAME",
                            help=f"override the Run's backend ({', '.join(backend_names())})")
        parser.add_argument("--realtime", type=float, nargs="?", const=1.0, default=None, metavar="FACTOR",
                            help="pace simulation to FACTOR x wall time (default: as fast as possible)")
        parser.add_argument("--no-portable-sizes", action="store_true",
                            help="behave like an older Core: no producer-computed portable_size")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def run(self, args: argparse.Namespace) -> int:
        """Record; never raise."""
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        out = Console(highlight=False, soft_wrap=True)
        try:
            prepared = prepare_run(args.run, backend=args.backend, duration_s=args.duration)
        except RunConfigError as exc:
            for issue in exc.issues:
                err.print(f"{issue}", markup=False)
            return 2
        except Exception as exc:
            err.print(f"fsr record: {args.run}: {type(exc).__name__}: {exc}".splitlines()[0], markup=False)
            return 2
        output_dir = Path(args.output_dir)
        if args.realtime is not None and args.realtime <= 0:
            err.print(f"--realtime: must be a positive factor (got {args.realtime:g})", markup=False)
            return 2
        pacing: dict[str, Any] = {
            "realtime_factor": args.realtime,
            "portable_sizes": not args.no_portable_sizes,
        }
        try:
            if args.no_progress or not out.is_terminal:
                result = run_session(prepared, output_dir, **pacing)
            else:
                with Progress(
                    TextColumn("[bold]recording[/] {task.description}"),
                    BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True,
                ) as bar:
                    task = bar.add_task(prepared.run.name, total=None)
                    step = max(1, round(prepared.sensor_hz / 4))

                    def progress(tick: int, total: int) -> None:
                        if tick % step == 0 or tick == total:
                            bar.update(task, completed=tick, total=total)

                    result = run_session(prepared, output_dir, progress=progress, **pacing)
        except RunConfigError as exc:
            for issue in exc.issues:
                err.print(f"{issue}", markup=False)
            return 2
        except Exception as exc:  # a host bug: still one line, never a traceback
            err.print(f"fsr record: run failed: {type(exc).__name__}: {exc}".splitlines()[0], markup=False)
            return 1
        _print_summary(out, result)
        outcome = result.outcome
        if outcome.status != "failed" and (outcome.committed or prepared.capture_owner is None):
            for path in outcome.committed:
                out.print(f"committed {path}", markup=False)
            out.print(f"{outcome.status}: {result.ticks} ticks, {outcome.cut.final_global_sequence if outcome.cut else 0} records sequenced", markup=False)
            return 0
        reason = outcome.reason or "nothing was committed"
        err.print(f"fsr record: run failed: {reason}".splitlines()[0], markup=False)
        for path in outcome.disposed:
            err.print(f"incomplete artifact kept at {path}", markup=False)
        return 1


COMMAND = RecordCommand()


def main(argv: list[str] | None = None) -> int:
    """Run the command standalone (``python -m fastsim_embedded.cli_record``)."""
    parser = argparse.ArgumentParser(prog="fsr record")
    COMMAND.add_arguments(parser)
    return COMMAND.run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
