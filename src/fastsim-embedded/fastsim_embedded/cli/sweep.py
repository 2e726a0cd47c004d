"""``fsr record RUN.yaml --episodes N [--seed S] [--jobs J]``: many seeded episodes.

Episode k (0-based) has seed S+k and runs in its own process with its own host
(``python -m fastsim_embedded.cli.record --sweep-worker``), at most J at once.  Before
anything runs, the Run is checked once and every episode's output names are rendered
and checked (``check_sweep``; names from ``session.compile.episode_names``, the one
derivation, which the workers' ``prepare_run`` renders alike):

    | # | check                                              | on failure              |
    |---|----------------------------------------------------|-------------------------|
    | 1 | the Run compiles; the template renders; the Run    | ``path: message``, 2    |
    |   | prepares as episode 0 would (scene, backend,       | (as ``fsr check``), no  |
    |   | channels), its backend closed again                | episode starts          |
    | 2 | no two episodes share a name                       | one line, 2             |
    | 3 | no final name exists (unless --overwrite) and no   | one line per file, 2    |
    |   | ``<name>.incomplete`` exists                       | (the line names both    |
    |   |                                                    | --overwrite, --resume)  |

``--resume`` (not with ``--overwrite``) turns check 3 into a plan: an episode whose
files all exist is committed already and skipped; one with an ``<name>.incomplete`` is
listed with the ``fsr recover`` command to run and never overwritten (``not run``); the
rest are recorded with the seeds and names a fresh N-episode sweep gives them, so
``--episodes 100 --resume`` after 40 episodes records the other 60.

On a terminal (stdout and stderr; never with ``--json`` or ``--no-progress``) one
progress bar shows the episodes done, failed and running, and an ETA.

Each finished episode prints one line; the sweep ends with a table (committed,
stopped, failed, not run, with paths).  One failed episode never stops the others.
Exit: 0 every episode committed normally; 1 some episode failed; 3 otherwise
(stopped, or not run: the sweep was stopped, or ``--resume`` left an ``.incomplete``).

Signals: the sweep's episodes run in their own sessions; the first SIGTERM/SIGINT/SIGHUP
starts no new episode and forwards the signal to the running ones (they commit what
they have, ``completion: stopped``); further signals are forwarded too.  An episode
ends with the sweep (``fastsim_contract.lifetime``): when the sweep dies, even by
``kill -9``, each running episode gets SIGTERM and commits what it has; none runs on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import attrs
from rich.console import Console

from fastsim_contract.lifetime import child_environment, child_report
from fastsim_contract.progress import ProgressBar
from fastsim_contract.run_errors import RunConfigError
from fastsim_embedded.cli.signals import StopSignals
from fastsim_embedded.cli.summary import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STOPPED,
    EpisodeReport,
)
from fastsim_embedded.output.names import STAGING_SUFFIX, check_output_name
from fastsim_embedded.session.compile import episode_names, prepare_run

__all__ = ["SweepPlan", "check_sweep", "run_sweep", "worker_command"]


def worker_command(args: argparse.Namespace, episode: int, seed: int) -> list[str]:
    """The command line of one episode's process."""
    cmd = [
        sys.executable, "-m", "fastsim_embedded.cli.record", str(args.run), "--sweep-worker",
        "--episode", str(episode), "--seed", str(seed), "--output-dir", str(args.output_dir),
        "--no-progress",
    ]
    if args.duration is not None:
        cmd += ["--duration", repr(args.duration)]
    if args.backend is not None:
        cmd += ["--backend", args.backend]
    if args.realtime is not None:
        cmd += ["--realtime", repr(args.realtime)]
    if args.overwrite:
        cmd.append("--overwrite")
    if args.no_portable_sizes:
        cmd.append("--no-portable-sizes")
    return cmd


@attrs.frozen
class SweepPlan:
    """What a sweep records.  Episode k always has seed ``first + k`` and the names
    ``episode_names`` gives it, resumed or not; ``run`` lists the episodes to record
    (all N, or with ``--resume`` those without a committed file), ``committed`` those
    already committed and ``held`` those an ``.incomplete`` holds (``--resume``)."""

    first: int
    run: tuple[int, ...]
    committed: tuple[int, ...] = ()
    held: tuple[tuple[int, str], ...] = ()  # (episode, the ``fsr recover`` command to run)


