"""``fsr record RUN.yaml``: record a Run (or a sweep of seeded episodes) on the embedded host.

Reached through the ``fastsim.hosts`` entry point (``fastsim_record`` never imports this
package).  Exit codes: ``fastsim_embedded.cli.summary`` (0 normal, 1 failed, 2 config
or refused output, 3 stopped; 128+N abandoned by a third signal, or stopped by signal N
before the Run started: one line, nothing staged).  ``fsr`` catches the stop signals
before its first heavy import, so a signal in the first seconds is never lost.  Signals:
``fastsim_embedded.cli.signals``.  Sweeps (``--episodes``): ``fastsim_embedded.cli.sweep``.

    | # | option            | effect                                                          |
    |---|-------------------|-----------------------------------------------------------------|
    | 1 | --seed S          | the Run's seed (else ``runtime.seed``, else 0)                  |
    | 2 | --episodes N      | N episodes with seeds S..S+N-1 (a sweep; names are templates)   |
    | 3 | --jobs J          | parallel episode processes (default: the number of cores)       |
    | 4 | --overwrite       | replace existing final files (never a crashed ``.incomplete``)  |
    | 5 | --resume          | a sweep: record only the episodes without a committed file      |
    | 6 | --verbose, --json | the flow-control gauge (how often and how long the simulation  |
    |   |                   | waited on Record) and the finalizer's full table / one JSON     |
    |   |                   | object on stdout (``flow``: waits, waited_s)                    |

No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fastsim_contract.lifetime import end_with_parent
from fastsim_contract.run import SEED_MAX
from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.backends import backend_names
from fastsim_embedded.cli.signals import StopSignals
from fastsim_embedded.cli.summary import EXIT_CONFIG, EXIT_FAILED, EpisodeReport, report_of
from fastsim_embedded.output.names import protect_inputs
from fastsim_embedded.output.transaction import OutputRefused
from fastsim_embedded.session.compile import PreparedRun, check_duration, prepare_run
from fastsim_embedded.session.session import SessionResult, run_session

if TYPE_CHECKING:
    from fastsim_embedded.cli.sweep import SweepPlan

__all__ = ["COMMAND", "RecordCommand"]

N = TypeVar("N", int, float)


def _flatten(prefix: str, value: object, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out.append((prefix, f"{value:.6g}" if isinstance(value, float) else str(value)))


def _print_table(console: Console, result: SessionResult) -> None:
    flow = Table(title="flow control (unpaced: the simulation waits on a pressed gauge)", show_header=False)
    flow.add_row("waits", f"{result.flow_waits} of {result.ticks} ticks")
    flow.add_row("waited_s", f"{result.flow_waited_s:.3f}")
    console.print(flow)
    for finalizer in result.outcome.finalizers:
        table = Table(title=f"finalizer {finalizer.request.component}", show_header=False)
        rows: list[tuple[str, str]] = [("ok", str(finalizer.result.ok))]
        if finalizer.result.reason:
            rows.append(("reason", finalizer.result.reason))
        _flatten("", finalizer.result.summary, rows)
        for key, value in rows:
            table.add_row(key, value)
        console.print(table)


def _option_type(convert: Callable[[str], N], expected: str,
                 problem: Callable[[N, str], str | None]) -> Callable[[str], N]:
    """An argparse ``type``: ``convert`` the text ("must be ``expected``" when it cannot),
    then refuse the value with ``problem(value, text)`` when that names one."""

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {expected} (got {text!r})") from None
        message = problem(value, text)
        if message is not None:
            raise argparse.ArgumentTypeError(message)
        return value

    return parse


def _whole_number(low: int, high: int, expected: str) -> Callable[[str], int]:
    return _option_type(lambda text: int(text, 10), expected,
                        lambda value, text: None if low <= value <= high else f"must be {expected} (got {text})")


def _duration_problem(value: float, text: str) -> str | None:
    try:
        check_duration(value)
    except RunConfigError as exc:
        return exc.issues[0].message
    return None


_seed = _whole_number(0, SEED_MAX, "an integer from 0 through 2**63-1")
_count = _whole_number(1, 1_000_000, "a whole number from 1 through 1000000")
_seconds = _option_type(float, "a number of seconds", _duration_problem)
_factor = _option_type(float, "a positive factor", lambda value, text: None if math.isfinite(value) and value > 0
                       else f"must be a positive finite factor (got {text})")


@attrs.frozen
class RecordCommand:
    """The ``record`` subcommand as the ``fsr`` dispatcher expects it."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the options of the module table."""
        parser.epilog = (
            "exit codes: 0 normal completion, committed; 1 failed; 2 config error or output refused "
            "(exists, .incomplete present, locked by another recorder); 3 stopped by a signal, what was "
            "recorded committed with completion stopped; 128+N abandoned by a third signal N"
        )
        parser.add_argument("run", metavar="RUN.yaml", help="the FastSim v2 Run file")
        parser.add_argument("--output-dir", default=".", metavar="DIR", help="where artifacts are committed (default: .)")
        parser.add_argument("--duration", type=_seconds, default=None, metavar="SECONDS",
                            help="simulated seconds (default: runtime.duration_s, else 10)")
        parser.add_argument("--backend", default=None, metavar="NAME",
                            help=f"override the Run's backend ({', '.join(backend_names())})")
        parser.add_argument("--realtime", type=_factor, nargs="?", const=1.0, default=None, metavar="FACTOR",
                            help="pace simulation to FACTOR x wall time (default: as fast as possible)")
        parser.add_argument("--seed", type=_seed, default=None, metavar="S",
                            help="the Run's seed (default: runtime.seed, else 0); a sweep uses S, S+1, ...")
        parser.add_argument("--episodes", type=_count, default=None, metavar="N",
                            help="record N seeded episodes (output names become templates)")
        parser.add_argument("--jobs", type=_count, default=None, metavar="J",
                            help="parallel episode processes of a sweep (default: the number of cores)")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace existing output files (default: refuse, exit 2)")
        parser.add_argument("--resume", action="store_true",
                            help="a sweep: record only the episodes that have no committed file (same seeds, names)")
        parser.add_argument("--verbose", action="store_true", help="also print the finalizer's full table")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
        parser.add_argument("--no-portable-sizes", action="store_true",
                            help="behave like an older Core: no producer-computed portable_size")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        parser.add_argument("--episode", type=int, default=0, help=argparse.SUPPRESS)  # a sweep worker's index
        parser.add_argument("--sweep-worker", action="store_true", help=argparse.SUPPRESS)

    def run(self, args: argparse.Namespace) -> int:
        """Record; never raise."""
        if args.episodes is not None and not args.sweep_worker:
            from fastsim_embedded.cli.sweep import run_sweep

            return run_sweep(args)
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        out = Console(highlight=False, soft_wrap=True)
        if args.jobs is not None or args.resume:
            err.print(f"{'--jobs' if args.jobs is not None else '--resume'}: only with --episodes", markup=False)
            return EXIT_CONFIG
        owns_process = bool(getattr(args, "owns_process", False)) or args.sweep_worker
        protect_inputs([args.run])  # an output never replaces the Run file, even with --overwrite
        stop = StopSignals(watchdog=owns_process).install()
        if args.sweep_worker:  # an episode never outlives its sweep (SIGTERM: it commits what it has)
            end_with_parent(signal.SIGTERM)
        try:
            report, result = self._record(args, err, out, stop)
        finally:
            if not owns_process:
                stop.close()
        if report is None:
            return EXIT_CONFIG
        stop.exit_code = report.exit_code
        if args.json or args.sweep_worker:
            data = report.to_json()
            if result is not None:
                data["flow"] = {"waits": result.flow_waits, "waited_s": result.flow_waited_s}
                data["finalizers"] = [
                    {"component": f.request.component, "ok": f.result.ok, "reason": f.result.reason,
                     "summary": f.result.summary}
                    for f in result.outcome.finalizers
                ]
            print(json.dumps(data, sort_keys=True, default=str), flush=True)
            return report.exit_code
        if result is not None and args.verbose:
            _print_table(out, result)
        if report.status in ("failed", "refused"):
            err.print(f"fsr record: run {report.line()}".splitlines()[0], markup=False)
        elif not report.committed and report.status == "stopped":
            err.print(f"fsr record: {report.reason}", markup=False)
        else:
            out.print(report.line(), markup=False)
        return report.exit_code

    def _record(
        self, args: argparse.Namespace, err: Console, out: Console, stop: StopSignals
    ) -> tuple[EpisodeReport | None, SessionResult | None]:
        try:
            prepared = prepare_run(
                args.run, backend=args.backend, duration_s=args.duration, seed=args.seed,
                episode=args.episode, sweep=args.sweep_worker,
            )
        except RunConfigError as exc:
            for issue in exc.issues:
                err.print(f"{issue}", markup=False)
            return None, None
        except Exception as exc:
            err.print(f"fsr record: {args.run}: {type(exc).__name__}: {exc}".splitlines()[0], markup=False)
            return None, None
        if stop.first is not None:  # a stop signal while the Run was prepared: nothing is staged, nothing runs
            prepared.backend.close()
            return EpisodeReport("stopped", None, f"{stop.first} before the Run started; nothing was recorded",
                                 exit_code=128 + int(signal.Signals[stop.first]),
                                 seed=prepared.seed, episode=prepared.episode), None
        started = time.monotonic()
        try:
            result = self._session(prepared, args, err, out, stop)
        except OutputRefused as exc:
            err.print(f"fsr record: {exc}".splitlines()[0], markup=False)
            return None, None
        except RunConfigError as exc:
            for issue in exc.issues:
                err.print(f"{issue}", markup=False)
            return None, None
        except Exception as exc:  # a host bug: still one line, never a traceback
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            return EpisodeReport("failed", None, reason, exit_code=EXIT_FAILED,
                                 seed=prepared.seed, episode=prepared.episode), None
        report = report_of(
            result, sensor_hz=prepared.sensor_hz, wall_s=time.monotonic() - started,
            has_recorder=prepared.capture_owner is not None,
        )
        return attrs.evolve(report, seed=prepared.seed, episode=prepared.episode), result

    def _session(
        self, prepared: PreparedRun, args: argparse.Namespace, err: Console, out: Console, stop: StopSignals
    ) -> SessionResult:
        options: dict[str, Any] = {
            "realtime_factor": args.realtime,
            "portable_sizes": not args.no_portable_sizes,
            "overwrite": args.overwrite,
            "on_host": stop.attach,
            "on_cut": stop.arm,
        }
        if args.no_progress or args.json or args.sweep_worker or not err.is_terminal:
            return run_session(prepared, Path(args.output_dir), **options)
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

            return run_session(prepared, Path(args.output_dir), progress=progress, **options)

    def check_sweep(self, args: argparse.Namespace) -> tuple[SweepPlan | None, list[str]]:
        """A sweep orchestrated by the caller (``fsr record --episodes N --ray``): its plan
        (first seed, episodes to record) and notes, or ``None`` and the lines saying why
        nothing may run (``sweep.check_sweep``)."""
        from fastsim_embedded.cli.sweep import check_sweep

        return check_sweep(args)

    def worker_command(self, args: argparse.Namespace, episode: int, seed: int) -> list[str]:
        """The command line that records episode ``episode`` with ``seed`` in its own
        process and prints its report as one JSON line (``sweep.worker_command``)."""
        from fastsim_embedded.cli.sweep import worker_command

        return worker_command(args, episode, seed)

    def resolve(self, run: str, backend: str | None = None) -> tuple[list[str], list[dict[str, Any]]]:
        """``fsr check`` / ``fsr channels``: compile the Run, check its scene and build its
        backend without stepping it; ``(issue lines, declared channels)``."""
        try:
            prepared = prepare_run(run, backend=backend)
        except RunConfigError as exc:
            return [str(issue) for issue in exc.issues], []
        except Exception as exc:  # a broken backend install: one line
            return [f"{run}: {type(exc).__name__}: {exc}".splitlines()[0]], []
        try:
            channels = [
                {
                    "name": c.name, "kind": c.kind, "dtype": c.dtype, "shape": list(c.shape),
                    "units": list(c.units), "entity": c.entity,
                    "element_names": list(c.attributes.get("element_names") or []),  # type: ignore[call-overload]
                }
                for c in prepared.channels
            ]
        finally:
            prepared.backend.close()
        return [], channels


COMMAND = RecordCommand()


def main(argv: list[str] | None = None) -> int:
    """Run the command standalone (``python -m fastsim_embedded.cli.record``)."""
    parser = argparse.ArgumentParser(prog="fsr record")
    COMMAND.add_arguments(parser)
    args = parser.parse_args(argv)
    args.owns_process = argv is None
    return COMMAND.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