def _examine(directory: Path, names: list[tuple[str, ...]], first: int, overwrite: bool,
             resume: bool) -> tuple[list[str], SweepPlan]:
    """Check 3 of the module table; with ``resume`` a fully committed episode is skipped
    and an ``.incomplete`` holds its episode (listed, never overwritten) instead of
    refusing the sweep."""
    lines: list[str] = []
    run, committed, held = [], [], []
    again = "pass --overwrite to replace it, or --resume to record only the episodes without a file"
    for episode, row in enumerate(names):
        finals = [directory / name for name in row]
        if resume and row and all(os.path.lexists(final) for final in finals):
            committed.append(episode)
            continue
        staged: list[tuple[Path, Path]] = []
        for name, final in zip(row, finals):
            why = check_output_name(name, directory if directory.is_dir() else None)
            staging = directory / f"{name}{STAGING_SUFFIX}"
            if why is not None:
                lines.append(f"{final}: {why}")
            elif os.path.lexists(staging):
                staged.append((staging, final))
            elif os.path.lexists(final) and not overwrite:
                lines.append(f"{final}: already exists; refusing to overwrite it ({again})")
        if staged and resume:
            command = "; ".join(f"fsr recover {shlex.quote(str(s))} -o {shlex.quote(str(f))}" for s, f in staged)
            held.append((episode, command))
            continue
        lines.extend(f"{staging}: a crashed or stopped Run's data is here; it is never deleted or reused: "
                     f"recover it with `fsr recover {staging} -o <NEW.fsr>`, or move it away" for staging, _ in staged)
        run.append(episode)
    return lines, SweepPlan(first, tuple(run), tuple(committed), tuple(held))


def _from_process(episode: int, seed: int, code: int, stdout: str, stderr: str) -> EpisodeReport:
    data, reason = child_report(code, stdout, stderr)
    if data is not None:
        return EpisodeReport.from_json({**data, "episode": episode, "seed": seed})
    status = "refused" if code == EXIT_CONFIG else "failed"
    return EpisodeReport(status, None, reason, exit_code=code or EXIT_FAILED, seed=seed, episode=episode)


class _Sweep:
    """The running sweep: a bounded set of episode processes and their reports."""

    def __init__(self, args: argparse.Namespace, plan: SweepPlan, jobs: int,
                 say: Callable[[str], None], bar: ProgressBar) -> None:
        self.args, self.plan, self.jobs, self.say, self.bar = args, plan, jobs, say, bar
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)
        self.running: dict[int, subprocess.Popen[str]] = {}
        self.reports: dict[int, EpisodeReport] = {}
        self.stopping = False

    def on_signal(self, signum: int, count: int) -> None:
        name = signal.Signals(signum).name
        with self.lock:
            self.stopping = True
            running = list(self.running.values())
        if count == 1:
            self.say(f"fsr record: {name}: stopping the sweep; running episodes commit what they have, "
                     "no new episode starts")
        for process in running:
            with contextlib.suppress(OSError):
                process.send_signal(signum)

    def _progress(self) -> None:  # under the lock
        failed = sum(1 for r in self.reports.values() if r.status in ("failed", "refused"))
        self.bar.show(len(self.reports), failed, len(self.running))

    def _watch(self, episode: int, process: subprocess.Popen[str]) -> None:
        stdout, stderr = process.communicate()
        report = _from_process(episode, self.plan.first + episode, process.returncode, stdout, stderr)
        self.say(f"episode {episode} (seed {report.seed}): {report.line()}")
        with self.lock:
            self.running.pop(episode, None)
            self.reports[episode] = report
            self._progress()
            self.done.notify_all()

    def run(self) -> None:
        for episode in self.plan.run:
            with self.lock:
                while len(self.running) >= self.jobs and not self.stopping:
                    self.done.wait(0.5)
                if self.stopping:
                    break
                process = subprocess.Popen(
                    worker_command(self.args, episode, self.plan.first + episode),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    start_new_session=True, env=child_environment(),  # ends with the sweep
                )
                self.running[episode] = process
                self._progress()
            threading.Thread(target=self._watch, args=(episode, process), daemon=True).start()
        with self.lock:
            while self.running:
                self.done.wait(0.5)


def _table(reports: list[EpisodeReport]) -> list[str]:
    rows = [("episode", "seed", "status", "path or reason")]
    for r in reports:
        status = "committed" if r.status == "succeeded" else r.status
        detail = ", ".join(r.committed) if r.committed else (r.reason or "-")
        rows.append((str(r.episode), str(r.seed), status, detail.splitlines()[0] if detail else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]


def _check_run(args: argparse.Namespace, first: int) -> list[str]:
    """Check 1's second half, once for the whole sweep: the Run is prepared as episode 0
    would be (scene, backend, channels: what ``fsr check`` resolves), its backend closed
    again; nothing is recorded.  The issue lines, or none."""
    try:
        prepared = prepare_run(args.run, backend=args.backend, duration_s=args.duration, seed=first,
                               episode=0, sweep=True)
    except RunConfigError as exc:
        return [str(issue) for issue in exc.issues]
    except Exception as exc:
        return [f"fsr record: {args.run}: {type(exc).__name__}: {exc}".splitlines()[0]]
    prepared.backend.close()
    return []


def check_sweep(args: argparse.Namespace) -> tuple[SweepPlan | None, list[str]]:
    """Checks 1-3 of the module table: the plan and its notes (``--resume``: the episodes
    committed already and the ``.incomplete`` ones, with their ``fsr recover`` command),
    or ``None`` and the lines that say why nothing may run (also used by a sweep
    orchestrated elsewhere, e.g. on Ray)."""
    resume = bool(getattr(args, "resume", False))
    if resume and args.overwrite:
        return None, ["fsr record: --resume and --overwrite: choose one"]
    try:
        first, names = episode_names(args.run, backend=args.backend, seed=args.seed, episodes=args.episodes)
    except RunConfigError as exc:
        return None, [str(issue) for issue in exc.issues]
    except Exception as exc:
        return None, [f"fsr record: {args.run}: {type(exc).__name__}: {exc}".splitlines()[0]]
    if first + args.episodes - 1 > 2**63 - 1:
        return None, [f"--seed: the sweep's last seed would be over 2**63-1 (first {first})"]
    refused, plan = _examine(Path(args.output_dir), names, first, args.overwrite, resume)
    if refused:
        lines = [f"fsr record: {line}" for line in refused[:10]]
        if len(refused) > 10:
            lines.append(f"fsr record: ... and {len(refused) - 10} more files; nothing was recorded")
        return None, lines
    if plan.run:
        issues = _check_run(args, first)
        if issues:
            return None, issues
    notes = [f"fsr record: episode {k} (seed {first + k}) is left as .incomplete and is never overwritten; "
             f"recover it with `{command}`" for k, command in plan.held]
    if resume:
        notes.append(f"fsr record: --resume: {len(plan.committed)} of {args.episodes} episodes committed "
                     f"already, {len(plan.held)} left as .incomplete; recording {len(plan.run)}")
    return plan, notes


def run_sweep(args: argparse.Namespace) -> int:
    """Record the episodes of ``check_sweep``'s plan; never raise."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    plan_or_none, lines = check_sweep(args)
    for line in lines:
        err.print(line, markup=False)
    if plan_or_none is None:
        return EXIT_CONFIG
    plan = plan_or_none
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(plan.run)))
    say_console = err if args.json else out

    def say(text: str) -> None:
        say_console.print(text, markup=False)

    shown = not (args.json or args.no_progress) and err.is_terminal and out.is_terminal
    with ProgressBar("sweep", len(plan.run), err if shown else None, lambda: 0) as bar:
        sweep = _Sweep(args, plan, jobs, say, bar)
        stop = StopSignals(on_signal=sweep.on_signal).install()
        try:
            sweep.run()
        finally:
            if not getattr(args, "owns_process", False):
                stop.close()
    reports = [
        sweep.reports.get(k) or EpisodeReport("not run", None, "the sweep was stopped first",
                                              exit_code=EXIT_STOPPED, seed=plan.first + k, episode=k)
        for k in plan.run
    ] + [EpisodeReport("not run", None, f"left as .incomplete: {command}", exit_code=EXIT_STOPPED,
                       seed=plan.first + k, episode=k) for k, command in plan.held]
    reports.sort(key=lambda r: r.episode or 0)
    counts = {key: sum(1 for r in reports if r.status == key)
              for key in ("succeeded", "stopped", "cancelled", "failed", "refused", "not run")}
    counts["committed before"] = len(plan.committed)
    failed = counts["failed"] + counts["refused"]
    code = EXIT_FAILED if failed else EXIT_STOPPED if len(reports) != counts["succeeded"] else EXIT_OK
    if args.json:
        sys.stdout.write(json.dumps({"episodes": [r.to_json() for r in reports], "exit_code": code,
                                     "counts": counts}, sort_keys=True) + "\n")
        return code
    before = f"{len(plan.committed)} committed before, " if getattr(args, "resume", False) else ""
    out.print(
        f"sweep of {args.episodes} episode{'' if args.episodes == 1 else 's'}: {before}{counts['succeeded']} "
        f"committed, {counts['stopped'] + counts['cancelled']} stopped, {failed} failed, {counts['not run']} not run",
        markup=False,
    )
    for line in _table(reports):
        out.print(line, markup=False)
    return code
